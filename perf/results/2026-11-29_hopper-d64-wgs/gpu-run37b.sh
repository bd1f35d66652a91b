#!/bin/bash
# GPU run 37b: fin (the plan picks the three-warpgroup D = 64 instance by shape) against base (b6171e1), Auto
# (cuda-flash) and forced Hopper; GPU tests of fin; the D = 64 forward rows with torch (flash, cuDNN).
set -u
R=$OUT/r37b; mkdir -p $R
tar xJf build/gpu-s37b.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s37/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,64;8,16,2048,64;1,16,16384,64;1,8,2048,64;1,8,1024,64;4,16,2048,32"
for r in 1 2 3; do
  for v in base fin; do
    timeout 90 build/s37/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash,cuda-flash-hopper --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>$R/err_${v}_$r.txt
    echo "time $v $r rc=$? $(( $(date +%s)-T0 )) s"
  done
done
F='*/cuda_flash_hopper_*:*/cuda_flash_B*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedMatchesDeviceReferenceEverywhere:Gpu.TunedKernelsAreDeterministic:Gpu.RandomShapesProperty:Gpu.GraphsCapturedOnOneStreamReplayAtOnce:Gpu.AutomaticChoiceForDeviceData'
timeout 330 build/s37/fin/flashcore_gpu_tests --gtest_brief=1 --gtest_filter="$F" > $R/tests_fin.log 2>&1
echo "tests fin rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_fin.log; grep -E '^\[  FAILED  \]' $R/tests_fin.log | head -10
cp -r build/s37/lib build/s37/fin/lib
mkdir -p $R/fwd
OUT=$R/fwd NAME=forward-d64 QUICK=1 SHAPES="1,8,1024,64;1,8,2048,64;4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,64;8,16,2048,64;1,16,16384,64" \
  timeout 200 perf/run_forward.sh build/s37/fin > $R/fwd/console.log 2>&1
echo "run_forward rc=$? $(( $(date +%s)-T0 )) s"
(cd $OUT && tar czf r37b.tgz r37b && rm -rf r37b)
