#!/bin/bash
# GPU run 39b: the tail merge with its loads in flight (merge) against main; timelines of merge; GPU tests of merge.
set -u
R=$OUT/r39b; mkdir -p $R
tar xJf build/gpu-s39b.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s39/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,64;2,16,4096,64;4,16,2048,32;1,16,16384,64;1,7,2600,96;2,10,2000,128;2,5,1900,256;4,16,2048,128"
n=0
for r in 1 2; do
  for v in main merge merge main; do
    n=$((n+1))
    timeout 100 build/s39/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16,bf16 --causal=0 --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2>$R/err_${v}_$n.txt
    echo "time $v $n rc=$? $(( $(date +%s)-T0 )) s"
  done
done
B=build/s39/merge
tl() {  # binary shape tail tag
  HOPPER_DEV_SHAPE=$2 HOPPER_DEV_TAIL=$3 timeout 60 $B/$1 timeline > $R/tl_$4.csv 2> $R/tl_$4.err
  echo "timeline $4 rc=$? $(( $(date +%s)-T0 )) s"; head -1 $R/tl_$4.csv
}
tl hopper_dev_tl_hdim64_wg3 4,16,2048,64 1 d64_4x2048_tail
tl hopper_dev_tl_hdim96 1,7,2600,96 1 d96_1x7_tail
tl hopper_dev_tl_hdim128 2,10,2000,128 1 d128_2x10_tail
F='Gpu/DeviceCases.*/cuda_flash*Hq75*:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCapturedOnOneStreamReplayAtOnce:Gpu.LargeProblemsOnSampledRows'
timeout $(( 560 - ($(date +%s)-T0) )) $B/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_merge.log 2>&1
echo "tests merge rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_merge.log; grep -E '^\[  FAILED  \]' $R/tests_merge.log | head -10
grep -c '^\[       OK' $R/tests_merge.log; tail -2 $R/tests_merge.log
gzip $R/*.csv $R/tests_merge.log $R/*.json
(cd $OUT && tar czf r39b.tgz r39b && rm -rf r39b)
