#!/bin/bash
# GPU run 40b: the timelines run 40a could not bring back (file count): 8192, 2048 x64, Lq = 4, 65536, paged 16.
set -u
R=$OUT/r40b; mkdir -p $R
tar xJf build/gpu-s40b.txz -C build
B=build/s40/bin/decode_dev_tl128
for sh in 8,32,8,1,8192,128 1,32,8,1,32768,128 16,64,8,1,4096,128 64,32,8,1,2048,128 8,32,8,4,8192,128 1,8,1,1,65536,128; do
  tag=$(echo $sh | tr , _)
  DECODE_DEV_SHAPE=$sh DECODE_DEV_CSV=$R/tl_$tag.csv timeout 60 $B timeline > $R/tl_$tag.txt 2>&1
done
DECODE_DEV_SHAPE=8,32,8,1,8192,128 DECODE_DEV_PAGE=16 DECODE_DEV_CSV=$R/tl_8192_p16.csv timeout 60 $B timeline > $R/tl_8192_p16.txt 2>&1
gzip $R/*.csv
(cd $OUT && tar czf r40b.tgz r40b && rm -rf r40b)
