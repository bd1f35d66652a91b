#!/usr/bin/env python3
"""Where a kernel's warps wait, by instruction: the SASS source page of an Nsight Compute report
(ncu --section SourceCounters, then `ncu --import R.ncu-rep --page source --csv --print-source sass`),
stall samples summed per opcode (the mnemonic without modifiers) and per stall reason.

  python3 perf/dev/ncu_sass_stalls.py R.sass.csv [--top=N]

Prints the share of all warp samples per opcode with its largest stall reasons, and the share of each
reason over the kernel (as ncu's warp-state section counts them, but sampled per instruction)."""
import collections
import csv
import sys


def summarize(label, head, rows, top):
    col = {h: i for i, h in enumerate(head)}
    reasons = [h for h in head if h.startswith("stall_") and "(" not in h and h not in ("stall_selected", "stall_not_selected")]
    per_op = collections.defaultdict(lambda: collections.Counter())
    per_reason = collections.Counter()
    total = 0.0
    n_inst = collections.Counter()
    for r in rows:
        if len(r) < len(head):
            continue
        src = r[col["Source"]].strip()
        op = src.split()[0] if src else "?"
        if op.startswith("@"):
            op = src.split()[1] if len(src.split()) > 1 else op
        op = op.split(".")[0]
        try:
            samples = float(r[col["Warp Stall Sampling (All Samples)"]] or 0)
        except ValueError:
            continue
        total += samples
        per_op[op]["all"] += samples
        try:
            n_inst[op] += float(r[col["Instructions Executed"]].replace(",", "") or 0)
        except ValueError:
            pass
        for rs in reasons:
            v = float(r[col[rs]] or 0)
            per_op[op][rs] += v
            per_reason[rs] += v
    print(f"{label}: {total:.0f} warp samples")
    if total == 0:
        return
    print("| reason | share |\n|---|--:|")
    for rs, v in per_reason.most_common(8):
        print(f"| {rs[6:]} | {100 * v / total:.1f} % |")
    print("\n| opcode | instructions executed | share of samples | largest reasons (share of all samples) |\n|---|--:|--:|---|")
    for op, c in sorted(per_op.items(), key=lambda kv: -kv[1]["all"])[:top]:
        rs = sorted(((v, k) for k, v in c.items() if k != "all"), reverse=True)[:3]
        print(f"| {op} | {n_inst[op]:.0f} | {100 * c['all'] / total:.1f} % | "
              + ", ".join(f"{k[6:]} {100 * v / total:.1f} %" for v, k in rs if v > 0) + " |")


def main():
    path = sys.argv[1]
    top = int(next((a.split("=")[1] for a in sys.argv[2:] if a.startswith("--top=")), "14"))
    rows = list(csv.reader(open(path)))
    # One section per profiled kernel (a report of several kernels prints each one's page after its own
    # "Address" header row).
    heads = [i for i, r in enumerate(rows) if r and r[0] == "Address"]
    for n, hi in enumerate(heads):
        end = heads[n + 1] if n + 1 < len(heads) else len(rows)
        label = path if len(heads) == 1 else f"{path} (kernel {n + 1} of {len(heads)})"
        summarize(label, rows[hi], rows[hi + 1:end], top)
        print()


if __name__ == "__main__":
    main()
