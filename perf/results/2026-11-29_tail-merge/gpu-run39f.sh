#!/bin/bash
# GPU run 39f: the landed build (fin: the tail merge with its loads in flight) against main; the head-dim sweep and the
# forward suite rows with torch (flash, cuDNN) in the same run; GPU tests and memcheck of fin's tail-split cases.
set -u
R=$OUT/r39f; mkdir -p $R
tar xJf build/gpu-s39f.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s39/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,64;2,16,4096,64;4,16,2048,32;1,7,2600,96;2,10,2000,128;2,5,1900,256;4,16,2048,128"
n=0
for r in 1 2; do
  for v in main fin fin main; do
    n=$((n+1))
    timeout 60 build/s39/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16,bf16 --causal=0 --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2>$R/err_${v}_$n.txt
    echo "time $v $n rc=$? $(( $(date +%s)-T0 )) s"
  done
done
mkdir -p $R/sweep $R/fwd
OUT=$R/sweep NAME=headdims QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" \
  timeout 110 perf/run_forward.sh build/s39/fin > $R/sweep/console.log 2>&1
echo "sweep rc=$? $(( $(date +%s)-T0 )) s"
OUT=$R/fwd NAME=forward QUICK=1 SHAPES="4,16,1024,64;16,16,512,64;2,16,4096,64;1,7,2600,96;2,10,2000,128;2,5,1900,256;2,16,4096,128" \
  timeout 110 perf/run_forward.sh build/s39/fin > $R/fwd/console.log 2>&1
echo "run_forward rc=$? $(( $(date +%s)-T0 )) s"
B=build/s39/fin
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
FT='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash*Hq75*'
timeout 60 $SAN --tool memcheck --error-exitcode 9 --print-limit 20 $B/flashcore_gpu_tests --gtest_filter="$FT" --gtest_brief=1 > $R/memcheck.log 2>&1
echo "memcheck rc=$? $(( $(date +%s)-T0 )) s"; tail -3 $R/memcheck.log
F='Gpu/DeviceCases.*/cuda_flash*Hq75*:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCapturedOnOneStreamReplayAtOnce:Gpu.LargeProblemsOnSampledRows'
timeout $(( 570 - ($(date +%s)-T0) )) $B/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_fin.log 2>&1
echo "tests fin rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_fin.log; grep -E '^\[  FAILED  \]' $R/tests_fin.log | head -10
grep -c '^\[       OK' $R/tests_fin.log; tail -2 $R/tests_fin.log
gzip $R/*.log $R/*.json
(cd $OUT && tar czf r39f.tgz r39f && rm -rf r39f)
