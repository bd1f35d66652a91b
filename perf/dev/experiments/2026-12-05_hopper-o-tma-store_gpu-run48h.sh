#!/bin/bash
# GPU call that lands E5 (O by TMA stores at D = 64; perf/dev/experiments/2026-12-05_hopper-o-tma-store.patch), prepared
# in the forty-eighth session and not run (no device time left). On the patched tree: (1) the project's graph and
# determinism tests (run 48g did not reach them) and hopper_dev check (its graph check replays one plan into a second
# output: the run-time guard); (2) the forward suite and the head-dim sweep with torch in the same run.
# Staging (build/s48h -> build/gpu-s48h.txz, `tar cf - s48h | xz -9 -T1`): flashcore_gpu_tests, flashcore_bench and
# hopper_dev_e5 (perf/dev/build_hopper_dev.sh, OUTNAME=hopper_dev_e5) of the patched tree's build, stripped; lib/
# libbenchmark.so.1debian. Carry build/gpu-s48h.txz and this script; the tree plus the carry must stay under 64 MiB.
set -u
R=$OUT/r48h; mkdir -p $R
tar xJf build/gpu-s48h.txz -C build
S=build/s48h; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
timeout 150 $S/flashcore_gpu_tests --gtest_filter="*Graphs*:*TunedKernelsAreDeterministic*" > $R/tests.log 2>&1
echo "tests rc=$? ${SECONDS}s"; grep -E "^\[ +(OK|FAILED) |^\[  (PASSED|FAILED)" $R/tests.log | head
timeout 120 $S/hopper_dev_e5 check > $R/check.log 2>&1; echo "check rc=$? ${SECONDS}s"; grep -c "^ok" $R/check.log; grep "^FAIL" $R/check.log | head
OUT=$R NAME=forward-otma QUICK=1 perf/run_forward.sh $S > $R/fwd_console.log 2>&1; echo "fwd rc=$? ${SECONDS}s"
grep -E "^\| (16,16,512,64|4,16,1024,64) " $R/*forward-otma.md
OUT=$R NAME=headdims-otma QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" perf/run_forward.sh $S > $R/sweep_console.log 2>&1; echo "sweep rc=$? ${SECONDS}s"
gzip -f $R/*.log
(cd $OUT && tar czf r48h.tgz r48h && rm -rf r48h)
