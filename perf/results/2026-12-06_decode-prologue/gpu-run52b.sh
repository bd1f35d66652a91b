#!/bin/bash
# GPU run 52b (fifty-second session), issue 11's mixed decode batch:
# (1) where a decode block's ~4-5 us from entry to its first tile goes: the D = 128 decode instance built with
#     -DFLASHCORE_DEV_TIMELINE and prologue stamps (records 3 and 4: schedule found, Q issued + block table read,
#     first copies issued, Q landed), `decode_dev timeline` on the mixed batch (contiguous, pages of 16), the 32k
#     row and (8,32,8,1,8192,128);
# (2) experiment R (perf/dev/NOTES.md): the balanced schedule's items taken from the last (-DFLASHCORE_DEV_DECODE_REVERSED,
#     `rev`): its check, its timeline, and `decode_dev mixed` main/rev ABBA.
# Staging: build/gpu-s52b.txz (branch tl-prologue).
set -u
R=$OUT/r52b; mkdir -p $R
tar xJf build/gpu-s52b.txz -C build
S=build/s52b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
timeout 120 $S/decode_dev_rev check > $R/rev_check.txt 2>&1; echo "rev check rc=$? ${SECONDS}s"; tail -1 $R/rev_check.txt
for v in tl rev_tl; do
  for pg in 0 16; do
    if [[ $pg == 0 ]]; then unset DECODE_DEV_PAGE; else export DECODE_DEV_PAGE=$pg; fi
    DECODE_DEV_MIXED=1 DECODE_DEV_SHAPE=16,32,8,1,8192,128 DECODE_DEV_CSV=$R/${v}_mixed_p$pg.csv timeout 40 $S/decode_dev_$v timeline > $R/${v}_mixed_p$pg.log 2>&1
    echo "timeline $v mixed page $pg rc=$? ${SECONDS}s"; sed -n 2,5p $R/${v}_mixed_p$pg.log | cut -c1-300
  done
done
unset DECODE_DEV_PAGE
for sh in 1,32,8,1,32768,128 8,32,8,1,8192,128; do
  DECODE_DEV_SHAPE=$sh DECODE_DEV_CSV=$R/tl_$sh.csv timeout 40 $S/decode_dev_tl timeline > $R/tl_$sh.log 2>&1
  echo "timeline $sh rc=$? ${SECONDS}s"; sed -n 2,5p $R/tl_$sh.log | cut -c1-300
done
i=0
for v in main rev rev main; do
  i=$((i + 1)); b=$S/decode_dev; [[ $v == rev ]] && b=$S/decode_dev_rev
  timeout 60 $b mixed > $R/mixed_${i}_$v.txt 2>&1; echo "mixed $i $v rc=$? ${SECONDS}s"; grep -E "auto|waves 2" $R/mixed_${i}_$v.txt | head -8 | cut -c1-60
done
gzip -f $R/*.csv
(cd $OUT && tar czf r52b.tgz r52b && rm -rf r52b)
