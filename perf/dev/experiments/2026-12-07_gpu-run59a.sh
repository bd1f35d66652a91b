#!/bin/bash
# GPU run 59a (fifty-ninth session, issue 19; carry build/gpu-s59a.txz: three builds of perf/dev/flash_dev against
# main's library, build/s59a/commit):
#   base = main (the warp-specialized producer's copies by load_tile_async),
#   e3   = base with the 16-row kernel's instances built with -DFLASHCORE_DEV_WS_LEAN_COPIES (the producer warp's
#          copies by KVTileCopy<D, 32>: experiment E3),
#   c    = base with the wide kernel's instances built with the next tile's copies after Q·Kᵀ
#          (perf/dev/experiments/2026-12-06_wide-fill-after-qk.patch, -DFLASHCORE_DEV_WIDE_FILL_AFTER_QK: variant C).
# (1) e3's correctness (flash_dev check: odd shapes, GQA, layouts, both variants, forced split, vs the fp64 oracle);
# (2) flash_dev sweep-short (launch shapes of the short D = 64 rows), base and e3 alternated twice;
# (3) flash_dev wide-ab, base and c alternated three times (C's rounds 3-5 after run 58a's two);
# (4) on an H200 only: flashcore_bench's forced-path table with torch (perf/run_forward.sh).
# Each stage re-packs $OUT/r59a.tgz, so a cut-off call keeps what ran.
set -u
t0=$(date +%s)
R=/tmp/r59a; mkdir -p $R
pack() { (cd /tmp && tar czf $OUT/r59a.tgz r59a); }
tar xJf build/gpu-s59a.txz -C build
S=build/s59a; export LD_LIBRARY_PATH=$PWD/$S/lib
cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
timeout 150 $S/flash_dev_e3 check > $R/check_e3.txt 2>&1
echo "e3 check rc=$? ($(tail -1 $R/check_e3.txt)) at $(( $(date +%s) - t0 )) s"; pack
for r in 1 2; do for v in base e3; do
  timeout 150 $S/flash_dev_$v sweep-short > $R/short_${v}_$r.txt 2>&1
  echo "sweep-short $v round $r rc=$? ($(tail -1 $R/short_${v}_$r.txt)) at $(( $(date +%s) - t0 )) s"; pack
done; done
for r in 1 2 3; do for v in base c; do
  timeout 60 $S/flash_dev_$v wide-ab > $R/wide_${v}_$r.txt 2>&1
  echo "wide-ab $v round $r rc=$? at $(( $(date +%s) - t0 )) s"; pack
done; done
if grep -q H200 $R/device.txt && [ $(( $(date +%s) - t0 )) -lt 380 ]; then
  mkdir -p $S/bin_base && cp $S/flashcore_bench $S/bin_base/flashcore_bench
  OUT=$R/fwd NAME=forced-mma BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 timeout $((570 - $(date +%s) + t0)) \
    perf/run_forward.sh $S/bin_base > $R/fwd.console 2>&1
  echo "run_forward rc=$?"; grep -E "^\| [0-9]" $R/fwd/*.md | cut -d"|" -f2-5,7,11 | head -34; pack
fi
echo "done at $(( $(date +%s) - t0 )) s"
