#!/bin/bash
# GPU run 36a: the wide kernel's two-tile steps at D <= 64 (pair: chain reductions; pairT: trees) against
# fin2 (c96b2c0's kernels): A/B of the forced mma.sync rows, GPU tests of both new builds.
set -u
R=$OUT/r36a; mkdir -p $R
tar xJf build/gpu-s36a.txz -C build; tar xJf build/gpu-s32k.txz
export LD_LIBRARY_PATH=$PWD/build/s32k/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,64;1,16,16384,64;4,16,2048,32;2,16,4096,32;2,16,4096,128;4,16,2048,96"
for r in 1 2 3; do
  for v in fin2 pair pairT; do
    timeout 60 build/s36/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-allwarps --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>/dev/null
    echo "time $v $r $(( $(date +%s)-T0 )) s"
  done
done
F='*DeviceCases*cuda_flash_allwarps*:*SequenceCases*cuda_flash_allwarps*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedMatchesDeviceReferenceEverywhere:Gpu.TunedKernelsAreDeterministic'
timeout 200 build/s36/pair/flashcore_gpu_tests --gtest_brief=1 --gtest_filter="$F" > $R/tests_pair.log 2>&1
echo "tests pair rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_pair.log; grep -E '^\[  FAILED  \]' $R/tests_pair.log | head -10
(cd $OUT && tar czf r36a.tgz r36a && rm -rf r36a)
