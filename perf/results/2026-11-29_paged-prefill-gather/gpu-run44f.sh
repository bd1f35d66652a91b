#!/bin/bash
# GPU run 44f: compute-sanitizer (racecheck, synccheck, memcheck) on the Hopper kernel's paged cases in pages of 16
# (V gathered by warps 1-3 since c6bd890) and of 64 (TMA boxes), the landed build.
set -u
R=$OUT/r44f; mkdir -p $R
tar xJf build/gpu-s44f.txz -C build
S=build/s44f; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
F='Gpu/SequenceCases.*/cuda_flash_hopper*page16*:Gpu/SequenceCases.*/cuda_flash_hopper*D64*page64*'
for tool in racecheck synccheck memcheck; do
  timeout 130 $SAN --tool $tool --error-exitcode 9 --print-limit 20 $S/bin/flashcore_gpu_tests --gtest_filter="$F" --gtest_brief=1 > $R/$tool.log 2>&1
  echo "$tool rc=$? ${SECONDS}s"; tail -4 $R/$tool.log | cut -c1-200
done
gzip -f $R/*.log
(cd $OUT && tar czf r44f.tgz r44f && rm -rf r44f)
