#!/bin/bash
# GPU run 51a (fifty-first session): D1, the block table prefetched to L2 during the balanced decode schedule
# (issue 11's mixed paged batch). decode_dev of main (a) and of main + D1 (b), statically linked, one binary each:
# D1's oracle check (decode_dev check: 80 cases against the fp64 loop, balanced mixed paged cases among them),
# then `decode_dev mixed` a/b/b/a/a/b/b/a (16 caches of 1..8192 keys, contiguous and pages of 16/64/256, the
# balanced schedule's waves; 64 and 128 sequences; equal lengths through the sequence arrays).
# Staging: build/gpu-s51a.txz (s51a/decode_dev_a, s51a/decode_dev_b).
set -u
R=$OUT/r51a; mkdir -p $R
tar xJf build/gpu-s51a.txz -C build
S=build/s51a
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
timeout 150 $S/decode_dev_b check > $R/check_b.txt 2>&1; echo "check b rc=$? ${SECONDS}s"; tail -2 $R/check_b.txt
i=0
for v in a b b a a b b a; do
  i=$((i + 1))
  timeout 60 $S/decode_dev_$v mixed > $R/mixed_${i}_$v.txt 2>&1; echo "mixed $i $v rc=$? ${SECONDS}s"
  [[ $SECONDS -gt 480 ]] && break
done
grep -h "auto" $R/mixed_1_a.txt | head -20
(cd $OUT && tar czf r51a.tgz r51a && rm -rf r51a)
