#!/bin/bash
# GPU run 35b: the landed form of the wide-kernel change (fin) against base: GPU tests, A/B (forced
# cuda-flash-allwarps), the forced mma.sync suite with torch (perf/run_forward.sh).
set -u
R=$OUT/r35b; mkdir -p $R
tar xJf build/gpu-s35b.txz -C build; tar xJf build/gpu-s32k.txz
export LD_LIBRARY_PATH=$PWD/build/s32k/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
F='*DeviceCases*cuda_flash_allwarps*:*SequenceCases*cuda_flash_allwarps*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedMatchesDeviceReferenceEverywhere:Gpu.TunedKernelsAreDeterministic'
timeout 170 build/s35/fin/flashcore_gpu_tests --gtest_brief=1 --gtest_filter="$F" > $R/tests_fin.log 2>&1
echo "tests fin rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_fin.log; grep -E '^\[  FAILED  \]' $R/tests_fin.log | head -10
S="2,16,4096,128;1,16,16384,128;8,32,2048,128;4,16,2048,96;4,16,1024,64;2,16,4096,64;16,16,512,64"
for r in 1 2 3; do
  for v in base fin; do
    timeout 70 build/s35/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-allwarps \
      --dtypes=fp16,bf16 --causal=both --shapes="$S" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2> $R/time_${v}_$r.err
    echo "time $v $r rc=$? $(( $(date +%s)-T0 )) s"
  done
done
cp -r build/s32k/lib build/s35/fin/lib
mkdir -p $R/fwd
OUT=$R/fwd NAME=forward-mma-forced BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 \
  SHAPES="1,8,512,64;1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,96;2,16,4096,128;1,16,16384,128;8,32,2048,128" \
  timeout 330 perf/run_forward.sh build/s35/fin > $R/fwd/console.log 2>&1
echo "run_forward rc=$? $(( $(date +%s)-T0 )) s"; tail -3 $R/fwd/console.log
(cd $OUT && tar czf r35b.tgz r35b && rm -rf r35b)
