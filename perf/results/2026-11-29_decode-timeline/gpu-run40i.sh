#!/bin/bash
# GPU run 40i: the change as built (merge-ahead split merge; paged K/V without length arrays on the fixed grid):
# GPU tests (decode, sequence, variant, graph, determinism cases of cuda-flash), memcheck on some decode cases,
# decode_dev check, and the paged (8,32,8,1,8192,128) timeline (pages of 16 and 64) with contiguous beside it.
set -u
R=$OUT/r40i; mkdir -p $R
tar xJf build/gpu-s40i.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s40/new/lib:${LD_LIBRARY_PATH:-}
B=build/s40/bin/decode_dev
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
for sh in 16 64 0; do
  if [ $sh = 0 ]; then unset DECODE_DEV_PAGE; else export DECODE_DEV_PAGE=$sh; fi
  DECODE_DEV_SHAPE=8,32,8,1,8192,128 timeout 60 ${B}_tlnew timeline > $R/tl_p$sh.txt 2>&1
  DECODE_DEV_SHAPE=1,32,8,1,32768,128 timeout 60 ${B}_tlnew timeline > $R/tl32k_p$sh.txt 2>&1
done
unset DECODE_DEV_PAGE
timeout 200 ${B}_new check > $R/check.txt 2>&1; echo "check rc=$?" >> $R/check.txt
F='Gpu/SequenceCases.*/cuda_flash_B*:Gpu/VariantCases.*/cuda_flash_B*:Gpu/DeviceCases.*/cuda_flash_B*Lq1_*:Gpu.GraphsCaptured*:Gpu.TunedKernelsAreDeterministic:Gpu.TunedMatchesDeviceReferenceEverywhere'
timeout $(( 480 - ($(date +%s)-T0) )) build/s40/new/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$? $(( $(date +%s)-T0 )) s" >> $R/tests.log
M='Gpu/SequenceCases.*/cuda_flash_B3_Hq8_Hkv2_*page*:Gpu/SequenceCases.*/cuda_flash_B4_Hq4_Hkv2_Lq1_*page16*'
timeout $(( 560 - ($(date +%s)-T0) )) /usr/local/cuda/bin/compute-sanitizer --tool memcheck build/s40/new/flashcore_gpu_tests --gtest_filter="$M" > $R/memcheck.log 2>&1; echo "memcheck rc=$? $(( $(date +%s)-T0 )) s" >> $R/memcheck.log
(cd $OUT && tar czf r40i.tgz r40i && rm -rf r40i)
