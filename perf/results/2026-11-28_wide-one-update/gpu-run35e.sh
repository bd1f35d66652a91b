#!/bin/bash
# GPU run 35e: the online softmax's row max and row sum as pairwise trees (tree) against fin (e643d7b):
# forced mma.sync, Auto (Hopper) and decode rows, 3 alternating rounds; GPU tests of tree.
set -u
R=$OUT/r35e; mkdir -p $R
tar xJf build/gpu-s35e.txz -C build; tar xJf build/gpu-s32k.txz
export LD_LIBRARY_PATH=$PWD/build/s32k/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="1,8,512,64;1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,96;2,16,4096,128;8,32,2048,128"
SA="4,16,1024,64;2,16,4096,64;2,16,4096,128;1,16,16384,128;4,16,2048,256"
DD="8,32,8,1,8192,128;1,32,8,1,32768,128;64,32,8,1,2048,128;8,32,8,4,8192,128"
for r in 1 2 3; do
  for v in fin tree; do
    B=build/s35/$v/flashcore_bench
    timeout 60 $B --device-only --no-check --quick --backends=cuda-flash-allwarps,cuda-flash-warpspec --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_mma_$r.json 2>/dev/null
    timeout 60 $B --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16,bf16 --causal=both --shapes="$SA" --benchmark_color=false --benchmark_format=json > $R/time_${v}_auto_$r.json 2>/dev/null
    timeout 60 $B --device-only --no-check --quick --backends=cuda-flash --decode="$DD" --benchmark_color=false --benchmark_format=json > $R/time_${v}_dec_$r.json 2>/dev/null
    echo "time $v $r $(( $(date +%s)-T0 )) s"
  done
done
F='*DeviceCases*cuda_flash_B*:*DeviceCases*cuda_flash_allwarps*:*DeviceCases*cuda_flash_warpspec*:*VariantCases*cuda_flash_B*:*SequenceCases*cuda_flash_B*:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedKernelsAreDeterministic:Gpu.LargeProblemsOnSampledRows'
left=$(( 570 - ($(date +%s)-T0) ))
timeout $left build/s35/tree/flashcore_gpu_tests --gtest_brief=1 --gtest_filter="$F" > $R/tests_tree.log 2>&1
echo "tests tree rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_tree.log; grep -E '^\[  FAILED  \]' $R/tests_tree.log | head -10
(cd $OUT && tar czf r35e.tgz r35e && rm -rf r35e)
