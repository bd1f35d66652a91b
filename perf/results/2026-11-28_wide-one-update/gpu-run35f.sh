#!/bin/bash
# GPU run 35f: the landed form of the tree reductions (fin2: wide kernel only) against fin (e643d7b): GPU tests,
# A/B of the forced mma.sync rows, the forced suite with torch.
set -u
R=$OUT/r35f; mkdir -p $R
tar xJf build/gpu-s35f.txz -C build; tar xJf build/gpu-s32k.txz
export LD_LIBRARY_PATH=$PWD/build/s32k/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,96;2,16,4096,128;1,16,16384,128;8,32,2048,128"
for r in 1 2 3; do
  for v in fin fin2; do
    timeout 60 build/s35/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-allwarps --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>/dev/null
    echo "time $v $r $(( $(date +%s)-T0 )) s"
  done
done
F='*DeviceCases*cuda_flash_allwarps*:*SequenceCases*cuda_flash_allwarps*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedMatchesDeviceReferenceEverywhere:Gpu.TunedKernelsAreDeterministic'
timeout 200 build/s35/fin2/flashcore_gpu_tests --gtest_brief=1 --gtest_filter="$F" > $R/tests_fin2.log 2>&1
echo "tests fin2 rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_fin2.log; grep -E '^\[  FAILED  \]' $R/tests_fin2.log | head -10
cp -r build/s32k/lib build/s35/fin2/lib
mkdir -p $R/fwd
OUT=$R/fwd NAME=forward-mma-forced BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 \
  SHAPES="1,8,512,64;1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,96;2,16,4096,128;1,16,16384,128;8,32,2048,128" \
  timeout 200 perf/run_forward.sh build/s35/fin2 > $R/fwd/console.log 2>&1
echo "run_forward rc=$? $(( $(date +%s)-T0 )) s"
(cd $OUT && tar czf r35f.tgz r35f && rm -rf r35f)
