#!/bin/bash
# GPU run 42c: (1) the rewritten PagedDecodeLongPieces test (cuda-flash only, 30000 keys, the plan's pieces
# checked > 16 tiles) on 9d714bb+; (2) "nobar": the decode prologue reading each thread's own entries of the
# prologue tiles (no barrier before the first copies) against the landed staging (bin): suite rows ABBA;
# nobar's decode GPU tests and decode_dev check.
set -u
R=$OUT/r42c; mkdir -p $R
tar xJf build/gpu-s42c.txz -C build
S=build/s42c; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
el() { echo $(( $(date +%s)-T0 )); }
timeout 120 $S/bin/flashcore_gpu_tests --gtest_filter='Gpu.PagedDecodeLongPieces' > $R/tests_long.log 2>&1; echo "long test rc=$? $(el) s" | tee -a $R/tests_long.log
DEC="8,32,8,1,8192,128;1,32,8,1,32768,128;64,32,8,1,2048,128;16,64,8,1,4096,128;8,32,8,4,8192,128;8,32,8,1,8192,64;8,32,8,1,8192,256;1,8,1,1,65536,128"
MIX="32,8,1,128:1,7,33,100,250,511,777,1024,1500,2048,3000,4096,5000,6144,7000,8192"
n=0
for v in bin nobar nobar bin bin nobar; do
  n=$((n+1))
  timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash \
    --decode="$DEC" --paged=16,32,64 --mixed="$MIX" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "$v $n rc=$? $(el) s"
done
F='Gpu.PagedDecodeLongPieces:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCaptured*'
for q in 1 2 3 4 13 17 31 33 64; do F="$F:Gpu/*Cases.*/cuda_flash_B*_Lq${q}_*"; done
timeout 200 $S/nobar/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_nobar.log 2>&1; echo "tests nobar rc=$? $(el) s" | tee -a $R/tests_nobar.log
timeout $(( 560 - $(el) )) $S/nobar/decode_dev_nobar check > $R/check_nobar.txt 2>&1; echo "check nobar rc=$? $(el) s" | tee -a $R/check_nobar.txt
gzip -f $R/tests_*.log $R/time_*.json
(cd $OUT && tar czf r42c.tgz r42c && rm -rf r42c)
