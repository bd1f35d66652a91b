#!/bin/bash
# GPU run 48c: the landed build with E4 (8d31d76; /work/e4's build of 43a628e, the same code): (1) the forward suite and
# the head-dim sweep with torch in the same run; (2) racecheck and synccheck on small Hopper cases (the hand-off's slot
# is now two int4); (3) the Hopper GPU cases not run in 48b (D = 192, 256; every sequence layout). No ABBA against
# main here: main's flashcore_bench beside these two binaries and the tree passes the 64 MiB a call may carry.
set -u
R=$OUT/r48c; mkdir -p $R
tar xJf build/gpu-s48c.txz -C build
S=build/s48c/new; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
LIMIT=${LIMIT:-540}
OUT=$R NAME=forward-handoff QUICK=1 perf/run_forward.sh $S > $R/fwd_console.log 2>&1; echo "fwd rc=$? ${SECONDS}s"
grep -E "^\| (16,16,512,64|4,16,1024,64|1,8,1024,64|2,16,4096,128) " $R/*forward-handoff.md | head -16
OUT=$R NAME=headdims-handoff QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" perf/run_forward.sh $S > $R/sweep_console.log 2>&1; echo "sweep rc=$? ${SECONDS}s"
grep -E "^\| 4,16,2048" $R/*headdims-handoff.md | head -16
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
FC='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*Lq77*:Gpu/VariantCases.MatchesFp64Oracle/cuda_flash_hopper*Lq77*:Gpu/SequenceCases.MatchesFp64Oracle/cuda_flash_hopper*page16*D64*'
timeout 150 $SAN --tool racecheck --error-exitcode 9 --print-limit 20 $S/flashcore_gpu_tests --gtest_filter="$FC" --gtest_brief=1 > $R/racecheck.log 2>&1
echo "racecheck rc=$? ${SECONDS}s"; tail -4 $R/racecheck.log
timeout 90 $SAN --tool synccheck --error-exitcode 9 --print-limit 20 $S/flashcore_gpu_tests --gtest_filter="$FC" --gtest_brief=1 > $R/synccheck.log 2>&1
echo "synccheck rc=$? ${SECONDS}s"; tail -4 $R/synccheck.log
FE="Gpu/*Cases.*/cuda_flash_hopper*D192*:Gpu/*Cases.*/cuda_flash_hopper*D256*:Gpu/SequenceCases.*/cuda_flash_hopper*"
timeout $((LIMIT - 8 - SECONDS)) $S/flashcore_gpu_tests --gtest_filter="$FE" > $R/tests_new.log 2>&1
echo "tests_new rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_new.log | head; tail -1 $R/tests_new.log; grep -c "^\[       OK" $R/tests_new.log
gzip -f $R/*.log
(cd $OUT && tar czf r48c.tgz r48c && rm -rf r48c)
