#!/bin/bash
# GPU run 43b: decode and combine kernels as programmatic dependent launches, no tickets (no memset node) for
# combine plans (working tree after ee07ea8): GPU tests, decode_dev check, decode_dev merge (tickets vs combine
# kernel for every split row, graph and eager), suite ABBA old (ee07ea8) / new.
set -u
R=$OUT/r43b; mkdir -p $R
tar xJf build/gpu-s43b.txz -C build
S=build/s43b; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
F='Gpu.PagedDecodeLongPieces:Gpu.DecodeManyPiecesCombined:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCaptured*'
for q in 1 2 3 4 13 17 31 33 64; do F="$F:Gpu/*Cases.*/cuda_flash_B*_Lq${q}_*"; done
timeout 150 $S/bin/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$? $(el) s" | tee -a $R/tests.log
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $R/tests.log | head -20
timeout 150 $S/bin/decode_dev check > $R/check.txt 2>&1; echo "check rc=$? $(el) s"; tail -3 $R/check.txt
timeout 150 $S/bin/decode_dev merge > $R/merge.txt 2>&1; echo "merge rc=$? $(el) s"; cat $R/merge.txt
LOW="1,8,1,1,65536,128;1,32,2,1,32768,128;1,8,1,1,16384,128;1,8,1,1,65536,64"
DEC="8,32,8,1,8192,128;1,32,8,1,32768,128;64,32,8,1,2048,128;16,64,8,1,4096,128;8,32,8,4,8192,128;$LOW"
MIX="32,8,1,128:1,7,33,100,250,511,777,1024,1500,2048,3000,4096,5000,6144,7000,8192"
n=0
for v in old bin bin old; do
  n=$((n+1))
  timeout 50 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash \
    --decode="$DEC" --paged=16 --mixed="$MIX" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "$v $n rc=$? $(el) s"
done
gzip -f $R/tests.log
(cd $OUT && tar czf r43b.tgz r43b && rm -rf r43b)
