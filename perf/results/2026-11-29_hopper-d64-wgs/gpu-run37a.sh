#!/bin/bash
# GPU run 37a: the Hopper kernel at D = 64 with three consumer warpgroups (192-row blocks; w3: 3 stages, w3s4: 4)
# against base (b6171e1: two warpgroups, 3 stages), forced cuda-flash-hopper; then Hopper GPU tests of w3.
set -u
R=$OUT/r37a; mkdir -p $R
tar xJf build/gpu-s37a.txz -C build
export LD_LIBRARY_PATH=$PWD/build/s37/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
SF="4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,64;8,16,2048,64;1,16,16384,64;1,8,2048,64;1,8,2048,32"
for r in 1 2 3; do
  for v in base w3 w3s4; do
    timeout 90 build/s37/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-hopper --dtypes=fp16,bf16 --causal=both --shapes="$SF" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2>$R/err_${v}_$r.txt
    echo "time $v $r rc=$? $(( $(date +%s)-T0 )) s"
  done
done
timeout 200 build/s37/w3/flashcore_gpu_tests --gtest_brief=1 --gtest_filter='*cuda_flash_hopper*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles' > $R/tests_w3.log 2>&1
echo "tests w3 rc=$? $(( $(date +%s)-T0 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_w3.log; grep -E '^\[  FAILED  \]' $R/tests_w3.log | head -10
(cd $OUT && tar czf r37a.tgz r37a && rm -rf r37a)
