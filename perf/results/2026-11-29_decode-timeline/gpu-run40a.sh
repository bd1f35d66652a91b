#!/bin/bash
# GPU run 40a: decode block timelines (the D = 128 decode instance instrumented) of the rows; the split
# sweep (fixed grid) on the shapes; the read ceiling.
set -u
R=$OUT/r40a; mkdir -p $R
tar xJf build/gpu-s40a.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s40/bin:${LD_LIBRARY_PATH:-}
B=build/s40/bin/decode_dev_tl128
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
for sh in 8,32,8,1,8192,128 1,32,8,1,32768,128 64,32,8,1,2048,128 16,64,8,1,4096,128 8,32,8,4,8192,128 1,8,1,1,65536,128; do
  tag=$(echo $sh | tr , _)
  DECODE_DEV_SHAPE=$sh DECODE_DEV_CSV=$R/tl_$tag.csv timeout 60 $B timeline > $R/tl_$tag.txt 2>&1
  echo "== $sh rc=$? $(( $(date +%s)-T0 )) s"; cat $R/tl_$tag.txt
done
DECODE_DEV_SHAPE=8,32,8,1,8192,128 DECODE_DEV_PAGE=16 DECODE_DEV_CSV=$R/tl_8192_p16.csv timeout 60 $B timeline > $R/tl_8192_p16.txt 2>&1
echo "== paged 16 rc=$?"; cat $R/tl_8192_p16.txt
timeout 200 $B sweep > $R/sweep.txt 2>&1; echo "sweep rc=$? $(( $(date +%s)-T0 )) s"; grep -E "best|x(2|4|8|16) " $R/sweep.txt | head -60
timeout 60 $B peak > $R/peak.txt 2>&1; echo "peak rc=$?"; grep -E "stream read 2 x 134 MB, 8|bulk read 2 x 134 MB, 2 blocks/SM, 4 x 16" $R/peak.txt
gzip $R/*.csv
