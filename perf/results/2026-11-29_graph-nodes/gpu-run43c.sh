#!/bin/bash
# GPU run 43c: a captured fixed-grid decode split merged by the combine kernel (the last block's arithmetic),
# the decode kernel allowing dependents after its key loop (working tree after ee07ea8): GPU tests (graph vs eager
# bits), decode_dev merge old (run 43b's build: dependents allowed at the start) / new, suite ABBA old (ee07ea8) /
# new, run_decode.sh with torch.
set -u
R=$OUT/r43c; mkdir -p $R
tar xJf build/gpu-s43c.txz -C build
S=build/s43c; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
F='Gpu.PagedDecodeLongPieces:Gpu.DecodeManyPiecesCombined:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCaptured*'
for q in 1 4 13 64; do F="$F:Gpu/*Cases.*/cuda_flash_B*_Lq${q}_*"; done
timeout 120 $S/bin/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$? $(el) s" | tee -a $R/tests.log
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|graphs:" $R/tests.log | head -30
DECODE_DEV_ROUNDS=1 timeout 80 $S/old/decode_dev merge > $R/merge_old.txt 2>&1; echo "merge old rc=$? $(el) s"
DECODE_DEV_ROUNDS=1 timeout 80 $S/bin/decode_dev merge > $R/merge_new.txt 2>&1; echo "merge new rc=$? $(el) s"
paste -d'\n' $R/merge_old.txt $R/merge_new.txt | head -40
LOW="1,8,1,1,65536,128;1,32,2,1,32768,128;1,8,1,1,16384,128;1,8,1,1,65536,64"
DEC="8,32,8,1,8192,128;1,32,8,1,32768,128;64,32,8,1,2048,128;16,64,8,1,4096,128;8,32,8,4,8192,128;8,32,8,1,8192,64;4,32,8,1,8192,256;$LOW"
n=0
for v in old bin bin old; do
  n=$((n+1))
  timeout 40 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash \
    --decode="$DEC" --paged=16 --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "$v $n rc=$? $(el) s"
done
OUT=$R QUICK=1 T_BENCH=60 T_TORCH=90 DECODE="$DEC" PAGED=16,64 timeout 200 perf/run_decode.sh $S/bin > $R/run_decode.console 2>&1
echo "run_decode rc=$? $(el) s"
grep -A40 "^| " $R/*_decode.md | head -60
gzip -f $R/tests.log
(cd $OUT && tar czf r43c.tgz r43c && rm -rf r43c)
