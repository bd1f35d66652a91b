// The persistent grids' work list (the Hopper forward, sm90/flash_fwd_sm90.cuh): G blocks (at most one
// per SM: plan.work_blocks), each walking its share of the work items w = 0 .. n_mblocks · pairs - 1,
// where a pair is a (batch, query head), head fastest. Host code includes this too (the config tests
// check that every item is taken once).
//
// The (batch, head) pairs go in `groups` groups of equal size (±1; the plan makes them as few as keep a
// group's K/V within L2; groups = pairs: pair by pair); inside a group query-block-major from the last
// block (the heaviest when causal), the group's pairs fastest. Round k gives block c the item k·G + c,
// or k·G + G - 1 - c in odd rounds: a snake, so that the block that took the heaviest item of one round
// takes the lightest of the next. That static order is the fallback; with the plan's ticket counter
// the blocks take the items in order as they become free (next_ticket). With pair-by-pair groups and
// a single round this is heavy_first_block's order (common/scheduler.cuh).
#pragma once

#include <cuda_runtime_api.h>  // __host__ __device__ (empty in host-only compilers)

namespace flashcore::cuda::detail {

struct WorkItem {
  int b, h, hk;  // batch entry, query head, its KV head
  int mblock;    // query rows mblock·block_m ..
};

struct WorkList {
  int n_mblocks, heads_q, q_heads_per_kv, groups, total;
  int blocks, block;  // G (the grid) and this block's index

  __host__ __device__ WorkList(int n_mblocks_, int heads_q_, int batch, int q_heads_per_kv_, int groups_, int blocks_,
                               int block_)
      : n_mblocks(n_mblocks_), heads_q(heads_q_), q_heads_per_kv(q_heads_per_kv_), groups(groups_),
        total(n_mblocks_ * heads_q_ * batch), blocks(blocks_), block(block_) {}
  // This block's item of round k, or -1 past its last.
  __host__ __device__ int item(int k) const {
    const int w = k * blocks + ((k & 1) ? blocks - 1 - block : block);
    return w < total ? w : -1;
  }
  __host__ __device__ WorkItem coord(int w) const {
    // The first `extra` groups have size + 1 pairs, the others `size`.
    const int pairs = total / n_mblocks, size = pairs / groups, extra = pairs - size * groups;
    const int big = (size + 1) * n_mblocks;  // items of a larger group
    int in, g_pairs, pair0;
    if (w < extra * big) {
      const int gi = w / big;
      in = w - gi * big, g_pairs = size + 1, pair0 = gi * (size + 1);
    } else {
      const int w2 = w - extra * big, gi = w2 / (size * n_mblocks);
      in = w2 - gi * size * n_mblocks, g_pairs = size, pair0 = extra * (size + 1) + gi * size;
    }
    const int pair = pair0 + in % g_pairs;
    WorkItem c;
    c.mblock = n_mblocks - 1 - in / g_pairs;
    c.h = pair % heads_q;
    c.b = pair / heads_q;
    c.hk = c.h / q_heads_per_kv;
    return c;
  }
};

#ifdef __CUDACC__
// The dynamic schedule: after its first item (its block index), a block draws tickets from a counter
// that is 0 at launch; ticket t is item G + t, -1 past the last. The kernel sets the counter back to 0
// when every block has drawn its last ticket (sm90/flash_fwd_sm90.cuh).
__device__ __forceinline__ int next_ticket(int* counter, int blocks, int total) {
  const int w = atomicAdd(counter, 1) + blocks;
  return w < total ? w : -1;
}
#endif

}  // namespace flashcore::cuda::detail
