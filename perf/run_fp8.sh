#!/usr/bin/env bash
# FP8 (e4m3) forward rows on the GPU machine, beside bf16 and torch SDPA in the same run:
#
#   perf/run_fp8.sh [BIN_DIR]        BIN_DIR (default .gpu/bin) holds flashcore_bench
#
# 1. flashcore_bench --device-only --dtypes=fp8_e4m3,bf16 --backends=cuda-flash on the D = 64 and 128
#    shapes of the GPU list (fp8 runs on the Hopper kernel: compute capability 9.0)
# 2. perf/sdpa_compare.py --dtypes=fp8_e4m3,bf16 --paths=flash,cudnn: torch's paths on bf16 inputs of the
#    same shapes (torch SDPA has no fp8 kernel), set beside both dtypes of ours
# Writes ${OUT:-perf/results/tmp}/<date>_<device-slug>_fp8.{md,json,log} and _fp8_flashcore.json.
# Environment: QUICK=1 fewer repetitions; BENCH_ARGS, SDPA_ARGS extra flags.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT" || exit 2
BIN=${1:-.gpu/bin}
OUTDIR=${OUT:-perf/results/tmp}
mkdir -p "$OUTDIR" || exit 2
source "$(dirname "${BASH_SOURCE[0]}")/device_name.sh"  # GPU_NAME, SLUG
PREFIX="$OUTDIR/$(date +%F)_${SLUG}_fp8"
SHAPES="1,8,512,64;4,16,1024,64;2,16,4096,64;2,16,4096,128;1,16,16384,128;8,32,2048,128"
[[ -d $BIN/lib ]] && export LD_LIBRARY_PATH="$(cd "$BIN/lib" && pwd -P)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
quick=()
[[ ${QUICK:-0} == 1 ]] && quick=(--quick)
# shellcheck disable=SC2206
extra=(${BENCH_ARGS:-})
# shellcheck disable=SC2206
sdpa_extra=(${SDPA_ARGS:-})
{
  echo "== run_fp8.sh: $(date -Is), GPU: ${GPU_NAME:-none found}"
  timeout -k 10 200 "$BIN/flashcore_bench" --device-only --backends=cuda-flash --dtypes=fp8_e4m3,bf16 \
    --shapes="$SHAPES" --max-seconds=180 "${quick[@]}" "${extra[@]}" --benchmark_color=false \
    --benchmark_out="${PREFIX}_flashcore.json" --benchmark_out_format=json
  echo "== flashcore_bench exit $?"
  PYTHONUNBUFFERED=1 timeout -k 10 200 python3 perf/sdpa_compare.py --ours "${PREFIX}_flashcore.json" \
    --out-prefix "$PREFIX" --dtypes=fp8_e4m3,bf16 --paths=flash,cudnn --shapes="$SHAPES" --no-plots "${quick[@]}" \
    "${sdpa_extra[@]}"
  echo "== sdpa_compare exit $?"
  cat "$PREFIX.md" 2>/dev/null
} 2>&1 | tee "$PREFIX.log"
