#!/bin/bash
# GPU run 37c: GPU tests of fin (the plan picks the three-warpgroup D = 64 instance by shape); then w3L (fin with the
# lazy max on that instance) against fin, forced Hopper.
set -u
R=$OUT/r37c; mkdir -p $R
tar xJf build/gpu-s37c.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s37/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="2,16,4096,64;4,16,2048,64;8,16,2048,64;1,16,16384,64;16,16,512,64;4,16,1024,64"
for r in 1 2 3; do
  for v in fin w3L; do
    timeout 90 build/s37/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-hopper --dtypes=fp16,bf16 --causal=0 --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>$R/err_${v}_$r.txt
    echo "time $v $r rc=$? $(( $(date +%s)-T0 )) s"
  done
done
F='Gpu/DeviceCases.*/cuda_flash_hopper_*:Gpu/DeviceCases.*/cuda_flash_B*:Gpu/SequenceCases.*/cuda_flash_hopper_*:Gpu/SequenceCases.*/cuda_flash_B*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedMatchesDeviceReferenceEverywhere:Gpu.TunedKernelsAreDeterministic:Gpu.AutomaticChoiceForDeviceData'
timeout 450 build/s37/fin/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_fin.log 2>&1
echo "tests fin rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $R/tests_fin.log; grep -E '^\[  FAILED  \]' $R/tests_fin.log | head -10
grep -c '^\[       OK' $R/tests_fin.log
gzip $R/tests_fin.log
(cd $OUT && tar czf r37c.tgz r37c && rm -rf r37c)
