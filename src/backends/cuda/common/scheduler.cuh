// The block scheduler every kernel shares: which (batch, head, query block, key split) a block owns.
// Grid: x = query blocks (times key splits), y = query heads, z = batch. Query blocks are handed out
// in reverse order, so that the heavy ones (causal: the last rows see the most keys) start first and
// the light ones fill the tail of the last wave. The backward's key blocks likewise (key_block_order).
#pragma once

#include <cuda_runtime.h>

namespace flashcore::cuda::detail {

struct BlockCoord {
  int b;       // batch entry
  int h;       // query head
  int hk;      // its key/value head (GQA: h / q_heads_per_kv)
  int mblock;  // query block: rows mblock·block_m ..
  int split;   // key split (0 without split-KV)
};

inline dim3 heavy_first_grid(int n_mblocks, int n_splits, int heads_q, int batch) {
  return dim3((unsigned)(n_mblocks * n_splits), (unsigned)heads_q, (unsigned)batch);
}

template <bool kSplitKV>
__device__ __forceinline__ BlockCoord heavy_first_block(int n_mblocks, int q_heads_per_kv) {
  BlockCoord c;
  if constexpr (kSplitKV) {
    c.mblock = n_mblocks - 1 - (int)(blockIdx.x % n_mblocks);
    c.split = (int)(blockIdx.x / n_mblocks);
  } else {
    c.mblock = n_mblocks - 1 - (int)blockIdx.x;
    c.split = 0;
  }
  c.h = blockIdx.y;
  c.b = blockIdx.z;
  c.hk = c.h / q_heads_per_kv;
  return c;
}

// The backward's dK/dV blocks (grid: x = key blocks, y = KV heads, z = batch; launched x fastest). Causal:
// the first key blocks of a head see the most query tiles. The (head, batch) pairs are taken in groups of
// `group` (the plan sizes a group so that its Q, dO and dQ accumulator stay in L2); inside a group the
// blocks go key-block-major (every pair's first key block, then every pair's second, ...): the heavy
// ones start first and the light ones fill the tail, while the blocks running at once share few heads.
// (Key-block-major over all pairs at once: H100 (2,16,4096,128) causal 951 -> 883 us, but (8,16,2048,64)
// causal 720 -> 1022 us, the 128 pairs' Q and dO not fitting L2.)
struct KeyBlockCoord {
  int kb;  // key block
  int hk;  // KV head
  int b;   // batch entry
};
template <bool kHeavyFirst>
__device__ __forceinline__ KeyBlockCoord key_block_order(int group) {
  if constexpr (!kHeavyFirst) {
    return {(int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z};
  } else {
    const int n_kb = (int)gridDim.x, pairs = (int)(gridDim.y * gridDim.z);
    const long long i = blockIdx.x + (long long)n_kb * (blockIdx.y + (long long)gridDim.y * blockIdx.z);
    const int g = (int)(i / ((long long)group * n_kb));                   // group of pairs
    const int in = (int)(i - (long long)g * group * n_kb);                // position inside it
    const int g_pairs = min(group, pairs - g * group);                    // pairs in this group
    const int pair = g * group + in % g_pairs;
    return {in / g_pairs, pair % (int)gridDim.y, pair / (int)gridDim.y};
  }
}

}  // namespace flashcore::cuda::detail
