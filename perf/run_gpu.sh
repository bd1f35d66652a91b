#!/usr/bin/env bash
# The perf run on the GPU machine. From the repository root of a copy of the tree:
#
#   perf/run_gpu.sh [BIN_DIR]        BIN_DIR (default .gpu/bin) holds flashcore_bench, and
#                                    possibly lib/ with shared libraries it needs
#
# Writes to ${OUT:-perf/results/tmp}, with PREFIX = <date>_<device-slug> (e.g. 2026-11-21_h100):
#   PREFIX.md                 the comparison table (also printed last)
#   PREFIX.json               everything: our medians, torch's, ratios, contexts
#   PREFIX_tflops.png         TFLOP/s per shape, ours vs each torch SDPA path
#   PREFIX_gap.png            reference-to-tuned gap per shape (log scale)
#   PREFIX_flashcore.json     flashcore_bench JSON, tuned device backends
#   PREFIX_flashcore_ref.json flashcore_bench JSON, reference-cuda
#   PREFIX_flashcore_portable.json flashcore_bench JSON, portable-cuda (when built)
#   PREFIX.log                the whole console output
# (8 files: within what a device run brings back.)
#
# First flashcore_gpu_peak (when built): the measured fp32 FMA peak, the portable tier's ceiling.
# Steps, each under its own time limit so that the whole run stays under ~6 minutes on an H100
# (flashcore_bench gets --max-seconds a little under its limit: benchmarks that would start later
# are reported as skipped and the JSON stays complete; `timeout` is the backstop):
#   1. flashcore_bench --device-only, the tuned device backends                (T_TUNED, 150 s)
#   2. flashcore_bench --device-only --backends=portable-cuda, when built     (T_PORT, 80 s)
#   3. flashcore_bench --device-only --backends=reference-cuda                 (T_REF, 100 s)
#      (slow on the big shapes; run last among ours so a time-out costs only its tail; if it
#      crashes, it is run again with --timing=launches in the time left)
#   4. perf/sdpa_compare.py: torch SDPA flash / cuDNN / mem-efficient, merge, table, plots (T_TORCH, 100 s)
#      (if it fails, the table is made again from our numbers alone, --no-torch)
# Environment: QUICK=1 fewer repetitions; T_TUNED, T_PORT, T_REF, T_TORCH seconds; BENCH_ARGS extra
# flashcore_bench flags (e.g. "--shapes=1,8,1024,64"); SDPA_ARGS extra sdpa_compare.py flags.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT" || exit 2
BIN=${1:-.gpu/bin}
OUTDIR=${OUT:-perf/results/tmp}
T_TUNED=${T_TUNED:-150}
T_REF=${T_REF:-100}
T_PORT=${T_PORT:-80}
T_TORCH=${T_TORCH:-100}
QUICK=${QUICK:-0}

mkdir -p "$OUTDIR" || exit 2
source "$(dirname "${BASH_SOURCE[0]}")/device_name.sh"  # GPU_NAME, SLUG
PREFIX="$OUTDIR/$(date +%F)_${SLUG}"
LOG="$PREFIX.log"

