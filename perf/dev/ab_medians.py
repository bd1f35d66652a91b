#!/usr/bin/env python3
"""A/B table of flashcore_bench runs of several builds alternated in one GPU run.

    python3 perf/dev/ab_medians.py DIR v1 v2 ...

Reads DIR/time_<v>_<round>.json (or .json.gz; flashcore_bench --benchmark_format=json, a log line or two
before the JSON is skipped) and prints, per row, the minimum over rounds of the row's median (µs) for each
build, then each build's ratio to v1.
"""
import glob
import gzip
import json
import sys

d, vs = sys.argv[1], sys.argv[2:]
res = {}
for v in vs:
    for f in sorted(glob.glob(f"{d}/time_{v}_*.json*")):
        s = (gzip.open(f, "rt") if f.endswith(".gz") else open(f)).read()
        s = s[s.index("{"):]
        for b in json.loads(s)["benchmarks"]:
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            name = b.get("run_name", b["name"])
            t = b["real_time"] * {"ns": 1e-3, "us": 1, "ms": 1e3}[b["time_unit"]]
            res.setdefault(name, {}).setdefault(v, []).append(t)
print(f"{'row':48s} " + " ".join(f"{v:>9s}" for v in vs))
for n, r in res.items():
    m = [min(r[v]) for v in vs]
    short = n.replace("attn/", "").replace("/iterations:1/repeats:5/manual_time", "")
    print(f"{short:48s} " + " ".join(f"{x:9.1f}" for x in m) + "  " + " ".join(f"{x / m[0]:.3f}" for x in m[1:]))
