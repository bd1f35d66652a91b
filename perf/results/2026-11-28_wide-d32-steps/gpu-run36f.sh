#!/bin/bash
# GPU run 36f: D = 64 on the wide kernel: ring of 4 stages (s64s4), lazy max (s64L), against fin (the landed kernels).
set -u
R=$OUT/r36f; mkdir -p $R
tar xJf build/gpu-s36f.txz -C build; tar xJf build/gpu-s32k.txz
export LD_LIBRARY_PATH=$PWD/build/s32k/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,64;1,16,16384,64"
for r in 1 2 3 4; do
  for v in fin s64s4 s64L; do
    timeout 60 build/s36/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-allwarps --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>/dev/null
    echo "time $v $r $(( $(date +%s)-T0 )) s"
  done
done
(cd $OUT && tar czf r36f.tgz r36f && rm -rf r36f)
