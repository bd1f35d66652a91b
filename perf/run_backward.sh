#!/usr/bin/env bash
# The backward perf rows on the GPU machine: flashcore_bench_backward, then PyTorch's SDPA backward
# (flash and cuDNN paths) on the same shapes in the same device call. From the repository root:
#
#   perf/run_backward.sh [BIN_DIR]     (default .gpu/bin)
#
# Writes to ${OUT:-perf/results/tmp}: PREFIX_backward.{md,json,log}, PREFIX_backward_flashcore.jsonl,
# PREFIX = <date>_<device-slug>. Environment: BACKENDS (default cuda-flash,cuda-flash+deterministic,
# reference-cuda; "+deterministic": Options::deterministic), SHAPES
# (flashcore_bench_backward --shapes), SECONDS_PER: seconds per backend and shape (default 2), VARIANT
# (an attention variant for every shape, e.g. window:256,0 or softcap:30+alibi: --variant; torch then
# runs its options for it, backward_compare.py).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT" || exit 2
BIN=${1:-.gpu/bin}
OUTDIR=${OUT:-perf/results/tmp}
mkdir -p "$OUTDIR"
source "$(dirname "${BASH_SOURCE[0]}")/device_name.sh"  # GPU_NAME, SLUG
PREFIX=$OUTDIR/$(date +%F)_${SLUG}
ARGS=(--backends="${BACKENDS:-cuda-flash,cuda-flash+deterministic,reference-cuda}" --seconds="${SECONDS_PER:-2}")
[[ -n ${SHAPES:-} ]] && ARGS+=(--shapes="$SHAPES")
[[ -n ${VARIANT:-} ]] && ARGS+=(--variant="$VARIANT")
{
  echo "device: $GPU_NAME; commit $(cat .gpu/commit 2>/dev/null || git rev-parse --short HEAD)"
  timeout 300 "$BIN/flashcore_bench_backward" "${ARGS[@]}" | tee "${PREFIX}_backward_flashcore.jsonl"
  timeout 200 python3 perf/backward_compare.py --flashcore "${PREFIX}_backward_flashcore.jsonl" \
    --out-md "${PREFIX}_backward.md" --out-json "${PREFIX}_backward.json" --device-name "$GPU_NAME"
} 2>&1 | tee "${PREFIX}_backward.log"
