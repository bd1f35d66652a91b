#!/bin/bash
# GPU run 51c (fifty-first session): the decode rows (issue 11) and the mma.sync kernels forced (issue 19; Hopper
# forced-path numbers, not an L4's) against torch in the same run, QUICK. Staging: build/gpu-s51c.txz
# (s51c/flashcore_bench, lib/; which build it is: s51c/commit).
set -u
R=$OUT/r51c; mkdir -p $R
tar xJf build/gpu-s51c.txz -C build
S=build/s51c; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/ 2>/dev/null
SECONDS=0
OUT=$R QUICK=1 T_BENCH=200 T_TORCH=150 perf/run_decode.sh $S > $R/decode_console.log 2>&1; echo "decode rc=$? ${SECONDS}s"
OUT=$R NAME=forced-mma QUICK=1 BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec perf/run_forward.sh $S > $R/forced_console.log 2>&1; echo "forced rc=$? ${SECONDS}s"
for f in $R/*.md; do echo "== $f"; grep -E "^\| [0-9]" $f | head -60; done
gzip -f $R/*.log
(cd $OUT && tar czf r51c.tgz r51c && rm -rf r51c)
