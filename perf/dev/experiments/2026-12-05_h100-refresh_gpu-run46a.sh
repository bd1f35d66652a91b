#!/bin/bash
# GPU run 46a (NVIDIA H100 asked for): the landed build (285f435 + comments; staging s45b) on the H100, the first
# H100 since 2026-11-28: the forward suite, the head-dim sweep, the mma.sync kernels forced (issue 19's table), the
# decode rows (issue 11), FP8 and the variants, each with torch (flash, cuDNN) in the same run.
set -u
R=$OUT/r46a; mkdir -p $R
tar xJf build/gpu-s45b.txz -C build
S=build/s45b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
step() {  # step NAME LIMIT_S command...: run when enough of the call's 580 s is left
  local n=$1 lim=$2; shift 2
  if (( SECONDS + lim > 580 )); then echo "skip $n at ${SECONDS}s"; return; fi
  mkdir -p $R/$n
  OUT=$R/$n timeout $lim "$@" > $R/$n/console.log 2>&1
  echo "$n rc=$? ${SECONDS}s"
}
step fwd 120 env NAME=forward QUICK=1 perf/run_forward.sh $S
grep -E "^\| (16,16,512,64|4,16,1024,64|1,8,512,64)" $R/fwd/*forward.md | head -8
step sweep 100 env NAME=headdims QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" perf/run_forward.sh $S
step mma 150 env NAME=forward-mma-forced QUICK=1 BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec perf/run_forward.sh $S
step dec 200 env QUICK=1 T_BENCH=110 T_TORCH=80 perf/run_decode.sh $S
step fp8 80 env QUICK=1 perf/run_fp8.sh $S
step var 100 env QUICK=1 perf/run_variants.sh $S
(cd $OUT && tar czf r46a.tgz r46a && rm -rf r46a)
