#!/usr/bin/env bash
# The host perf run on a CPU machine. From the repository root:
#
#   perf/run_cpu.sh [BUILD_DIR]     BUILD_DIR holds perf/flashcore_bench (default: build)
#
# Runs the host list (flashcore_bench --host-only) twice: with OMP_NUM_THREADS = nproc and with 1
# thread (Serial-like), and writes perf/results/<date>_cpu-<nproc>core.md: median microseconds per
# call and GFLOP/s of every host backend, per case, at both thread counts. The two JSON files go
# to ${OUT:-perf/results/tmp}. QUICK=1 passes --quick (3 repetitions of >= 0.05 s); TABLE_ONLY=1
# remakes the table from the JSON of the last run (same date) without running anything.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT" || exit 2
BUILD=${1:-build}
BENCH=$BUILD/perf/flashcore_bench
[[ -x $BENCH ]] || BENCH=$BUILD/flashcore_bench
if [[ ! -x $BENCH ]]; then
  echo "run_cpu.sh: no flashcore_bench in $BUILD/perf or $BUILD (build with Google Benchmark installed)" >&2
  exit 2
fi
NPROC=$(nproc)
DATE=$(date +%F)
TMPDIR_OUT=${OUT:-perf/results/tmp}
mkdir -p "$TMPDIR_OUT" perf/results
MD=perf/results/${DATE}_cpu-${NPROC}core.md
quick=()
[[ ${QUICK:-0} == 1 ]] && quick=(--quick)

jsons=()
loads=()  # 1-minute load average at the end of each run (includes the run's own threads)
for threads in "$NPROC" 1; do
  json="$TMPDIR_OUT/${DATE}_cpu-${NPROC}core_omp${threads}.json"
  if [[ ${TABLE_ONLY:-0} != 1 ]]; then  # TABLE_ONLY=1: remake the table from the last run's JSON
    echo "== host list, OMP_NUM_THREADS=$threads"
    OMP_NUM_THREADS=$threads OMP_PROC_BIND=spread OMP_PLACES=threads \
      "$BENCH" --host-only "${quick[@]}" --benchmark_color=false \
      --benchmark_out="$json" --benchmark_out_format=json || { echo "run_cpu.sh: flashcore_bench failed" >&2; exit 1; }
    cut -d' ' -f1 /proc/loadavg >"$json.loadend"
  fi
  jsons+=("$json")
  loads+=("$(cat "$json.loadend" 2>/dev/null || echo '?')")
done

LOADS_END="${loads[*]}" python3 - "$MD" "$NPROC" "${jsons[@]}" <<'EOF'
import sys, os
sys.path.insert(0, "perf")
from sdpa_compare import parse_ours, flops
md, nproc, files = sys.argv[1], sys.argv[2], sys.argv[3:]
per = []
for f in files:
    ctx, res, extra = parse_ours([f])
    per.append((ctx[0] if ctx else {}, res, extra))
ctx0 = per[0][0]
keys = sorted(per[0][2], key=lambda k: (per[0][2][k][0][3], per[0][2][k][0][2], per[0][2][k][0][0],
                                        ["fp32", "fp16", "bf16"].index(per[0][2][k][1]), per[0][2][k][2]))
backends = sorted({b for _, res, _ in per for k in res for b in res[k]})
threads = [c.get("omp_num_threads", "?") for c, _, _ in per]
lines = ["# Host reference on the CPU machine (%s cores)" % nproc, "",
         "- CPU: %s; %s" % (ctx0.get("host_cpu", "?"), ctx0.get("kokkos_version", "?")),
         "- flashcore %s, commit %s, %s build; date %s" % (ctx0.get("flashcore_version"), ctx0.get("git_commit"),
                                                        ctx0.get("build_type"), ctx0.get("date", "?")[:10]),
         "- cells: median wall-clock microseconds per call over the repetitions (GFLOP/s, FLOPs 4*B*H*L*L*D, "
         "halved when causal); inputs (B,L,H,D) contiguous, Hkv = H; OMP_PROC_BIND=spread OMP_PLACES=threads",
         "- made by perf/run_cpu.sh%s" % (" (--quick)" if os.environ.get("QUICK") == "1" else "")]
ends = os.environ.get("LOADS_END", "").split()
for i, (c, _, _) in enumerate(per):
    la = c.get("load_avg") or []
    end = float(ends[i]) if i < len(ends) and ends[i] != "?" else None
    thr = c.get("omp_num_threads", "?")
    lines.append("- OMP_NUM_THREADS=%s run: 1-min load average %s at its start, %s at its end (its own threads "
                 "included)" % (thr, "%.2f" % la[0] if la else "?", "%.2f" % end if end is not None else "?"))
    other_end = end - float(thr) if end is not None and thr.isdigit() else 0.0
    busy = max(la[0] if la else 0.0, other_end)
    if busy > 0.5 * int(nproc):
        lines.append("  - WARNING: the machine may have been busy (load ~%.1f besides this run on %s cores; the 1-min "
                     "average lags, so it also counts work that ended just before): times may be inflated and the "
                     "thread scaling distorted" % (busy, nproc))
lines.append("- medians resist short interference, not a neighbour that holds a core for a whole case: on a "
             "shared machine, a 2-thread time close to the 1-thread one for some cases only points at that")
lines.append("")
head = ["shape (B,H,L,D)", "dtype", "causal"]
for b in backends:
    for t in threads:
        head.append("%s, %s thr" % (b, t))
    if len(threads) == 2:
        head.append("speedup %s/%s thr" % (threads[0], threads[1]))
lines.append("| " + " | ".join(head) + " |")
lines.append("|" + "|".join(["---"] * 3 + ["--:"] * (len(head) - 3)) + "|")
for k in keys:
    shape, dtype, causal = per[0][2][k]
    row = ["%d,%d,%d,%d" % shape, dtype, "yes" if causal else "no"]
    for b in backends:
        us = []
        for _, res, _ in per:
            e = res.get(k, {}).get(b)
            if e and "us" in e:
                us.append(e["us"])
                row.append("%.0f (%.2f)" % (e["us"], e["tflops"] * 1e3))
            else:
                us.append(None)
                row.append("n/a" if e else "-")
        if len(threads) == 2:
            row.append("%.2fx" % (us[1] / us[0]) if us[0] and us[1] else "-")
    lines.append("| " + " | ".join(row) + " |")
text = "\n".join(lines) + "\n"
open(md, "w").write(text)
print(text)
print("wrote", md)
EOF
