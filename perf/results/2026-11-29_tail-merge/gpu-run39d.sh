#!/bin/bash
# GPU run 39d: Nsight Compute source counters of the tail-split kernel (merge2 build): where the pieces' epilogue waits.
set -u
R=$OUT/r39d; mkdir -p $R
tar xJf build/gpu-s39d.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s39/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
ncu --version | tail -1 > $R/ncu_version.txt
for sh in 2,10,2000,128 4,16,2048,64; do
  n=$(echo $sh | tr , _)
  timeout 150 ncu --clock-control none --cache-control none -k regex:flash_fwd_hopper -c 1 --section WarpStateStats --section SchedulerStats \
    --section SourceCounters --section InstructionStats -f -o $R/tail_$n build/s39/merge2/flashcore_bench --device-only --no-check --quick --reps=1 --backends=cuda-flash \
    --dtypes=fp16 --causal=no --shapes="$sh" > $R/ncu_$n.log 2>&1
  echo "ncu $sh rc=$? $(( $(date +%s)-T0 )) s"
  ncu -i $R/tail_$n.ncu-rep --page raw --csv > $R/tail_${n}_raw.csv 2>/dev/null
  ncu -i $R/tail_$n.ncu-rep --page source --csv --print-source sass > $R/tail_${n}_sass.csv 2>/dev/null
done
gzip $R/*.csv
(cd $OUT && tar czf r39d.tgz r39d && rm -rf r39d)
