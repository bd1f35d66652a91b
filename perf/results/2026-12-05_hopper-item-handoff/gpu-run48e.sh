#!/bin/bash
# GPU run 48e (the H200 asked for): the landed build with E4 (8d31d76; /work/e4's build of 43a628e, the same code): (1) the forward suite and
# the head-dim sweep twice, with torch in the same run; (the tests ran on the H100, run 48c). No ABBA against
# main here: main's flashcore_bench beside these two binaries and the tree passes the 64 MiB a call may carry.
set -u
R=$OUT/r48e; mkdir -p $R
tar xJf build/gpu-s48c.txz -C build
S=build/s48c/new; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
LIMIT=${LIMIT:-540}
OUT=$R NAME=forward-handoff QUICK=1 perf/run_forward.sh $S > $R/fwd_console.log 2>&1; echo "fwd rc=$? ${SECONDS}s"
grep -E "^\| (16,16,512,64|4,16,1024,64|1,8,1024,64|2,16,4096,128) " $R/*forward-handoff.md | head -16
OUT=$R NAME=headdims-handoff QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" perf/run_forward.sh $S > $R/sweep_console.log 2>&1; echo "sweep rc=$? ${SECONDS}s"
grep -E "^\| 4,16,2048" $R/*headdims-handoff.md | head -16
OUT=$R NAME=headdims-handoff-r2 QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" perf/run_forward.sh $S > $R/sweep2_console.log 2>&1; echo "sweep2 rc=$? ${SECONDS}s"
grep -E "^\| 4,16,2048" $R/*headdims-handoff-r2.md | head -16
gzip -f $R/*.log
(cd $OUT && tar czf r48e.tgz r48e && rm -rf r48e)
