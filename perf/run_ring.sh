#!/usr/bin/env bash
# Context-parallel (ring) attention scaling on the GPU machine: flashcore_bench_ring on 1 GPU, then
# on every GPU of the node (or NP), the same rows, one table with the scaling efficiency
# T1 / (N * TN). From the repository root:
#
#   perf/run_ring.sh [BIN_DIR]     (default .gpu/bin)
#
# Environment: LENS (default 131072,262144), ITERS (default 3), NP (default: the GPU count),
# SHARDING (load-balanced or contiguous). Writes to ${OUT:-perf/results/tmp}:
# PREFIX_ring.{md,log}, PREFIX_ring_np{1,N}.jsonl, PREFIX = <date>_<device-slug>x<N>.
# Runs unchanged on 2, 4 or 8 GPUs.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT" || exit 2
BIN=${1:-.gpu/bin}
OUTDIR=${OUT:-perf/results/tmp}
mkdir -p "$OUTDIR"
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
NP=${NP:-$GPUS}
source "$(dirname "${BASH_SOURCE[0]}")/device_name.sh"  # GPU_NAME, SLUG
PREFIX=$OUTDIR/$(date +%F)_${SLUG}x${NP}
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x LD_LIBRARY_PATH -x OMP_PROC_BIND -x OMP_PLACES)
ARGS=(--len "${LENS:-131072,262144}" --iters "${ITERS:-3}" --sharding "${SHARDING:-load-balanced}")
{
  echo "device: $NP x $GPU_NAME; commit $(cat .gpu/commit 2>/dev/null || git rev-parse --short HEAD)"
  "${MPIRUN[@]}" -np 1 "$BIN/flashcore_bench_ring" "${ARGS[@]}" --json "${PREFIX}_ring_np1.jsonl"
  if [[ $NP -gt 1 ]]; then
    "${MPIRUN[@]}" -np "$NP" "$BIN/flashcore_bench_ring" "${ARGS[@]}" --json "${PREFIX}_ring_np${NP}.jsonl"
  fi
  python3 - "$PREFIX" "$NP" <<'PY'
import json, sys
prefix, np_ = sys.argv[1], int(sys.argv[2])
def rows(n):
    try:
        return {(r["len"], r["causal"]): r for r in map(json.loads, open(f"{prefix}_ring_np{n}.jsonl"))}
    except FileNotFoundError:
        return {}
one, many = rows(1), rows(np_)
gpu = next(iter(one.values()))["gpu"] if one else "?"
out = [f"# Ring attention, (1, H, L, D) bf16, {np_} x {gpu}", "",
       f"| L | mask | 1 GPU ms | {np_} GPUs ms | efficiency | compute-only ms | comm alone ms | hidden | TF/s ({np_}) |",
       "|---|---|---|---|---|---|---|---|---|"]
for key, r1 in sorted(one.items()):
    rn = many.get(key)
    if rn is None:
        out.append(f"| {key[0]} | {'causal' if key[1] else 'non-causal'} | {r1['ring_ms']:.2f} | - | - | - | - | - | - |")
        continue
    eff = r1["ring_ms"] / (np_ * rn["ring_ms"])
    out.append(f"| {key[0]} | {'causal' if key[1] else 'non-causal'} | {r1['ring_ms']:.2f} | {rn['ring_ms']:.2f} | "
               f"{100*eff:.1f}% | {rn['compute_ms']:.2f} | {rn['comm_ms']:.2f} | {100*rn['hidden']:.0f}% | {rn['tflops']:.0f} |")
open(f"{prefix}_ring.md", "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
} 2>&1 | tee "${PREFIX}_ring.log"
