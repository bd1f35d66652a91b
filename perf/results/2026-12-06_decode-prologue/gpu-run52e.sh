#!/bin/bash
# GPU run 52e (fifty-second session), issue 11: the T build (branch t-fit: two waves that fit two waves) on whatever GPU
# comes (an H200 asked): `decode_dev mixed` base/t/t/base, the GPU tests of the decode kernel with sequence arrays
# (flashcore_gpu_tests, every cuda-flash SequenceCases case with cache lengths and the decode tests), and the decode
# suite against torch (perf/run_decode.sh, QUICK). Staging: build/gpu-s52e.txz (s52e: flashcore_bench and
# flashcore_gpu_tests of the T build, decode_dev of main (base) and of T). perf/results/ stays behind (its size).
set -u
R=$OUT/r52e; mkdir -p $R
tar xJf build/gpu-s52e.txz -C build
S=build/s52e; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/
SECONDS=0
i=0
for v in base t t base; do
  i=$((i + 1))
  timeout 60 $S/decode_dev_$v mixed > $R/mixed_${i}_$v.txt 2>&1; echo "mixed $i $v rc=$? ${SECONDS}s"
  grep -E "auto|waves 2" $R/mixed_${i}_$v.txt | head -8 | cut -c1-60
done
timeout 240 $S/flashcore_gpu_tests --gtest_filter='Gpu/SequenceCases.*cuda_flash*lensk*:Gpu.*ecode*' > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|SKIPPED" $R/gpu_tests.log | tail -5
mkdir -p perf/results
OUT=$R QUICK=1 T_BENCH=200 T_TORCH=150 perf/run_decode.sh $S > $R/decode_console.log 2>&1; echo "decode rc=$? ${SECONDS}s"
for f in $R/*.md; do echo "== $f"; grep -E "^\| [0-9]" $f | head -40; done
gzip -f $R/*.log
(cd $OUT && tar czf r52e.tgz r52e && rm -rf r52e)
