#!/bin/bash
# GPU run 55d, issue 11: experiment C with one block an SM (FLASHCORE_DEV_CLUSTER=2: shared memory padded past half
# the SM's), against main's path (0) and C as run 55b (1). Block timelines (graph-timed figure) of fixed-grid splits
# of 2, 4, 8 and 16 pieces, two rounds; `rows` 0/2/2/0.
set -u
R=$OUT/r55d; mkdir -p $R
tar xJf build/gpu-s55d.txz -C build
S=build/s55d
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
for r in 1 2; do for c in 0 2 1; do for shape in 1,32,8,1,32768,128 4,32,8,1,16384,128 2,32,8,1,16384,128 2,32,8,4,16384,128 8,32,8,1,8192,128 8,32,8,4,8192,128; do
  f=$R/tl_${shape//,/_}_c${c}_r$r.txt
  FLASHCORE_DEV_CLUSTER=$c DECODE_DEV_SHAPE=$shape timeout 30 $S/decode_dev_c_tl timeline > $f 2>&1
  echo "r$r c$c $shape: $(grep -o 'splits=[0-9]*.*graph-timed [0-9.]* us' $f | sed 's/.*splits=//') | $(grep -m1 'loop end' $f | cut -c3-62) | $(grep -m1 'merging' $f | grep -o 'last merge.*')"
done; done; done
i=0
for c in 0 2 2 0; do i=$((i + 1)); FLASHCORE_DEV_CLUSTER=$c timeout 40 $S/decode_dev_c rows > $R/rows_${i}_c$c.txt 2>&1; done
paste <(grep auto $R/rows_1_c0.txt | cut -c1-45) <(grep auto $R/rows_1_c0.txt | grep -o "[0-9.]* us") <(grep auto $R/rows_2_c2.txt | grep -o "[0-9.]* us") <(grep auto $R/rows_3_c2.txt | grep -o "[0-9.]* us") <(grep auto $R/rows_4_c0.txt | grep -o "[0-9.]* us")
(cd $OUT && tar czf r55d.tgz r55d && rm -rf r55d)
