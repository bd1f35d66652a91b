#!/bin/bash
# GPU run 53f (fifty-third session), issue 11: H (a captured balanced decode call merged by the combine kernel, through the
# map each item's first block writes; uncommitted on main 1328673) against main (fitg): `decode_dev tail` (captured and
# eager, and on a grid cut to the used blocks) for both, `decode_dev mixed`, `rows` and `fit` fitg/comb/comb/fitg, the GPU
# tests of the decode kernel with sequence arrays and the graph test (comb build), `decode_dev check` (comb).
# Staging: build/gpu-s53f.txz.
set -u
R=$OUT/r53f; mkdir -p $R
tar xJf build/gpu-s53f.txz -C build
S=build/s53f; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/
SECONDS=0
for v in fitg comb; do
  timeout 90 $S/decode_dev_$v tail > $R/tail_$v.txt 2>&1; echo "tail $v rc=$? ${SECONDS}s"; cut -c1-118 $R/tail_$v.txt
done
i=0
for v in fitg comb comb fitg; do
  i=$((i + 1))
  timeout 30 $S/decode_dev_$v mixed > $R/mixed_${i}_$v.txt 2>&1; echo "mixed $i $v rc=$? ${SECONDS}s"
  grep -E " auto" $R/mixed_${i}_$v.txt | cut -c1-60
  timeout 30 $S/decode_dev_$v rows > $R/rows_${i}_$v.txt 2>&1
  timeout 30 $S/decode_dev_$v fit > $R/fit_${i}_$v.txt 2>&1
done
timeout 200 $S/flashcore_gpu_tests --gtest_filter='Gpu/SequenceCases.*cuda_flash*lensk*:Gpu.*ecode*:Gpu.Graphs*' > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran" $R/gpu_tests.log | tail -4
[ $SECONDS -lt 380 ] && { timeout 150 $S/decode_dev_comb check > $R/check.txt 2>&1; echo "check rc=$? ${SECONDS}s"; grep -E "FAIL|cases" $R/check.txt | tail -3 | cut -c1-150; }
gzip -f $R/*.log
(cd $OUT && tar czf r53f.tgz r53f && rm -rf r53f)
