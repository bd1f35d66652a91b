#!/bin/bash
# GPU run 39g: the head-dim sweep with torch again on fin (08455b0), on whichever H200 this call gets: how much the
# D = 64/128/256 non-causal comparisons with cuDNN move from machine to machine.
set -u
R=$OUT/r39g; mkdir -p $R
tar xJf build/gpu-s39f.txz -C build
nvidia-smi --query-gpu=name,clocks.max.sm,serial --format=csv,noheader | sed 's/, [0-9]*$/, serial withheld/' | tee $R/device.txt
T0=$(date +%s)
for i in 1 2; do
  mkdir -p $R/sweep$i
  OUT=$R/sweep$i NAME=headdims QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,64;4,16,2048,128;4,16,2048,256" \
    timeout 100 perf/run_forward.sh build/s39/fin > $R/sweep$i/console.log 2>&1
  echo "sweep $i rc=$? $(( $(date +%s)-T0 )) s"
done
(cd $OUT && tar czf r39g.tgz r39g && rm -rf r39g)
