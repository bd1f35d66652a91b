#!/bin/bash
# GPU run 35d: Nsight Compute of the landed wide-warp kernel (fin = e643d7b), D = 128 and D = 64, forced mma.sync.
set -u
R=$OUT/r35d; mkdir -p $R
tar xJf build/gpu-s35c.txz -C build; tar xJf build/gpu-s32k.txz
export LD_LIBRARY_PATH=$PWD/build/s32k/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
ncu --version | tail -1 > $R/ncu_version.txt
T0=$(date +%s)
for sh in 2,16,4096,128 2,16,4096,64; do
  n=$(echo $sh | tr , _)
  timeout 150 ncu --clock-control none -k regex:flash_fwd_wide -c 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section InstructionStats --section SchedulerStats \
    -f -o $R/wide_$n build/s35/fin/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-allwarps \
    --dtypes=fp16 --causal=no --shapes="$sh" > $R/ncu_$n.log 2>&1
  echo "ncu $sh rc=$? $(( $(date +%s)-T0 )) s"
  ncu -i $R/wide_$n.ncu-rep --page raw --csv > $R/wide_${n}_raw.csv 2>/dev/null
  ncu -i $R/wide_$n.ncu-rep --page details --csv > $R/wide_${n}_details.csv 2>/dev/null
done
(cd $OUT && tar czf r35d.tgz r35d && rm -rf r35d)
