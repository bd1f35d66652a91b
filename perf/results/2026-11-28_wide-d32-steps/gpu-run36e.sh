#!/bin/bash
# GPU run 36e: the sequence cases on the wide-warp kernel added to Gpu.LargeProblemsOnSampledRows (every device backend).
set -u
R=$OUT/r36e; mkdir -p $R
tar xJf build/gpu-s36e.txz -C build
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
timeout 400 build/s36/fin/flashcore_gpu_tests --gtest_filter='Gpu.LargeProblemsOnSampledRows' > $R/tests_large.log 2>&1
echo "tests rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) |OK \]' $R/tests_large.log; grep -iE 'failure|error' $R/tests_large.log | head -10
(cd $OUT && tar czf r36e.tgz r36e && rm -rf r36e)
