#!/bin/bash
# GPU run 35a: the wide-warp kernel, one softmax update a tile (one4, one2L) and the lazy max (one2L, halfL)
# against base, mma.sync path forced (cuda-flash-allwarps); GPU tests of one4 and one2L.
set -u
R=$OUT/r35a; mkdir -p $R
tar xJf build/gpu-s35.txz -C build; tar xJf build/gpu-s32k.txz
export LD_LIBRARY_PATH=$PWD/build/s32k/lib
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
S="2,16,4096,128;1,16,16384,128;8,32,2048,128;4,16,2048,96;4,16,1024,64;2,16,4096,64"
for r in ${ROUNDS:-1 2}; do
  for v in base one4 one2L halfL; do
    timeout 70 build/s35/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash-allwarps \
      --dtypes=fp16,bf16 --causal=both --shapes="$S" --benchmark_color=false --benchmark_format=json > $R/time_${v}_$r.json 2> $R/time_${v}_$r.err
    echo "time $v $r rc=$? $(( $(date +%s)-T0 )) s"
  done
done
[ "${TESTS:-1}" = 1 ] || { (cd $OUT && tar czf r35a.tgz r35a && rm -rf r35a); exit 0; }
F='*DeviceCases*cuda_flash_allwarps*:*SequenceCases*cuda_flash_allwarps*:Gpu.LargeProblemsOnSampledRows:Gpu.ScoresGrowingAcrossKeyTiles:Gpu.TunedMatchesDeviceReferenceEverywhere'
for v in one4 one2L; do
  left=$(( 560 - ($(date +%s)-T0) )); [ $left -lt 40 ] && break
  T1=$(date +%s)
  timeout $(( left < 170 ? left : 170 )) build/s35/$v/flashcore_gpu_tests --gtest_brief=1 --gtest_filter="$F" > $R/tests_$v.log 2>&1
  echo "tests $v rc=$? $(( $(date +%s)-T1 )) s"; grep -E '^\[  (PASSED|FAILED) ' $R/tests_$v.log; grep -E '^\[  FAILED  \]' $R/tests_$v.log | head -10
done
(cd $OUT && tar czf r35a.tgz r35a && rm -rf r35a)
