#!/bin/bash
# GPU run 38d: the tail split (tail) against tT (93677ca), forced Hopper and Auto; memcheck and racecheck on the
# tail-split cases; GPU tests of tail (Hopper and Auto cases, large problems, determinism, graphs).
set -u
R=$OUT/r38d; mkdir -p $R
tar xJf build/gpu-s38d.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s38/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,64;2,16,4096,64;4,16,2048,32;1,16,16384,64;4,12,2048,64;8,16,2048,64;2,10,2000,128;1,7,2600,96"
for r in 1 2 3 4; do
  for v in tT tail; do
    timeout 100 build/s38/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>$R/err_${v}_$r.txt
    echo "time $v $r rc=$? $(( $(date +%s)-T0 )) s"
  done
done
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
FT='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash*Hq75*'
timeout 120 $SAN --tool memcheck --error-exitcode 9 --print-limit 20 build/s38/tail/flashcore_gpu_tests --gtest_filter="$FT" --gtest_brief=1 > $R/memcheck.log 2>&1
echo "memcheck rc=$? $(( $(date +%s)-T0 )) s"; tail -3 $R/memcheck.log
timeout 120 $SAN --tool racecheck --error-exitcode 9 --print-limit 20 build/s38/tail/flashcore_gpu_tests --gtest_filter="$FT" --gtest_brief=1 > $R/racecheck.log 2>&1
echo "racecheck rc=$? $(( $(date +%s)-T0 )) s"; tail -3 $R/racecheck.log
F='Gpu/DeviceCases.*/cuda_flash_hopper_*:Gpu/DeviceCases.*/cuda_flash_B*:Gpu/SequenceCases.*/cuda_flash_hopper_*:Gpu/SequenceCases.*/cuda_flash_B*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCapturedOnOneStreamReplayAtOnce:Gpu.AutomaticChoiceForDeviceData'
timeout $(( 575 - ($(date +%s)-T0) )) build/s38/tail/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_tail.log 2>&1
echo "tests tail rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_tail.log; grep -E '^\[  FAILED  \]' $R/tests_tail.log | head -10
grep -c '^\[       OK' $R/tests_tail.log; tail -2 $R/tests_tail.log
gzip $R/tests_tail.log $R/memcheck.log $R/racecheck.log
(cd $OUT && tar czf r38d.tgz r38d && rm -rf r38d)
