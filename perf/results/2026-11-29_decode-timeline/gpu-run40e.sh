#!/bin/bash
# GPU run 40e: the split merge with the first item's partials loaded before phase 1 (ma) against HEAD's merge (base0):
# timelines (tlbase / tlma), decode_dev time alternating 3 rounds, decode_dev check of ma; which form of an L2
# evict_first copy runs (policy_test; 40c/40d: illegal instruction).
set -u
R=$OUT/r40e; mkdir -p $R
tar xJf build/gpu-s40e.txz -C build
B=build/s40/bin/decode_dev
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
timeout 60 build/s40/bin/policy_test > $R/policy_test.txt 2>&1
for v in tlbase tlma; do
  for sh in 8,32,8,1,8192,128 1,32,8,1,32768,128 16,64,8,1,4096,128; do
    tag=${v}_$(echo $sh | tr , _)
    DECODE_DEV_SHAPE=$sh DECODE_DEV_CSV=$R/tl_$tag.csv timeout 60 ${B}_$v timeline > $R/tl_$tag.txt 2>&1
  done
done
for round in 1 2 3; do
  for v in base0 ma; do timeout 120 ${B}_$v time > $R/time_${v}_$round.txt 2>&1; done
done
timeout 300 ${B}_ma check > $R/check_ma.txt 2>&1; echo "check ma rc=$?" >> $R/check_ma.txt
gzip $R/*.csv
(cd $OUT && tar czf r40e.tgz r40e && rm -rf r40e)
