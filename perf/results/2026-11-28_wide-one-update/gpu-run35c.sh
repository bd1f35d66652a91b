#!/bin/bash
# GPU run 35c: D = 96 Q in registers with halves (q96, q96L), D = 64 halves (h64) against fin (e643d7b).
set -u
R=$OUT/r35c; mkdir -p $R
tar xJf build/gpu-s35c.txz -C build; tar xJf build/gpu-s32k.txz
export LD_LIBRARY_PATH=$PWD/build/s32k/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
S="4,16,2048,96;4,16,1024,64;2,16,4096,64;16,16,512,64;2,16,4096,128"
for r in 1 2 3 4; do
  for v in fin q96 q96L h64; do
    timeout 70 build/s35/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-allwarps \
      --dtypes=fp16,bf16 --causal=both --shapes="$S" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2> $R/time_${v}_$r.err
    echo "time $v $r rc=$? $(( $(date +%s)-T0 )) s"
  done
done
F='*DeviceCases*cuda_flash_allwarps*D96*:*DeviceCases*cuda_flash_allwarps*D80*:*SequenceCases*cuda_flash_allwarps*D96*:Gpu.LargeProblemsOnSampledRows:Gpu.TunedMatchesDeviceReferenceEverywhere'
timeout 170 build/s35/q96/flashcore_gpu_tests --gtest_brief=1 --gtest_filter="$F" > $R/tests_q96.log 2>&1
echo "tests q96 rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_q96.log; grep -E '^\[  FAILED  \]' $R/tests_q96.log | head -10
(cd $OUT && tar czf r35c.tgz r35c && rm -rf r35c)
