#!/bin/bash
# GPU run 54a (fifty-fourth session): main at efcddfd (H's final form, with its bound) on whatever GPU comes (the H200
# kind asked): the GPU tests of the decode kernel with sequence arrays and the graph test, `decode_dev check`, the decode
# suite against torch (perf/run_decode.sh, QUICK) twice, `decode_dev mixed` and `fit`. Staging: build/gpu-s54a.txz.
set -u
R=$OUT/r54a; mkdir -p $R
tar xJf build/gpu-s54a.txz -C build
S=build/s54a; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/
SECONDS=0
mkdir -p perf/results
timeout 220 $S/flashcore_gpu_tests --gtest_filter='Gpu/SequenceCases.*cuda_flash*lensk*:Gpu.*ecode*:Gpu.Graphs*' > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran" $R/gpu_tests.log | tail -4
timeout 150 $S/decode_dev check > $R/check.txt 2>&1; echo "check rc=$? ${SECONDS}s"; grep -E "FAIL|cases" $R/check.txt | tail -3 | cut -c1-150
for k in 1 2; do
  mkdir -p $R/suite$k
  OUT=$R/suite$k QUICK=1 T_BENCH=150 T_TORCH=100 timeout 200 perf/run_decode.sh $S > $R/suite$k/decode_console.log 2>&1; echo "decode $k rc=$? ${SECONDS}s"
  for f in $R/suite$k/*.md; do grep -E "^\| [0-9]" $f | head -40; done
  [ $SECONDS -gt 520 ] && break
done
[ $SECONDS -lt 540 ] && { timeout 30 $S/decode_dev mixed > $R/mixed.txt 2>&1; echo "mixed rc=$? ${SECONDS}s"; grep -E " auto" $R/mixed.txt | cut -c1-60; }
[ $SECONDS -lt 550 ] && { timeout 40 $S/decode_dev fit > $R/fit.txt 2>&1; echo "fit rc=$? ${SECONDS}s"; }
gzip -f $R/*.log $R/*/*.log $R/*/*.json 2>/dev/null
(cd $OUT && tar czf r54a.tgz r54a && rm -rf r54a)
