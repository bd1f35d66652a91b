#!/bin/bash
# GPU run 53c (fifty-third session), issue 11: the fit (second form) + G (the schedule's divisions in 32 bits), uncommitted
# on main 153b428: `decode_dev check` (fitg), `decode_dev mixed` + `rows` base/fitg/fit/fitg/base/fit/fitg/base, `decode_dev
# fit` (fitg, two rounds), block timelines of the suite's mixed batch (base, fitg) and of (8,32,8,1,8192,128) through cache
# lengths (fitg: balanced, fixed grid of 4), the GPU tests of the decode kernel with sequence arrays (fitg build).
# Staging: build/gpu-s53c.txz.
set -u
R=$OUT/r53c; mkdir -p $R
tar xJf build/gpu-s53c.txz -C build
S=build/s53c; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/
SECONDS=0
timeout 150 $S/decode_dev_fitg check > $R/check.txt 2>&1; echo "check rc=$? ${SECONDS}s"; grep -E "FAIL|cases" $R/check.txt | tail -4 | cut -c1-150
i=0
for v in base fitg fit fitg base fit fitg base; do
  i=$((i + 1))
  timeout 30 $S/decode_dev_$v mixed > $R/mixed_${i}_$v.txt 2>&1; echo "mixed $i $v rc=$? ${SECONDS}s"
  grep -E " auto" $R/mixed_${i}_$v.txt | cut -c1-60 | head -4
  timeout 30 $S/decode_dev_$v rows > $R/rows_${i}_$v.txt 2>&1
done
timeout 60 $S/decode_dev_fitg fit > $R/fit.txt 2>&1; echo "fit rc=$? ${SECONDS}s"
for v in base fitg; do
  DECODE_DEV_SHAPE=16,32,8,1,8192,128 DECODE_DEV_MIXED=1 timeout 30 $S/decode_dev_${v}_tl timeline > $R/tl_mixed_$v.txt 2>&1
  echo "timeline mixed $v rc=$?"; grep -vE "^[0-9]" $R/tl_mixed_$v.txt | head -4 | cut -c1-200
done
for sp in 0 4; do
  if [ $sp = 0 ]; then env=""; else env="DECODE_DEV_SPLITS=$sp"; fi
  env DECODE_DEV_SHAPE=8,32,8,1,8192,128 DECODE_DEV_CACHE=1 $env timeout 30 $S/decode_dev_fitg_tl timeline > $R/tl_8x8192_s$sp.txt 2>&1
  echo "timeline 8x8192 splits $sp rc=$?"; grep -vE "^[0-9]" $R/tl_8x8192_s$sp.txt | head -4 | cut -c1-200
done
timeout 200 $S/flashcore_gpu_tests --gtest_filter='Gpu/SequenceCases.*cuda_flash*lensk*:Gpu.*ecode*' > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran" $R/gpu_tests.log | tail -4
gzip -f $R/*.log
(cd $OUT && tar czf r53c.tgz r53c && rm -rf r53c)
