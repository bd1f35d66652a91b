#!/bin/bash
# GPU run 48b: experiment E4 (the Hopper item handed over decoded: HandedItem in the item slot, the consumers no longer
# decode w). (1) flashcore_bench ABBA x2, main / e4, the Hopper rows fp16 both maskings; (2) item timelines of the short
# D = 64 rows, main (s46b's harness, e0c5676 = HEAD's kernel) and e4, same call; (3) GPU tests on e4: the tail split,
# tickets, graphs and determinism first, then pages of 16 (the V-gather warps read the slot too), then Hopper cases.
# Staging (build/s48b -> build/gpu-s48b.txz): main/ HEAD 92f4922's flashcore_bench (build/cuda-sm90); e4/ flashcore_bench and
# flashcore_gpu_tests of /work/e4 (branch e4-item-slot), a full build; tl/ hopper_dev with the D = 64 instances built
# with -DFLASHCORE_DEV_TIMELINE (main: s46b's; e4: perf/dev/build_hopper_dev.sh, EXTRA_OBJS); lib/ libbenchmark.
set -u
R=$OUT/r48b; mkdir -p $R
tar xJf build/gpu-s48b.txz -C build
S=build/s48b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
LIMIT=${LIMIT:-560}
SF="16,16,512,64;4,16,1024,64;1,8,1024,64;2,16,4096,64;16,16,512,128;8,16,1024,128;2,16,4096,128;4,16,2048,96;4,16,2048,192"
n=0
for r in 1 2; do
  for v in main e4 e4 main; do
    n=$((n+1))
    timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16 --causal=both --shapes="$SF" \
      --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
    echo "bench $v $n rc=$? ${SECONDS}s"
  done
done
python3 perf/dev/ab_medians.py $R main e4 > $R/ab_medians.txt 2>&1 || true
head -40 $R/ab_medians.txt
for v in e4; do  # main: run 48a (same kind of GPU, an hour before)
  for b in hdim64 hdim64_wg3; do
    for sh in 16,16,512,64 4,16,1024,64 1,8,1024,64; do
      for c in 0 1; do
        tag=${v}_${b}_$(echo $sh | tr , _)_c$c
        if [ $c = 1 ]; then export HOPPER_DEV_CAUSAL=1; else unset HOPPER_DEV_CAUSAL; fi
        HOPPER_DEV_SHAPE=$sh timeout 60 $S/tl/hopper_dev_tl_${v}_$b timeline > $R/tl_$tag.csv 2> $R/tl_$tag.err
        rc=$?; nl=$(wc -l < $R/tl_$tag.csv)
        if (( nl > 10 )); then python3 perf/dev/timeline_summary.py $R/tl_$tag.csv > $R/tl_$tag.summary.txt; echo "== $tag rc=$rc"; sed -n 1,12p $R/tl_$tag.summary.txt | cut -c1-250; gzip -f $R/tl_$tag.csv; else rm -f $R/tl_$tag.csv; fi
      done
    done
  done
done
unset HOPPER_DEV_CAUSAL
echo "timelines ${SECONDS}s"
F1="*TunedKernelsAreDeterministic*:*Graphs*:*LargeProblems*:*RandomShapesProperty*:*RandomVariantsProperty*:*TunedMatchesDeviceReferenceEverywhere*:Gpu/SequenceCases.*/cuda_flash_hopper*page16*"
timeout $((LIMIT - 150 - SECONDS)) $S/e4/flashcore_gpu_tests --gtest_filter="$F1" > $R/tests_e4_a.log 2>&1
echo "tests_e4_a rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_e4_a.log | head; tail -1 $R/tests_e4_a.log; grep -c "^\[       OK" $R/tests_e4_a.log
FE="Gpu/*Cases.*/cuda_flash_hopper*D64*:Gpu/*Cases.*/cuda_flash_hopper*D128*:Gpu/*Cases.*/cuda_flash_hopper*D32*:Gpu/*Cases.*/cuda_flash_hopper*D96*"
timeout $((LIMIT - 8 - SECONDS)) $S/e4/flashcore_gpu_tests --gtest_filter="$FE" > $R/tests_e4_b.log 2>&1
echo "tests_e4_b rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_e4_b.log | head; tail -1 $R/tests_e4_b.log; grep -c "^\[       OK" $R/tests_e4_b.log
gzip -f $R/*.log $R/*.json
(cd $OUT && tar czf r48b.tgz r48b && rm -rf r48b)
