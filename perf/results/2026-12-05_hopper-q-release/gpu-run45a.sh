#!/bin/bash
# GPU run 45a: (1) the forty-fourth session's untested commits (9e6fbe0, 04dcb44): the new sequence cases (pages of 16 at
# D = 256/40/72/136, queries without keys, every variant) and racecheck/synccheck of the Hopper page16 cases;
# (2) experiment E1: Q's region released after the item's last S (before its softmax), flashcore_bench ABBA x2 against
# main on short and long Hopper rows, and the Hopper GPU cases on the E1 build.
set -u
R=$OUT/r45a; mkdir -p $R
tar xJf build/gpu-s45a.txz -C build
S=build/s45a; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
F='Gpu/SequenceCases.*page16*:Gpu/SequenceCases.*_D40_*:Gpu/SequenceCases.*_D72_*:Gpu/SequenceCases.*_D136_*'
timeout 150 $S/main/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_new.log 2>&1
echo "tests_new rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_new.log | head; tail -1 $R/tests_new.log
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
FH='Gpu/SequenceCases.*/cuda_flash_hopper*page16*'
for tool in racecheck synccheck; do
  timeout 80 $SAN --tool $tool --error-exitcode 9 --print-limit 10 $S/main/flashcore_gpu_tests --gtest_filter="$FH" --gtest_brief=1 > $R/$tool.log 2>&1
  echo "$tool rc=$? ${SECONDS}s"; tail -3 $R/$tool.log | cut -c1-200
done
SF="16,16,512,64;4,16,1024,64;1,8,1024,64;2,16,4096,64;16,16,512,128;8,16,1024,128;2,16,4096,128"
n=0
for r in 1 2; do
  for v in main e1 e1 main; do
    n=$((n+1))
    timeout 60 $S/$v/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --dtypes=fp16 --causal=both --shapes="$SF" \
      --benchmark_color=false --benchmark_format=json > $R/time_${v}_$n.json 2> $R/err_${v}_$n.txt
    echo "bench $v $n rc=$? ${SECONDS}s"
  done
done
# The mixed decode batch (16 caches of 1..8192 keys, D = 128), contiguous against paged: the balanced schedule's waves
# forced (decode_dev mixed) and a block timeline of each (decode_dev_tl: the D = 128 decode instance with the timeline).
timeout 60 $S/main/decode_dev mixed > $R/decode_mixed.log 2>&1; echo "decode mixed rc=$? ${SECONDS}s"
for pg in 0 64 16; do
  if [[ $pg == 0 ]]; then unset DECODE_DEV_PAGE; else export DECODE_DEV_PAGE=$pg; fi
  DECODE_DEV_MIXED=1 DECODE_DEV_SHAPE=16,32,8,1,8192,128 DECODE_DEV_CSV=$R/tl_mixed_p$pg.csv timeout 40 $S/main/decode_dev_tl timeline > $R/tl_mixed_p$pg.log 2>&1
  echo "timeline page $pg rc=$? ${SECONDS}s"; head -5 $R/tl_mixed_p$pg.log | cut -c1-250
done
unset DECODE_DEV_PAGE
FE='Gpu/*Cases.*/cuda_flash_hopper*D64*:Gpu/*Cases.*/cuda_flash_hopper*D128*:Gpu/*Cases.*/cuda_flash_hopper*D40*:Gpu/*Cases.*/cuda_flash_hopper*D72*:*Determin*:*Graphs*'
timeout $((560 - SECONDS)) $S/e1/flashcore_gpu_tests --gtest_filter="$FE" > $R/tests_e1.log 2>&1
echo "tests_e1 rc=$? ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/tests_e1.log | head; tail -1 $R/tests_e1.log
gzip -f $R/*.log $R/*.json
(cd $OUT && tar czf r45a.tgz r45a && rm -rf r45a)
