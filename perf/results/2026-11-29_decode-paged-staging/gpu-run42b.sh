#!/bin/bash
# GPU run 42b: 5bf14c0 + the long-piece paged GPU test (new: block-table entries staged a ring ahead, one block per SM
# at every page size, the merges in decode/merge.cuh) against 8cefba5 (old): the CLI's validated paged decode runs
# (pieces of > 16 tiles), the decode suite's rows ABBA, perf/run_decode.sh with torch on new, decode_dev check, the
# decode GPU tests (every cuda-flash case of Lq <= 64, the long-piece test, determinism, graphs), decode_dev pages.
set -u
R=$OUT/r42b; mkdir -p $R
tar xJf build/gpu-s42b.txz -C build
S=build/s42b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
el() { echo $(( $(date +%s)-T0 )); }
TIMEFORMAT='process wall %R s'
run() { echo "== flashcore $*"; time timeout 40 $S/bin/flashcore "$@"; echo "rc=$?"; }
{ run -b 8 --hq 32 --hkv 8 --seqlen-q 1 --seqlen-k 8192 -d 128 --page-size 16
  run -b 2 --hq 16 --hkv 2 --seqlen-q 1 --seqlen-k 40000 -d 256 --page-size 16
  run -b 4 --hq 32 --hkv 8 --seqlen-q 4 --seqlen-k 20000 -d 128 --page-size 32 --causal
  run -b 2 --hq 16 --hkv 2 --seqlen-q 1 --seqlen-k 70000 -d 64 --page-size 48; } > $R/cli.txt 2>&1
echo "cli $(el) s"
DEC="8,32,8,1,8192,128;1,32,8,1,32768,128;64,32,8,1,2048,128;16,64,8,1,4096,128;8,32,8,4,8192,128;8,32,8,1,8192,64;8,32,8,1,8192,256;1,8,1,1,65536,128"
MIX="32,8,1,128:1,7,33,100,250,511,777,1024,1500,2048,3000,4096,5000,6144,7000,8192"
n=0
for v in old bin bin old; do
  n=$((n+1))
  timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash \
    --decode="$DEC" --paged=16,32,64 --mixed="$MIX" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "$v $n rc=$? $(el) s"
done
OUT=$R QUICK=1 T_BENCH=120 T_TORCH=120 perf/run_decode.sh $S/bin > $R/run_decode.console 2>&1
echo "run_decode rc=$? $(el) s"
timeout 200 $S/bin/decode_dev check > $R/check.txt 2>&1; echo "check rc=$? $(el) s" | tee -a $R/check.txt
F='Gpu.PagedDecodeLongPieces:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCaptured*'
for q in 1 2 3 4 13 17 31 33 64; do F="$F:Gpu/*Cases.*/cuda_flash_B*_Lq${q}_*"; done
timeout $(( 540 - $(el) )) $S/bin/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$? $(el) s" | tee -a $R/tests.log
[ $(el) -lt 560 ] && { timeout 30 $S/bin/decode_dev pages > $R/pages_new.txt 2>&1; echo "pages $(el) s"; }
gzip -f $R/tests.log $R/time_*.json
(cd $OUT && tar czf r42b.tgz r42b && rm -rf r42b)
