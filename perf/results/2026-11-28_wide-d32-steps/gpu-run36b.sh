#!/bin/bash
# GPU run 36b: the landed form (fin36: two-tile steps at D = 32 only; D = 64/96/128 SASS identical to fin2)
# against fin2: A/B of the forced rows, GPU tests, the D = 32 forced rows with torch, Nsight Compute of the
# wide kernel at D = 96 and D = 128 (the D = 96 row's gap to FA2).
set -u
R=$OUT/r36b; mkdir -p $R
tar xJf build/gpu-s36b.txz -C build; tar xJf build/gpu-s32k.txz
export LD_LIBRARY_PATH=$PWD/build/s32k/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,32;2,16,4096,32;4,16,1024,32;1,16,16384,32;4,16,1024,64;2,16,4096,64;2,16,4096,128;4,16,2048,96"
for r in 1 2 3; do
  for v in fin2 fin36; do
    timeout 60 build/s36/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-allwarps --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>/dev/null
    echo "time $v $r $(( $(date +%s)-T0 )) s"
  done
done
F='*DeviceCases*cuda_flash_allwarps*:*SequenceCases*cuda_flash_allwarps*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedMatchesDeviceReferenceEverywhere:Gpu.TunedKernelsAreDeterministic'
timeout 200 build/s36/fin36/flashcore_gpu_tests --gtest_brief=1 --gtest_filter="$F" > $R/tests_fin36.log 2>&1
echo "tests fin36 rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_fin36.log; grep -E '^\[  FAILED  \]' $R/tests_fin36.log | head -10
cp -r build/s32k/lib build/s36/fin36/lib
mkdir -p $R/fwd
OUT=$R/fwd NAME=forward-mma-forced-d32 BACKENDS=cuda-flash-allwarps QUICK=1 SHAPES="4,16,1024,32;4,16,2048,32;2,16,4096,32;1,16,16384,32" \
  timeout 150 perf/run_forward.sh build/s36/fin36 > $R/fwd/console.log 2>&1
echo "run_forward rc=$? $(( $(date +%s)-T0 )) s"
ncu --version | tail -1 > $R/ncu_version.txt
for sh in 4,16,2048,96 4,16,2048,128; do
  n=$(echo $sh | tr , _)
  timeout 120 ncu --clock-control none -k regex:flash_fwd_wide -c 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section InstructionStats --section SchedulerStats \
    --section SourceCounters -f -o $R/wide_$n build/s36/fin36/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-allwarps \
    --dtypes=fp16 --causal=no --shapes="$sh" > $R/ncu_$n.log 2>&1
  echo "ncu $sh rc=$? $(( $(date +%s)-T0 )) s"
  ncu -i $R/wide_$n.ncu-rep --page raw --csv > $R/wide_${n}_raw.csv 2>/dev/null
  ncu -i $R/wide_$n.ncu-rep --page details --csv > $R/wide_${n}_details.csv 2>/dev/null
  ncu -i $R/wide_$n.ncu-rep --page source --csv --print-source sass > $R/wide_${n}_sass.csv 2>/dev/null
done
(cd $OUT && tar czf r36b.tgz r36b && rm -rf r36b)
