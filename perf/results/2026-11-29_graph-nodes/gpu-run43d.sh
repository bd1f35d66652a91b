#!/bin/bash
# GPU run 43d: (1) decode final: the decode kernel launched the ordinary way, the combine kernel dependent, captured
# fixed-grid splits merged by the combine kernel (bin); (2) hs: and captured Hopper launches without a tail split
# in the static order (no ticket nodes). GPU tests (hs build), suite ABBA old (ee07ea8) / bin / hs, decode_dev merge
# (eager), run_decode.sh with torch (bin).
set -u
R=$OUT/r43d; mkdir -p $R
tar xJf build/gpu-s43d.txz -C build
S=build/s43d; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
F='Gpu.PagedDecodeLongPieces:Gpu.DecodeManyPiecesCombined:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCaptured*'
for q in 1 4 13 64; do F="$F:Gpu/*Cases.*/cuda_flash_B*_Lq${q}_*"; done
timeout 120 $S/hs/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$? $(el) s" | tee -a $R/tests.log
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|graphs:.*differ" $R/tests.log | sort | uniq -c | head -20
DEC="8,32,8,1,8192,128;1,32,8,1,32768,128;64,32,8,1,2048,128;16,64,8,1,4096,128;8,32,8,4,8192,128;8,32,8,1,8192,64;1,8,1,1,16384,128"
SH="16,16,512,64;4,16,1024,64;1,8,2048,64;2,16,4096,128;8,16,1024,128;4,16,1024,128"
n=0
for v in old bin hs hs bin old; do
  n=$((n+1))
  timeout 40 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash \
    --decode="$DEC" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "$v $n rc=$? $(el) s"
  timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16 --causal=0,1 \
    --shapes="$SH" --benchmark_color=false --benchmark_format=json > $R/fwd_${v}_$n.json 2> $R/fwderr_${v}_$n.txt
  echo "fwd $v $n rc=$? $(el) s"
done
DECODE_DEV_ROUNDS=1 timeout 80 $S/bin/decode_dev merge > $R/merge.txt 2>&1; echo "merge rc=$? $(el) s"
LOW="1,8,1,1,65536,128;1,32,2,1,32768,128;1,8,1,1,16384,128;1,8,1,1,65536,64"
OUT=$R QUICK=1 T_TORCH=120 DECODE="8,32,8,1,8192,128;1,32,8,1,32768,128;64,32,8,1,2048,128;16,64,8,1,4096,128;8,32,8,4,8192,128;$LOW" \
  timeout 260 perf/run_decode.sh $S/bin > $R/run_decode.console 2>&1
echo "run_decode rc=$? $(el) s"
grep "^| " $R/*_decode.md | head -45
gzip -f $R/tests.log
(cd $OUT && tar czf r43d.tgz r43d && rm -rf r43d)
