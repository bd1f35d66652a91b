#!/bin/bash
# GPU run 55a (staged in the fifty-fourth session for the next), issue 11: experiment M (the key groups' states merged by
# every warp of the row tile, a share of the O columns each, and the epilogue's stores shared; branch m55) against main
# (94fdac3: the decode kernel of efcddfd). `decode_dev check` (M, then main: the same errors expected, the same
# arithmetic in the same order), block timelines of the 32k row, (8,32,8,1,8192,128) through cache lengths and the
# suite's mixed batch (main, M), `decode_dev mixed`, `rows`, `fit` main/M/M/main, the GPU tests of the decode kernel with
# sequence arrays and the graph test (M). Staging (CPU machine): build/gpu-s55a.txz; run from the repository root with
# carry ["build/gpu-s55a.txz", <this script>] and perf/results moved aside (the carry limit).
set -u
R=$OUT/r55a; mkdir -p $R
tar xJf build/gpu-s55a.txz -C build
S=build/s55a; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/
SECONDS=0
timeout 150 $S/decode_dev_m check > $R/check.txt 2>&1; echo "check rc=$? ${SECONDS}s"; grep -E "FAIL|cases" $R/check.txt | tail -3 | cut -c1-150
for v in b m; do
  DECODE_DEV_SHAPE=1,32,8,1,32768,128 timeout 30 $S/decode_dev_${v}_tl timeline > $R/tl_32k_$v.txt 2>&1
  DECODE_DEV_SHAPE=8,32,8,1,8192,128 DECODE_DEV_CACHE=1 timeout 30 $S/decode_dev_${v}_tl timeline > $R/tl_8x8192_$v.txt 2>&1
  DECODE_DEV_SHAPE=16,32,8,1,8192,128 DECODE_DEV_MIXED=1 timeout 30 $S/decode_dev_${v}_tl timeline > $R/tl_mixed_$v.txt 2>&1
  echo "timelines $v ${SECONDS}s"; grep -h -E "^#|after the loop|merging|^call 0" $R/tl_*_$v.txt | cut -c1-200
done
i=0
for v in b m m b; do
  i=$((i + 1))
  timeout 30 $S/decode_dev_$v mixed > $R/mixed_${i}_$v.txt 2>&1; echo "mixed $i $v rc=$? ${SECONDS}s"
  grep -E " auto" $R/mixed_${i}_$v.txt | cut -c1-60
  timeout 30 $S/decode_dev_$v rows > $R/rows_${i}_$v.txt 2>&1
  timeout 40 $S/decode_dev_$v fit > $R/fit_${i}_$v.txt 2>&1
  echo "rows+fit $i $v ${SECONDS}s"
done
timeout 150 $S/flashcore_gpu_tests --gtest_filter='Gpu/SequenceCases.*cuda_flash*lensk*:Gpu.*ecode*:Gpu.Graphs*' > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran" $R/gpu_tests.log | tail -4
[ $SECONDS -lt 420 ] && { timeout 150 $S/decode_dev_b check > $R/check_base.txt 2>&1; echo "check base rc=$? ${SECONDS}s"
  diff <(grep -E "deterministic" $R/check_base.txt | sed 's/  */ /g') <(grep -E "deterministic" $R/check.txt | sed 's/  */ /g' | head -$(grep -c deterministic $R/check_base.txt)) > $R/check_diff.txt; echo "check diff lines: $(wc -l < $R/check_diff.txt)"; }
gzip -f $R/*.log
(cd $OUT && tar czf r55a.tgz r55a && rm -rf r55a)
