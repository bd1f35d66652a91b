#!/bin/bash
# GPU run 64a (staged in the sixty-third session for an H200; carry build/gpu-s64a.txz: flashcore_bench of main
# 99e1cbd, with the Hopper kernel's D = 160 instance). The H200 measurements nobody has taken since E4 and the D = 160
# instance. On an H100 only stages (2) and (4) run (run 64b took the H100's sweep and suite). Stages, each fitted to
# the call's limit LIM:
# (1) the head-dim sweep with torch, fp16 then bf16 (issue 12's criterion; D = 144 too);
# (2) the forward suite with torch, QUICK (the README's headline table);
# (3) the forced mma.sync table with torch (issue 19);
# (4) the decode suite with torch, QUICK (issue 11's H200 rows, last taken in run 51d).
. perf/dev/experiments/run_common.sh r64a s64a
SWEEP="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,144;4,16,2048,160;4,16,2048,192;4,16,2048,256"
if [ $h200 = 1 ]; then
  for dt in fp16 bf16; do
    OUT=$R/sweep_$dt NAME=headdims QUICK=1 DTYPES=$dt SHAPES="$SWEEP" timeout $(cap 120) perf/run_forward.sh $S/bin > $R/sweep_$dt.console 2>&1
    echo "sweep $dt rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/sweep_$dt/*.md | cut -d"|" -f2-5,10-12; pack
  done
fi
if [ $(left) -gt 120 ]; then
  OUT=$R/suite NAME=forward QUICK=1 timeout $(cap 150) perf/run_forward.sh $S/bin > $R/suite.console 2>&1
  echo "forward suite rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/suite/*.md | cut -d"|" -f2-5,10-12 | head -34; pack
fi
if [ $h200 = 1 ] && [ $(left) -gt 120 ]; then
  OUT=$R/fwd NAME=forced-mma BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 \
    timeout $(cap 150) perf/run_forward.sh $S/bin > $R/fwd.console 2>&1
  echo "forced run_forward rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/fwd/*.md | cut -d"|" -f2-5,7,11 | head -34; pack
fi
if [ $(left) -gt 90 ]; then
  OUT=$R/decode QUICK=1 timeout $(( $(left) - 10 )) perf/run_decode.sh $S/bin > $R/decode.console 2>&1
  echo "decode rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/decode/*.md | head -30; pack
fi
echo "done at $(el) s"
