#!/bin/bash
# GPU run 62b (sixty-second session, issue 19, experiment O3; carry build/gpu-s62a.txz: flash_dev of main 76e27cf
# (base, run 61a's), flash_dev_O3u4 and flash_dev_O3u1 (the same with the D = 64 instance built with
# -DFLASHCORE_DEV_WIDE_OCC3=4 or =1: the wide kernel at D = 64 with Q read from shared memory and
# __launch_bounds__(128, 3), three blocks an SM where shared memory allows; the Q·Kᵀ k-loop unrolled 4 or 1),
# flashcore_bench, libbenchmark and libgomp in lib/):
# (1) O3's correctness: flash_dev check; (2) flash_dev d64-ab, base, O3u4 and O3u1 alternated twice (one round on a
# short call); (3) racecheck of O3u4. Each stage re-packs $OUT/r62b.tgz, so a cut-off call keeps what ran.
set -u
t0=$(date +%s)
LIM=${LIM:-560}
R=/tmp/r62b; mkdir -p $R
pack() { (cd /tmp && tar czf $OUT/r62b.tgz r62b); }
el() { echo "$(( $(date +%s) - t0 ))"; }
tar xJf build/gpu-s62a.txz -C build
S=build/s62a; export LD_LIBRARY_PATH=$PWD/$S/lib
cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
for v in O3u4 O3u1; do
  timeout 60 $S/bin/flash_dev_$v check > $R/check_$v.txt 2>&1
  echo "$v check rc=$? ($(grep -c ^PASS $R/check_$v.txt) PASS, $(grep -c ^FAIL $R/check_$v.txt) FAIL) at $(el) s"; pack
done
for r in 1 2; do for v in base O3u4 O3u1; do
  [ $r = 2 ] && [ $(el) -gt $((LIM - 190)) ] && break 2  # a short call: one round
  b=$S/bin/flash_dev; [ $v != base ] && b=$S/bin/flash_dev_$v
  timeout 80 $b d64-ab > $R/d64_${v}_$r.txt 2>&1
  echo "d64-ab $v round $r rc=$? at $(el) s"; grep -c "check ok" $R/d64_${v}_$r.txt; pack
done; done
python3 perf/dev/flash_dev_ab.py $R d64 base O3u4 O3u1 > $R/d64_ab.md; cat $R/d64_ab.md; pack
if [ $(el) -lt $((LIM - 40)) ]; then
  timeout 30 compute-sanitizer --tool racecheck $S/bin/flash_dev_O3u4 sanitize > $R/racecheck_O3u4.txt 2>&1
  echo "racecheck O3u4 rc=$? $(tail -1 $R/racecheck_O3u4.txt) at $(el) s"; pack
fi
echo "done at $(el) s"
