#!/bin/bash
# GPU run 64a (sixty-third session): the H200 measurements nobody has taken since E4, with run 63a's bundle
# (build/gpu-s63a.txz, main 7e28586's code: same kernels and plans as main d6f9752 on Hopper). On an H100 only
# stages (2) and (4) run (run 63a took the H100's forced table earlier in this session). Stages, each fitted to the
# call's limit LIM:
# (1) the head-dim sweep with torch (issue 12's criterion);
# (2) the forward suite with torch, QUICK (the README's headline table; the H200's last is run 51f's);
# (3) the forced mma.sync table with torch (issue 19);
# (4) the decode suite with torch, QUICK (issue 11's H200 rows, last taken in run 51d).
set -u
t0=$(date +%s)
LIM=${LIM:-560}
R=/tmp/r64a; mkdir -p $R
pack() { (cd /tmp && tar czf $OUT/r64a.tgz r64a); }
el() { echo "$(( $(date +%s) - t0 ))"; }
left() { echo "$(( LIM - $(el) ))"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
h200=0; grep -q H200 $R/device.txt && h200=1
tar xJf build/gpu-s63a.txz -C build
S=build/s63a; export LD_LIBRARY_PATH=$PWD/$S/lib
cp $S/commit $R/
[ $h200 = 1 ] && OUT=$R/sweep NAME=headdims QUICK=1 DTYPES=fp16 \
  SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" \
  timeout $(( $(left) - 10 < 240 ? $(left) - 10 : 240 )) perf/run_forward.sh $S/bin > $R/sweep.console 2>&1
[ $h200 = 1 ] && echo "sweep rc=$? at $(el) s" && grep -E "^\| [0-9]" $R/sweep/*.md | cut -d"|" -f2-5,7,10-12; pack
if [ $(left) -gt 120 ]; then
  OUT=$R/suite NAME=forward QUICK=1 timeout $(( $(left) - 10 < 150 ? $(left) - 10 : 150 )) perf/run_forward.sh $S/bin > $R/suite.console 2>&1
  echo "forward suite rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/suite/*.md | cut -d"|" -f2-5,10-12 | head -34; pack
fi
if [ $h200 = 1 ] && [ $(left) -gt 120 ]; then
  OUT=$R/fwd NAME=forced-mma BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 \
    timeout $(( $(left) - 10 < 150 ? $(left) - 10 : 150 )) perf/run_forward.sh $S/bin > $R/fwd.console 2>&1
  echo "forced run_forward rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/fwd/*.md | cut -d"|" -f2-5,7,11 | head -34; pack
fi
if [ $(left) -gt 90 ]; then
  OUT=$R/decode QUICK=1 timeout $(( $(left) - 10 )) perf/run_decode.sh $S/bin > $R/decode.console 2>&1
  echo "decode rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/decode/*.md | head -30; pack
fi
echo "done at $(el) s"
