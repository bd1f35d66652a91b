#!/usr/bin/env python3
"""A/B table of `hopper_dev time` runs of several builds alternated in one GPU run.

    python3 perf/dev/hopper_dev_ab.py DIR PREFIX v1 v2 ...

Reads DIR/<PREFIX>_<v>_<round>.md (hopper_dev time's table: | B,H,L,D | causal | dtype | <kernel> us | ... |)
and prints, per row (shape, causal, dtype), each build's minimum and median over its rounds of the first
column's time (µs: the kernel hopper_dev forced), then each build's ratio of minimums to v1 (< 1: faster).
"""
import glob
import statistics
import sys

d, prefix, vs = sys.argv[1], sys.argv[2], sys.argv[3:]
res = {}
for v in vs:
    for f in sorted(glob.glob(f"{d}/{prefix}_{v}_*.md")):
        for line in open(f):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 4 or not cells[0][:1].isdigit():
                continue
            try:
                t = float(cells[3])
            except ValueError:
                continue
            res.setdefault((cells[0], cells[1], cells[2]), {}).setdefault(v, []).append(t)
head = " ".join(f"{v + ' min/med':>17s}" for v in vs) + " " + " ".join(f"{v + '/' + vs[0]:>9s}" for v in vs[1:])
print(f"{'B,H,L,D':16s} {'causal':6s} {'dtype':5s} {head}")
for (shape, causal, dtype), r in res.items():
    if any(v not in r for v in vs):
        continue
    mins = [min(r[v]) for v in vs]
    cols = " ".join(f"{min(r[v]):8.1f}/{statistics.median(r[v]):8.1f}" for v in vs)
    ratios = " ".join(f"{m / mins[0]:9.3f}" for m in mins[1:])
    print(f"{shape:16s} {causal:6s} {dtype:5s} {cols} {ratios}")
