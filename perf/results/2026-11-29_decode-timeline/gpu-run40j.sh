#!/bin/bash
# GPU run 40j: the decode suite's rows, HEAD (fe0776c, base) against this change (new) in ABBA order, then
# perf/run_decode.sh (QUICK=1) on the new build with torch in the same run.
set -u
R=$OUT/r40j; mkdir -p $R
tar xJf build/gpu-s40j.txz -C build
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
DEC="8,32,8,1,8192,128;1,32,8,1,32768,128;64,32,8,1,2048,128;16,64,8,1,4096,128;8,32,8,4,8192,128"
MIX="32,8,1,128:1,7,33,100,250,511,777,1024,1500,2048,3000,4096,5000,6144,7000,8192"
n=0
for v in base new new base; do
  n=$((n+1))
  LD_LIBRARY_PATH=$PWD/build/s40j/lib timeout 150 build/s40j/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash \
    --decode="$DEC" --paged=16,64,256 --mixed="$MIX" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "$v $n rc=$? $(( $(date +%s)-T0 )) s"
done
OUT=$R QUICK=1 T_BENCH=240 T_TORCH=200 perf/run_decode.sh build/s40j/new > $R/run_decode.console 2>&1
echo "run_decode rc=$? $(( $(date +%s)-T0 )) s"
gzip $R/time_*.json
(cd $OUT && tar czf r40j.tgz r40j && rm -rf r40j)
