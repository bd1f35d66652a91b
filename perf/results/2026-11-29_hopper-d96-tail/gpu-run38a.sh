#!/bin/bash
# GPU run 38a: the native D = 96 Hopper instance: d96 (3 stages), d96L (3 stages + lazy max), d96Ls2 (2 stages + lazy
# max) against base (780efc9, D = 96 on the D = 128 instance), forced Hopper, rounds alternating; then GPU tests of d96L
# on the D = 96 / 80 cases.
set -u
R=$OUT/r38a; mkdir -p $R
tar xJf build/gpu-s38a.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s38/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,96;2,16,4096,96;8,16,2048,96;1,16,16384,96;4,16,1024,96;16,16,512,96;1,8,2048,96;4,16,2048,80"
for r in 1 2 3; do
  for v in base d96 d96L d96Ls2; do
    timeout 100 build/s38/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-hopper --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>$R/err_${v}_$r.txt
    echo "time $v $r rc=$? $(( $(date +%s)-T0 )) s"
  done
  [ $(( $(date +%s)-T0 )) -gt 330 ] && break
done
F='Gpu/DeviceCases.*/cuda_flash_hopper_*D96*:Gpu/DeviceCases.*/cuda_flash_hopper_*D80*:Gpu/DeviceCases.*/cuda_flash_B*D96*:Gpu/DeviceCases.*/cuda_flash_B*D80*:Gpu/SequenceCases.*/cuda_flash_hopper_*D96*:Gpu/SequenceCases.*/cuda_flash_B*D96*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles'
timeout $(( 560 - ($(date +%s)-T0) )) build/s38/d96L/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_d96L.log 2>&1
echo "tests d96L rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $R/tests_d96L.log; grep -E '^\[  FAILED  \]' $R/tests_d96L.log | head -10
grep -c '^\[       OK' $R/tests_d96L.log
gzip $R/tests_d96L.log
(cd $OUT && tar czf r38a.tgz r38a && rm -rf r38a)
