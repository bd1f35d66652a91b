#!/bin/bash
# GPU run 58b: the growing-scores test with the reference's logit term (tolerance::reference_logit_atol) on run
# 58a's failing seed and on a fresh one; the decode tests through the refactored merge (36c3ab9).
set -u
R=$OUT/r58b; mkdir -p $R
tar xJf build/gpu-s58b.txz -C build
S=build/s58b; cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
FLASHCORE_TEST_SEED=13779164849950822974 timeout 90 $S/flashcore_gpu_tests --gtest_filter='Gpu.ScoresGrowingAcrossKeyTiles' > $R/growing_seed58a.txt 2>&1
echo "seed of 58a rc=$?"; grep -E '^\[  (PASSED|FAILED) |worst' $R/growing_seed58a.txt | head
timeout 90 $S/flashcore_gpu_tests --gtest_filter='Gpu.ScoresGrowingAcrossKeyTiles' > $R/growing_fresh.txt 2>&1
echo "fresh seed rc=$?"; grep -E 'random seed|^\[  (PASSED|FAILED) ' $R/growing_fresh.txt | head
timeout 120 $S/flashcore_gpu_tests --gtest_filter='Gpu.DecodeTwoPieces*:Gpu.Graphs*' > $R/decode.txt 2>&1
echo "decode rc=$?"; grep -E '^\[  (PASSED|FAILED) |^\[==========\]' $R/decode.txt | head
(cd $OUT && tar czf r58b.tgz r58b && rm -rf r58b)
