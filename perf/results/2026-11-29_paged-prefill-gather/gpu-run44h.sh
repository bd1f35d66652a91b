#!/bin/bash
# GPU run 44h: 44g's racecheck hazard on the item slot with pages of 16, thread by thread (racecheck-report hazard).
set -u
R=$OUT/r44h; mkdir -p $R
tar xJf build/gpu-s44f.txz -C build
S=build/s44f; export LD_LIBRARY_PATH=$PWD/$S/lib
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
F='Gpu/SequenceCases.*/cuda_flash_hopper_B4_Hq4_Hkv2_Lq1_Lk777_D64_fp16_lensk1x19x79x777_page16'
timeout 60 $SAN --tool racecheck --racecheck-report hazard --print-limit 12 $S/bin/flashcore_gpu_tests --gtest_filter="$F" > $R/race.log 2>&1
echo "rc=$?"; grep -v "^\[" $R/race.log | head -80 | cut -c1-200
gzip -f $R/*.log
(cd $OUT && tar czf r44h.tgz r44h && rm -rf r44h)
