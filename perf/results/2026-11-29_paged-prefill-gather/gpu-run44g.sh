#!/bin/bash
# GPU run 44g: where 44f's racecheck hazards (the item slot: st_shared by the producer, ld_shared) come from: racecheck
# per group of cases, test names printed: pages of 16 (V gathered), pages of 64 (TMA boxes), no pages.
set -u
R=$OUT/r44g; mkdir -p $R
tar xJf build/gpu-s44f.txz -C build
S=build/s44f; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
n=0
for F in 'Gpu/SequenceCases.*/cuda_flash_hopper*D64*page16*' 'Gpu/SequenceCases.*/cuda_flash_hopper*D64*page64*' \
         'Gpu/DeviceCases.*/cuda_flash_hopper*Lq77*D64*' 'Gpu/SequenceCases.*/cuda_flash_hopper*D128*page256*'; do
  n=$((n+1))
  timeout 60 $SAN --tool racecheck --print-limit 4 $S/bin/flashcore_gpu_tests --gtest_filter="$F" > $R/race$n.log 2>&1
  echo "== $F rc=$? ${SECONDS}s: $(grep -c '^\[       OK' $R/race$n.log) ok, $(grep -c 'Race reported' $R/race$n.log) races"
  grep -E "^\[ RUN|Race reported|hazards\]" $R/race$n.log | grep -B1 "Race" | grep "RUN" | head -5
  grep "SUMMARY" $R/race$n.log | tail -1
done
gzip -f $R/*.log
(cd $OUT && tar czf r44g.tgz r44g && rm -rf r44g)
