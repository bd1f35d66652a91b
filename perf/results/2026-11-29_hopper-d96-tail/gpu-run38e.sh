#!/bin/bash
# GPU run 38e: tail2 (the tail split as its own kernel instance) against tT (93677ca), cuda-flash; GPU tests of tail2
# (tail-split cases, determinism, graphs, the Hopper variant and sequence cases at D = 64/128: the dispatch changed);
# the head-dim sweep and D = 64/96 rows with torch (flash, cuDNN) in the same run.
set -u
R=$OUT/r38e; mkdir -p $R
tar xJf build/gpu-s38e.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s38/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,64;2,16,4096,64;4,16,2048,32;1,16,16384,64;4,12,2048,64;2,10,2000,128;1,7,2600,96"
for r in 1 2 3; do
  for v in tT tail2; do
    timeout 100 build/s38/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>$R/err_${v}_$r.txt
    echo "time $v $r rc=$? $(( $(date +%s)-T0 )) s"
  done
done
cp -r build/s38/lib build/s38/tail2/lib
mkdir -p $R/sweep $R/fwd
OUT=$R/sweep NAME=headdims QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" \
  timeout 100 perf/run_forward.sh build/s38/tail2 > $R/sweep/console.log 2>&1
echo "sweep rc=$? $(( $(date +%s)-T0 )) s"
OUT=$R/fwd NAME=forward QUICK=1 SHAPES="4,16,1024,64;16,16,512,64;2,16,4096,64;8,16,2048,64;1,16,16384,64;2,16,4096,96;16,16,512,96;2,16,4096,128" \
  timeout 100 perf/run_forward.sh build/s38/tail2 > $R/fwd/console.log 2>&1
echo "run_forward rc=$? $(( $(date +%s)-T0 )) s"
F='Gpu/DeviceCases.*/cuda_flash*Hq75*:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCapturedOnOneStreamReplayAtOnce:Gpu/VariantCases.*/cuda_flash_hopper_*D64*:Gpu/VariantCases.*/cuda_flash_hopper_*D128*:Gpu/SequenceCases.*/cuda_flash_hopper_*D128*:Gpu/SequenceCases.*/cuda_flash_hopper_*D64*:Gpu.LargeProblemsOnSampledRows'
timeout $(( 400 - ($(date +%s)-T0) )) build/s38/tail2/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_tail2.log 2>&1
echo "tests tail2 rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_tail2.log; grep -E '^\[  FAILED  \]' $R/tests_tail2.log | head -10
grep -c '^\[       OK' $R/tests_tail2.log; tail -2 $R/tests_tail2.log
gzip $R/tests_tail2.log
(cd $OUT && tar czf r38e.tgz r38e && rm -rf r38e)
