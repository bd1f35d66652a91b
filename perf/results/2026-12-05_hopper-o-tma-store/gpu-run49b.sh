#!/bin/bash
# GPU run 49b (prepared in the forty-ninth session): E6 (the softmax finish: both rows' shuffles together, rcp.approx
# and lg2.approx.ftz instead of IEEE division and __log2f) against E5 alone, ABBA x2 in one call: `hopper_dev time`
# (CUDA-graph timing, median of 15 replays of 20 calls) of the Hopper kernel at D = 64 and the mma.sync all-warps
# kernel forced (HOPPER_DEV_VARIANT=allwarps) at D = 64 and 128, fp16 and bf16.
# Staging (build/gpu-s49b.txz): s49b/e5/hopper_dev_e5 (perf/dev/hopper_dev.cu of e6-finish linked against the E5
# library: /work/e5/build/cuda-sm90/libflashcore.a, f5bc66f + the E5 patch), s49b/e6/hopper_dev_e6 (the same
# harness against the E5 + E6 library), stripped; lib/. Carry build/gpu-s49b.txz (8.3 MB).
set -u
R=$OUT/r49b; mkdir -p $R
tar xJf build/gpu-s49b.txz -C build
S=build/s49b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
LIMIT=${LIMIT:-570}
n=0
for r in 1 2; do
  for v in e5 e6 e6 e5; do
    n=$((n+1))
    [ $((LIMIT - SECONDS)) -gt 60 ] || break 2
    HOPPER_DEV_D=64 timeout 90 $S/$v/hopper_dev_$v time > $R/hopper_${v}_$n.md 2>&1; echo "hopper $v $n rc=$? ${SECONDS}s"
  done
done
for r in 1 2; do
  for v in e5 e6 e6 e5; do
    n=$((n+1))
    [ $((LIMIT - SECONDS)) -gt 70 ] || break 2
    HOPPER_DEV_VARIANT=allwarps timeout 100 $S/$v/hopper_dev_$v time > $R/allwarps_${v}_$n.md 2>&1; echo "allwarps $v $n rc=$? ${SECONDS}s"
  done
done
python3 perf/dev/hopper_dev_ab.py $R hopper e5 e6 | tee $R/ab_hopper.txt
python3 perf/dev/hopper_dev_ab.py $R allwarps e5 e6 | tee $R/ab_allwarps.txt
(cd $OUT && tar czf r49b.tgz r49b && rm -rf r49b)
