#!/bin/bash
# GPU run 45d: item timelines of the short D = 64 suite rows on the landed build (285f435: Q released at the last S), as run 39h
# D = 64 Hopper instances instrumented (the plan's instance records; the other prints no rows), the landed build (285f435, Q released at the last S).
set -u
R=$OUT/r45d; mkdir -p $R
tar xJf build/gpu-s45d.txz -C build
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
for b in hdim64 hdim64_wg3; do
  for sh in 16,16,512,64 4,16,1024,64; do
    for c in 0 1; do
      tag=${b}_$(echo $sh | tr , _)_c$c
      if [ $c = 1 ]; then export HOPPER_DEV_CAUSAL=1; else unset HOPPER_DEV_CAUSAL; fi
      HOPPER_DEV_SHAPE=$sh timeout 60 build/s45d/hopper_dev_tl_$b timeline > $R/tl_$tag.csv 2> $R/tl_$tag.err
      echo "timeline $tag rc=$? rows $(wc -l < $R/tl_$tag.csv) $(( $(date +%s)-T0 )) s"; head -1 $R/tl_$tag.csv
    done
  done
done
gzip $R/*.csv
(cd $OUT && tar czf r45d.tgz r45d && rm -rf r45d)
