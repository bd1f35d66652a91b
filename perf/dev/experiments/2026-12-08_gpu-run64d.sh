#!/bin/bash
# GPU run 64d (sixty-third session, issue 12; carry build/gpu-s64d.txz): after run 64b, D = 136..160 take the D = 160
# instance only where every row starts on a 32-byte boundary (sm90/plan_sm90.cu), else D = 192's. bin/: main ded8bf7
# + the same rule for the D = 96 instance (72 and 88, rows 16 bytes off, to the 128 instance: an experiment,
# perf/dev/experiments/2026-12-08_hopper-d96-aligned-rows.patch; not landed: run 64d never ran in its session);
# bin_base/flashcore_bench: main 7e28586 (136..184 on the 192 instance, 72..96 on the 96 instance).
# (1) the GPU tests of head dims 72 and 136-168 on the Hopper kernel; (2) flashcore_bench cuda-flash at D = 72, 80,
# 88, 136, 144, 152, 160, base and new alternated twice (expected: 136 and 152 as base, 144 and 160 0.86-0.99x; 72
# and 88 faster on the 128 instance if their misaligned 64-byte boxes cost what 136's did, 80 unchanged).
LIM=${LIM:-240}
. perf/dev/experiments/run_common.sh r64d s64d
D16='*cuda_flash_hopper*_D160_*:*cuda_flash_hopper*_D144_*:*cuda_flash_hopper*_D136_*:*cuda_flash_hopper*_D168_*:*cuda_flash_B*_D160_*:*cuda_flash_B*_D144_*:*cuda_flash_hopper*_D72_*:*cuda_flash_hopper*_D88_*'
gpu_tests d160 "$D16" 60
SH="4,16,2048,72;4,16,2048,80;4,16,2048,88;4,16,2048,136;4,16,2048,144;4,16,2048,152;4,16,2048,160"
ab_rounds 30 40 --device-only --backends=cuda-flash --dtypes=fp16,bf16 --shapes="$SH" --max-seconds=35 --quick
echo "done at $(el) s"
