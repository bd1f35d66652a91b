#!/bin/bash
# GPU run 44d: the V tiles of small pages gathered by warps 1-3, K in TMA boxes (decode_dev prefill-pages: checks,
# then tma / gather timing); flashcore_bench ABBA of the paged-prefill rows against the build before (old: TMA boxes
# at every page size, consumers at 232 registers).
set -u
R=$OUT/r44d; mkdir -p $R
tar xJf build/gpu-s44d.txz -C build
S=build/s44d; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
timeout 300 $S/bin/decode_dev prefill-pages > $R/prefill_pages.txt 2>&1; echo "prefill-pages rc=$? $(el) s"
grep -E "FAIL|check:|DECLINED" $R/prefill_pages.txt | head -20
grep -E "contiguous|paged:" $R/prefill_pages.txt | tail -45 | cut -c1-75
DEC="4,32,8,512,4096,128;1,32,8,2048,16384,128;8,32,8,256,2048,128;2,16,16,1024,8192,64;4,16,4,512,4096,256"
n=0
for v in old new new old; do
  n=$((n+1)); b=$S/bin/flashcore_bench; [[ $v == old ]] && b=$S/bin/flashcore_bench_old
  timeout 70 $b --device-only --no-check --quick --backends=cuda-flash --decode="$DEC" --paged=16,32,64,256 \
    --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
  echo "bench $v $n rc=$? $(el) s"
done
(cd $OUT && tar czf r44d.tgz r44d && rm -rf r44d)
