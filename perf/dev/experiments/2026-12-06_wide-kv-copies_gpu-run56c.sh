#!/bin/bash
# GPU run 56c, issue 19 (staged in the fifty-sixth session, build/gpu-s56c.txz; no machine came for it then):
# the wide kernel's K/V copies. Builds (flashcore_bench relinked with each variant's forward instances and plan;
# build/s56c/commit): O = main 3848200, R = main 932bf6f (KVTileCopy at D = 64/96/128, landed), C = R with the
# next tile's copies issued after the Q·Kᵀ MMAs (perf/dev/experiments/2026-12-06_wide-fill-after-qk.patch).
# (1) GPU tests of R that reach the wide kernel; (2) A/B O/R/C alternated twice, forced cuda-flash-allwarps,
# fp16, causal and not; (3) GPU tests of C (the large problems); (4) perf/run_forward.sh with R
# (BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec), torch's flash and cuDNN paths in the same run.
# Each stage re-packs $OUT/r56c.tgz, so a cut-off call keeps what ran.
set -u
R=/tmp/r56c; mkdir -p $R
pack() { (cd /tmp && tar czf $OUT/r56c.tgz r56c); }
tar xJf build/gpu-s56c.txz -C build
S=build/s56c; export LD_LIBRARY_PATH=$PWD/$S/lib
cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
timeout 200 $S/flashcore_gpu_tests_R --gtest_filter='Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu/DeviceCases.*allwarps*:Gpu.TunedKernelsAreDeterministic' > $R/tests_R.txt 2>&1
echo "R tests rc=$?"; grep -E '^\[  (PASSED|FAILED) |^\[==========\]|FAILED' $R/tests_R.txt | head; pack
SF="2,16,4096,128;1,16,16384,128;8,32,2048,128;4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,96;4,16,2048,32"
for r in 1 2; do for v in O R C; do
  timeout 60 $S/flashcore_bench_$v --device-only --no-check --quick --backends=cuda-flash-allwarps --dtypes=fp16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>/dev/null
  echo "round $r $v rc=$?"
done; done
python3 perf/dev/ab_medians.py $R O R C | tee $R/ab.md; pack
timeout 120 $S/flashcore_gpu_tests_C --gtest_filter='Gpu.LargeProblemsOnSampledRows' > $R/tests_C.txt 2>&1
echo "C tests rc=$?"; grep -E '^\[  (PASSED|FAILED) |FAILED' $R/tests_C.txt | head -5; pack
mkdir -p $S/bin_R && cp $S/flashcore_bench_R $S/bin_R/flashcore_bench
OUT=$R/fwd_R NAME=forced-mma BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 timeout 200 perf/run_forward.sh $S/bin_R > $R/fwd_R.console 2>&1
echo "run_forward R rc=$?"; grep -E "^\| [0-9]" $R/fwd_R/*.md | cut -d"|" -f2-5,7,11 | head -34; pack
