#!/bin/bash
# GPU run 64b (sixty-third session, issue 12; carry build/gpu-s64b.txz): the Hopper kernel's own D = 160 instance
# (five 32-column panels in the 64-byte swizzle, 96-key tiles; 136..160 ran on the D = 192 instance before).
# bin/: flashcore_gpu_tests and flashcore_bench of main + the instance (`commit`); bin_base/flashcore_bench: main
# 7e28586 (run 63a's, the same Hopper kernels as d6f9752). Stages, each cut to the call's limit LIM:
# (1) the GPU tests of head dims 136-168 on the Hopper kernel (forced), then the rest that reach it (device, variant
#     and sequence cases, forced cuda-flash-hopper; the random-shape properties), then memcheck and racecheck on
#     D = 160 cases;
# (2) flashcore_bench, cuda-flash, D = 136/144/160 rows (and 128/192 as controls), base and new alternated twice;
# (3) the head-dim sweep with torch on the new build (issue 12's criterion);
# (4) the forward suite with torch, QUICK (the README's headline table).
set -u
t0=$(date +%s)
LIM=${LIM:-560}
R=/tmp/r64b; mkdir -p $R
pack() { (cd /tmp && tar czf $OUT/r64b.tgz r64b); }
el() { echo "$(( $(date +%s) - t0 ))"; }
left() { echo "$(( LIM - $(el) ))"; }
cap() { local r=$(( $(left) - 5 )); [ $r -lt $1 ] && echo $r || echo $1; }
tar xJf build/gpu-s64b.txz -C build
S=build/s64b; export LD_LIBRARY_PATH=$PWD/$S/lib
cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
tests() {  # name, filter, limit
  [ $(left) -lt 20 ] && return
  timeout $(cap $3) $S/bin/flashcore_gpu_tests --gtest_filter="$2" --gtest_brief=1 > $R/tests_$1.txt 2>&1
  echo "tests $1 rc=$? at $(el) s"; grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|FAILED  \]' $R/tests_$1.txt | head -8; pack
}
D16='*cuda_flash_hopper*_D160_*:*cuda_flash_hopper*_D144_*:*cuda_flash_hopper*_D136_*:*cuda_flash_hopper*_D168_*'
tests d160 "$D16" 90
tests hopper "Gpu/DeviceCases.*cuda_flash_hopper*:Gpu/VariantCases.*cuda_flash_hopper*:Gpu/SequenceCases.*cuda_flash_hopper*:Gpu.RandomShapesProperty:Gpu.RandomVariantsProperty-$D16" 120
SAN='Gpu/DeviceCases.*cuda_flash_hopper_B2_Hq6_Hkv2_Lq113_Lk203_D160_*causal_bhsd:Gpu/DeviceCases.*cuda_flash_hopper_B2_Hq6_Hkv2_Lq17_Lk17_D160_bf*'
for tool in memcheck racecheck; do
  [ $(left) -lt 200 ] && break
  timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 $S/bin/flashcore_gpu_tests --gtest_filter="$SAN" --gtest_brief=1 > $R/$tool.txt 2>&1
  echo "$tool rc=$? at $(el) s"; grep -E "ERROR SUMMARY|hazard|PASSED|FAILED" $R/$tool.txt | head -4; pack
done
SH="4,16,2048,160;2,16,4096,160;8,16,1024,160;4,16,2048,144;4,16,2048,136;4,16,2048,128;4,16,2048,192"
for round in 1 2; do
  for v in bin_base bin; do
    [ $(left) -lt 150 ] && break
    timeout $(cap 45) $S/$v/flashcore_bench --device-only --backends=cuda-flash --dtypes=fp16,bf16 --shapes="$SH" \
      --max-seconds=35 --quick > $R/ab_${v}_$round.txt 2>&1
    echo "ab $v round $round rc=$? at $(el) s"; pack
  done
done
if [ $(left) -gt 60 ]; then
  OUT=$R/sweep NAME=headdims QUICK=1 DTYPES=fp16 \
    SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256" \
    timeout $(cap 200) perf/run_forward.sh $S/bin > $R/sweep.console 2>&1
  echo "sweep rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/sweep/*.md | cut -d"|" -f2-5,10-12; pack
fi
if [ $(left) -gt 60 ]; then
  OUT=$R/suite NAME=forward QUICK=1 timeout $(( $(left) - 5 )) perf/run_forward.sh $S/bin > $R/suite.console 2>&1
  echo "suite rc=$? at $(el) s"; grep -E "^\| [0-9]" $R/suite/*.md | cut -d"|" -f2-5,10-12 | head -34; pack
fi
echo "done at $(el) s"
