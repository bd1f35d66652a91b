#!/bin/bash
# GPU run 56b: (1) last session's staged GPU tests (graph node counts with the cluster merge, the
# two-piece cluster cases at 32/64 rows; build/s55f = main 34fb90e); (2) issue 19 experiment E1, the wide
# kernel's K/V copies: GPU tests of variant B; A/B of flashcore_bench builds O (main), A (ring depth
# compiled in), B (A + KVTileCopy: whole tiles by pointer steps, the last one by clamped rows, unrolled;
# spill-free at D = 128 on sm_90 only), forced cuda-flash-allwarps, fp16, 3 alternating rounds.
set -u
R=$OUT/r56b; mkdir -p $R
tar xJf build/gpu-s56b.txz -C build
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
L=build/s55f/lib
LD_LIBRARY_PATH=$L timeout 200 build/s55f/flashcore_gpu_tests --gtest_filter='Gpu.Graphs*:Gpu.DecodeTwoPieces*' > $R/tests_s55f.txt 2>&1
echo "s55f tests rc=$?"; grep -E '^\[  (PASSED|FAILED) |^\[==========\]|FAILED' $R/tests_s55f.txt | head
LD_LIBRARY_PATH=$L timeout 240 build/s56b/flashcore_gpu_tests_B --gtest_filter='Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu/DeviceCases.*allwarps*' > $R/tests_B.txt 2>&1
echo "B tests rc=$?"; grep -E '^\[  (PASSED|FAILED) |^\[==========\]|FAILED' $R/tests_B.txt | head
SF="2,16,4096,128;1,16,16384,128;8,32,2048,128;4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,96;4,16,2048,32"
for r in 1 2 3; do for v in O A B; do
  LD_LIBRARY_PATH=$L timeout 60 build/s56b/flashcore_bench_$v --device-only --no-check --quick --backends=cuda-flash-allwarps --dtypes=fp16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>/dev/null
  echo "round $r $v rc=$?"
done; done
python3 perf/dev/ab_medians.py $R O A B | tee $R/ab.md
