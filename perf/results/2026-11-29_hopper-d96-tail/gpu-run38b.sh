#!/bin/bash
# GPU run 38b: tT (turns at D = 192/256) against fin (the D = 96 instance landed: two stages, lazy max), forced Hopper,
# rounds alternating; then the head-dim sweep and the D = 96 rows with torch (flash, cuDNN) in the same run on fin.
set -u
R=$OUT/r38b; mkdir -p $R
tar xJf build/gpu-s38b.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s38/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,192;4,16,2048,256;2,16,4096,256;8,16,2048,256;16,16,512,256;4,16,1024,192;2,16,4096,192;4,16,2048,128"
for r in 1 2 3 4; do
  for v in fin tT; do
    timeout 100 build/s38/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-hopper --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>$R/err_${v}_$r.txt
    echo "time $v $r rc=$? $(( $(date +%s)-T0 )) s"
  done
done
cp -r build/s38/lib build/s38/fin/lib
mkdir -p $R/sweep $R/fwd
OUT=$R/sweep NAME=headdims QUICK=1 DTYPES=fp16 SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" \
  timeout 200 perf/run_forward.sh build/s38/fin > $R/sweep/console.log 2>&1
echo "sweep rc=$? $(( $(date +%s)-T0 )) s"
OUT=$R/fwd NAME=forward-d96 QUICK=1 SHAPES="2,16,4096,96;8,16,2048,96;1,16,16384,96;4,16,1024,96;16,16,512,96;1,8,2048,96" \
  timeout 200 perf/run_forward.sh build/s38/fin > $R/fwd/console.log 2>&1
echo "run_forward rc=$? $(( $(date +%s)-T0 )) s"
(cd $OUT && tar czf r38b.tgz r38b && rm -rf r38b)
