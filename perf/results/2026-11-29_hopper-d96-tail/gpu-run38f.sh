#!/bin/bash
# GPU run 38f: tT against tail2 again, the order alternating within rounds (ABBA), fp16: is the 1-3 % penalty of the
# second build in runs 38b-38e an order effect?
set -u
R=$OUT/r38f; mkdir -p $R
tar xJf build/gpu-s38e.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s38/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,64;2,16,4096,64;2,10,2000,128;1,7,2600,96;4,12,2048,64"
n=0
for v in tT tail2 tail2 tT tT tail2 tail2 tT; do
  n=$((n+1))
  timeout 60 build/s38/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2>$R/err_${v}_$n.txt
  echo "time $v $n rc=$? $(( $(date +%s)-T0 )) s"
done
(cd $OUT && tar czf r38f.tgz r38f && rm -rf r38f)
