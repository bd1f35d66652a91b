#!/bin/bash
# GPU run 49c (prepared in the forty-ninth session): the E5 + E6 build against torch in the same run, once 49a's
# tests passed: the forward suite and the head-dim sweep (QUICK), then the mma.sync kernels forced if time is left.
# Staging: build/gpu-s49a.txz (as 49a).
set -u
R=$OUT/r49c; mkdir -p $R
tar xJf build/gpu-s49a.txz -C build
S=build/s49a; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
OUT=$R NAME=forward-e6 QUICK=1 perf/run_forward.sh $S > $R/fwd_console.log 2>&1; echo "fwd rc=$? ${SECONDS}s"
grep -E "^\| (16,16,512,64|4,16,1024,64|1,8,512,64) " $R/*forward-e6.md
OUT=$R NAME=headdims-e6 QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" perf/run_forward.sh $S > $R/sweep_console.log 2>&1; echo "sweep rc=$? ${SECONDS}s"
grep -E "^\| 4,16,2048" $R/*headdims-e6*.md | head -16
gzip -f $R/*.log
(cd $OUT && tar czf r49c.tgz r49c && rm -rf r49c)
