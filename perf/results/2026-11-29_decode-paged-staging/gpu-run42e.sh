#!/bin/bash
# GPU run 42e: decode grids of fewer blocks than SMs (one or two (b, kv head) pairs at the 64-split cap): ring depth
# forced 3..8 (decode_dev lowbase, 4619ab9), then "deep" (the plan's deepest ring under 75 % of the SMs) against
# 4619ab9 (bin) ABBA, run_decode.sh with torch on deep with those rows, deep's decode GPU tests and decode_dev check.
set -u
R=$OUT/r42e; mkdir -p $R
tar xJf build/gpu-s42e.txz -C build
S=build/s42e; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
el() { echo $(( $(date +%s)-T0 )); }
timeout 60 $S/bin/decode_dev lowbase > $R/lowbase.txt 2>&1; echo "lowbase rc=$? $(el) s"
DEC="8,32,8,1,8192,128;1,32,8,1,32768,128;16,64,8,1,4096,128;8,32,8,4,8192,128;8,32,8,1,8192,64;1,8,1,1,65536,128;1,32,2,1,32768,128;1,8,1,1,16384,128;1,8,1,1,65536,64;1,8,1,1,32768,256;1,16,1,4,65536,128"
n=0
for v in bin deep deep bin; do
  n=$((n+1))
  timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash \
    --decode="$DEC" --paged=16 --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "$v $n rc=$? $(el) s"
done
OUT=$R QUICK=1 T_BENCH=100 T_TORCH=100 DECODE="1,8,1,1,65536,128;1,32,2,1,32768,128;1,8,1,1,16384,128;1,8,1,1,65536,64;1,8,1,1,32768,256;1,16,1,4,65536,128" PAGED=16 \
  MIXED="32,8,1,128:1,7,33,100,250,511,777,1024,1500,2048,3000,4096,5000,6144,7000,8192" VARLEN="16,128:2048x8" perf/run_decode.sh $S/deep > $R/run_decode.console 2>&1
echo "run_decode rc=$? $(el) s"
F='Gpu.PagedDecodeLongPieces:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCaptured*'
for q in 1 2 3 4 13 17 31 33 64; do F="$F:Gpu/*Cases.*/cuda_flash_B*_Lq${q}_*"; done
timeout 150 $S/deep/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_deep.log 2>&1; echo "tests deep rc=$? $(el) s" | tee -a $R/tests_deep.log
timeout $(( 390 - $(el) )) $S/deep/decode_dev_deep check > $R/check_deep.txt 2>&1; echo "check deep rc=$? $(el) s" | tee -a $R/check_deep.txt
gzip -f $R/tests_*.log $R/time_*.json
(cd $OUT && tar czf r42e.tgz r42e && rm -rf r42e)
