#!/bin/bash
# GPU run 43e: captured Hopper launches without a tail split in the static order (hs) against tickets (bin, run 43d's
# decode build): GPU tests (graph node counts, graph vs eager bits), forward ABBA bin / hs x 3 (fp16, causal both),
# run_forward.sh QUICK=1 with torch (hs).
set -u
R=$OUT/r43e; mkdir -p $R
tar xJf build/gpu-s43e.txz -C build
S=build/s43e; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
F='Gpu.GraphsCaptured*:Gpu.TunedKernelsAreDeterministic:Gpu.TunedMatchesDeviceReferenceEverywhere'
timeout 120 $S/hs/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$? $(el) s" | tee -a $R/tests.log
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|graphs:.*differ" $R/tests.log | sort | uniq -c | head -20
SH="16,16,512,64;4,16,1024,64;1,8,2048,64;1,8,1024,64;2,16,4096,64;4,16,2048,64;8,16,1024,128;4,16,1024,128;2,16,4096,128"
n=0
for v in bin hs hs bin bin hs; do
  n=$((n+1))
  timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16 --causal=both \
    --shapes="$SH" --benchmark_color=false --benchmark_format=json > $R/fwd_${v}_$n.json 2> $R/fwderr_${v}_$n.txt
  echo "fwd $v $n rc=$? $(el) s"
done
OUT=$R QUICK=1 DTYPES=fp16 SHAPES="1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,64;2,16,4096,128;8,16,1024,128" \
  timeout 240 perf/run_forward.sh $S/hs > $R/run_forward.console 2>&1
echo "run_forward rc=$? $(el) s"
grep "^| " $R/*_forward.md | head -40
gzip -f $R/tests.log
(cd $OUT && tar czf r43e.tgz r43e && rm -rf r43e)
