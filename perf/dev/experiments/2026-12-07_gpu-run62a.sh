#!/bin/bash
# GPU run 62a (sixty-second session, issue 19; carry build/gpu-s61a.txz, the bundle of run 61a: flashcore_bench of
# main 76e27cf, whose device code compiles to the same cubins as main's now): the forced mma.sync path's table
# (perf/run_forward.sh, BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec, QUICK=1) beside torch's flash and cuDNN
# paths in the same call, on whichever GPU the call gets (run once on an H100 and once on an H200: the H200's first
# such table since KVTileCopy, E3 and E4). Packs $OUT/r62a_<slug>.tgz.
set -u
t0=$(date +%s)
LIM=${LIM:-560}
tar xJf build/gpu-s61a.txz -C build
S=build/s61a; export LD_LIBRARY_PATH=$PWD/$S/lib
slug=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H200 && echo h200 || echo h100)
R=/tmp/r62a_$slug; mkdir -p $R
cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
OUT=$R/fwd NAME=forced-mma BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 \
  timeout $((LIM - 15)) perf/run_forward.sh $S/bin > $R/fwd.console 2>&1
echo "run_forward rc=$? at $(( $(date +%s) - t0 )) s"
grep -E "^\| [0-9]" $R/fwd/*.md | cut -d"|" -f2-5,7,11 | head -40
(cd /tmp && tar czf $OUT/r62a_$slug.tgz r62a_$slug)
