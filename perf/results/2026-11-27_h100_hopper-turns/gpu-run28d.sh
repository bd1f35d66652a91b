#!/usr/bin/env bash
# Run 28d: the forward GPU tests (every tuned forward backend, Auto, sequences, variants, FP8, graphs,
# determinism, large problems) on s28a (turns), and scripts/fc gpu-test's racecheck filter.
set -u
tar xJf build/gpu-s28a.txz && rm -rf .g28 && mkdir -p .g28 && cp -r build/s28a/* .g28/ && tar xzf build/gpu-lib.tgz -C .g28
export LD_LIBRARY_PATH=$PWD/.g28/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=$OUT; nvidia-smi --query-gpu=name --format=csv,noheader | tee $R/device.txt
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
FC='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash*Lq77*:Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash*Lq113*:Gpu/VariantCases.MatchesFp64Oracle/cuda_flash*Lq77*:Gpu/SequenceCases.MatchesFp64Oracle/cuda_flash*page16*:Gpu/SequenceCases.MatchesFp64Oracle/cuda_flash*lensk5x700x2048*:Gpu/BackwardCases.MatchesFp64Oracle/cuda_flash*lensq37x1x150*:Gpu/BackwardCases.MatchesFp64Oracle/cuda_flash*lensq0x65x200x3*'
timeout 200 $SAN --tool racecheck --error-exitcode 9 --print-limit 20 .g28/bin/flashcore_gpu_tests --gtest_filter="$FC" --gtest_brief=1 > $R/racecheck-fc.log 2>&1
echo "racecheck rc=$? ${SECONDS}s"; tail -4 $R/racecheck-fc.log
timeout 360 .g28/bin/flashcore_gpu_tests --gtest_filter='*:-*Backward*:*reference*:*portable*' --gtest_brief=1 > $R/tests.log 2>&1
echo "tests rc=$? ${SECONDS}s"; tail -5 $R/tests.log; grep -E "^\[  FAILED" $R/tests.log | head
grep -o "worst/bound [0-9.e+-]*" $R/tests.log | sort -t' ' -k2 -g | tail -3
