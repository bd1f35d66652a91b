#!/bin/bash
# GPU run 49a (prepared in the forty-ninth session, when no device was lent): the tests of E5 + E6 on one build
# (branch e6-finish: the plan split 9f51239, then E5 (O by TMA stores at D = 64), E6 (the
# softmax finish without IEEE division)). (1) the graph and determinism tests (not reached in run 48g), (2)
# hopper_dev check (its graph check replays one plan into a second output: E5's run-time guard), (3) the
# oracle cases of the kernels E6 changed (Hopper, mma.sync all-warps and warp-specialized) at D = 64 and 128,
# the Hopper D <= 64 cases (E5's instances), then whatever time is left of "tuned matches the device reference".
# Staging (build/gpu-s49a.txz, `tar cf - s49a | xz -9 -T1`): s49a/ flashcore_bench, flashcore_gpu_tests and
# hopper_dev_e6 of that build (build/cuda-sm90 at e6-finish's sources as this session left them; hopper_dev by perf/dev/build_decode_dev.sh HARNESS=hopper_dev),
# stripped; lib/ libbenchmark.so.1debian. Carry build/gpu-s49a.txz (10.6 MB; the tree plus the carry must stay
# under 64 MiB).
set -u
R=$OUT/r49a; mkdir -p $R
tar xJf build/gpu-s49a.txz -C build
S=build/s49a; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
LIMIT=${LIMIT:-570}
timeout 150 $S/flashcore_gpu_tests --gtest_filter="*Graphs*:*TunedKernelsAreDeterministic*" > $R/tests_graphs.log 2>&1
echo "graphs/determinism rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_graphs.log | head
timeout 120 $S/hopper_dev_e6 check > $R/check.log 2>&1; echo "check rc=$? ${SECONDS}s"; grep -c "^ok" $R/check.log; grep -i "fail" $R/check.log | head
FD="Gpu/*Cases.*/cuda_flash_hopper*_D64_*:Gpu/*Cases.*/cuda_flash_hopper*_D40_*:Gpu/*Cases.*/cuda_flash_hopper*_D8_*:Gpu/*Cases.*/cuda_flash_hopper*_D128_*:Gpu/*Cases.*/cuda_flash_allwarps*_D64_*:Gpu/*Cases.*/cuda_flash_allwarps*_D128_*:Gpu/*Cases.*/cuda_flash_warpspec*_D64_*:Gpu/*Cases.*/cuda_flash_allwarps*_D32_*"
timeout $((LIMIT - 60 - SECONDS)) $S/flashcore_gpu_tests --gtest_filter="$FD" --gtest_brief=1 > $R/tests_cases.log 2>&1
echo "cases rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED|tests ran" $R/tests_cases.log | head
if [ $((LIMIT - 10 - SECONDS)) -gt 20 ]; then
  timeout $((LIMIT - 10 - SECONDS)) $S/flashcore_gpu_tests --gtest_filter="*TunedMatchesDeviceReferenceEverywhere*:*RandomShapesProperty*" > $R/tests_rest.log 2>&1
  echo "rest rc=$? ${SECONDS}s"; grep -E "^\[ +(OK|FAILED) |^\[  (PASSED|FAILED)" $R/tests_rest.log | head
fi
gzip -f $R/*.log
(cd $OUT && tar czf r49a.tgz r49a && rm -rf r49a)
