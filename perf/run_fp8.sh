#!/usr/bin/env bash
# FP8 (e4m3) forward rows on the GPU machine, beside bf16 and torch SDPA in the same run:
#
#   perf/run_fp8.sh [BIN_DIR]        BIN_DIR (default .gpu/bin) holds flashcore_bench
#
# perf/run_forward.sh with DTYPES=fp8_e4m3,bf16 on the D = 64 and 128 shapes of the GPU list (fp8 runs
# on the Hopper kernel: compute capability 9.0); torch's columns are its paths on bf16 inputs of the same
# shapes (torch SDPA has no fp8 kernel), set beside both dtypes of ours.
# Writes ${OUT:-perf/results/tmp}/<date>_<device-slug>_fp8.{md,json,log} and _fp8_flashcore.json.
# Environment: QUICK=1 fewer repetitions; BENCH_ARGS, SDPA_ARGS extra flags.
DTYPES=fp8_e4m3,bf16 NAME=fp8 SHAPES="1,8,512,64;4,16,1024,64;2,16,4096,64;2,16,4096,128;1,16,16384,128;8,32,2048,128" \
  exec "$(dirname "${BASH_SOURCE[0]}")/run_forward.sh" "$@"
