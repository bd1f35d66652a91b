#!/bin/bash
# GPU run 55e, issue 11: the two-piece cluster merge in the library (branch c55: FlashFwdPlan::split_cluster, D = 128,
# compute capability 9.0). The GPU tests of the decode kernel (the new Gpu.DecodeTwoPiecesInACluster among them), the
# graph and determinism tests; `decode_dev rows` main/c55/c55/main (main = the development binary of run 55d with
# FLASHCORE_DEV_CLUSTER=0, which is main's path); the decode suite with torch (QUICK) on c55; `decode_dev check` of
# c55 where time is left (its errors against run 55a's check of main: the same bits expected).
set -u
R=$OUT/r55e; mkdir -p $R
tar xJf build/gpu-s55e.txz -C build
S=build/s55e; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/
SECONDS=0
timeout 170 $S/flashcore_gpu_tests --gtest_filter='Gpu.*ecode*:Gpu.Graphs*:Gpu.TunedKernelsAreDeterministic' > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? ${SECONDS}s"; grep -E "^\[  PASSED|^\[  FAILED|tests ran|cluster\]" $R/gpu_tests.log | tail -12 | cut -c1-200
i=0
for v in main c55 c55 main; do
  i=$((i + 1)); b=$S/decode_dev; [ $v = main ] && b=$S/decode_dev_main
  FLASHCORE_DEV_CLUSTER=0 timeout 30 $b rows > $R/rows_${i}_$v.txt 2>&1
done
echo "rows ${SECONDS}s"
paste <(grep auto $R/rows_1_main.txt | cut -c1-38) <(grep auto $R/rows_1_main.txt | grep -o "[0-9.]* us") <(grep auto $R/rows_2_c55.txt | grep -o "[0-9.]* us") <(grep auto $R/rows_3_c55.txt | grep -o "[0-9.]* us") <(grep auto $R/rows_4_main.txt | grep -o "[0-9.]* us") <(grep auto $R/rows_2_c55.txt | grep -o "splits=.*")
mkdir -p perf/results $R/suite
OUT=$R/suite QUICK=1 T_BENCH=150 T_TORCH=100 timeout 150 perf/run_decode.sh $S > $R/suite/decode_console.log 2>&1
echo "suite rc=$? ${SECONDS}s"; for f in $R/suite/*.md; do grep -E "^\| [0-9]|^\| mixed" $f | head -30; done
if [ $SECONDS -lt 330 ]; then
  timeout 150 $S/decode_dev check > $R/check.txt 2>&1; echo "check rc=$? ${SECONDS}s"; grep -c "^PASS" $R/check.txt; grep -E "FAIL" $R/check.txt | head -3
fi
gzip -f $R/*.log $R/*/*.log $R/*/*.json 2>/dev/null
(cd $OUT && tar czf r55e.tgz r55e && rm -rf r55e)
