#!/usr/bin/env python3
"""Model of the Hopper forward's persistent schedule (src/backends/cuda/common/work_list.h).

Each causal item (128 query rows of one (batch, head)) costs its key tiles (query block m sees m + 1
tiles of 128 keys when seqlen_q = seqlen_k) plus one tile's worth of per-item overhead. G blocks take
the items in list order, each the next one as soon as it is free (the ticket counter); the table shows
the last block's finish over the mean (1.000 = perfectly balanced) for the item orders:

  pair by pair   the non-persistent grid's order (every query block of a pair, heaviest first, then
                 the next pair; the hardware hands out blocks likewise as SMs free up)
  L2 groups      the plan's: pairs in as few groups of equal size as keep a group's K/V within 25 MiB,
                 query-block-major inside a group (heaviest first), groups one after the other
  unequal        groups of the L2 size, the last one smaller (what a fixed group size gives)

Usage: perf/dev/schedule_model.py [G]   (default 132, the H100's SM count)
"""
import heapq
import sys


def order(n_mblocks, pairs, sizes):
    """Item costs in list order for groups of the given sizes (pairs of a group fastest)."""
    out = []
    for size in sizes:
        for m in range(n_mblocks - 1, -1, -1):
            out.extend([m + 1] * size)
    return out


def finish(costs, blocks, overhead=1):
    free = [(0, i) for i in range(blocks)]
    for c in costs:
        t, i = heapq.heappop(free)
        heapq.heappush(free, (t + c + overhead, i))
    return max(t for t, _ in free)


def main():
    G = int(sys.argv[1]) if len(sys.argv) > 1 else 132
    budget = 25 * 2**20
    shapes = [(1, 16, 16384, 128), (2, 16, 4096, 128), (8, 16, 2048, 128), (8, 32, 2048, 128), (4, 16, 1024, 64),
              (2, 16, 4096, 64), (16, 16, 512, 64), (1, 32, 8192, 128), (1, 16, 8192, 128), (1, 25, 8192, 128),
              (3, 7, 4096, 128)]
    print(f"G = {G}: last block's finish / mean")
    print("| B,H,L,D causal | pairs per group | pair by pair | L2 groups (equal) | unequal |")
    print("|---|---|--:|--:|--:|")
    for B, H, L, D in shapes:
        nm, pairs = (L + 127) // 128, B * H
        cap = max(1, min(pairs, budget // (2 * L * D * 2)))
        n_groups = (pairs + cap - 1) // cap
        equal = [pairs // n_groups + (1 if g < pairs % n_groups else 0) for g in range(n_groups)]
        unequal = [min(cap, pairs - g * cap) for g in range(n_groups)]
        mean = (sum(order(nm, pairs, [pairs])) + nm * pairs) / G
        cells = [finish(order(nm, pairs, s), G) / mean for s in ([1] * pairs, equal, unequal)]
        print(f"| {B},{H},{L},{D} | {cap} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
