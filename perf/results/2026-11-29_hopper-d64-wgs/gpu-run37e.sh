#!/bin/bash
# GPU run 37e: causal D = 64 rows on three warpgroups below 4096 query rows (c512: threshold 512) against fin (7797431,
# threshold 4096), Auto (cuda-flash).
set -u
R=$OUT/r37e; mkdir -p $R
tar xJf build/gpu-s37e.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s37/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,2048,64;8,16,2048,64;4,16,1024,64;16,16,512,64;8,16,1024,64;2,16,3000,64;4,32,2048,64"
for r in 1 2 3 4; do
  for v in fin c512; do
    timeout 90 build/s37/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16,bf16 --causal=1 --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>$R/err_${v}_$r.txt
    echo "time $v $r rc=$? $(( $(date +%s)-T0 )) s"
  done
done
gzip $R/time_*.json
(cd $OUT && tar czf r37e.tgz r37e && rm -rf r37e)
