#!/bin/bash
# GPU run 44i: warps 1-3 wait on bar_q before reading the item slot (as the consumers do). racecheck and synccheck on the
# Hopper paged cases in pages of 16, the Hopper sequence tests, and flashcore_bench ABBA against 44e's build (prev).
set -u
R=$OUT/r44i; mkdir -p $R
tar xJf build/gpu-s44i.txz -C build
S=build/s44i; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
F='Gpu/SequenceCases.*/cuda_flash_hopper*page16*'
for tool in racecheck synccheck; do
  timeout 60 $SAN --tool $tool --error-exitcode 9 --print-limit 10 $S/bin/flashcore_gpu_tests --gtest_filter="$F" --gtest_brief=1 > $R/$tool.log 2>&1
  echo "$tool rc=$? ${SECONDS}s"; tail -4 $R/$tool.log | cut -c1-200
done
timeout 100 $S/bin/flashcore_gpu_tests --gtest_filter='Gpu/SequenceCases.*/cuda_flash_hopper*:Gpu.GraphsCaptured*' > $R/tests.log 2>&1
echo "tests rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|FAILED|graphs:.*differ" $R/tests.log | sort | uniq -c | head
DEC="4,32,8,512,4096,128;1,32,8,2048,16384,128;8,32,8,256,2048,128;2,16,16,1024,8192,64;4,16,4,512,4096,256"
n=0
for v in prev new new prev; do
  n=$((n+1)); b=$S/bin/flashcore_bench; [[ $v == prev ]] && b=$S/bin/flashcore_bench_prev
  timeout 40 $b --device-only --no-check --quick --backends=cuda-flash --decode="$DEC" --paged=16 \
    --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "bench $v $n rc=$? ${SECONDS}s"
done
gzip -f $R/*.log $R/*.json
(cd $OUT && tar czf r44i.tgz r44i && rm -rf r44i)
