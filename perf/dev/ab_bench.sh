#!/usr/bin/env bash
# A/B of two flashcore_bench binaries on the GPU machine: old and new alternated ROUNDS times, each
# writing aggregate-only JSON, then one markdown table of the per-run medians (µs per call).
#   perf/dev/ab_bench.sh OLD_BENCH NEW_BENCH OUT_DIR [ROUNDS] [extra flashcore_bench flags...]
# Defaults: the tuned backends (Auto and every forced variant), fp16, graph replay, shapes that reach
# every kernel (16-row all-warps and warp-specialized, wide, Hopper, split-KV).
set -euo pipefail
old=$1 new=$2 out=$3 rounds=${4:-3}
shift $(( $# < 4 ? $# : 4 ))
mkdir -p "$out"
flags=(--device-only --dtypes=fp16 --timing=graph --reps=5
       --backends=cuda-flash,cuda-flash-allwarps,cuda-flash-warpspec,cuda-flash-hopper
       "--shapes=1,8,512,64;1,8,1024,64;1,8,2048,64;4,16,1024,64;1,2,2048,64;1,1,4096,128;1,8,2048,128;2,16,4096,128"
       --benchmark_report_aggregates_only=true "$@")
for r in $(seq 1 "$rounds"); do
  for which in old new; do
    bin=$old; [[ $which == new ]] && bin=$new
    echo "== round $r: $which ($bin)"
    "$bin" "${flags[@]}" --benchmark_out="$out/$which-$r.json" --benchmark_out_format=json >"$out/$which-$r.log" 2>&1 ||
      { echo "$which round $r failed:"; tail -n 20 "$out/$which-$r.log"; }
  done
done
python3 - "$out" "$rounds" <<'PY' | tee "$out/ab.md"
import json, sys, os, collections
out, rounds = sys.argv[1], int(sys.argv[2])
cell = collections.defaultdict(lambda: {"old": [], "new": []})
for which in ("old", "new"):
    for r in range(1, rounds + 1):
        f = os.path.join(out, f"{which}-{r}.json")
        if not os.path.exists(f):
            continue
        for b in json.load(open(f))["benchmarks"]:
            if b.get("aggregate_name") != "median" or b.get("error_occurred"):
                continue
            name = b["run_name"].split("/repeats")[0]
            t = b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b.get("time_unit", "ns")]
            cell[name][which].append(t)
print("| benchmark | old (µs, per run) | new (µs, per run) | new/old (medians) |")
print("|---|---|---|---|")
for name in sorted(cell):
    o, n = cell[name]["old"], cell[name]["new"]
    med = lambda v: sorted(v)[len(v) // 2] if v else float("nan")
    ratio = med(n) / med(o) if o and n else float("nan")
    fmt = lambda v: " / ".join(f"{x:.3g}" for x in v)
    print(f"| {name} | {fmt(o)} | {fmt(n)} | {ratio:.3f} |")
PY
