#!/bin/bash
# GPU run 42f: the combine kernel (decode pieces past 64 merged by decode/combine.cuh) on the working tree after
# 341008c: its GPU tests (DecodeManyPiecesCombined, determinism with a combined case, paged long pieces, the
# cuda-flash Lq 1/4/64 cases), the low-(B·Hkv) rows ABBA against 5bf14c0 (old), run_decode.sh with torch on them.
set -u
R=$OUT/r42f; mkdir -p $R
tar xJf build/gpu-s42f.txz -C build
S=build/s42f; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
el() { echo $(( $(date +%s)-T0 )); }
F='Gpu.DecodeManyPiecesCombined:Gpu.TunedKernelsAreDeterministic:Gpu.PagedDecodeLongPieces'
for q in 1 4 64; do F="$F:Gpu/*Cases.*/cuda_flash_B*_Lq${q}_*"; done
timeout 110 $S/bin/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$? $(el) s" | tee -a $R/tests.log
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $R/tests.log | head -20
LOW="1,8,1,1,65536,128;1,32,2,1,32768,128;1,8,1,1,16384,128;1,8,1,1,65536,64;1,8,1,1,32768,256;1,16,1,4,65536,128"
DEC="$LOW;8,32,8,1,8192,128;1,32,8,1,32768,128"
n=0
for v in old bin bin old; do
  n=$((n+1))
  timeout 40 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash \
    --decode="$DEC" --paged=16 --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "$v $n rc=$? $(el) s"
done
OUT=$R QUICK=1 T_BENCH=60 T_TORCH=60 DECODE="$LOW" PAGED=16 MIXED="32,8,1,128:1,7,33,100,250,511,777,1024,1500,2048,3000,4096,5000,6144,7000,8192" \
  VARLEN="16,128:2048x8" perf/run_decode.sh $S/bin > $R/run_decode.console 2>&1
echo "run_decode rc=$? $(el) s"
gzip -f $R/tests.log $R/time_*.json
(cd $OUT && tar czf r42f.tgz r42f && rm -rf r42f)
