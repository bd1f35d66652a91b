#!/bin/bash
# GPU run 61a (sixty-first session, issue 19; carry build/gpu-s61a.txz: flashcore_bench, flash_dev and
# flashcore_gpu_tests of main 76e27cf, flash_dev_L1 and flash_dev_L2 (the same with the D = 64 wide instances and
# the plan built with -DFLASHCORE_DEV_WIDE_AHEAD=1 or 2: experiment L, look-ahead steps; 2: the two score arrays
# take turns), libbenchmark and libgomp in lib/):
# (1) L1's and L2's correctness: flash_dev check; (2) flash_dev d64-ab, base, L1 and L2 alternated twice;
# (3) Nsight Compute (clocks left alone, SourceCounters) of the forced mma.sync path (cuda-flash-allwarps: the wide
#     kernel) and of torch's FlashAttention-2 kernel on the same cases: (2,16,4096,64), (16,16,512,64),
#     fp16, non-causal (the staged 2026-12-07_gpu-ncu-wide64_staged.sh, with FA2 beside it);
# (4) racecheck of L1 and L2; (5) with 200 s left: perf/run_forward.sh, the forced mma.sync path beside torch's flash and cuDNN paths.
# Each stage re-packs $OUT/r61a.tgz, so a cut-off call keeps what ran.
set -u
t0=$(date +%s)
LIM=${LIM:-560}  # the call's limit, seconds: later stages shrink to fit
R=/tmp/r61a; mkdir -p $R
pack() { (cd /tmp && tar czf $OUT/r61a.tgz --exclude="*.ncu-rep" r61a); }
el() { echo "$(( $(date +%s) - t0 ))"; }
tar xJf build/gpu-s61a.txz -C build
S=build/s61a; export LD_LIBRARY_PATH=$PWD/$S/lib
cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
for v in L1 L2; do
  timeout 60 $S/bin/flash_dev_$v check > $R/check_$v.txt 2>&1
  echo "$v check rc=$? ($(grep -c ^PASS $R/check_$v.txt) PASS, $(grep -c ^FAIL $R/check_$v.txt) FAIL) at $(el) s"; pack
done
for r in 1 2; do for v in base L1 L2; do
  [ $r = 2 ] && [ $(el) -gt $((LIM - 130)) ] && break 2  # a short call: one round
  b=$S/bin/flash_dev; [ $v != base ] && b=$S/bin/flash_dev_$v
  timeout 80 $b d64-ab > $R/d64_${v}_$r.txt 2>&1
  echo "d64-ab $v round $r rc=$? at $(el) s"; grep -c "check ok" $R/d64_${v}_$r.txt; pack
done; done
python3 perf/dev/flash_dev_ab.py $R d64 base L1 L2 > $R/d64_ab.md; cat $R/d64_ab.md
OUT=$R BACKEND=cuda-flash-allwarps SHAPES="2,16,4096,64;16,16,512,64" DTYPES=fp16 CAUSAL=0 TORCH=1 \
  TORCH_PATH=flash FP8_SHAPES= SOURCE=1 timeout $(( LIM - 20 - $(el) < 220 ? LIM - 20 - $(el) : 220 )) perf/dev/ncu_forward.sh $S/bin > $R/ncu.console 2>&1
echo "ncu rc=$? at $(el) s"; tail -n 4 $R/ncu.console
python3 perf/dev/ncu_summary.py $R/ncu --device="$dev" > $R/ncu_summary.md 2>&1
for f in $R/ncu/*.sass.csv; do echo "== $f"; python3 perf/dev/ncu_sass_stalls.py "$f" --top=16; done > $R/stalls.txt 2>&1
cat $R/ncu_summary.md; pack
for v in L1 L2; do
  [ $(el) -lt $((LIM - 60)) ] && timeout 40 compute-sanitizer --tool racecheck $S/bin/flash_dev_$v sanitize > $R/racecheck_$v.txt 2>&1
  echo "racecheck $v rc=$? $(tail -1 $R/racecheck_$v.txt) at $(el) s"; pack
done
if [ $(el) -lt $((LIM - 200)) ]; then  # (5)
  OUT=$R/fwd NAME=forced-mma BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 timeout $((LIM - 10 - $(el))) perf/run_forward.sh $S/bin > $R/fwd.console 2>&1
  echo "run_forward rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/fwd/*.md | cut -d"|" -f2-5,7,11 | head -34; pack
fi
echo "done at $(el) s"
