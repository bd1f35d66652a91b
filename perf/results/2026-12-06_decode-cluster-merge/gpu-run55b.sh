#!/bin/bash
# GPU run 55b, issue 11: experiment C (the fixed-grid split merged through distributed shared memory in a thread
# block cluster of the pieces; branch cm55, development build only). One binary, both paths: FLASHCORE_DEV_CLUSTER=1
# launches the clusters, 0 is main's path. `decode_dev check` with clusters (compared with run 55a's check of main:
# the same bits expected), block timelines of the 32k row and (8,32,8,1,8192,128) both ways, `rows` 0/1/1/0.
set -u
R=$OUT/r55b; mkdir -p $R
tar xJf build/gpu-s55b.txz -C build
S=build/s55b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
for c in 0 1; do
  FLASHCORE_DEV_CLUSTER=$c DECODE_DEV_SHAPE=1,32,8,1,32768,128 timeout 30 $S/decode_dev_c_tl timeline > $R/tl_32k_c$c.txt 2>&1
  FLASHCORE_DEV_CLUSTER=$c DECODE_DEV_SHAPE=8,32,8,1,8192,128 timeout 30 $S/decode_dev_c_tl timeline > $R/tl_8x8192_c$c.txt 2>&1
  echo "timelines c$c ${SECONDS}s"; grep -h -E "^#|loop end|after the loop|merging|^call 0|rror" $R/tl_*_c$c.txt | cut -c1-200
done
i=0
for c in 0 1 1 0; do
  i=$((i + 1))
  FLASHCORE_DEV_CLUSTER=$c timeout 40 $S/decode_dev_c rows > $R/rows_${i}_c$c.txt 2>&1; echo "rows $i c$c rc=$? ${SECONDS}s"
done
paste <(grep auto $R/rows_1_c0.txt | cut -c1-45) <(grep auto $R/rows_1_c0.txt | grep -o "[0-9.]* us") <(grep auto $R/rows_2_c1.txt | grep -o "[0-9.]* us") <(grep auto $R/rows_3_c1.txt | grep -o "[0-9.]* us") <(grep auto $R/rows_4_c0.txt | grep -o "[0-9.]* us")
grep -h -i "error\|fail" $R/rows_*.txt | head -5
FLASHCORE_DEV_CLUSTER=1 timeout 200 $S/decode_dev_c check > $R/check_c1.txt 2>&1; echo "check c1 rc=$? ${SECONDS}s"
grep -c "^PASS" $R/check_c1.txt; grep -E "FAIL|rror" $R/check_c1.txt | head -5 | cut -c1-200
(cd $OUT && tar czf r55b.tgz r55b && rm -rf r55b)
