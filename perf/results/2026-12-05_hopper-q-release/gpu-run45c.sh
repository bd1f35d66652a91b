#!/bin/bash
# GPU run 45c: the landed build's Hopper cases that run 45b's time limit cut off (sequence layouts, FP8, the variants at
# the head dims whose instances E1 changed: O staged in its own region, D <= 128).
set -u
R=$OUT/r45c; mkdir -p $R
tar xJf build/gpu-s45b.txz -C build
S=build/s45b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
timeout 330 $S/flashcore_gpu_tests --gtest_filter='Gpu/SequenceCases.*/cuda_flash_hopper*:Gpu/Fp8Cases.*/cuda_flash_hopper*:Gpu/VariantCases.*/cuda_flash_hopper*_D32_*:Gpu/VariantCases.*/cuda_flash_hopper*_D64_*:Gpu/VariantCases.*/cuda_flash_hopper*_D96_*:Gpu/VariantCases.*/cuda_flash_hopper*_D128_*:Gpu/VariantCases.*/cuda_flash_hopper*_D40_*:Gpu/VariantCases.*/cuda_flash_hopper*_D80_*' > $R/tests.log 2>&1
echo "tests rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests.log | head; tail -1 $R/tests.log
grep -c "^\[       OK" $R/tests.log
gzip -f $R/*.log
(cd $OUT && tar czf r45c.tgz r45c && rm -rf r45c)
