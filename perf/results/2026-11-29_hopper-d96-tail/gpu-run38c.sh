#!/bin/bash
# GPU run 38c: tT (turns at D = 192/256) against fin again (4 rounds, forced Hopper); the D = 64 three-warpgroup instance
# on head counts whose 192-row items make whole and fractional waves on 132 SMs (fin); GPU tests of tT on the D = 192
# and 256 cases (Hopper and Auto) and the D = 96 ones.
set -u
R=$OUT/r38c; mkdir -p $R
tar xJf build/gpu-s38c.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s38/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,192;4,16,2048,256;2,16,4096,256;8,16,2048,256;16,16,512,256;4,16,1024,192;2,16,4096,192;4,16,2048,128"
SW="4,12,2048,64;4,16,2048,64;4,17,2048,64;4,20,2048,64;4,33,2048,64;4,12,2048,32;4,16,2048,32;4,33,2048,32"
for r in 1 2 3 4; do
  for v in fin tT; do
    timeout 100 build/s38/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-hopper --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>$R/err_${v}_$r.txt
    echo "time $v $r rc=$? $(( $(date +%s)-T0 )) s"
  done
  timeout 60 build/s38/fin/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-hopper --dtypes=fp16 --causal=0 --shapes="$SW" --benchmark_color=false --benchmark_format=json > $R/waves_fin_$r.json 2>$R/err_waves_$r.txt
  echo "waves $r rc=$? $(( $(date +%s)-T0 )) s"
done
F='Gpu/DeviceCases.*/cuda_flash_hopper_*D192*:Gpu/DeviceCases.*/cuda_flash_hopper_*D256*:Gpu/DeviceCases.*/cuda_flash_hopper_*D160*:Gpu/DeviceCases.*/cuda_flash_B*D192*:Gpu/DeviceCases.*/cuda_flash_B*D256*:Gpu/SequenceCases.*/cuda_flash_hopper_*D192*:Gpu/SequenceCases.*/cuda_flash_B*D192*:Gpu/DeviceCases.*/cuda_flash_hopper_*D96*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles'
timeout $(( 560 - ($(date +%s)-T0) )) build/s38/tT/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_tT.log 2>&1
echo "tests tT rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_tT.log; grep -E '^\[  FAILED  \]' $R/tests_tT.log | head -10
grep -c '^\[       OK' $R/tests_tT.log; grep -c '^\[  SKIPPED' $R/tests_tT.log
gzip $R/tests_tT.log
(cd $OUT && tar czf r38c.tgz r38c && rm -rf r38c)
