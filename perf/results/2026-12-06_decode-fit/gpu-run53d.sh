#!/bin/bash
# GPU run 53d (fifty-third session), issue 11: the landed build (the fit + G) on whatever GPU comes (the H200 kind asked):
# the decode suite against torch (perf/run_decode.sh, QUICK) twice, `decode_dev mixed` base/fitg/fitg/base and `decode_dev
# fit`. Staging: build/gpu-s53d.txz.
set -u
R=$OUT/r53d; mkdir -p $R
tar xJf build/gpu-s53d.txz -C build
S=build/s53d; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
cp $S/commit $R/
SECONDS=0
mkdir -p perf/results
for k in 1 2; do
  mkdir -p $R/suite$k
  OUT=$R/suite$k QUICK=1 T_BENCH=150 T_TORCH=100 timeout 200 perf/run_decode.sh $S > $R/suite$k/decode_console.log 2>&1; echo "decode $k rc=$? ${SECONDS}s"
  for f in $R/suite$k/*.md; do grep -E "^\| [0-9]" $f | head -40; done
done
i=0
for v in base fitg fitg base; do
  i=$((i + 1))
  timeout 30 $S/decode_dev_$v mixed > $R/mixed_${i}_$v.txt 2>&1; echo "mixed $i $v rc=$? ${SECONDS}s"
  grep -E " auto" $R/mixed_${i}_$v.txt | cut -c1-60
done
timeout 60 $S/decode_dev_fitg fit > $R/fit.txt 2>&1; echo "fit rc=$? ${SECONDS}s"
gzip -f $R/*/*.log $R/*/*.json
(cd $OUT && tar czf r53d.tgz r53d && rm -rf r53d)
