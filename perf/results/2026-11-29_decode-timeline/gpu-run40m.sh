#!/bin/bash
# GPU run 40m: one decode block per SM at D >= 128 where it fills the SMs as well (new) against bdc7881 (old): the decode
# suite's rows in ABBA order, perf/run_decode.sh (QUICK=1) with torch on new, decode GPU tests, decode_dev check.
set -u
R=$OUT/r40m; mkdir -p $R
tar xJf build/gpu-s40m.txz -C build
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
DEC="8,32,8,1,8192,128;1,32,8,1,32768,128;64,32,8,1,2048,128;16,64,8,1,4096,128;8,32,8,4,8192,128;8,32,8,1,8192,64;8,32,8,1,8192,256;1,8,1,1,65536,128"
MIX="32,8,1,128:1,7,33,100,250,511,777,1024,1500,2048,3000,4096,5000,6144,7000,8192"
n=0
for v in old new new old; do
  n=$((n+1))
  LD_LIBRARY_PATH=$PWD/build/s40m/lib timeout 150 build/s40m/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash \
    --decode="$DEC" --paged=16,64 --mixed="$MIX" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "$v $n rc=$? $(( $(date +%s)-T0 )) s"
done
OUT=$R QUICK=1 T_BENCH=240 T_TORCH=200 perf/run_decode.sh build/s40m/new > $R/run_decode.console 2>&1
echo "run_decode rc=$? $(( $(date +%s)-T0 )) s"
LD_LIBRARY_PATH=$PWD/build/s40m/lib timeout 120 build/s40m/bin/decode_dev_new check > $R/check.txt 2>&1; echo "check rc=$?" >> $R/check.txt
F='Gpu/DeviceCases.*/cuda_flash_B*Lq1_*:Gpu/SequenceCases.*/cuda_flash_B*:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCaptured*'
LD_LIBRARY_PATH=$PWD/build/s40m/lib timeout $(( 420 - ($(date +%s)-T0) )) build/s40m/new/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$? $(( $(date +%s)-T0 )) s" >> $R/tests.log
gzip $R/time_*.json
(cd $OUT && tar czf r40m.tgz r40m && rm -rf r40m)
