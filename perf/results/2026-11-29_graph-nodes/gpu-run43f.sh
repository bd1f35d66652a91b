#!/bin/bash
# GPU run 43f: the final build (decode: combine kernel a dependent launch, captured fixed-grid splits merged by it;
# Hopper: captured equal items in the static order). GPU tests (decode, graphs, Hopper determinism and reference),
# the CLI's main job, forward ABBA old (ee07ea8) / bin, run_forward.sh and run_decode.sh with torch.
set -u
R=$OUT/r43f; mkdir -p $R
tar xJf build/gpu-s43f.txz -C build
S=build/s43f; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
$S/bin/flashcore > $R/main_job.txt 2>&1; echo "main job rc=$? $(el) s"; grep -iE "pass|fail|us|ms" $R/main_job.txt | head -5
F='Gpu.PagedDecodeLongPieces:Gpu.DecodeManyPiecesCombined:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCaptured*:Gpu.TunedMatchesDeviceReferenceEverywhere'
for q in 1 2 3 4 13 17 31 33 64; do F="$F:Gpu/*Cases.*/cuda_flash_B*_Lq${q}_*"; done
timeout 200 $S/bin/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$? $(el) s" | tee -a $R/tests.log
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|graphs:.*differ" $R/tests.log | sort | uniq -c | head -20
SH="16,16,512,64;4,16,1024,64;1,8,1024,64;2,16,4096,64;4,16,2048,64;8,16,1024,128;2,16,4096,128"
n=0
for v in old bin bin old; do
  n=$((n+1))
  timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16 --causal=both \
    --shapes="$SH" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "fwd $v $n rc=$? $(el) s"
done
OUT=$R QUICK=1 DTYPES=fp16,bf16 SHAPES="1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;4,16,2048,64;2,16,4096,128;8,32,2048,128;4,16,2048,256" \
  timeout 200 perf/run_forward.sh $S/bin > $R/run_forward.console 2>&1
echo "run_forward rc=$? $(el) s"
LOW="1,8,1,1,65536,128;1,32,2,1,32768,128;1,8,1,1,16384,128;1,8,1,1,65536,64"
OUT=$R QUICK=1 T_TORCH=120 DECODE="8,32,8,1,8192,128;1,32,8,1,32768,128;64,32,8,1,2048,128;16,64,8,1,4096,128;8,32,8,4,8192,128;$LOW" \
  timeout 250 perf/run_decode.sh $S/bin > $R/run_decode.console 2>&1
echo "run_decode rc=$? $(el) s"
grep "^| " $R/*_forward.md | head -40
grep "^| " $R/*_decode.md | head -60
gzip -f $R/tests.log
(cd $OUT && tar czf r43f.tgz r43f && rm -rf r43f)
