#!/bin/bash
# GPU run 48h: E5 with the plan's rule (TMA stores on causal problems and the two-warpgroup instance) and the run-time
# guard (a plan run into another output stores by the warps): the project's graph and determinism tests, and hopper_dev
# check (whose graph check replays one plan into a second output) on the D = 64 cases it reaches in the time given.
set -u
R=$OUT/r48h; mkdir -p $R
tar xJf build/gpu-s48h.txz -C build
S=build/s48h; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
timeout 70 $S/flashcore_gpu_tests --gtest_filter="*Graphs*:*TunedKernelsAreDeterministic*" > $R/tests.log 2>&1
echo "tests rc=$? ${SECONDS}s"; grep -E "^\[ +(OK|FAILED) |^\[  (PASSED|FAILED)" $R/tests.log | head
timeout 40 $S/hopper_dev_e5 check > $R/check.log 2>&1; echo "check rc=$? ${SECONDS}s"; cut -c1-120 $R/check.log | head -14
gzip -f $R/*.log
(cd $OUT && tar czf r48h.tgz r48h && rm -rf r48h)
