// The block scheduler every kernel shares: which (batch, head, query block, key split) a block owns.
// Grid: x = query blocks (times key splits), y = query heads, z = batch. Query blocks are handed out
// in reverse order, so that the heavy ones (causal: the last rows see the most keys) start first and
// the light ones fill the tail of the last wave.
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

}  // namespace flashcore::cuda::detail
