#!/bin/bash
# GPU run 60b (sixtieth session, issue 19; carry build/gpu-s60b.txz): E4 as landed, the 16-row all-warps kernel's
# K/V copies by KVTileCopy for 128- and 256-thread blocks at D <= 96 (bin/: flashcore_gpu_tests, flashcore_bench,
# flash_dev of main + E4; bin_base/flashcore_bench: main f86195c).
# (1) flash_dev check (836 cases vs the fp64 oracle); (2) the GPU tests that reach the 16-row all-warps kernel
# (forced cuda-flash-allwarps variant, device and sequence cases; random variants); (3) flashcore_bench, forced
# all-warps with the attention variants (which run on the 16-row kernel), base and E4 alternated twice;
# Stages are cut to the call's LIMIT (default 440 s).
# Each stage re-packs $OUT/r60b.tgz, so a cut-off call keeps what ran.
set -u
t0=$(date +%s)
R=/tmp/r60b; mkdir -p $R
pack() { (cd /tmp && tar czf $OUT/r60b.tgz r60b); }
el() { echo "$(( $(date +%s) - t0 )) s"; }
tar xJf build/gpu-s60b.txz -C build
S=build/s60b; export LD_LIBRARY_PATH=$PWD/$S/lib
cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
L=${LIMIT:-440}  # seconds this call may use (the session's device time left)
rem() { echo $(( L - $(date +%s) + t0 )); }
cap() { local r=$(rem); [ $r -lt $1 ] && echo $r || echo $1; }
timeout 60 $S/bin/flash_dev check > $R/check.txt 2>&1
echo "check rc=$? ($(grep -c ^PASS $R/check.txt) PASS, $(grep -c ^FAIL $R/check.txt) FAIL) at $(el)"; pack
tests() {  # name, filter, limit
  [ $(rem) -lt 20 ] && return
  timeout $(cap $3) $S/bin/flashcore_gpu_tests --gtest_filter="$2" --gtest_brief=1 > $R/tests_$1.txt 2>&1
  echo "tests $1 rc=$? at $(el)"; grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]' $R/tests_$1.txt | head -4; pack
}
tests VariantCases 'Gpu/VariantCases.*cuda_flash_allwarps*:Gpu.RandomVariantsProperty' 110
V="none;window:255,0;softcap:30;alibi;window:255,0+softcap:30+alibi+sinks:1"
for v in bin_base bin; do
  [ $(rem) -lt 30 ] && break
  timeout $(cap 50) $S/$v/flashcore_bench --device-only --backends=cuda-flash-allwarps --dtypes=fp16 --causal=1 \
    --shapes="2,16,4096,64;1,8,2048,64;1,8,1024,64;4,16,2048,96" --variants="$V" --max-seconds=35 > $R/var_${v}_1.txt 2>&1
  echo "variants $v round 1 rc=$? at $(el)"; pack
done
tests DeviceCases 'Gpu/DeviceCases.*cuda_flash_allwarps*' 110
tests SequenceCases 'Gpu/SequenceCases.*cuda_flash_allwarps*' 80
for v in bin_base bin; do
  [ $(rem) -lt 45 ] && break
  timeout $(cap 50) $S/$v/flashcore_bench --device-only --backends=cuda-flash-allwarps --dtypes=fp16 --causal=1 \
    --shapes="2,16,4096,64;1,8,2048,64;1,8,1024,64;4,16,2048,96" --variants="$V" --max-seconds=35 > $R/var_${v}_2.txt 2>&1
  echo "variants $v round 2 rc=$? at $(el)"; pack
done
echo "done at $(el)"
