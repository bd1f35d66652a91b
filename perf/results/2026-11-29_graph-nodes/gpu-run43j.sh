#!/bin/bash
# GPU run 43j: 98a60ef (the Hopper forward a dependent launch): GPU tests of the tuned backends (graphs with node
# counts, determinism, tuned vs device reference, scores growing across tiles, every cuda_flash case).
set -u
R=$OUT/r43j; mkdir -p $R
tar xJf build/gpu-s43j.txz -C build
S=build/s43j; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
F='Gpu.GraphsCaptured*:Gpu.TunedKernelsAreDeterministic:Gpu.TunedMatchesDeviceReferenceEverywhere:Gpu.ScoresGrowingAcrossKeyTiles:Gpu/DeviceCases.*/cuda_flash_hopper_*:Gpu/VariantCases.*/cuda_flash_hopper_*:Gpu/SequenceCases.*/cuda_flash_hopper_*:Gpu/Fp8Cases.*/cuda_flash_hopper_*'
timeout 230 $S/bin/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$?" | tee -a $R/tests.log
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|graphs:.*differ|tests ran" $R/tests.log | sort | uniq -c | head -20
gzip -f $R/tests.log
(cd $OUT && tar czf r43j.tgz r43j && rm -rf r43j)
