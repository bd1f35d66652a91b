#!/bin/bash
# GPU run 43i: the Hopper kernel as a dependent launch (perf/dev/experiments/2026-11-29_hopper-dependent-launch.patch,
# the D = 64 (2 and 3 warpgroups) and D = 128 instances rebuilt with it, linked into a copy of 321fec7's library):
# validated run of the patched build, then ABBA bin (321fec7) / pdl x 3, forward rows, graph-timed.
set -u
R=$OUT/r43i; mkdir -p $R
tar xJf build/gpu-s43i.txz -C build
S=build/s43i; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
SH="1,8,1024,64;1,8,2048,64;4,16,1024,64;16,16,512,64;4,16,2048,64;8,16,1024,128;4,16,1024,128;2,16,4096,128"
timeout 120 $S/pdl/flashcore_bench --device-only --quick --backends=cuda-flash --dtypes=fp16,bf16 --causal=both \
  --shapes="$SH" --benchmark_color=false > $R/check_pdl.txt 2>&1; echo "checked rc=$? $(el) s"
grep -ciE "mismatch|fail|error" $R/check_pdl.txt
n=0
for v in bin pdl pdl bin bin pdl; do
  n=$((n+1))
  timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16 --causal=both \
    --shapes="$SH" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "bench $v $n rc=$? $(el) s"
done
(cd $OUT && tar czf r43i.tgz r43i && rm -rf r43i)
