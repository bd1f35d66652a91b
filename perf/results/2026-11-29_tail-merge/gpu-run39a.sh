#!/bin/bash
# GPU run 39a: GPU tests of main (e21ea9c, 6b34126 never ran on a GPU: the tail split's guards, the shared
# split-merge weights of the mma.sync split-KV merge); item timelines of the Hopper forward (tail split on/off).
set -u
R=$OUT/r39a; mkdir -p $R
tar xJf build/gpu-s39a.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s39/lib
B=build/s39/main
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
tl() {  # binary shape tail tag
  HOPPER_DEV_SHAPE=$2 HOPPER_DEV_TAIL=$3 timeout 60 $B/$1 timeline > $R/tl_$4.csv 2> $R/tl_$4.err
  echo "timeline $4 rc=$? $(( $(date +%s)-T0 )) s"; head -1 $R/tl_$4.csv
}
tl hopper_dev_tl_hdim64_wg3 4,16,2048,64 1 d64_4x2048_tail
tl hopper_dev_tl_hdim64_wg3 4,16,2048,64 0 d64_4x2048_none
tl hopper_dev_tl_hdim64_wg3 2,16,4096,64 1 d64_2x4096_tail
tl hopper_dev_tl_hdim64_wg3 8,16,2048,64 1 d64_8x2048
tl hopper_dev_tl_hdim96 1,7,2600,96 1 d96_1x7_tail
tl hopper_dev_tl_hdim96 1,7,2600,96 0 d96_1x7_none
tl hopper_dev_tl_hdim96 4,16,2048,96 1 d96_4x2048
tl hopper_dev_tl_hdim128 2,10,2000,128 1 d128_2x10_tail
tl hopper_dev_tl_hdim128 2,10,2000,128 0 d128_2x10_none
tl hopper_dev_tl_hdim128 4,16,2048,128 1 d128_4x2048
F='Gpu/DeviceCases.*/cuda_flash*Hq75*:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCapturedOnOneStreamReplayAtOnce:Gpu.LargeProblemsOnSampledRows:Gpu/*Cases.*/cuda_flash_allwarps*Lq1_Lk*:Gpu/*Cases.*/cuda_flash_warpspec*Lq1_Lk*'
timeout $(( 540 - ($(date +%s)-T0) )) $B/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_main.log 2>&1
echo "tests main rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_main.log; grep -E '^\[  FAILED  \]' $R/tests_main.log | head -10
grep -c '^\[       OK' $R/tests_main.log; tail -2 $R/tests_main.log
gzip $R/*.csv $R/tests_main.log
(cd $OUT && tar czf r39a.tgz r39a && rm -rf r39a)
