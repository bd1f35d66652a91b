#!/bin/bash
# GPU run 54b (fifty-fourth session), issue 11: experiment W (the balanced schedule computed by every warp alone, no
# block barrier; the piece's tile bounds in 32 bits; Q copied in the first tile's commit group) against main (efcddfd,
# with H): `decode_dev check` (W), block timelines of (8,32,8,1,8192,128) through cache lengths and of the suite's
# mixed batch (base, W), `decode_dev mixed`, `rows`, `fit` base/W/W/base, the GPU tests of the decode kernel with
# sequence arrays and the graph test (W). Staging: build/gpu-s54b.txz.
set -u
R=$OUT/r54b; mkdir -p $R
tar xJf build/gpu-s54b.txz -C build
S=build/s54b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/
SECONDS=0
timeout 150 $S/decode_dev_n check > $R/check.txt 2>&1; echo "check rc=$? ${SECONDS}s"; grep -E "FAIL|cases" $R/check.txt | tail -3 | cut -c1-150
for v in b n; do
  DECODE_DEV_SHAPE=8,32,8,1,8192,128 DECODE_DEV_CACHE=1 timeout 30 $S/decode_dev_${v}_tl timeline > $R/tl_8x8192_$v.txt 2>&1
  DECODE_DEV_SHAPE=16,32,8,1,8192,128 DECODE_DEV_MIXED=1 timeout 30 $S/decode_dev_${v}_tl timeline > $R/tl_mixed_$v.txt 2>&1
  DECODE_DEV_SHAPE=1,32,8,1,32768,128 timeout 30 $S/decode_dev_${v}_tl timeline > $R/tl_32k_$v.txt 2>&1
  echo "timelines $v ${SECONDS}s"; grep -h -E "^#|prologue|^call 0" $R/tl_*_$v.txt | cut -c1-200
done
i=0
for v in b n n b; do
  i=$((i + 1))
  timeout 30 $S/decode_dev_$v mixed > $R/mixed_${i}_$v.txt 2>&1; echo "mixed $i $v rc=$? ${SECONDS}s"
  grep -E " auto" $R/mixed_${i}_$v.txt | cut -c1-60
  timeout 30 $S/decode_dev_$v rows > $R/rows_${i}_$v.txt 2>&1
  timeout 40 $S/decode_dev_$v fit > $R/fit_${i}_$v.txt 2>&1
  echo "rows+fit $i $v ${SECONDS}s"
done
timeout 220 $S/flashcore_gpu_tests --gtest_filter='Gpu/SequenceCases.*cuda_flash*lensk*:Gpu.*ecode*:Gpu.Graphs*' > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran" $R/gpu_tests.log | tail -4
# Main's build on the same cases (fixed seeds): the same errors to the printed digits, where W's items are main's.
[ $SECONDS -lt 450 ] && { timeout 140 $S/decode_dev_b check > $R/check_base.txt 2>&1; echo "check base rc=$? ${SECONDS}s"
  diff <(grep -E "^(PASS|FAIL)" $R/check_base.txt | sed 's/  */ /g') <(grep -E "^(PASS|FAIL)" $R/check.txt | sed 's/  */ /g') > $R/check_diff.txt; echo "check diff lines: $(wc -l < $R/check_diff.txt)"; }
gzip -f $R/*.log
(cd $OUT && tar czf r54b.tgz r54b && rm -rf r54b)
