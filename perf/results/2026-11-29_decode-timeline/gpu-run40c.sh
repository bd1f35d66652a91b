#!/bin/bash
# GPU run 40c: decode timelines with the epilogue's steps (base, and K/V copies with an L2 evict_first policy);
# A/B of the two (decode_dev time, alternating, 3 rounds); decode_dev check of the evict_first build.
set -u
R=$OUT/r40c; mkdir -p $R
tar xJf build/gpu-s40c.txz -C build
B=build/s40/bin/decode_dev
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
for v in tlbase tlef; do
  for sh in 8,32,8,1,8192,128 1,32,8,1,32768,128 64,32,8,1,2048,128; do
    tag=${v}_$(echo $sh | tr , _)
    DECODE_DEV_SHAPE=$sh DECODE_DEV_CSV=$R/tl_$tag.csv timeout 60 ${B}_$v timeline > $R/tl_$tag.txt 2>&1
  done
  DECODE_DEV_SHAPE=8,32,8,1,8192,128 DECODE_DEV_PAGE=16 DECODE_DEV_CSV=$R/tl_${v}_p16.csv timeout 60 ${B}_$v timeline > $R/tl_${v}_p16.txt 2>&1
done
for round in 1 2 3; do
  for v in base ef; do timeout 120 ${B}_$v time > $R/time_${v}_$round.txt 2>&1; done
done
timeout 300 ${B}_ef check > $R/check_ef.txt 2>&1; echo "check ef rc=$?" >> $R/check_ef.txt
gzip $R/*.csv
(cd $OUT && tar czf r40c.tgz r40c && rm -rf r40c)
