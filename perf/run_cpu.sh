#!/usr/bin/env bash
# The host perf run on a CPU machine. From the repository root:
#
#   perf/run_cpu.sh [BUILD_DIR]     BUILD_DIR holds perf/flashcore_bench (default: build)
#
# Measures the CPU's fp32 FMA peak (perf/flashcore_cpu_peak, 1 and nproc threads), runs the host list
# (flashcore_bench --host-only) twice: with OMP_NUM_THREADS = nproc and with 1 thread (Serial-like),
# and writes perf/results/<date>_cpu-<nproc>core.md: median microseconds per call and GFLOP/s of
# every host backend (portable-host, reference-host), per case, at both thread counts, the portable
# tier's share of the measured peak and its speedup over the reference. The two JSON files go
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

PEAK_FILE="$TMPDIR_OUT/${DATE}_cpu-${NPROC}core_peak.txt"
if [[ ${TABLE_ONLY:-0} != 1 ]]; then
  if [[ -x $BUILD/perf/flashcore_cpu_peak ]]; then
    OMP_PROC_BIND=spread OMP_PLACES=threads "$BUILD/perf/flashcore_cpu_peak" 1 "$NPROC" | tee "$PEAK_FILE"
  else
    echo "run_cpu.sh: no $BUILD/perf/flashcore_cpu_peak: the table states no peak" | tee "$PEAK_FILE"
  fi
fi

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

PEAK_FILE="$PEAK_FILE" LOADS_END="${loads[*]}" python3 - "$MD" "$NPROC" "${jsons[@]}" <<'EOF'
import sys, os, re
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
peak = {}  # threads -> GFLOP/s
try:
    for ln in open(os.environ.get("PEAK_FILE", "")):
        m = re.match(r"threads (\d+): ([\d.]+) GFLOP/s", ln)
        if m:
            peak[m.group(1)] = float(m.group(2))
except OSError:
    pass
lines = ["# Host backends on the CPU machine (%s cores)" % nproc, "",
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
if peak:
    lines.append("- measured fp32 FMA peak (perf/cpu_peak.cpp, 8-lane vectors): %s; `%% peak` = the portable "
                 "tier's GFLOP/s over it" % ", ".join("%.1f GFLOP/s on %s thread%s" % (v, t, "" if t == "1" else "s")
                                                     for t, v in sorted(peak.items(), key=lambda x: int(x[0]))))
lines.append("- medians resist short interference, not a neighbour that holds a core for a whole case: on a "
             "shared machine, a 2-thread time close to the 1-thread one for some cases only points at that")
lines.append("")
backends = sorted(backends, key=lambda b: (not b.startswith("portable"), b))  # the portable tier first
head = ["shape (B,H,L,D)", "dtype", "causal"]
for b in backends:
    for t in threads:
        head.append("%s, %s thr" % (b, t))
        if b.startswith("portable") and peak.get(str(t)):
            head.append("%% peak, %s thr" % t)
    if len(threads) == 2:
        head.append("speedup %s/%s thr" % (threads[0], threads[1]))
portable = [b for b in backends if b.startswith("portable")]
reference = [b for b in backends if b.startswith("reference")]
if portable and reference:
    head.append("%s / %s, %s thr" % (reference[0], portable[0], threads[0]))
lines.append("| " + " | ".join(head) + " |")
lines.append("|" + "|".join(["---"] * 3 + ["--:"] * (len(head) - 3)) + "|")
for k in keys:
    shape, dtype, causal = per[0][2][k]
    row = ["%d,%d,%d,%d" % shape, dtype, "yes" if causal else "no"]
    first = {}
    for b in backends:
        us = []
        for (c, res, _), t in zip(per, threads):
            e = res.get(k, {}).get(b)
            if e and "us" in e:
                us.append(e["us"])
                row.append("%.0f (%.2f)" % (e["us"], e["tflops"] * 1e3))
            else:
                us.append(None)
                row.append("n/a" if e else "-")
            if b.startswith("portable") and peak.get(str(t)):
                row.append("%.0f %%" % (100 * e["tflops"] * 1e3 / peak[str(t)]) if e and "us" in e else "-")
        first[b] = us[0]
        if len(threads) == 2:
            row.append("%.2fx" % (us[1] / us[0]) if us[0] and us[1] else "-")
    if portable and reference:
        p, r = first.get(portable[0]), first.get(reference[0])
        row.append("%.0fx" % (r / p) if p and r else "-")
    lines.append("| " + " | ".join(row) + " |")
text = "\n".join(lines) + "\n"
open(md, "w").write(text)
print(text)
print("wrote", md)
EOF
