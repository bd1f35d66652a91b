#!/bin/bash
# GPU run 37f: the final build (ef1a8c0: causal threshold 2048, padding rule): GPU tests (growing scores with the
# 576-query D = 64 case, D = 64 Hopper and Auto cases), the forward suite and the D = 64 rows and the head-dim sweep
# with torch (flash, cuDNN) in the same run.
set -u
R=$OUT/r37f; mkdir -p $R
tar xJf build/gpu-s37f.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s37/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
cp -r build/s37/lib build/s37/fin/lib
F='Gpu.ScoresGrowingAcrossKeyTiles:Gpu/DeviceCases.*/cuda_flash_hopper_*D64*:Gpu/DeviceCases.*/cuda_flash_B*_D64*:Gpu/SequenceCases.*/cuda_flash_hopper_*D64*'
timeout 150 build/s37/fin/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_fin.log 2>&1
echo "tests fin rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_fin.log; grep -E '^\[  FAILED  \]' $R/tests_fin.log | head -10
gzip $R/tests_fin.log
mkdir -p $R/fwd $R/sweep
OUT=$R/fwd NAME=forward QUICK=1 SHAPES="1,8,512,64;1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,64;8,16,2048,64;1,16,16384,64;2,16,4096,128;1,16,16384,128;8,32,2048,128" \
  timeout 200 perf/run_forward.sh build/s37/fin > $R/fwd/console.log 2>&1
echo "run_forward rc=$? $(( $(date +%s)-T0 )) s"
OUT=$R/sweep NAME=headdims QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" \
  timeout 150 perf/run_forward.sh build/s37/fin > $R/sweep/console.log 2>&1
echo "sweep rc=$? $(( $(date +%s)-T0 )) s"
(cd $OUT && tar czf r37f.tgz r37f && rm -rf r37f)
