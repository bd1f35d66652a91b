#!/bin/bash
# GPU run 39c: merge2 (LSE store last, acq_rel fences) against merge and main; timelines of merge2; GPU tests
# and memcheck of merge2.
set -u
R=$OUT/r39c; mkdir -p $R
tar xJf build/gpu-s39c.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s39/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,64;2,16,4096,64;4,16,2048,32;1,7,2600,96;2,10,2000,128;2,5,1900,256;4,16,2048,128"
n=0
for r in 1 2; do
  for v in main merge merge2 merge2 merge main; do
    n=$((n+1))
    timeout 100 build/s39/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16,bf16 --causal=0 --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2>$R/err_${v}_$n.txt
    echo "time $v $n rc=$? $(( $(date +%s)-T0 )) s"
  done
done
B=build/s39/merge2
tl() {  # binary shape tail tag
  HOPPER_DEV_SHAPE=$2 HOPPER_DEV_TAIL=$3 timeout 60 $B/$1 timeline > $R/tl_$4.csv 2> $R/tl_$4.err
  echo "timeline $4 rc=$? $(( $(date +%s)-T0 )) s"; head -1 $R/tl_$4.csv
}
tl hopper_dev_tl_hdim64_wg3 4,16,2048,64 1 d64_4x2048_tail
tl hopper_dev_tl_hdim96 1,7,2600,96 1 d96_1x7_tail
tl hopper_dev_tl_hdim128 2,10,2000,128 1 d128_2x10_tail
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
FT='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash*Hq75*'
timeout 120 $SAN --tool memcheck --error-exitcode 9 --print-limit 20 $B/flashcore_gpu_tests --gtest_filter="$FT" --gtest_brief=1 > $R/memcheck.log 2>&1
echo "memcheck rc=$? $(( $(date +%s)-T0 )) s"; tail -3 $R/memcheck.log
F='Gpu/DeviceCases.*/cuda_flash*Hq75*:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCapturedOnOneStreamReplayAtOnce:Gpu.LargeProblemsOnSampledRows'
timeout $(( 560 - ($(date +%s)-T0) )) $B/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_merge2.log 2>&1
echo "tests merge2 rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_merge2.log; grep -E '^\[  FAILED  \]' $R/tests_merge2.log | head -10
grep -c '^\[       OK' $R/tests_merge2.log; tail -2 $R/tests_merge2.log
gzip $R/*.csv $R/*.log $R/*.json
(cd $OUT && tar czf r39c.tgz r39c && rm -rf r39c)