run() {
  local bench="$BIN/flashcore_bench"
  if [[ ! -x $bench ]]; then
    echo "run_gpu.sh: $bench not found or not executable (pass the folder with the binaries as \$1)"
    return 2
  fi
  if [[ -d $BIN/lib ]]; then
    export LD_LIBRARY_PATH="$(cd "$BIN/lib" && pwd -P)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  local quick=()
  [[ $QUICK == 1 ]] && quick=(--quick)
  local sdpa_quick=()
  [[ $QUICK == 1 ]] && sdpa_quick=(--quick)
  # shellcheck disable=SC2206
  local extra=(${BENCH_ARGS:-})
  # shellcheck disable=SC2206
  local sdpa_extra=(${SDPA_ARGS:-})
  local t0=$SECONDS

  echo "== run_gpu.sh: $(date -Is) on $(hostname), GPU: ${GPU_NAME:-none found}; output prefix $PREFIX"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
      --format=csv 2>&1 | head -n 3
  fi
  if ! "$bench" --device-only --benchmark_list_tests=true "${extra[@]}" >"$PREFIX.list" 2>&1; then
    echo "run_gpu.sh: flashcore_bench does not start:"
    cat "$PREFIX.list"
    if ldd "$bench" 2>/dev/null | grep -q "not found"; then
      echo "run_gpu.sh: missing shared libraries (put them in $BIN/lib, e.g. the libbenchmark.so.* the binary was"
      echo "linked with, which differs between Debian and Ubuntu):"
      ldd "$bench" | grep "not found"
    fi
    rm -f "$PREFIX.list"
    return 2
  fi
  echo "flashcore_bench: $(grep -c '^attn/' "$PREFIX.list") device benchmarks; declined and notes:"
  grep -v '^attn/' "$PREFIX.list" | head -n 40
  rm -f "$PREFIX.list"

  if [[ -x $BIN/flashcore_gpu_peak ]]; then  # the fp32 ceiling of portable-cuda, into the log
    timeout 60 "$BIN/flashcore_gpu_peak"
  fi

  echo "== 1/4 tuned device backends (limit ${T_TUNED}s)"
  timeout -k 10 "$T_TUNED" "$bench" --device-only --backends=all,-reference-cuda,-portable-cuda \
    --max-seconds=$((T_TUNED - 20)) \
    "${quick[@]}" "${extra[@]}" \
    --benchmark_color=false --benchmark_out="${PREFIX}_flashcore.json" --benchmark_out_format=json
  local rc1=$?
  echo "== step 1 exit $rc1 after $((SECONDS - t0))s"

  local ours_port=()
  if "$bench" --device-only --backends=portable-cuda --benchmark_list_tests=true "${extra[@]}" 2>/dev/null |
    grep -q '^attn/'; then
    echo "== 2/4 portable-cuda (limit ${T_PORT}s)"
    timeout -k 10 "$T_PORT" "$bench" --device-only --backends=portable-cuda --max-seconds=$((T_PORT - 20)) \
      "${quick[@]}" "${extra[@]}" \
      --benchmark_color=false --benchmark_out="${PREFIX}_flashcore_portable.json" --benchmark_out_format=json
    echo "== step 2 (portable) exit $? after $((SECONDS - t0))s"
    ours_port=(--ours "${PREFIX}_flashcore_portable.json")
  fi

  echo "== 3/4 reference-cuda (limit ${T_REF}s)"
  local t2=$SECONDS
  timeout -k 10 "$T_REF" "$bench" --device-only --backends=reference-cuda --max-seconds=$((T_REF - 25)) \
    "${quick[@]}" "${extra[@]}" \
    --benchmark_color=false --benchmark_out="${PREFIX}_flashcore_ref.json" --benchmark_out_format=json
  local rc2=$?
  if [[ $rc2 != 0 && $rc2 != 124 && $rc2 != 137 ]]; then
    local left=$((T_REF - (SECONDS - t2)))
    if ((left > 20)); then
      echo "== step 2 failed (exit $rc2); again with --timing=launches (limit ${left}s)"
      timeout -k 10 "$left" "$bench" --device-only --backends=reference-cuda --timing=launches \
        --max-seconds=$((left - 15)) "${quick[@]}" \
        "${extra[@]}" --benchmark_color=false --benchmark_out="${PREFIX}_flashcore_ref.json" \
        --benchmark_out_format=json
      rc2=$?
    fi
  fi
  echo "== step 2 exit $rc2 after $((SECONDS - t0))s"

  echo "== 4/4 torch SDPA and the report (limit ${T_TORCH}s)"
  PYTHONUNBUFFERED=1 timeout -k 10 "$T_TORCH" python3 perf/sdpa_compare.py --ours "${PREFIX}_flashcore.json" \
    --ours "${PREFIX}_flashcore_ref.json" "${ours_port[@]}" --out-prefix "$PREFIX" "${sdpa_quick[@]}" \
    "${sdpa_extra[@]}"
  local rc3=$?
  if [[ $rc3 != 0 ]]; then
    echo "== sdpa_compare.py failed (exit $rc3); the table from our numbers alone"
    python3 perf/sdpa_compare.py --no-torch --ours "${PREFIX}_flashcore.json" --ours "${PREFIX}_flashcore_ref.json" \
      "${ours_port[@]}" --out-prefix "$PREFIX" "${sdpa_extra[@]}"
  fi
  echo "== done in $((SECONDS - t0))s: exits tuned=$rc1 reference=$rc2 torch=$rc3 (124 = time limit)"
  ls -l "$PREFIX"* 2>/dev/null
  echo
  if [[ -s $PREFIX.md ]]; then
    cat "$PREFIX.md"
  else
    echo "run_gpu.sh: no table was written"
    return 1
  fi
  [[ $rc1 == 0 ]]
}

run 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
