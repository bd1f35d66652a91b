#!/bin/bash
# GPU run 59b (fifty-ninth session, issue 19; carry build/gpu-s59b.txz: flashcore_gpu_tests, flashcore_bench and
# perf/dev/flash_dev of main + E3, the warp-specialized producer's copies by KVTileCopy<D, 32>):
# (1) the GPU tests that reach the warp-specialized kernel (forced cuda-flash-warpspec cases, random shapes, large
#     problems on sampled rows, determinism, tuned vs device reference, growing scores);
# (2) compute-sanitizer memcheck of the small forced warp-specialized cases;
# (3) perf/run_forward.sh, the forced mma.sync path beside torch's flash and cuDNN paths; then, if the call has time,
#     racecheck of the cases of (2);
# (4) flash_dev sweep (the main job's launch shapes, warp-specialized against all-warps, after E3).
# Each stage re-packs $OUT/r59b.tgz, so a cut-off call keeps what ran.
set -u
t0=$(date +%s)
R=/tmp/r59b; mkdir -p $R
pack() { (cd /tmp && tar czf $OUT/r59b.tgz r59b); }
el() { echo "$(( $(date +%s) - t0 )) s"; }
tar xJf build/gpu-s59b.txz -C build
S=build/s59b; export LD_LIBRARY_PATH=$PWD/$S/lib
cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
timeout 150 $S/bin/flashcore_gpu_tests \
  --gtest_filter='Gpu/DeviceCases.*warpspec*:Gpu.RandomShapesProperty:Gpu.LargeProblemsOnSampledRows:Gpu.TunedKernelsAreDeterministic:Gpu.TunedMatchesDeviceReferenceEverywhere:Gpu.ScoresGrowingAcrossKeyTiles' \
  > $R/tests.txt 2>&1
echo "tests rc=$? at $(el)"; grep -E '^\[  (PASSED|FAILED) |^\[==========\]|FAILED' $R/tests.txt | head; pack
SAN='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_warpspec*Lq77*:Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_warpspec*Lq113*'
timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 $S/bin/flashcore_gpu_tests --gtest_filter="$SAN" --gtest_brief=1 > $R/memcheck.txt 2>&1
echo "memcheck rc=$? at $(el)"; tail -n 3 $R/memcheck.txt; pack
OUT=$R/fwd NAME=forced-mma BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 timeout $((340 - $(date +%s) + t0)) perf/run_forward.sh $S/bin > $R/fwd.console 2>&1
echo "run_forward rc=$? at $(el)"; grep -E "^\| [0-9]" $R/fwd/*.md | cut -d"|" -f2-5,7,11 | head -34; pack
[ $(( $(date +%s) - t0 )) -lt 300 ] && timeout 30 compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 20 $S/bin/flashcore_gpu_tests --gtest_filter="$SAN" --gtest_brief=1 > $R/racecheck.txt 2>&1
echo "racecheck rc=$? at $(el)"; tail -n 3 $R/racecheck.txt 2>/dev/null; pack
[ $(( $(date +%s) - t0 )) -lt 300 ] && timeout $((340 - $(date +%s) + t0)) $S/bin/flash_dev sweep > $R/sweep.txt 2>&1
echo "sweep rc=$? at $(el)"; grep -E 'B1 H 8 L  512' $R/sweep.txt | head -20; pack
echo "done at $(el)"
