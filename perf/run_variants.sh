#!/usr/bin/env bash
# The attention variants on the GPU machine: FlashCore's tuned path (cuda-flash, flashcore_bench
# --variants) against what PyTorch offers for each (perf/variants_compare.py), in the same run.
#
#   perf/run_variants.sh [BIN_DIR]     BIN_DIR as perf/run_gpu.sh's (default .gpu/bin, libraries in .gpu/lib);
#                                      writes ${OUT:-perf/results/tmp}/<date>_<gpu>_variants.{md,json,log}
#                                      and the flashcore_bench JSON beside them
#
# Rows (fp16, causal): each variant alone and all together on (2,16,4096,D) for D = 64 and 128, and a
# sliding window of W = 256, 1024, 4096 keys on (1,16,16384,128) (time should follow W, not L).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
BIN=${1:-.gpu/bin}
export LD_LIBRARY_PATH=$BIN/../lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
OUTDIR=${OUT:-perf/results/tmp}
mkdir -p "$OUTDIR"
source "$(dirname "${BASH_SOURCE[0]}")/device_name.sh"  # GPU_NAME, SLUG
PREFIX="$OUTDIR/$(date +%F)_${SLUG}_variants"
EACH="none;window:255,0;softcap:30;alibi;sinks:1;window:255,0+softcap:30+alibi+sinks:1"
SHAPES_A="2,16,4096,64;2,16,4096,128"
WINDOWS="none;window:255,0;window:1023,0;window:4095,0"
SHAPES_B="1,16,16384,128"
{
  echo "device: $GPU_NAME"
  "$BIN/flashcore_bench" --device-only --backends=cuda-flash --dtypes=fp16 --causal=1 --shapes="$SHAPES_A" \
    --variants="$EACH" --benchmark_out="${PREFIX}_a.json" --benchmark_out_format=json --max-seconds=100
  "$BIN/flashcore_bench" --device-only --backends=cuda-flash --dtypes=fp16 --causal=1 --shapes="$SHAPES_B" \
    --variants="$WINDOWS" --benchmark_out="${PREFIX}_b.json" --benchmark_out_format=json --max-seconds=60
  python3 perf/variants_compare.py --ours "${PREFIX}_a.json" --shapes "$SHAPES_A" --variants "$EACH" --causal 1 \
    --device "$GPU_NAME" --out "${PREFIX}_each"
  python3 perf/variants_compare.py --ours "${PREFIX}_b.json" --shapes "$SHAPES_B" --variants "$WINDOWS" --causal 1 \
    --device "$GPU_NAME" --out "${PREFIX}_window"
} 2>&1 | tee "$PREFIX.log"
