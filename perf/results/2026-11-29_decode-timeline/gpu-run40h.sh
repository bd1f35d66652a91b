#!/bin/bash
# GPU run 40h: Nsight Compute source counters (SASS, stall reasons) of the decode kernel on (8,32,8,1,8192,128) and
# the 32k row (merge-ahead build, timeline marks in): where the ~2 us after the key loop and the merge phases go
# (instruction fetch or memory). Caches not flushed between replays (--cache-control none), clocks left alone.
set -u
R=$OUT/r40h; mkdir -p $R
tar xJf build/gpu-s40h.txz -C build
B=build/s40/bin/decode_dev_tlma
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
for sh in 8,32,8,1,8192,128 1,32,8,1,32768,128; do
  tag=$(echo $sh | tr , _)
  DECODE_DEV_SHAPE=$sh timeout 200 $NCU --clock-control none --cache-control none -k regex:flash_decode_kernel -s 25 -c 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no -f -o $R/ncu_$tag $B timeline > $R/ncu_$tag.log 2>&1
  echo "$tag rc=$?" >> $R/rc.txt
  $NCU --import $R/ncu_$tag.ncu-rep --page source --csv --print-source sass > $R/sass_$tag.csv 2> $R/sass_$tag.err
  $NCU --import $R/ncu_$tag.ncu-rep --page details --csv > $R/details_$tag.csv 2>&1
done
gzip $R/*.csv
rm -f $R/*.ncu-rep
(cd $OUT && tar czf r40h.tgz r40h && rm -rf r40h)
