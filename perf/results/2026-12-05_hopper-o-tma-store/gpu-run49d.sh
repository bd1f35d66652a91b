#!/bin/bash
# GPU run 49d (fiftieth session): 49a and 49b in one call (the device pool refused starts again; one call saves a
# start): E5 + E6's tests (graphs and determinism, `hopper_dev check` with E5's run-time guard, the oracle cases of
# the kernels E5 and E6 changed, trimmed to 150 s), then E6 against E5 by `hopper_dev time`, ABBA once at Hopper
# D = 64 and once with the mma.sync all-warps kernel forced, then the rest of the tests if time is left.
# Staging (build/gpu-s49d.txz, 14.3 MB): s49d/ flashcore_gpu_tests and hopper_dev_e6 of 49a's build (e6-finish),
# hopper_dev_e5 of 49b's (the same harness against E5's library), lib/.
set -u
R=$OUT/r49d; mkdir -p $R
tar xJf build/gpu-s49d.txz -C build
S=build/s49d; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
LIMIT=${LIMIT:-575}
timeout 120 $S/flashcore_gpu_tests --gtest_filter="*Graphs*:*TunedKernelsAreDeterministic*" > $R/tests_graphs.log 2>&1
echo "graphs/determinism rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_graphs.log | head
timeout 90 $S/hopper_dev_e6 check > $R/check.log 2>&1; echo "check rc=$? ${SECONDS}s"; grep -c "^ok" $R/check.log; grep -i "fail" $R/check.log | head
FD="Gpu/*Cases.*/cuda_flash_hopper*_D64_*:Gpu/*Cases.*/cuda_flash_hopper*_D40_*:Gpu/*Cases.*/cuda_flash_hopper*_D8_*:Gpu/*Cases.*/cuda_flash_hopper*_D128_*:Gpu/*Cases.*/cuda_flash_allwarps*_D64_*:Gpu/*Cases.*/cuda_flash_allwarps*_D128_*:Gpu/*Cases.*/cuda_flash_warpspec*_D64_*:Gpu/*Cases.*/cuda_flash_allwarps*_D32_*"
timeout 150 $S/flashcore_gpu_tests --gtest_filter="$FD" --gtest_brief=1 > $R/tests_cases.log 2>&1
echo "cases rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED|tests ran" $R/tests_cases.log | head
grep -cE "^\[       OK" $R/tests_cases.log
n=0
for v in e5 e6 e6 e5; do
  n=$((n+1)); [ $((LIMIT - SECONDS)) -gt 60 ] || break
  HOPPER_DEV_D=64 timeout 80 $S/hopper_dev_$v time > $R/hopper_${v}_$n.md 2>&1; echo "hopper $v $n rc=$? ${SECONDS}s"
done
for v in e5 e6 e6 e5; do
  n=$((n+1)); [ $((LIMIT - SECONDS)) -gt 60 ] || break
  HOPPER_DEV_VARIANT=allwarps timeout 80 $S/hopper_dev_$v time > $R/allwarps_${v}_$n.md 2>&1; echo "allwarps $v $n rc=$? ${SECONDS}s"
done
python3 perf/dev/hopper_dev_ab.py $R hopper e5 e6 | tee $R/ab_hopper.txt
python3 perf/dev/hopper_dev_ab.py $R allwarps e5 e6 | tee $R/ab_allwarps.txt
if [ $((LIMIT - 10 - SECONDS)) -gt 20 ]; then
  timeout $((LIMIT - 10 - SECONDS)) $S/flashcore_gpu_tests --gtest_filter="*TunedMatchesDeviceReferenceEverywhere*:*RandomShapesProperty*" > $R/tests_rest.log 2>&1
  echo "rest rc=$? ${SECONDS}s"; grep -E "^\[ +(OK|FAILED) |^\[  (PASSED|FAILED)" $R/tests_rest.log | head
fi
gzip -f $R/*.log
(cd $OUT && tar czf r49d.tgz r49d && rm -rf r49d)
