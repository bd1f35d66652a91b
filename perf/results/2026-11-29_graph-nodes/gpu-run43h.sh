#!/bin/bash
# GPU run 43h: review fixes (the combine kernel dependent only where its loaded code has griddepcontrol and the
# runtime/driver are 12.3+; captured combine only up to 16 packed rows; no static order with a tail split):
# GPU tests, graph_nodes_dev (refactored), decode + forward ABBA old (ee07ea8) / bin x 2.
set -u
R=$OUT/r43h; mkdir -p $R
tar xJf build/gpu-s43h.txz -C build
S=build/s43h; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
F='Gpu.PagedDecodeLongPieces:Gpu.DecodeManyPiecesCombined:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCaptured*'
for q in 1 2 4 13 64; do F="$F:Gpu/*Cases.*/cuda_flash_B*_Lq${q}_*"; done
timeout 150 $S/bin/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$? $(el) s" | tee -a $R/tests.log
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|graphs:.*differ" $R/tests.log | sort | uniq -c | head -20
timeout 30 $S/bin/graph_nodes_dev 20 > $R/nodes_20.txt 2>&1; echo "nodes rc=$? $(el) s"; head -14 $R/nodes_20.txt
SH="16,16,512,64;4,16,1024,64"
DEC="8,32,8,1,8192,128;1,32,8,1,32768,128;8,32,8,4,8192,128;16,64,8,1,4096,128;1,8,1,1,16384,128;1,8,1,1,65536,64"
n=0
for v in old bin bin old; do
  n=$((n+1))
  timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16 --causal=both \
    --shapes="$SH" --decode="$DEC" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "bench $v $n rc=$? $(el) s"
done
gzip -f $R/tests.log
(cd $OUT && tar czf r43h.tgz r43h && rm -rf r43h)
