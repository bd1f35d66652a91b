#!/bin/bash
# GPU run 52f (fifty-second session), issue 11: run 52e again without the GPU tests, asked for an H200 (an H100 came;
# run 52g is the same script, asked again):
# `decode_dev mixed` base/t/t/base and the decode suite against torch (perf/run_decode.sh, QUICK) on the T build (branch
# t-fit). Staging: build/gpu-s52f.txz (s52f: flashcore_bench of the T build, decode_dev of main (base) and of T).
# perf/results/ stays behind (its size).
set -u
R=$OUT/r52f; mkdir -p $R
tar xJf build/gpu-s52f.txz -C build
S=build/s52f; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/
SECONDS=0
i=0
for v in base t t base; do
  i=$((i + 1))
  timeout 60 $S/decode_dev_$v mixed > $R/mixed_${i}_$v.txt 2>&1; echo "mixed $i $v rc=$? ${SECONDS}s"
  grep -E "auto|waves 2" $R/mixed_${i}_$v.txt | head -8 | cut -c1-60
done

mkdir -p perf/results
OUT=$R QUICK=1 T_BENCH=200 T_TORCH=150 perf/run_decode.sh $S > $R/decode_console.log 2>&1; echo "decode rc=$? ${SECONDS}s"
for f in $R/*.md; do echo "== $f"; grep -E "^\| [0-9]" $f | head -40; done
gzip -f $R/*.log
(cd $OUT && tar czf r52f.tgz r52f && rm -rf r52f)
