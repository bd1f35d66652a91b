#!/bin/bash
# GPU run 51b (fifty-first session): main (503ddf4: E5 landed) against torch in the same run, on an H200 where one
# is lent (issue 12's sweep was last measured on one before E4): the forward suite and the head-dim sweep (QUICK),
# then (4,16,2048,256) fp16 ours-then-torch three times over (D = 256 non-causal moved 0.95-1.12x cuDNN from
# run to run on H100s: several rounds in one process group before calling it a gap).
# Staging: build/gpu-s51b.txz (s51b/flashcore_bench of build/cuda-sm90 at main, lib/).
set -u
R=$OUT/r51b; mkdir -p $R
tar xJf build/gpu-s51b.txz -C build
S=build/s51b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
OUT=$R NAME=forward QUICK=1 perf/run_forward.sh $S > $R/fwd_console.log 2>&1; echo "fwd rc=$? ${SECONDS}s"
OUT=$R NAME=headdims QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" perf/run_forward.sh $S > $R/sweep_console.log 2>&1; echo "sweep rc=$? ${SECONDS}s"
for i in 1 2 3; do
  [[ $SECONDS -gt 520 ]] && break
  OUT=$R NAME=d256-round$i DTYPES=fp16 SHAPES="4,16,2048,256;16,16,512,64" perf/run_forward.sh $S > $R/d256_console$i.log 2>&1; echo "d256 round $i rc=$? ${SECONDS}s"
done
for f in $R/*.md; do echo "== $f"; grep -E "^\| [0-9]" $f | head -40; done
gzip -f $R/*.log
(cd $OUT && tar czf r51b.tgz r51b && rm -rf r51b)
