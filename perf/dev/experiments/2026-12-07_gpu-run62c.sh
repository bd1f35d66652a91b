#!/bin/bash
# GPU run 62c (sixty-second session; carry build/gpu-s62a.txz: flash_dev of main 76e27cf (base), flash_dev_O3u4 and
# flash_dev_O3u1 (experiment O3: the D = 64 wide instance built with -DFLASHCORE_DEV_WIDE_OCC3=4 or =1, Q read from
# shared memory and __launch_bounds__(128, 3); perf/dev/experiments/2026-12-07_wide-three-blocks.patch),
# flash_dev_cv43 (main's D = 32/64/96/128 mma.sync instances built with -DFLASHCORE_DEV_SMEM_CARVEOUT=43: the SM's
# shared memory cut to 100 KB, an sm_86/89 SM's; 2026-12-07_smem-carveout.patch), flashcore_bench of main 76e27cf
# (whose device code compiles to the same cubins as main's now), libbenchmark and libgomp in lib/). One call,
# stages in order of need, each fitted to the call's limit LIM:
# (1) O3's correctness (flash_dev check); (2) flash_dev d64-ab, base and O3u4, round 1;
# (3) flash_dev_cv43 d64-ab: the wide kernel's D = 64 ring depths 2-4 at the residency an L4 gives them;
# (4) flash_dev wide-ab, base and cv43: the forced all-warps rows at full and at an L4's shared memory an SM;
# (5) on an H200 only, and first: the head-dim sweep with torch (issue 12's criterion; not measured on an H200 since E4);
# (6) d64-ab round 2 (base, O3u4, O3u1); (7) the forced mma.sync table with torch (issue 19); (8) racecheck of O3u4.
# Each stage re-packs $OUT/r62c.tgz, so a cut-off call keeps what ran.
set -u
t0=$(date +%s)
LIM=${LIM:-570}
R=/tmp/r62c; mkdir -p $R
pack() { (cd /tmp && tar czf $OUT/r62c.tgz r62c); }
el() { echo "$(( $(date +%s) - t0 ))"; }
left() { echo "$(( LIM - $(el) ))"; }
tar xJf build/gpu-s62a.txz -C build
S=build/s62a; export LD_LIBRARY_PATH=$PWD/$S/lib
cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
h200=0; grep -q H200 $R/device.txt && h200=1
sweep() {
  OUT=$R/sweep NAME=headdims QUICK=1 DTYPES=fp16 \
    SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" \
    timeout $(( $(left) - 10 < 240 ? $(left) - 10 : 240 )) perf/run_forward.sh $S/bin > $R/sweep.console 2>&1
  echo "sweep rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/sweep/*.md | cut -d"|" -f2-5,7,10-12; pack
}
[ $h200 = 1 ] && sweep  # (5) first on an H200: issue 12's criterion
for v in O3u4 O3u1; do
  timeout 60 $S/bin/flash_dev_$v check > $R/check_$v.txt 2>&1
  echo "$v check rc=$? ($(grep -c ^PASS $R/check_$v.txt) PASS, $(grep -c ^FAIL $R/check_$v.txt) FAIL) at $(el) s"; pack
done
ab() {  # flash_dev mode $1 of build $2, round $3
  local b=$S/bin/flash_dev; [ $2 != base ] && b=$S/bin/flash_dev_$2
  timeout 90 $b $1 > $R/${1%-ab}_$2_$3.txt 2>&1
  echo "$1 $2 round $3 rc=$? at $(el) s ($(grep -c "check ok" $R/${1%-ab}_$2_$3.txt) ok)"; pack
}
ab d64-ab base 1; ab d64-ab O3u4 1
[ $(left) -gt 100 ] && ab d64-ab cv43 1  # (3)
[ $(left) -gt 200 ] && { ab wide-ab base 1; ab wide-ab cv43 1; }  # (4)
for v in base O3u4 O3u1; do [ $(left) -gt 230 ] && ab d64-ab $v 2; done  # (6)
python3 perf/dev/flash_dev_ab.py $R d64 base O3u4 O3u1 cv43 > $R/d64_ab.md; cat $R/d64_ab.md
python3 perf/dev/flash_dev_ab.py $R wide base cv43 > $R/wide_ab.md; cat $R/wide_ab.md; pack
if [ $(left) -gt 150 ]; then  # (7)
  OUT=$R/fwd NAME=forced-mma BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 \
    timeout $(( $(left) - 30 )) perf/run_forward.sh $S/bin > $R/fwd.console 2>&1
  echo "forced run_forward rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/fwd/*.md | cut -d"|" -f2-5,7,11 | head -34; pack
fi
if [ $(left) -gt 25 ]; then
  timeout $(( $(left) - 5 )) compute-sanitizer --tool racecheck $S/bin/flash_dev_O3u4 sanitize > $R/racecheck_O3u4.txt 2>&1
  echo "racecheck O3u4 rc=$? $(tail -1 $R/racecheck_O3u4.txt) at $(el) s"; pack
fi
echo "done at $(el) s"
