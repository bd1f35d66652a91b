#!/bin/bash
# GPU run 45b: the landed build (285f435, E1: Q's region released at the item's last S). The forward suite and the
# head-dim sweep with torch (flash, cuDNN) in the same run; the Hopper GPU cases, determinism, graphs, large problems;
# racecheck and synccheck on small Hopper cases (the change moves an mbarrier arrival).
set -u
R=$OUT/r45b; mkdir -p $R
tar xJf build/gpu-s45b.txz -C build
S=build/s45b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
mkdir -p $R/fwd $R/sweep
OUT=$R/fwd NAME=forward QUICK=1 timeout 150 perf/run_forward.sh $S > $R/fwd/console.log 2>&1
echo "run_forward rc=$? ${SECONDS}s"; grep -E "^\| (16,16,512,64|4,16,1024,64|1,8,512,64)" $R/fwd/*forward.md | head -8
OUT=$R/sweep NAME=headdims QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" \
  timeout 100 perf/run_forward.sh $S > $R/sweep/console.log 2>&1
echo "sweep rc=$? ${SECONDS}s"
F='Gpu/*Cases.*/cuda_flash_hopper*:*Determin*:*Graphs*:*LargeProblems*'
timeout 200 $S/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1
echo "tests rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests.log | head; tail -1 $R/tests.log
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
FR='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*Lq77*:Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*Lq113*:Gpu/VariantCases.MatchesFp64Oracle/cuda_flash_hopper*Lq77*:Gpu/SequenceCases.MatchesFp64Oracle/cuda_flash_hopper*lensk5x700x2048*:Gpu/Fp8Cases.*/cuda_flash_hopper*Lq17*:Gpu/DeviceCases.*/cuda_flash*Hq75*'
for tool in racecheck synccheck; do
  left=$((575 - SECONDS)); [[ $tool == racecheck ]] && left=$((left * 2 / 3))
  timeout $left $SAN --tool $tool --error-exitcode 9 --print-limit 10 $S/flashcore_gpu_tests --gtest_filter="$FR" --gtest_brief=1 > $R/$tool.log 2>&1
  echo "$tool rc=$? ${SECONDS}s"; tail -3 $R/$tool.log | cut -c1-200
done
gzip -f $R/*.log
(cd $OUT && tar czf r45b.tgz r45b && rm -rf r45b)
