#!/bin/bash
# GPU run 47b: E2 (issue 12: the Hopper producer's tickets one item ahead) and E3 (issue 11: the decode kernel's
# balanced schedule walked by persistent blocks) in one call, since the device was refused most of the session:
# (1) flashcore_bench ABBA main / comb (= main + E2 + E3, a full build of that tree) on the Hopper short rows
# (E2; E3 does not touch the Hopper kernel) and the decode rows, mixed batch and pages of 16/64 (E3; E2 does not
# touch the decode kernel), so each row's ratio is one experiment's; (2) comb's GPU tests: the ticket paths first
# (large problems, determinism with the new balanced paged case, graphs), decode cases, sequence cases, then the
# Hopper D = 64/128/96/192 cases while time is left.
# Staging (build/s47b -> build/gpu-s47b.txz): main/ = build/s46b/main (HEAD's flashcore_bench and
# flashcore_gpu_tests); comb/ flashcore_bench and flashcore_gpu_tests of the combined tree's own build
# (/work/comb/build/cuda-sm90, stripped); lib/ libbenchmark.
set -u
R=$OUT/r47b; mkdir -p $R
[ -d build/s47b ] || tar xJf build/gpu-s47b.txz -C build
S=build/s47b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
LIMIT=${LIMIT:-580}
SF="16,16,512,64;4,16,1024,64;2,16,4096,64;8,16,1024,128;4,16,2048,96;4,16,2048,192"
DEC="8,32,8,1,8192,128;16,64,8,1,4096,128;8,32,8,4,8192,128"
MIX="32,8,1,128:1,7,33,100,250,511,777,1024,1500,2048,3000,4096,5000,6144,7000,8192"
n=0
for r in 1 2; do
  if (( r == 2 && SECONDS > 170 )); then echo "one round only (${SECONDS}s)"; break; fi
  for v in main comb comb main; do
    n=$((n+1))
    timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16 --causal=both --shapes="$SF" \
      --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
    echo "bench fwd $v $n rc=$? ${SECONDS}s"
    timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --decode="$DEC" --mixed="$MIX" --paged=16,64 \
      --benchmark_color=false --benchmark_format=json > $R/time_${v}_d$n.json 2> $R/err_${v}_d$n.txt
    echo "bench dec $v $n rc=$? ${SECONDS}s"
  done
done
python3 perf/dev/ab_medians.py $R main comb > $R/ab_medians.txt 2>&1 || true
cat $R/ab_medians.txt
F1="*LargeProblems*:*Determin*:*Graphs*:*PagedDecode*:*DecodeMany*:*SequenceArrays*"
timeout $((LIMIT - 200 - SECONDS)) $S/comb/flashcore_gpu_tests --gtest_filter="$F1" > $R/tests_a.log 2>&1
echo "tests_a rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_a.log | head; tail -1 $R/tests_a.log
F2="Gpu/SequenceCases.*/cuda_flash_B*:Gpu/*Cases.*/cuda_flash_B*_Lq1_*:Gpu/*Cases.*/cuda_flash_B*_Lq17_*:Gpu/*Cases.*/cuda_flash_B*_Lq33_*"
timeout $((LIMIT - 110 - SECONDS)) $S/comb/flashcore_gpu_tests --gtest_filter="$F2" > $R/tests_b.log 2>&1
echo "tests_b rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_b.log | head; tail -1 $R/tests_b.log; grep -c "^\[       OK" $R/tests_b.log
FE="Gpu/*Cases.*/cuda_flash_hopper*D64*:Gpu/*Cases.*/cuda_flash_hopper*D96*:Gpu/*Cases.*/cuda_flash_hopper*D192*:Gpu/*Cases.*/cuda_flash_hopper*D128*"
timeout $((LIMIT - 8 - SECONDS)) $S/comb/flashcore_gpu_tests --gtest_filter="$FE" > $R/tests_c.log 2>&1
echo "tests_c rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_c.log | head; tail -1 $R/tests_c.log; grep -c "^\[       OK" $R/tests_c.log
gzip -f $R/*.log $R/*.json 2>/dev/null
(cd $OUT && tar czf r47b.tgz r47b && rm -rf r47b)
