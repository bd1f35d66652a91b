#!/bin/bash
# GPU run 48a: item timelines (hopper_dev timeline, first-tile marks, e0c5676) of the short D = 64 rows on main.
set -u
R=$OUT/r48a; mkdir -p $R
tar xJf build/gpu-s46b.txz -C build
S=build/s46b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
for b in hdim64 hdim64_wg3; do
  for sh in 16,16,512,64 4,16,1024,64; do
    for c in 0 1; do
      tag=main_${b}_$(echo $sh | tr , _)_c$c
      if [ $c = 1 ]; then export HOPPER_DEV_CAUSAL=1; else unset HOPPER_DEV_CAUSAL; fi
      HOPPER_DEV_SHAPE=$sh timeout 60 $S/tl/hopper_dev_tl_main_$b timeline > $R/tl_$tag.csv 2> $R/tl_$tag.err
      rc=$?; n=$(wc -l < $R/tl_$tag.csv); echo "timeline $tag rc=$rc rows $n ${SECONDS}s"
      if (( n > 10 )); then python3 perf/dev/timeline_summary.py $R/tl_$tag.csv > $R/tl_$tag.summary.txt; head -14 $R/tl_$tag.summary.txt | cut -c1-260; gzip -f $R/tl_$tag.csv; else rm -f $R/tl_$tag.csv; fi
    done
  done
done
(cd $OUT && tar czf r48a.tgz r48a && rm -rf r48a)
