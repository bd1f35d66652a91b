#!/bin/bash
# GPU run 36c: fin36 (landed candidate) against s96 (lazy max at D = 96), s96u (+ full Q·Kᵀ unroll at 96),
# t32 (D = 32 last tile alone), both (s96u + t32): A/B of the forced rows; GPU tests of `both`.
set -u
R=$OUT/r36c; mkdir -p $R
tar xJf build/gpu-s36c.txz -C build; tar xJf build/gpu-s32k.txz
export LD_LIBRARY_PATH=$PWD/build/s32k/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,96;2,16,4096,96;8,16,1024,96;4,16,1024,32;4,16,2048,32;2,16,4096,32;2,16,4096,128;4,16,1024,64"
for r in 1 2 3; do
  for v in fin36 s96 s96u t32 both; do
    timeout 60 build/s36/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-allwarps --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>/dev/null
    echo "time $v $r $(( $(date +%s)-T0 )) s"
  done
done
F='*DeviceCases*cuda_flash_allwarps*:*SequenceCases*cuda_flash_allwarps*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedMatchesDeviceReferenceEverywhere:Gpu.TunedKernelsAreDeterministic'
timeout 200 build/s36/both/flashcore_gpu_tests --gtest_brief=1 --gtest_filter="$F" > $R/tests_both.log 2>&1
echo "tests both rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_both.log; grep -E '^\[  FAILED  \]' $R/tests_both.log | head -10
(cd $OUT && tar czf r36c.tgz r36c && rm -rf r36c)
