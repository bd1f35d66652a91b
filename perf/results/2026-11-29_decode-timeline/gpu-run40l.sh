#!/bin/bash
# GPU run 40l: decode_dev deep (ring depth 3..8 x splits 1..8, deep rings run one block per SM) on the rows, twice.
set -u
R=$OUT/r40l; mkdir -p $R
tar xJf build/gpu-s40l.txz -C build
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
for n in 1 2; do timeout 200 build/s40/bin/decode_dev_new deep > $R/deep_$n.txt 2>&1; echo "deep $n rc=$?"; done
(cd $OUT && tar czf r40l.tgz r40l && rm -rf r40l)
