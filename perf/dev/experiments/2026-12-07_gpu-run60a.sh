#!/bin/bash
# GPU run 60a (sixtieth session, issue 19; carry build/gpu-s60a.txz: three builds of perf/dev/flash_dev against
# main's library, build/s60a/commit):
#   base = main f86195c,
#   pp   = base with the D = 64 wide rows on the ping-pong kernel (sm80/flash_fwd_pingpong.cuh, instances built
#          with -DFLASHCORE_DEV_WIDE_PINGPONG: two groups of four 32-row warps, 256 rows a block, turns on the
#          tensor pipe by named barriers),
#   e4   = base with the D = 64 16-row instances built with E4 (perf/dev/experiments/
#          2026-12-07_rows16-allwarps-kvtilecopy.patch, -DFLASHCORE_DEV_ROWS16_KVTILECOPY).
# (1) flash_dev d64-ab, base and pp alternated twice; (2) pp's correctness (flash_dev check) and racecheck;
# (3) flash_dev sweep, base and e4; (4) on an H200 only, with time left: the forced-path table with torch.
# Each stage re-packs $OUT/r60a.tgz, so a cut-off call keeps what ran.
set -u
t0=$(date +%s)
R=/tmp/r60a; mkdir -p $R
pack() { (cd /tmp && tar czf $OUT/r60a.tgz r60a); }
el() { echo $(( $(date +%s) - t0 )); }
tar xJf build/gpu-s60a.txz -C build
S=build/s60a; export LD_LIBRARY_PATH=$PWD/$S/lib
cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
for r in 1 2; do for v in base pp; do
  timeout 100 $S/flash_dev_$v d64-ab > $R/d64_${v}_$r.txt 2>&1
  echo "d64-ab $v round $r rc=$? at $(el) s"; grep -c "check ok" $R/d64_${v}_$r.txt; pack
done; done
timeout 150 $S/flash_dev_pp check > $R/check_pp.txt 2>&1
echo "pp check rc=$? ($(grep -c ^PASS $R/check_pp.txt) PASS, $(grep -c ^FAIL $R/check_pp.txt) FAIL) at $(el) s"; pack
timeout 90 compute-sanitizer --tool racecheck $S/flash_dev_pp sanitize > $R/racecheck_pp.txt 2>&1
echo "racecheck rc=$? $(tail -1 $R/racecheck_pp.txt) at $(el) s"; pack
for v in base e4; do
  timeout 90 $S/flash_dev_$v sweep > $R/sweep_${v}.txt 2>&1
  echo "sweep $v rc=$? at $(el) s"; pack
done
if grep -q H200 $R/device.txt && [ $(el) -lt 330 ]; then
  mkdir -p $S/bin_base && cp $S/flashcore_bench $S/bin_base/flashcore_bench
  OUT=$R/fwd NAME=forced-mma BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 timeout $((570 - $(el))) \
    perf/run_forward.sh $S/bin_base > $R/fwd.console 2>&1
  echo "run_forward rc=$?"; grep -E "^\| [0-9]" $R/fwd/*.md | cut -d"|" -f2-5,7,11 | head -34; pack
fi
echo "done at $(el) s"
