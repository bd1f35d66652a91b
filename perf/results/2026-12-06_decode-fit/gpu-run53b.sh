#!/bin/bash
# GPU run 53b (fifty-third session), issue 11: the one-wave fit, second form (q >= 2; the rule's arithmetic only where one
# wave overflows, a third scan only where the fit is taken; uncommitted on main 153b428): `decode_dev check`, `decode_dev fit`
# (auto / fit -1 / fit 1, two rounds), `decode_dev mixed` and `rows` base/fit/fit/base/base/fit (base: main's decode_dev), block timelines of equal lengths
# through cache lengths, balanced against the fixed grid ((8|9,32,8,1,8192,128): DECODE_DEV_CACHE, DECODE_DEV_SPLITS),
# the GPU tests of the decode kernel with sequence arrays (flashcore_gpu_tests, cuda-flash SequenceCases with cache
# lengths + the decode tests), and the decode suite against torch (perf/run_decode.sh, QUICK). Staging: build/gpu-s53b.txz.
set -u
R=$OUT/r53b; mkdir -p $R
tar xJf build/gpu-s53b.txz -C build
S=build/s53b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/
SECONDS=0
timeout 150 $S/decode_dev_fit check > $R/check.txt 2>&1; echo "check rc=$? ${SECONDS}s"; grep -E "FAIL|cases" $R/check.txt | tail -4 | cut -c1-150
timeout 60 $S/decode_dev_fit fit > $R/fit.txt 2>&1; echo "fit rc=$? ${SECONDS}s"; cut -c1-62 $R/fit.txt
i=0
for v in base fit fit base base fit; do
  i=$((i + 1))
  timeout 30 $S/decode_dev_$v mixed > $R/mixed_${i}_$v.txt 2>&1; echo "mixed $i $v rc=$? ${SECONDS}s"
  grep -E "auto" $R/mixed_${i}_$v.txt | cut -c1-60
  timeout 30 $S/decode_dev_$v rows > $R/rows_${i}_$v.txt 2>&1; echo "rows $i $v rc=$? ${SECONDS}s"
done
for sh in 8,32,8,1,8192,128 9,32,8,1,8192,128; do
  for sp in 0 4 3; do
    [ $sh = 8,32,8,1,8192,128 ] && [ $sp = 3 ] && continue
    [ $sh = 9,32,8,1,8192,128 ] && [ $sp = 4 ] && continue
    if [ $sp = 0 ]; then env=""; else env="DECODE_DEV_SPLITS=$sp"; fi
    env DECODE_DEV_SHAPE=$sh DECODE_DEV_CACHE=1 $env timeout 30 $S/decode_dev_fit_tl timeline > $R/tl_${sh}_s$sp.txt 2>&1
    echo "timeline $sh splits $sp rc=$? ${SECONDS}s"; grep -vE "^[0-9]" $R/tl_${sh}_s$sp.txt | head -8 | cut -c1-200
  done
done
timeout 200 $S/flashcore_gpu_tests --gtest_filter='Gpu/SequenceCases.*cuda_flash*lensk*:Gpu.*ecode*' > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|SKIPPED \]" $R/gpu_tests.log | grep -v "^\[  SKIPPED \] Gpu" | tail -5
if [ $SECONDS -lt 330 ]; then
  mkdir -p perf/results
  OUT=$R QUICK=1 T_BENCH=150 T_TORCH=100 timeout 260 perf/run_decode.sh $S > $R/decode_console.log 2>&1; echo "decode rc=$? ${SECONDS}s"
  for f in $R/*.md; do echo "== $f"; grep -E "^\| [0-9m]" $f | head -40; done
fi
gzip -f $R/*.log
(cd $OUT && tar czf r53b.tgz r53b && rm -rf r53b)
