#!/bin/bash
# GPU run 52c (fifty-second session), issue 11: experiments P (the decode prologue: 32-bit piece bounds, Q after the
# first K/V tile's copies) and S (P + the balanced schedule's sequences largest pieces first), perf/dev/NOTES.md.
# base = main's library; p, ps = the decode instances of each build linked before it. `decode_dev_ps check`,
# timelines (mixed contiguous and pages of 16, the 32k row) of base/p/ps, then `decode_dev mixed` and `decode_dev rows`
# base/p/ps/ps/p/base. Staging: build/gpu-s52c.txz (branch tl-prologue).
set -u
R=$OUT/r52c; mkdir -p $R
tar xJf build/gpu-s52c.txz -C build
S=build/s52c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
timeout 150 $S/decode_dev_ps check > $R/ps_check.txt 2>&1; echo "ps check rc=$? ${SECONDS}s"; tail -1 $R/ps_check.txt
for v in tl p_tl ps_tl; do
  for pg in 0 16; do
    if [[ $pg == 0 ]]; then unset DECODE_DEV_PAGE; else export DECODE_DEV_PAGE=$pg; fi
    DECODE_DEV_MIXED=1 DECODE_DEV_SHAPE=16,32,8,1,8192,128 DECODE_DEV_CSV=$R/${v}_mixed_p$pg.csv timeout 40 $S/decode_dev_$v timeline > $R/${v}_mixed_p$pg.log 2>&1
    echo "timeline $v mixed page $pg rc=$?"; sed -n 2,4p $R/${v}_mixed_p$pg.log | cut -c1-250
  done
  unset DECODE_DEV_PAGE
  DECODE_DEV_SHAPE=1,32,8,1,32768,128 timeout 40 $S/decode_dev_$v timeline > $R/${v}_32k.log 2>&1
  echo "timeline $v 32k rc=$?"; sed -n 2,4p $R/${v}_32k.log | cut -c1-250
done
i=0
for v in "" _p _ps _ps _p ""; do
  i=$((i + 1)); n=${v:-_base}
  timeout 60 $S/decode_dev$v mixed > $R/mixed_${i}$n.txt 2>&1; echo "mixed $i $n rc=$? ${SECONDS}s"
  grep -E "auto" $R/mixed_${i}$n.txt | head -7 | cut -c1-60
  timeout 90 $S/decode_dev$v rows > $R/rows_${i}$n.txt 2>&1; echo "rows $i $n rc=$? ${SECONDS}s"
  grep -E "auto" $R/rows_${i}$n.txt | cut -c1-75
done
gzip -f $R/*.csv
(cd $OUT && tar czf r52c.tgz r52c && rm -rf r52c)
