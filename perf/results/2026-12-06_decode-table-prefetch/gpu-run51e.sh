#!/bin/bash
# GPU run 51e (fifty-first session): why D1 did not move the mixed paged batch (run 51a, H100: b/a 1.003-1.006 on the
# balanced rows). Block timelines (decode_dev timeline, DECODE_DEV_MIXED=1, the D = 128 decode instance built with
# -DFLASHCORE_DEV_TIMELINE) of main (a) and D1 (b), contiguous and pages of 16 and 64: did the first tile come sooner?
# Then `decode_dev mixed` a/b/b/a again on whatever GPU this is. Staging: build/gpu-s51e.txz.
set -u
R=$OUT/r51e; mkdir -p $R
tar xJf build/gpu-s51e.txz -C build
S=build/s51e
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
for round in 1 2; do
  for v in a b; do
    for pg in 0 16 64; do
      if [[ $pg == 0 ]]; then unset DECODE_DEV_PAGE; else export DECODE_DEV_PAGE=$pg; fi
      DECODE_DEV_MIXED=1 DECODE_DEV_SHAPE=16,32,8,1,8192,128 DECODE_DEV_CSV=$R/tl_${v}_p${pg}_r$round.csv timeout 40 $S/decode_dev_tl_$v timeline > $R/tl_${v}_p${pg}_r$round.log 2>&1
      echo "timeline $v page $pg round $round rc=$? ${SECONDS}s"; sed -n 3,3p $R/tl_${v}_p${pg}_r$round.log | cut -c1-200
    done
  done
done
unset DECODE_DEV_PAGE
i=0
for v in a b b a; do
  i=$((i + 1))
  timeout 60 $S/decode_dev_$v mixed > $R/mixed_${i}_$v.txt 2>&1; echo "mixed $i $v rc=$? ${SECONDS}s"
done
gzip -f $R/*.csv
(cd $OUT && tar czf r51e.tgz r51e && rm -rf r51e)
