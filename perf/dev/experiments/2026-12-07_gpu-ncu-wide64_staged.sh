#!/bin/bash
# Staged, not run (sixtieth session's Next, issue 19): where the wide kernel's D = 64 step waits, before another
# schedule is tried (P, the ping-pong form, was slower: perf/dev/NOTES.md, sixtieth session). Carry a bundle whose
# bin/ holds main's flashcore_bench and bin/lib its libraries (libbenchmark, libgomp), unpacked to build/sNN:
#   BIN=build/sNN/bin bash perf/dev/experiments/2026-12-07_gpu-ncu-wide64_staged.sh
# Nsight Compute (clocks left alone) on the forced mma.sync path (cuda-flash-allwarps: the wide kernel) at
# (2,16,4096,64) and (16,16,512,64), fp16, non-causal, with per-instruction stall samples (SourceCounters); then the
# summary table and the stalls by opcode. Expected to answer: tensor-pipe share, issue-slot share, and which
# instructions the warps wait at (the ldmatrix feeding the Q·Kᵀ and P·V MMAs, the MMAs' own dependencies, the
# softmax's MUFU), to choose between a different fragment schedule and a different tile shape.
set -u
R=${OUT:-/tmp}/ncu_wide64; mkdir -p $R
OUT=$R BACKEND=cuda-flash-allwarps SHAPES="2,16,4096,64;16,16,512,64" DTYPES=fp16 CAUSAL=0 TORCH=0 FP8_SHAPES= SOURCE=1 \
  timeout 400 perf/dev/ncu_forward.sh "${BIN:?BIN}"
python3 perf/dev/ncu_summary.py $R/ncu --device="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" > $R/summary.md
for f in $R/ncu/ours_*.sass.csv; do echo "== $f"; python3 perf/dev/ncu_sass_stalls.py "$f" --top=16; done > $R/stalls.txt
cat $R/summary.md; head -60 $R/stalls.txt
