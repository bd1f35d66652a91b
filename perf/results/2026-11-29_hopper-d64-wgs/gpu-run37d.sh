#!/bin/bash
# GPU run 37d: the landed build (three-warpgroup D = 64 instance by shape, with the lazy max): GPU tests (Hopper, Auto,
# the large and growing-score cases), the D = 64 forward rows and the head-dim sweep with torch (flash, cuDNN).
set -u
R=$OUT/r37d; mkdir -p $R
tar xJf build/gpu-s37d.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s37/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
cp -r build/s37/lib build/s37/fin/lib
mkdir -p $R/fwd $R/sweep
OUT=$R/fwd NAME=forward-d64 QUICK=1 SHAPES="1,8,1024,64;1,8,2048,64;4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,64;8,16,2048,64;1,16,16384,64" \
  timeout 200 perf/run_forward.sh build/s37/fin > $R/fwd/console.log 2>&1
echo "run_forward rc=$? $(( $(date +%s)-T0 )) s"
OUT=$R/sweep NAME=headdims QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" \
  timeout 200 perf/run_forward.sh build/s37/fin > $R/sweep/console.log 2>&1
echo "sweep rc=$? $(( $(date +%s)-T0 )) s"
F='Gpu/DeviceCases.*/cuda_flash_hopper_*:Gpu/SequenceCases.*/cuda_flash_hopper_*:Gpu/DeviceCases.*/cuda_flash_B*_D64*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedKernelsAreDeterministic'
timeout 400 build/s37/fin/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_fin.log 2>&1
echo "tests fin rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_fin.log; grep -E '^\[  FAILED  \]' $R/tests_fin.log | head -10
grep -c '^\[       OK' $R/tests_fin.log
gzip $R/tests_fin.log
(cd $OUT && tar czf r37d.tgz r37d && rm -rf r37d)
