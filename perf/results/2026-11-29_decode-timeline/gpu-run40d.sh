#!/bin/bash
# GPU run 40d: as 40c with the evict_first copies written as a predicated pair (40c: illegal instruction with src-size and a cache policy together)
# A/B of the two (decode_dev time, alternating, 3 rounds); decode_dev check of the evict_first build.
set -u
R=$OUT/r40d; mkdir -p $R
tar xJf build/gpu-s40d.txz -C build
B=build/s40/bin/decode_dev
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
for v in tlbase tlef2; do
  for sh in 8,32,8,1,8192,128 1,32,8,1,32768,128 64,32,8,1,2048,128; do
    tag=${v}_$(echo $sh | tr , _)
    DECODE_DEV_SHAPE=$sh DECODE_DEV_CSV=$R/tl_$tag.csv timeout 60 ${B}_$v timeline > $R/tl_$tag.txt 2>&1
  done
  DECODE_DEV_SHAPE=8,32,8,1,8192,128 DECODE_DEV_PAGE=16 DECODE_DEV_CSV=$R/tl_${v}_p16.csv timeout 60 ${B}_$v timeline > $R/tl_${v}_p16.txt 2>&1
done
for round in 1 2 3; do
  for v in base ef2; do timeout 120 ${B}_$v time > $R/time_${v}_$round.txt 2>&1; done
done
timeout 300 ${B}_ef2 check > $R/check_ef2.txt 2>&1; echo "check ef2 rc=$?" >> $R/check_ef2.txt
gzip $R/*.csv
(cd $OUT && tar czf r40d.tgz r40d && rm -rf r40d)
