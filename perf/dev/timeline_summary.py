#!/usr/bin/env python3
"""Summary of a Hopper forward item timeline (perf/dev/hopper_dev.cu `timeline`, CSV on stdin or a file).

Per call: the span (first Q landed to last epilogue done), then the block's items by their place n in the
block's walk (round n): when they start (Q landed) relative to the call's first, how long their tiles take
(Q landed -> last P·V done, per tile), their epilogue (stores; a tail piece's partial and merge), and the
wait before them (the previous item's epilogue done -> this item's Q landed); with the first tile's marks
(12-column CSV), the first tile split up: Q landed -> first K landed, -> its S and softmax done (P packed),
and the rest of the tiles (-> last P·V done) per tile. Whole items and tail pieces
apart. Times in µs, from the global timer; an item's times are its warps' earliest start and latest ends.
With a tail split, the pieces' epilogues per 16-row slice (a consumer warp's rows): the warp that counted last and
merged against the others, which wrote their partial and counted.

Usage: perf/dev/timeline_summary.py [FILE]
"""
import collections
import statistics
import sys


def stats(xs):
    if not xs:
        return "-"
    xs = sorted(xs)
    return "%7.2f %7.2f %7.2f %7.2f" % (xs[0], statistics.median(xs), statistics.mean(xs), xs[-1])


def main():
    src = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    calls = collections.defaultdict(list)
    for line in src:
        if line.startswith("#"):
            print(line.rstrip())
            continue
        if line.startswith("call"):
            continue
        f = line.strip().split(",")
        if len(f) not in (10, 12):
            continue
        call, block, warp, n, w, piece, tiles = map(int, f[:7])
        tq, tpv, tend = map(int, f[7:10])
        tk0, ts0 = map(int, f[10:12]) if len(f) == 12 else (0, 0)
        calls[call].append((block, warp, n, w, piece, tiles, tq, tpv, tend, tk0, ts0))
    for call, recs in sorted(calls.items()):
        t0 = min(r[6] for r in recs)
        items = {}
        for block, warp, n, w, piece, tiles, tq, tpv, tend, tk0, ts0 in recs:
            k = (block, n)
            if k not in items:
                items[k] = [w, piece, tiles, tq, tpv, tend, tk0, ts0]
            else:
                it = items[k]
                it[3] = min(it[3], tq)
                it[4] = max(it[4], tpv)
                it[5] = max(it[5], tend)
                it[6] = min(it[6], tk0)  # first K landed: the first warp's wait (0 in every warp without the mark)
                it[7] = max(it[7], ts0)  # first tile's P packed: the last warp's
        end = max(it[5] for it in items.values())
        print(f"call {call}: span {(end - t0) / 1e3:.2f} us, {len(items)} items on {len({k[0] for k in items})} blocks")
        first = any(it[6] for it in items.values())  # the first tile's marks (t_k0, t_s0) recorded
        print("  round kind   count | start after t0 (min med mean max) | per tile | epilogue | wait before"
              + (" | Q->K0, K0->P0, P0->last P·V a tile (med)" if first else ""))
        rounds = collections.defaultdict(lambda: collections.defaultdict(list))
        for (block, n), (w, piece, tiles, tq, tpv, tend, tk0, ts0) in items.items():
            kind = "piece" if piece >= 0 else "whole"
            prev = items.get((block, n - 1))
            r = rounds[(n, kind)]
            r["start"].append((tq - t0) / 1e3)
            r["tile"].append((tpv - tq) / 1e3 / max(tiles, 1))
            r["epi"].append((tend - tpv) / 1e3)
            r["tiles"].append(tiles)
            if prev is not None:
                r["wait"].append((tq - prev[5]) / 1e3)
            r["end"].append((tend - t0) / 1e3)
            if tk0 and ts0:
                r["qk0"].append((tk0 - tq) / 1e3)
                r["k0p0"].append((ts0 - tk0) / 1e3)
                r["rest"].append((tpv - ts0) / 1e3 / max(tiles, 1))
        for (n, kind), r in sorted(rounds.items()):
            extra = ""
            if r["qk0"]:
                extra = (f" | {statistics.median(r['qk0']):5.2f} {statistics.median(r['k0p0']):5.2f}"
                         f" {statistics.median(r['rest']):5.2f}")
            print(f"  {n:5d} {kind:5s} {len(r['start']):6d} | {stats(r['start'])} | {statistics.median(r['tile']):6.3f} "
                  f"| {statistics.median(r['epi']):6.2f} (max {max(r['epi']):5.2f}) | {stats(r['wait'])}"
                  f" | tiles {min(r['tiles'])}-{max(r['tiles'])}, ends {min(r['end']):.2f}-{max(r['end']):.2f}{extra}")
        last = max(items.items(), key=lambda kv: kv[1][5])
        print(f"  last to finish: block {last[0][0]}, item {last[1][0]} piece {last[1][1]} at {(last[1][5] - t0) / 1e3:.2f} us")
        pieces = [r for r in recs if r[4] >= 0]
        if pieces:  # work index w of piece c of tail slot q: n_full + c * items + q (common/tail_split.cuh)
            n_full, splits = min(r[3] for r in pieces), max(r[4] for r in pieces) + 1
            n_items = (max(r[3] for r in pieces) - n_full + 1) // splits
            slices = collections.defaultdict(list)
            for block, warp, n, w, piece, tiles, tq, tpv, tend, _, _ in pieces:
                slices[((w - n_full) % n_items, warp)].append((tpv, tend))
            merging, others, after = [], [], []
            for v in slices.values():
                v.sort(key=lambda x: x[1])
                merging.append((v[-1][1] - v[-1][0]) / 1e3)
                others.extend((e - p) / 1e3 for p, e in v[:-1])
                after.append((v[-1][1] - max(p for p, _ in v)) / 1e3)
            print(f"  tail {n_items}x{splits}: merging warp's epilogue {stats(merging)}; the others' {stats(others)};"
                  f" slice done after its last piece's P·V {stats(after)} (min med mean max)")


if __name__ == "__main__":
    main()
