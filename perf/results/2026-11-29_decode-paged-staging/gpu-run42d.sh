#!/bin/bash
# GPU run 42d: PagedDecodeLongPieces as committed (one make_data per shape), with the decode/graph/determinism tests
# of cuda-flash at Lq 1 beside it while time remains.
set -u
R=$OUT/r42d; mkdir -p $R
tar xJf build/gpu-s42d.txz -C build
S=build/s42d; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
timeout 90 $S/bin/flashcore_gpu_tests --gtest_filter='Gpu.PagedDecodeLongPieces' > $R/tests_long.log 2>&1; echo "long rc=$? $(( $(date +%s)-T0 )) s" | tee -a $R/tests_long.log
timeout 100 $S/bin/flashcore_gpu_tests --gtest_filter='Gpu/SequenceCases.*/cuda_flash_B*_Lq1_*page*:Gpu.TunedKernelsAreDeterministic' > $R/tests_seq.log 2>&1; echo "seq rc=$? $(( $(date +%s)-T0 )) s" | tee -a $R/tests_seq.log
(cd $OUT && tar czf r42d.tgz r42d && rm -rf r42d)
