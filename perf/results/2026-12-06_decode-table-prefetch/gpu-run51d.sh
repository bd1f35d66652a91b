#!/bin/bash
# GPU run 51d (fifty-first session): runs 51b and 51c in one call on main's build (build/gpu-s51b.txz: s51b/flashcore_bench
# at 503ddf4, no D1), meant for an H200: the forward suite, the head-dim sweep, (4,16,2048,256) and (16,16,512,64)
# ours-then-torch three times, the decode rows, the mma.sync kernels forced; all QUICK, torch in the same run.
set -u
R=$OUT/r51d; mkdir -p $R
tar xJf build/gpu-s51b.txz -C build
S=build/s51b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/
SECONDS=0
OUT=$R NAME=forward QUICK=1 perf/run_forward.sh $S > $R/fwd_console.log 2>&1; echo "fwd rc=$? ${SECONDS}s"
OUT=$R NAME=headdims QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" perf/run_forward.sh $S > $R/sweep_console.log 2>&1; echo "sweep rc=$? ${SECONDS}s"
for i in 1 2 3; do
  OUT=$R NAME=d256-round$i DTYPES=fp16 SHAPES="4,16,2048,256;16,16,512,64" perf/run_forward.sh $S > $R/d256_console$i.log 2>&1; echo "d256 round $i rc=$? ${SECONDS}s"
done
OUT=$R QUICK=1 T_BENCH=200 T_TORCH=150 perf/run_decode.sh $S > $R/decode_console.log 2>&1; echo "decode rc=$? ${SECONDS}s"
OUT=$R NAME=forced-mma QUICK=1 BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec perf/run_forward.sh $S > $R/forced_console.log 2>&1; echo "forced rc=$? ${SECONDS}s"
for f in $R/*.md; do echo "== $f"; grep -E "^\| [0-9]" $f | grep -E "4,16,2048|16,16,512,64|mixed|1,8,512,64" | head -60; done
gzip -f $R/*.log
(cd $OUT && tar czf r51d.tgz r51d && rm -rf r51d)
