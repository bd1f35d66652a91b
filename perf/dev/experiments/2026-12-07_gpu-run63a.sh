#!/bin/bash
# GPU run 63a (staged in the sixty-second session for the next; carry build/gpu-s63a.txz, made on the CPU machine:
# flashcore_bench and flash_dev of main 7e28586's code (`commit`), flash_dev_cv43 (the same harness with main's
# D = 32/64/96/128 mma.sync instances built with -DFLASHCORE_DEV_SMEM_CARVEOUT=43: each launch asks for a 100 KB
# shared-memory carveout, an sm_86/89 SM's; perf/dev/experiments/2026-12-07_smem-carveout.patch), libbenchmark
# and libgomp in lib/). Rebuild the bundle if build/ is gone: flash_dev with perf/dev/build_decode_dev.sh
# (HARNESS=flash_dev EXTRA_OBJS=build/cuda-sm90/libflashcore_verify.a), flash_dev_cv43 the same with the four
# instances compiled with the patch applied and the flag (the run 62c bundle's recipe, perf/dev/NOTES.md).
# Stages, each fitted to the call's limit LIM:
# (1) on an H200 only, first: the head-dim sweep with torch (issue 12's criterion; not measured on an H200 since E4);
# (2) flash_dev d32-l4 in main's build and in cv43: D = 32 rows, the table's wide kernel (one block an SM on a 100 KB
#     SM) against the 16-row kernel's 64-row blocks at 2 stages (two blocks there) and 3 (issue 19, on the L4 it is
#     about: should the plan take the 16-row kernel at D = 32 where the SM is 100 KB?);
# (3) the forced mma.sync table with torch in the same run (issue 19; on an H200 the first since KVTileCopy/E3/E4).
set -u
t0=$(date +%s)
LIM=${LIM:-560}
R=/tmp/r63a; mkdir -p $R
pack() { (cd /tmp && tar czf $OUT/r63a.tgz r63a); }
el() { echo "$(( $(date +%s) - t0 ))"; }
left() { echo "$(( LIM - $(el) ))"; }
tar xJf build/gpu-s63a.txz -C build
S=build/s63a; export LD_LIBRARY_PATH=$PWD/$S/lib
cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
h200=0; grep -q H200 $R/device.txt && h200=1
if [ $h200 = 1 ]; then  # (1)
  OUT=$R/sweep NAME=headdims QUICK=1 DTYPES=fp16 \
    SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" \
    timeout $(( $(left) - 10 < 240 ? $(left) - 10 : 240 )) perf/run_forward.sh $S/bin > $R/sweep.console 2>&1
  echo "sweep rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/sweep/*.md | cut -d"|" -f2-5,7,10-12; pack
fi
for v in base cv43; do  # (2)
  [ $(left) -gt 60 ] || break
  b=$S/bin/flash_dev; [ $v != base ] && b=$S/bin/flash_dev_$v
  timeout 90 $b d32-l4 > $R/d32_${v}_1.txt 2>&1
  echo "d32-l4 $v rc=$? at $(el) s ($(grep -c "check ok" $R/d32_${v}_1.txt) ok)"; pack
done
python3 perf/dev/flash_dev_ab.py $R d32 base cv43 > $R/d32_ab.md; cat $R/d32_ab.md; pack
if [ $(left) -gt 150 ]; then  # (3)
  OUT=$R/fwd NAME=forced-mma BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 \
    timeout $(( $(left) - 15 )) perf/run_forward.sh $S/bin > $R/fwd.console 2>&1
  echo "forced run_forward rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/fwd/*.md | cut -d"|" -f2-5,7,11 | head -34; pack
fi
echo "done at $(el) s"
