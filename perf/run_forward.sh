#!/usr/bin/env bash
# Forward rows of the tuned path on the GPU machine, beside torch SDPA (flash and cuDNN) in the same run:
#
#   perf/run_forward.sh [BIN_DIR]    BIN_DIR (default .gpu/bin) holds flashcore_bench
#
# 1. flashcore_bench --device-only --backends=$BACKENDS --dtypes=$DTYPES on $SHAPES (causal and not)
# 2. perf/sdpa_compare.py --paths=flash,cudnn on the same shapes and dtypes (fp8 rows: torch's paths on
#    bf16 inputs of the same shape, since torch SDPA has no fp8 kernel)
# Writes ${OUT:-perf/results/tmp}/<date>_<device-slug>_$NAME.{md,json,log} and _$NAME_flashcore.json.
# Environment: DTYPES (default fp16,bf16), SHAPES (B,H,L,D;...: default the forward shapes of issue 14's
# table), NAME (default forward), BACKENDS (default cuda-flash; e.g. cuda-flash-allwarps,cuda-flash-warpspec
# for the mma.sync kernels forced, as an Ampere/Ada GPU runs them), QUICK=1 fewer repetitions,
# BENCH_ARGS / SDPA_ARGS extra flags.
# perf/run_fp8.sh is this with the FP8 rows.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT" || exit 2
BIN=${1:-.gpu/bin}
OUTDIR=${OUT:-perf/results/tmp}
mkdir -p "$OUTDIR" || exit 2
source "$(dirname "${BASH_SOURCE[0]}")/device_name.sh"  # GPU_NAME, SLUG
DTYPES=${DTYPES:-fp16,bf16}
NAME=${NAME:-forward}
SHAPES=${SHAPES:-"1,8,512,64;1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;2,16,4096,128;1,16,16384,128;8,32,2048,128"}
PREFIX="$OUTDIR/$(date +%F)_${SLUG}_$NAME"
[[ -d $BIN/lib ]] && export LD_LIBRARY_PATH="$(cd "$BIN/lib" && pwd -P)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
quick=()
[[ ${QUICK:-0} == 1 ]] && quick=(--quick)
# shellcheck disable=SC2206
extra=(${BENCH_ARGS:-})
# shellcheck disable=SC2206
sdpa_extra=(${SDPA_ARGS:-})
{
  echo "== run_forward.sh ($NAME): $(date -Is), GPU: ${GPU_NAME:-none found}"
  timeout -k 10 200 "$BIN/flashcore_bench" --device-only --backends="${BACKENDS:-cuda-flash}" --dtypes="$DTYPES" \
    --shapes="$SHAPES" --max-seconds=180 "${quick[@]}" "${extra[@]}" --benchmark_color=false \
    --benchmark_out="${PREFIX}_flashcore.json" --benchmark_out_format=json
  echo "== flashcore_bench exit $?"
  PYTHONUNBUFFERED=1 timeout -k 10 200 python3 perf/sdpa_compare.py --ours "${PREFIX}_flashcore.json" \
    --out-prefix "$PREFIX" --dtypes="$DTYPES" --paths=flash,cudnn --shapes="$SHAPES" --no-plots "${quick[@]}" \
    "${sdpa_extra[@]}"
  echo "== sdpa_compare exit $?"
  cat "$PREFIX.md" 2>/dev/null
} 2>&1 | tee "$PREFIX.log"
