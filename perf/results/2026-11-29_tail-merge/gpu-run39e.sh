#!/bin/bash
# GPU run 39e: idle (warpgroups past the queries sit the item out, on top of merge) against merge and main;
# GPU tests of idle (Hopper device and sequence cases, large problems, determinism, graphs).
set -u
R=$OUT/r39e; mkdir -p $R
tar xJf build/gpu-s39e.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s39/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,64;2,16,4096,64;4,16,1024,64;16,16,512,64;1,16,16384,64;4,16,2048,32;1,7,2600,96;2,16,4096,128;2,10,2000,128;16,16,512,96"
n=0
for r in 1 2; do
  for v in main merge idle idle merge main; do
    n=$((n+1))
    [ -f $R/hung ] && [ $v = idle ] && continue
    timeout 40 build/s39/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2>$R/err_${v}_$n.txt
    rc=$?; echo "time $v $n rc=$rc $(( $(date +%s)-T0 )) s"; [ $rc = 124 ] && touch $R/hung
  done
done
B=build/s39/idle
F='Gpu/DeviceCases.*/cuda_flash_hopper_*:Gpu/SequenceCases.*/cuda_flash_hopper_*:Gpu/DeviceCases.*/cuda_flash*Hq75*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCapturedOnOneStreamReplayAtOnce'
[ -f $R/hung ] && F='Gpu/DeviceCases.*/cuda_flash_hopper_B1_*'
timeout $(( 570 - ($(date +%s)-T0) )) $B/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_idle.log 2>&1
echo "tests idle rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_idle.log; grep -E '^\[  FAILED  \]' $R/tests_idle.log | head -10
grep -c '^\[       OK' $R/tests_idle.log; tail -2 $R/tests_idle.log
gzip $R/tests_idle.log $R/*.json
(cd $OUT && tar czf r39e.tgz r39e && rm -rf r39e)
