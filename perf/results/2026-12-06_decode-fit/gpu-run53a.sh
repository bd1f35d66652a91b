#!/bin/bash
# GPU run 53a (fifty-third session), issue 11: the balanced decode schedule's one-wave fit (decode/schedule.cuh, uncommitted
# on main 153b428). The plan's CPU tests (CudaConfig), `decode_dev check` of the fit build (forced-fit and rule-fit cases
# added), `decode_dev fit` (auto / fit -1 / fit 1 on batches near the slots, two rounds), then `decode_dev mixed` and
# `rows` base/fit/fit/base (base: main's decode_dev). Staging: build/gpu-s53a.txz.
set -u
R=$OUT/r53a; mkdir -p $R
tar xJf build/gpu-s53a.txz -C build
S=build/s53a; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/
SECONDS=0
timeout 60 $S/flashcore_tests --gtest_filter='CudaConfig.*' > $R/cudaconfig.log 2>&1; echo "CudaConfig rc=$? ${SECONDS}s"; tail -1 $R/cudaconfig.log
timeout 150 $S/decode_dev_fit check > $R/check.txt 2>&1; echo "check rc=$? ${SECONDS}s"; grep -iE "fit|fail|passed|cases" $R/check.txt | tail -12 | cut -c1-150
timeout 200 $S/decode_dev_fit fit > $R/fit.txt 2>&1; echo "fit rc=$? ${SECONDS}s"; cut -c1-75 $R/fit.txt
i=0
for v in base fit fit base; do
  i=$((i + 1))
  timeout 60 $S/decode_dev_$v mixed > $R/mixed_${i}_$v.txt 2>&1; echo "mixed $i $v rc=$? ${SECONDS}s"
  grep -E "auto" $R/mixed_${i}_$v.txt | cut -c1-60
  [ $SECONDS -gt 520 ] && break
done
for v in base fit; do
  [ $SECONDS -gt 540 ] && break
  timeout 50 $S/decode_dev_$v rows > $R/rows_$v.txt 2>&1; echo "rows $v rc=$? ${SECONDS}s"
done
(cd $OUT && tar czf r53a.tgz r53a && rm -rf r53a)
