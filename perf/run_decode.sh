#!/usr/bin/env bash
# Decode, paged, mixed-length and varlen-prefill rows (issue 11) on the GPU machine: FlashCore
# (flashcore_bench --decode/--paged/--mixed/--varlen) against PyTorch's flash and cuDNN SDPA paths
# timed in the same run (perf/decode_compare.py), with GB/s against the GPU's peak. From the
# repository root of a copy of the tree:
#
#   perf/run_decode.sh [BIN_DIR]     BIN_DIR as perf/run_gpu.sh's (default .gpu/bin; shared libraries
#                                    in BIN_DIR/lib or BIN_DIR/../lib)
#
# Writes to ${OUT:-perf/results/tmp}, PREFIX = <date>_<device-slug>_decode (e.g. 2026-11-21_h100_decode):
#   PREFIX.md               the table and the targets (printed at the end of the run)
#   PREFIX.json             everything: rows, torch's numbers and how they were taken, targets, contexts
#   PREFIX_flashcore.json   flashcore_bench JSON
#   PREFIX.log              the whole console output
#
# Rows (fp16, causal bottom-right; Hq/Hkv GQA): decode (B,Hq,Hkv,Lq,Lk,D) = (8,32,8,1,8192,128),
# (1,32,8,1,32768,128), (64,32,8,1,2048,128), (16,64,8,1,4096,128), (8,32,8,4,8192,128), K/V
# contiguous and in pages of 16, 64, 256 rows (shuffled block table); 16 sequences of cache lengths
# 1..8192 (Lq 1), contiguous cache and paged; varlen prefill H 16, D 128, 8 sequences of mixed
# lengths summing to 16384 and 8 x 2048 packed, against the fixed-length B=8 x L=2048 problem.
# Environment: DECODE, PAGED, MIXED, VARLEN (the flag strings, as flashcore_bench --help says),
# BACKEND (default cuda-flash), QUICK=1 (fewer repetitions), T_BENCH (default 300 s), T_TORCH
# (default 200 s), BENCH_ARGS (extra flashcore_bench flags), PEAK_GBS (the peak, when the device's
# name is not in decode_compare.py's table).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT" || exit 2
BIN=${1:-.gpu/bin}
OUTDIR=${OUT:-perf/results/tmp}
BACKEND=${BACKEND:-cuda-flash}
T_BENCH=${T_BENCH:-300}
T_TORCH=${T_TORCH:-200}
QUICK=${QUICK:-0}
DECODE=${DECODE:-"8,32,8,1,8192,128;1,32,8,1,32768,128;64,32,8,1,2048,128;16,64,8,1,4096,128;8,32,8,4,8192,128"}
PAGED=${PAGED:-16,64,256}
MIXED=${MIXED:-"32,8,1,128:1,7,33,100,250,511,777,1024,1500,2048,3000,4096,5000,6144,7000,8192"}
VARLEN=${VARLEN:-"16,128:512,3072,1024,4096,256,2048,3584,1792;16,128:2048x8"}

# Kokkos asks for explicit OpenMP thread binding (its host space); these are its recommended defaults.
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
mkdir -p "$OUTDIR" || exit 2
source "$(dirname "${BASH_SOURCE[0]}")/device_name.sh"  # GPU_NAME, SLUG
PREFIX="$OUTDIR/$(date +%F)_${SLUG}_decode"

run() {
  local bench="$BIN/flashcore_bench"
  if [[ ! -x $bench ]]; then
    echo "run_decode.sh: $bench not found or not executable (pass the folder with the binaries as \$1)"
    return 2
  fi
  local lib dirs=""
  for lib in "$BIN/lib" "$BIN/../lib"; do
    [[ -d $lib ]] && dirs="${dirs:+$dirs:}$(cd "$lib" && pwd -P)"
  done
  export LD_LIBRARY_PATH="${dirs:+$dirs:}${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64"
  local cases=(--decode="$DECODE" --paged="$PAGED" --mixed="$MIXED" --varlen="$VARLEN")
  local quick=()
  [[ $QUICK == 1 ]] && quick=(--quick)
  # shellcheck disable=SC2206
  local extra=(${BENCH_ARGS:-})
  local peak=()
  [[ -n ${PEAK_GBS:-} ]] && peak=(--peak-gbs "$PEAK_GBS")
  local t0=$SECONDS

  echo "== run_decode.sh: $(date -Is) on $(hostname), GPU: ${GPU_NAME:-none found}; output prefix $PREFIX"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 | head -n 3
  fi
  if ! "$bench" --device-only --backends="$BACKEND" "${cases[@]}" "${extra[@]}" --benchmark_list_tests=true \
    >"$PREFIX.list" 2>&1; then
    echo "run_decode.sh: flashcore_bench does not start:"
    cat "$PREFIX.list"
    ldd "$bench" 2>/dev/null | grep "not found"
    rm -f "$PREFIX.list"
    return 2
  fi
  echo "flashcore_bench: $(grep -c '^attn/' "$PREFIX.list") benchmarks; declined and notes:"
  grep -v '^attn/' "$PREFIX.list" | grep -v '^Kokkos\|^  ' | head -n 40
  rm -f "$PREFIX.list"

  echo "== 1/2 flashcore_bench, backend $BACKEND (limit ${T_BENCH}s)"
  timeout -k 10 "$T_BENCH" "$bench" --device-only --backends="$BACKEND" "${cases[@]}" \
    --max-seconds=$((T_BENCH - 40)) "${quick[@]}" "${extra[@]}" \
    --benchmark_color=false --benchmark_out="${PREFIX}_flashcore.json" --benchmark_out_format=json
  local rc1=$?
  echo "== step 1 exit $rc1 after $((SECONDS - t0))s"

  echo "== 2/2 torch SDPA (flash, cuDNN) and the report (limit ${T_TORCH}s)"
  local cmp=(python3 perf/decode_compare.py --ours "${PREFIX}_flashcore.json" --backend "$BACKEND"
    --decode "$DECODE" --paged "$PAGED" --mixed "$MIXED" --varlen "$VARLEN" --device "${GPU_NAME:-}" "${peak[@]}"
    --out "$PREFIX")
  rm -f "$PREFIX.md"
  PYTHONUNBUFFERED=1 timeout -k 10 "$T_TORCH" "${cmp[@]}"  # prints torch's rows, then the table
  local rc2=$?
  if [[ $rc2 != 0 ]]; then
    echo "== decode_compare.py failed (exit $rc2); the table from our numbers alone"
    "${cmp[@]}" --no-torch
  fi
  echo "== done in $((SECONDS - t0))s: exits flashcore_bench=$rc1 torch=$rc2 (124 = time limit)"
  ls -l "$PREFIX"* 2>/dev/null
  if [[ ! -s $PREFIX.md ]]; then
    echo "run_decode.sh: no table was written"
    return 1
  fi
  [[ $rc1 == 0 ]]
}

run 2>&1 | tee "$PREFIX.log"
exit "${PIPESTATUS[0]}"
