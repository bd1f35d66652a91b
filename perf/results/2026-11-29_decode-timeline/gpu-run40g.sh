#!/bin/bash
# GPU run 40g: the evict_first K/V copies with the policy kept opaque to ptxas (efE; 40f's SASS: LDGSTS with
# undefined UR0/UR1 where the folded policy went) on top of the merge-ahead build (ma): its SASS, timelines, time
# A/B against ma (3 rounds), decode_dev check.
set -u
R=$OUT/r40g; mkdir -p $R
tar xJf build/gpu-s40g.txz -C build
B=build/s40/bin/decode_dev
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
/usr/local/cuda/bin/cuobjdump -sass build/s40/bin/dec128_efE.cubin | grep -E "LDGSTS|R2UR|Function" | head -60 > $R/efE_sass.txt 2>&1
timeout 120 ${B}_efE time > $R/probe_efE.txt 2>&1; echo "probe rc=$?" >> $R/probe_efE.txt
if grep -q "rc=0" $R/probe_efE.txt; then
  for v in tlma tlefE; do
    for sh in 8,32,8,1,8192,128 1,32,8,1,32768,128 64,32,8,1,2048,128; do
      tag=${v}_$(echo $sh | tr , _)
      DECODE_DEV_SHAPE=$sh timeout 60 ${B}_$v timeline > $R/tl_$tag.txt 2>&1
    done
    DECODE_DEV_SHAPE=8,32,8,1,8192,128 DECODE_DEV_PAGE=16 timeout 60 ${B}_$v timeline > $R/tl_${v}_p16.txt 2>&1
  done
  for round in 1 2 3; do
    for v in ma efE; do timeout 120 ${B}_$v time > $R/time_${v}_$round.txt 2>&1; done
  done
  timeout 300 ${B}_efE check > $R/check_efE.txt 2>&1; echo "check efE rc=$?" >> $R/check_efE.txt
fi
(cd $OUT && tar czf r40g.tgz r40g && rm -rf r40g)
