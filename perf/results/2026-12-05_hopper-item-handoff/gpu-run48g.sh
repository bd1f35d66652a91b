#!/bin/bash
# GPU run 48g: experiment E5 (O by TMA stores at D = 64; uncommitted tree on 8d31d76+): (1) hopper_dev check (the plan's
# choice: TMA where it can); (2) hopper_dev ostores: warps' stores against TMA in one binary (launch_override.o_stores),
# fp16 then bf16; (3) GPU tests on the E5 build: tickets, graphs, determinism, large problems, random shapes and variants,
# tuned vs device reference, then the Hopper cases of the D = 64 instances (D 33..64 and small D = 32 problems),
# racecheck and synccheck on small D = 64 cases, then the other Hopper cases while time is left.
set -u
R=$OUT/r48g; mkdir -p $R
tar xJf build/gpu-s48g.txz -C build
S=build/s48g; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
LIMIT=${LIMIT:-440}
timeout 90 $S/hopper_dev_e5 check > $R/check.log 2>&1; echo "check rc=$? ${SECONDS}s"; grep -c "^ok" $R/check.log; grep "^FAIL" $R/check.log | head -5; tail -2 $R/check.log
timeout 90 $S/hopper_dev_e5 ostores > $R/ostores_fp16.md 2>&1; echo "ostores fp16 rc=$? ${SECONDS}s"; cat $R/ostores_fp16.md | cut -c1-140
HOPPER_DEV_BF16=1 timeout 90 $S/hopper_dev_e5 ostores > $R/ostores_bf16.md 2>&1; echo "ostores bf16 rc=$? ${SECONDS}s"; cat $R/ostores_bf16.md | cut -d'|' -f2-6
F1="*TunedKernelsAreDeterministic*:*Graphs*:*LargeProblems*:*RandomShapesProperty*:*RandomVariantsProperty*:*TunedMatchesDeviceReferenceEverywhere*"
timeout $((LIMIT - 200 - SECONDS)) $S/flashcore_gpu_tests --gtest_filter="$F1" > $R/tests_a.log 2>&1
echo "tests_a rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_a.log | head; tail -1 $R/tests_a.log
FD="Gpu/*Cases.*/cuda_flash_hopper*_D64_*:Gpu/*Cases.*/cuda_flash_hopper*_D40_*:Gpu/*Cases.*/cuda_flash_hopper*_D56_*:Gpu/*Cases.*/cuda_flash_hopper*_D48_*:Gpu/*Cases.*/cuda_flash_hopper*_D32_*:Gpu/*Cases.*/cuda_flash_hopper*_D8_*:Gpu/*Cases.*/cuda_flash_hopper*_D16_*:Gpu/*Cases.*/cuda_flash_hopper*_D24_*:Gpu/*Cases.*/cuda_flash_hopper*_D36_*"
timeout $((LIMIT - 110 - SECONDS)) $S/flashcore_gpu_tests --gtest_filter="$FD" > $R/tests_d64.log 2>&1
echo "tests_d64 rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_d64.log | head; tail -1 $R/tests_d64.log; grep -c "^\[       OK" $R/tests_d64.log
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
FC='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*Lq77*D64*:Gpu/VariantCases.MatchesFp64Oracle/cuda_flash_hopper*Lq77*D64*:Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*D40*'
timeout 60 $SAN --tool racecheck --error-exitcode 9 --print-limit 20 $S/flashcore_gpu_tests --gtest_filter="$FC" --gtest_brief=1 > $R/racecheck.log 2>&1
echo "racecheck rc=$? ${SECONDS}s"; tail -3 $R/racecheck.log
timeout 40 $SAN --tool synccheck --error-exitcode 9 --print-limit 20 $S/flashcore_gpu_tests --gtest_filter="$FC" --gtest_brief=1 > $R/synccheck.log 2>&1
echo "synccheck rc=$? ${SECONDS}s"; tail -3 $R/synccheck.log
FR="Gpu/*Cases.*/cuda_flash_hopper*:-$FD"
timeout $((LIMIT - 8 - SECONDS)) $S/flashcore_gpu_tests --gtest_filter="$FR" > $R/tests_rest.log 2>&1
echo "tests_rest rc=$? ${SECONDS}s"; grep -E "^\[  FAILED" $R/tests_rest.log | head; tail -1 $R/tests_rest.log; grep -c "^\[       OK" $R/tests_rest.log
gzip -f $R/*.log
(cd $OUT && tar czf r48g.tgz r48g && rm -rf r48g)
