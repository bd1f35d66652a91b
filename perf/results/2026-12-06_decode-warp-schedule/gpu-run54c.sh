#!/bin/bash
# GPU run 54c (fifty-fourth session), issue 11: the decode suite against torch (perf/run_decode.sh, QUICK), main
# (efcddfd, build/s54a) and W2 alone (the piece's tile bounds in 32 bits; build/s54c) alternating main/W2/W2/main in one
# call, on whatever GPU comes (the H200 kind asked: issue 11's H200 rows were last measured in run 51d); `decode_dev
# rows` main/W2 (cut short where the call runs long: the session's device budget was down to 395 s). Staging: build/gpu-s54a.txz,
# build/gpu-s54c.txz.
set -u
R=$OUT/r54c; mkdir -p $R
tar xJf build/gpu-s54a.txz -C build; tar xJf build/gpu-s54c.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s54a/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp build/s54a/commit $R/commit_main; cp build/s54c/commit $R/commit_w2
SECONDS=0
mkdir -p perf/results
i=0
for v in a c c a; do
  i=$((i + 1))
  mkdir -p $R/suite${i}_s54$v
  OUT=$R/suite${i}_s54$v QUICK=1 T_BENCH=150 T_TORCH=100 timeout 200 perf/run_decode.sh build/s54$v > $R/suite${i}_s54$v/decode_console.log 2>&1
  echo "decode $i s54$v rc=$? ${SECONDS}s"
  for f in $R/suite${i}_s54$v/*.md; do grep -E "^\| [0-9]|^\| mixed" $f | head -40; done
  [ $SECONDS -gt 110 ] && break
done
for v in a c; do
  [ $SECONDS -lt 200 ] && { [ $v = a ] && b=build/s54a/decode_dev || b=build/s54c/decode_dev_w2; timeout 30 $b rows > $R/rows_s54$v.txt 2>&1; echo "rows $v ${SECONDS}s"; }
done
[ $SECONDS -lt 60 ] && { timeout 120 build/s54c/flashcore_gpu_tests --gtest_filter='Gpu/SequenceCases.*cuda_flash*lensk*:Gpu.*ecode*:Gpu.Graphs*' > $R/gpu_tests.log 2>&1; echo "gpu tests rc=$? ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran" $R/gpu_tests.log | tail -4; }
gzip -f $R/*.log $R/*/*.log $R/*/*.json 2>/dev/null
(cd $OUT && tar czf r54c.tgz r54c && rm -rf r54c)
