#!/usr/bin/env python3
"""A/B table of `flash_dev` runs (timing modes: d64-ab, sweep, ...) of several builds alternated in one GPU run.

    python3 perf/dev/flash_dev_ab.py DIR PREFIX v1 v2 ...

Reads DIR/PREFIX_<v>_<round>.txt (flash_dev's lines "<TAG>  <case> ... <t> us (iqr ...) ... check ok|FAIL") and
prints, per case, the minimum over rounds of its median (µs) for each build and each build's ratio to v1. A case
whose check failed in any round of a build is marked FAIL in that build's column.
"""
import glob
import re
import sys

d, prefix, vs = sys.argv[1], sys.argv[2], sys.argv[3:]
line_re = re.compile(r"^(\w+)\s+(.*?)\s+([0-9.]+) us \(iqr [0-9.]+\)(.*)$")
best, failed, order = {}, set(), []
for v in vs:
    for f in sorted(glob.glob(f"{d}/{prefix}_{v}_*.txt")):
        for line in open(f):
            m = line_re.match(line.rstrip("\n"))
            if not m:
                continue
            case, t, rest = m.group(2), float(m.group(3)), m.group(4)
            if case not in order:
                order.append(case)
            key = (case, v)
            best[key] = min(best.get(key, t), t)
            if "check" in rest and "check ok" not in rest:
                failed.add(key)
print("| case | " + " | ".join(vs) + " | " + " | ".join(f"{v}/{vs[0]}" for v in vs[1:]) + " |")
print("|---|" + "--:|" * (2 * len(vs) - 1))
for c in order:
    cells = []
    for v in vs:
        t = best.get((c, v))
        cells.append("-" if t is None else f"{t:.2f}" + (" FAIL" if (c, v) in failed else ""))
    base = best.get((c, vs[0]))
    ratios = [f"{best[(c, v)] / base:.3f}" if base and (c, v) in best else "-" for v in vs[1:]]
    print(f"| {c} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
