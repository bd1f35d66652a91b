#!/bin/bash
# GPU run 46b: (1) experiment E2, the Hopper producer's item tickets drawn one item ahead (the next item known when
# Q_EMPTY completes; every sm90 instance rebuilt, the consumers at 232 registers and the producer at 32 at D = 96 and 192,
# which spilled 4 bytes at 24; and Q's release written once, s_done): flashcore_bench ABBA x2 against main; (2) the prepared run 45d: item timelines of the
# short D = 64 rows, main and E2, with the first tile's marks (Q -> K0 landed -> P0 packed); (3) on E2: large problems, determinism, graphs (tickets), then the Hopper GPU cases (D = 64, 128, 96, 192).
# Staging (build/s46b, xz-compressed to build/gpu-s46b.txz; carry it and this script): main/ flashcore_bench and
# flashcore_gpu_tests of build/cuda-sm90; e2/ the same relinked against a copy of libflashcore.a whose eight sm90
# instance members are replaced by the patched tree's (ar dN 2 for the names sm80 shares, ar d, ar q, ar s); tl/
# hopper_dev_tl_{main,e2}_hdim64{,_wg3} (perf/dev/build_hopper_dev.sh with EXTRA_OBJS = that tree's fwd_hdim64[_wg3].cu
# built with -DFLASHCORE_DEV_TIMELINE, LIB = its library); lib/ libbenchmark as linked here.
set -u
R=$OUT/r46b; mkdir -p $R
tar xJf build/gpu-s46b.txz -C build
S=build/s46b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
LIMIT=${LIMIT:-570}  # seconds this call may use (the tests take what is left)
SF="16,16,512,64;4,16,1024,64;1,8,1024,64;2,16,4096,64;16,16,512,128;8,16,1024,128;2,16,4096,128;4,16,2048,96;4,16,2048,192"
n=0
for r in 1 2; do
  for v in main e2 e2 main; do
    n=$((n+1))
    timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16 --causal=both --shapes="$SF" \
      --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
    echo "bench $v $n rc=$? ${SECONDS}s"
  done
done
python3 perf/dev/ab_medians.py $R main e2 > $R/ab_medians.txt 2>&1 || true
head -40 $R/ab_medians.txt
# Timelines (hopper_dev timeline, the D = 64 instances built with -DFLASHCORE_DEV_TIMELINE, now with the first tile's
# marks): main and E2 on the short rows (the plan's instance records; the other binary prints no rows).
for v in main e2; do
  for b in hdim64 hdim64_wg3; do
    for sh in 16,16,512,64 4,16,1024,64; do
      for c in 0 1; do
        tag=${v}_${b}_$(echo $sh | tr , _)_c$c
        if [ $c = 1 ]; then export HOPPER_DEV_CAUSAL=1; else unset HOPPER_DEV_CAUSAL; fi
        HOPPER_DEV_SHAPE=$sh timeout 60 $S/tl/hopper_dev_tl_${v}_$b timeline > $R/tl_$tag.csv 2> $R/tl_$tag.err
        rc=$?; n=$(wc -l < $R/tl_$tag.csv); echo "timeline $tag rc=$rc rows $n ${SECONDS}s"
        if (( n > 10 )); then python3 perf/dev/timeline_summary.py $R/tl_$tag.csv > $R/tl_$tag.summary.txt; head -12 $R/tl_$tag.summary.txt | cut -c1-260; gzip -f $R/tl_$tag.csv; else rm -f $R/tl_$tag.csv; fi
      done
    done
  done
done
unset HOPPER_DEV_CAUSAL
# The tickets' path first (more items than SMs: large problems, determinism, graphs), then the Hopper cases.
F1="*LargeProblems*:*Determin*:*Graphs*"
timeout $((LIMIT - 120 - SECONDS)) $S/e2/flashcore_gpu_tests --gtest_filter="$F1" > $R/tests_e2_tickets.log 2>&1
echo "tests_e2_tickets rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_e2_tickets.log | head; tail -1 $R/tests_e2_tickets.log
FE="Gpu/*Cases.*/cuda_flash_hopper*D64*:Gpu/*Cases.*/cuda_flash_hopper*D128*:Gpu/*Cases.*/cuda_flash_hopper*D96*:Gpu/*Cases.*/cuda_flash_hopper*D192*"
timeout $((LIMIT - 8 - SECONDS)) $S/e2/flashcore_gpu_tests --gtest_filter="$FE" > $R/tests_e2.log 2>&1
echo "tests_e2 rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_e2.log | head; tail -1 $R/tests_e2.log; grep -c "^\[       OK" $R/tests_e2.log
gzip -f $R/*.log $R/*.json $R/*.csv
(cd $OUT && tar czf r46b.tgz r46b && rm -rf r46b)
