#!/bin/bash
# GPU run 49e (fiftieth session): main after E5 landed (88a00a4 + the plan-inputs guard, host only) against torch in
# the same run, on an H200 where one is lent (issue 12's sweep was last measured on one at E4): the forward suite,
# the head-dim sweep, the decode rows (issue 11), then the mma.sync
# kernels forced (issue 19; Hopper forced-path numbers, not an L4's). All QUICK. Staging (build/gpu-s49e.txz): s49e/flashcore_bench of build/cuda-sm90 at main, lib/.
set -u
R=$OUT/r49e; mkdir -p $R
tar xJf build/gpu-s49e.txz -C build
S=build/s49e; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
OUT=$R NAME=forward QUICK=1 perf/run_forward.sh $S > $R/fwd_console.log 2>&1; echo "fwd rc=$? ${SECONDS}s"
OUT=$R NAME=headdims QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" perf/run_forward.sh $S > $R/sweep_console.log 2>&1; echo "sweep rc=$? ${SECONDS}s"
OUT=$R QUICK=1 T_BENCH=200 T_TORCH=150 perf/run_decode.sh $S > $R/decode_console.log 2>&1; echo "decode rc=$? ${SECONDS}s"
OUT=$R NAME=forced-mma QUICK=1 BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec perf/run_forward.sh $S > $R/forced_console.log 2>&1; echo "forced rc=$? ${SECONDS}s"
for f in $R/*.md; do echo "== $f"; grep -E "^\| [0-9]" $f | head -40; done
gzip -f $R/*.log
(cd $OUT && tar czf r49e.tgz r49e && rm -rf r49e)
