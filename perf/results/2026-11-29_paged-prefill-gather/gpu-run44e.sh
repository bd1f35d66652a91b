#!/bin/bash
# GPU run 44e: the final build (V tiles of pages of 16 gathered by the Hopper producer warps 1-3). GPU tests (sequence
# layouts on every tuned kernel, graphs, determinism), the CLI's main job, and
# run_decode.sh on the paged-prefill shapes with torch in the same run.
set -u
R=$OUT/r44e; mkdir -p $R
tar xJf build/gpu-s44e.txz -C build
S=build/s44e; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
$S/bin/flashcore > $R/main_job.txt 2>&1; echo "main job rc=$? $(el) s"; grep -iE "median|result" $R/main_job.txt | head -3
OUT=$R QUICK=1 T_BENCH=170 T_TORCH=120 DECODE="4,32,8,512,4096,128;1,32,8,2048,16384,128;8,32,8,256,2048,128;2,16,16,1024,8192,64;4,16,4,512,4096,256" \
  PAGED=16,32,64,256 timeout 300 perf/run_decode.sh $S/bin > $R/run_decode.console 2>&1
echo "run_decode rc=$? $(el) s"
grep "^| " $R/*_decode.md | head -30
F='Gpu/SequenceCases.*:Gpu.GraphsCaptured*:Gpu.TunedKernelsAreDeterministic'
timeout 220 $S/bin/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$? $(el) s" | tee -a $R/tests.log
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|graphs:.*differ|tests ran" $R/tests.log | sort | uniq -c | head -20
gzip -f $R/tests.log
(cd $OUT && tar czf r44e.tgz r44e && rm -rf r44e)
