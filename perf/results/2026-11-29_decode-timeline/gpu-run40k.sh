#!/bin/bash
# GPU run 40k: the merge-ahead partial loads issued after phase 1's LSE loads (ma2) against before them (ma1, as in 40i/40j):
# timelines of ma2, decode_dev time alternating 3 rounds.
set -u
R=$OUT/r40k; mkdir -p $R
tar xJf build/gpu-s40k.txz -C build
B=build/s40/bin/decode_dev
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
for sh in 8,32,8,1,8192,128 1,32,8,1,32768,128 16,64,8,1,4096,128; do
  DECODE_DEV_SHAPE=$sh timeout 60 ${B}_tlma2 timeline > $R/tl_ma2_$(echo $sh | tr , _).txt 2>&1
done
for round in 1 2 3; do
  for v in ma1 ma2; do timeout 120 ${B}_$v time > $R/time_${v}_$round.txt 2>&1; done
done
(cd $OUT && tar czf r40k.tgz r40k && rm -rf r40k)
