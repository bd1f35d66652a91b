#!/bin/bash
# GPU run 36d: the landed build (fin: two-tile steps at D = 32, lazy max + full Q·Kᵀ unroll at D = 96): GPU tests
# (forced all-warps filter, with the D = 96 growing-scores case), the forced mma.sync suite with torch.
set -u
R=$OUT/r36d; mkdir -p $R
tar xJf build/gpu-s36d.txz -C build; tar xJf build/gpu-s32k.txz
export LD_LIBRARY_PATH=$PWD/build/s32k/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
F='*DeviceCases*cuda_flash_allwarps*:*SequenceCases*cuda_flash_allwarps*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedMatchesDeviceReferenceEverywhere:Gpu.TunedKernelsAreDeterministic'
timeout 240 build/s36/fin/flashcore_gpu_tests --gtest_brief=1 --gtest_filter="$F" > $R/tests_fin.log 2>&1
echo "tests fin rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_fin.log; grep -E '^\[  FAILED  \]' $R/tests_fin.log | head -10
cp -r build/s32k/lib build/s36/fin/lib
mkdir -p $R/fwd
OUT=$R/fwd NAME=forward-mma-forced BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 \
  SHAPES="1,8,512,64;1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,96;2,16,4096,128;1,16,16384,128;8,32,2048,128" \
  timeout 200 perf/run_forward.sh build/s36/fin > $R/fwd/console.log 2>&1
echo "run_forward rc=$? $(( $(date +%s)-T0 )) s"
(cd $OUT && tar czf r36d.tgz r36d && rm -rf r36d)
