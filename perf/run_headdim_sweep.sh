#!/usr/bin/env bash
# The head-dim sweep of the perf suite on the GPU machine: (B,H,L) = (4,16,2048), D = 32..256, fp16,
# causal and not, every device backend against torch SDPA (flash, cuDNN) in the same run.
#
#   perf/run_headdim_sweep.sh [BIN_DIR]      BIN_DIR as perf/run_gpu.sh's (default .gpu/bin, the stage of
#                                            scripts/fc gpu-build, whose shared libraries are in .gpu/lib);
#                                            output prefix under ${OUT:-perf/results/tmp}
#
# The reference backend runs too (the "ref gap" column: what these head dims ran on before the tuned
# kernels took them), within run_gpu.sh's time limit for it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
BIN=${1:-.gpu/bin}
# the stage's libraries (libbenchmark as linked on the CPU machine, Kokkos), as scripts/fc gpu-perf does
export LD_LIBRARY_PATH=$BIN/../lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SHAPES="4,16,2048,32;4,16,2048,64;4,16,2048,80;4,16,2048,96;4,16,2048,128;4,16,2048,160;4,16,2048,192;4,16,2048,256"
BENCH_ARGS="--shapes=$SHAPES --dtypes=fp16 ${BENCH_ARGS:-}" \
SDPA_ARGS="--shapes=$SHAPES --dtypes=fp16 --paths=flash,cudnn ${SDPA_ARGS:-}" \
  exec bash perf/run_gpu.sh "$BIN"
