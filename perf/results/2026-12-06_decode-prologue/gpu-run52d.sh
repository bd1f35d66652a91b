#!/bin/bash
# GPU run 52d (fifty-second session), issue 11: experiment T (decode/schedule.cuh: two waves that fit two waves, tps2 + 1
# where tps2's rounded-up pieces overflow them), perf/dev/NOTES.md. base = main's decode_dev (run 52c's), t = branch
# t-fit's library. `decode_dev_t check`, timelines of base and t (mixed contiguous, pages of 16), `decode_dev mixed`
# and `rows` base/t/t/base. Staging: build/gpu-s52d.txz.
set -u
R=$OUT/r52d; mkdir -p $R
tar xJf build/gpu-s52d.txz -C build
S=build/s52d
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
timeout 150 $S/decode_dev_t check > $R/t_check.txt 2>&1; echo "t check rc=$? ${SECONDS}s"; tail -1 $R/t_check.txt
for v in tl t_tl; do
  for pg in 0 16; do
    if [[ $pg == 0 ]]; then unset DECODE_DEV_PAGE; else export DECODE_DEV_PAGE=$pg; fi
    DECODE_DEV_MIXED=1 DECODE_DEV_SHAPE=16,32,8,1,8192,128 DECODE_DEV_CSV=$R/${v}_mixed_p$pg.csv timeout 40 $S/decode_dev_$v timeline > $R/${v}_mixed_p$pg.log 2>&1
    echo "timeline $v mixed page $pg rc=$?"; sed -n 2,3p $R/${v}_mixed_p$pg.log | cut -c1-250
  done
done
unset DECODE_DEV_PAGE
i=0
for v in "" _t _t ""; do
  i=$((i + 1)); n=${v:-_base}
  timeout 60 $S/decode_dev$v mixed > $R/mixed_${i}$n.txt 2>&1; echo "mixed $i $n rc=$? ${SECONDS}s"
  grep -E "auto|waves 2" $R/mixed_${i}$n.txt | cut -c1-60
  timeout 90 $S/decode_dev$v rows > $R/rows_${i}$n.txt 2>&1; echo "rows $i $n rc=$? ${SECONDS}s"
  grep -E "auto" $R/rows_${i}$n.txt | cut -c1-60
done
gzip -f $R/*.csv
(cd $OUT && tar czf r52d.tgz r52d && rm -rf r52d)
