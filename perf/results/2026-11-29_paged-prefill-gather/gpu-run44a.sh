#!/bin/bash
# GPU run 44a: paged prefill with small pages gathered by the Hopper producer warp (cp.async) instead of TMA boxes.
# decode_dev prefill-pages (fp64 checks of both copy paths, then timing against contiguous), GPU tests of the
# sequence layouts, the Hopper cases and the graphs (also b23dcb0's capture query), the CLI's main job.
set -u
R=$OUT/r44a; mkdir -p $R
tar xJf build/gpu-s44a.txz -C build
S=build/s44a; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
$S/bin/flashcore > $R/main_job.txt 2>&1; echo "main job rc=$? $(el) s"; grep -iE "pass|fail| us|ms" $R/main_job.txt | head -5
timeout 240 $S/bin/decode_dev prefill-pages > $R/prefill_pages.txt 2>&1; echo "prefill-pages rc=$? $(el) s"
grep -E "FAIL|check:|DECLINED" $R/prefill_pages.txt | head -20
grep -E "paged:|causal  *contiguous" $R/prefill_pages.txt | tail -25
F='Gpu/SequenceCases.*:Gpu/DeviceCases.*/cuda_flash_hopper_*:Gpu/VariantCases.*/cuda_flash_hopper_*:Gpu.GraphsCaptured*:Gpu.TunedKernelsAreDeterministic'
timeout 250 $S/bin/flashcore_gpu_tests --gtest_filter="$F" > $R/tests.log 2>&1; echo "tests rc=$? $(el) s" | tee -a $R/tests.log
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|graphs:.*differ|tests ran" $R/tests.log | sort | uniq -c | head -20
gzip -f $R/tests.log
(cd $OUT && tar czf r44a.tgz r44a && rm -rf r44a)
