// The persistent schedule's tail split (the Hopper forward, sm90/flash_fwd_sm90.cuh; the plan decides:
// FlashFwdPlan::tail_items, tail_splits, sm90/plan_sm90.cu hopper_schedule).
//
// A persistent grid of G blocks walks `total` equal work items; when total = n·G + r with r small, the
// last round runs r items on r SMs while the other G - r wait: (n + 1) item times for n + r/G of work
// (H200, run 38c: (4,16,2048,64) on the three-warpgroup D = 64 instance, 704 items = 5.33 rounds on 132
// SMs, took as long per head as 4 or 6 whole rounds: time = rounds rounded up x 26.8 µs). The split runs
// the last r items (the tail, the last ones of the work order) as `splits` pieces each, piece c taking
// its item's key tiles [c·n/splits, (c+1)·n/splits): r·splits <= G pieces, so the last round takes about
// 1/splits of an item time. Work index w < n_full is item w; past it, piece (w - n_full) / items of
// tail item n_full + (w - n_full) % items (piece-major: the divisions are a short loop, since the
// Hopper producer, which decodes them, has 24 registers). Every item has the same n key tiles; piece c
// takes n / splits of them, one more for c < n % splits (the plan passes both: KernelArgs::tail_tiles,
// tail_extra).
//
// Each piece's warps write their 16 rows' partial (O normalised by the piece's own l, fp32, and the
// log2-domain LSE) to the launch scratch, then count themselves on the rows' counter (one int a tail
// item and 16-row slice, after the schedule's two ticket ints); the warp that makes it `splits` merges
// the pieces in piece order (so the result does not depend on which finished last: bitwise
// deterministic) into O and the LSE, and sets the counter back to 0 for the next launch.
// Fixed-length, non-causal problems without variants or pages only (the plan's condition): every
// piece then sees at least one key of every row, and every item costs the same. The partials are at most
// SMs x block_m rows of D floats (pieces <= SMs): 17 MB at D = 256 on 132 SMs, 6.5 MB for 192-row D = 64
// items; an eager launch keeps them in its stream's scratch, a captured one allocates them in its graph.
#pragma once

#include <cuda_runtime_api.h>  // __host__ __device__ (empty in host-only compilers)

#include <cstddef>

namespace flashcore::cuda::detail {

struct TailSplit {
  int n_full;  // work items run whole
  int items;   // tail items (0: no split)
  int splits;  // pieces of a tail item

  // n_full_: the items before the tail (all of them without a split).
  __host__ __device__ TailSplit(int n_full_, int tail_items, int tail_splits)
      : n_full(n_full_), items(tail_items), splits(tail_items > 0 ? tail_splits : 1) {}
  // Work index w -> the item it runs (*item) and its piece (returned; -1: the whole item).
  __host__ __device__ int decode(int w, int* item) const {
    if (w < n_full) {
      *item = w;
      return -1;
    }
    int q = w - n_full, c = 0;
    while (q >= items) q -= items, ++c;  // at most kMaxSplits - 1 steps
    *item = n_full + q;
    return c;
  }
};
// Piece c's key tiles: [*first, *first + *n), from tiles = n / splits and extra = n % splits.
__host__ __device__ inline void tail_piece_tiles(int c, int tiles, int extra, int* first, int* n) {
  *first = c * tiles + (c < extra ? c : extra);
  *n = tiles + (c < extra ? 1 : 0);
}

// Scratch sizes of a tail split (plan and launch): the counters after the schedule's two ticket ints,
// the O partials ([tail item][piece][block_m rows][D] fp32, D the compiled head dim) and the LSE partials
// after them (lse_offset bytes into the partials).
inline size_t tail_counter_bytes(int items, int block_m) { return (2 + (size_t)items * (block_m / 16)) * sizeof(int); }
inline size_t tail_o_bytes(int items, int splits, int block_m, int d) {
  return ((size_t)items * splits * block_m * d * sizeof(float) + 255) & ~size_t(255);
}
inline size_t tail_lse_bytes(int items, int splits, int block_m) {
  return ((size_t)items * splits * block_m * sizeof(float) + 255) & ~size_t(255);
}

}  // namespace flashcore::cuda::detail

#ifdef __CUDACC__
#include "backends/cuda/common/elem_ops.cuh"
#include "backends/cuda/common/epilogue.cuh"
#include "backends/cuda/common/kernel_args.h"
#include "backends/cuda/common/online_softmax.cuh"
#include "backends/cuda/common/sequences.cuh"

namespace flashcore::cuda::detail {

// The merge of a tail item's 16-row slice (rows m0 + lrow0 .. + 15 of (b, h); the item's partials from
// row item_rows) by the warp that completed its count: weights from the pieces' LSEs, the merged LSE,
// then O = Σ_s w_s O_s in piece order, 4 columns an item: lane l takes items it = l + 32·i (row it / (D/4),
// columns 4·(it % (D/4))). The piece count is a template parameter so that a chunk's loads (up to 16
// float4 a lane) are all in flight before its sums and stores: with a run-time count they sat behind a
// branch each and behind the previous item's stores (which may alias for the compiler), one L2 round trip
// an item (H200 run 39a: the merging warp's epilogue took 5.9 µs at D = 64 with 3 pieces, 11 µs at D = 128
// with 2, where the other pieces' warps took 2-3 µs). Not inlined: inlined, it moved the kernel's register
// allocation (the D = 192 tail kernel spilled 8-92 bytes, whatever the loads in flight); called, no kernel
// spills, and the call costs nothing next to its loads.
template <int D, int kBlockM, int kSplits, typename Elem>
__device__ __noinline__ void tail_merge(const KernelArgs& a, long long item_rows, int b, int h, int m0, int lrow0,
                                        int lane) {
  const FlashFwdParams& p = a.p;
  // Weights of the warp's 16 rows in piece order (lane r < 16: row lrow0 + r; lanes 16.. repeat them).
  float w[kMaxSplits];
  const float lse2_all = split_merge_weights(a.part_lse + item_rows + lrow0 + (lane & 15), kBlockM, kSplits, w);
  const numeric::Sequences seq = sequences_of(p);
  const int len_q = seq.len_q(b);
  const float* __restrict__ part = a.part_o + (item_rows + lrow0) * D;
  Elem* __restrict__ out = static_cast<Elem*>(p.o) + seq.q_row(o_strides(p), b, 0) + (long long)h * p.o_head_stride +
                           (long long)(m0 + lrow0) * p.o_seq_stride;
  const int rows = len_q - (m0 + lrow0), dim4 = p.head_dim / 4;
  constexpr int kC4 = D / 4, kItems = 16 * kC4 / 32;
  constexpr int kLoads = 16;  // float4 loads in flight a lane (32 spilled in the three-warpgroup kernels: 128 registers)
  constexpr int kChunk = kLoads / kSplits < kItems ? kLoads / kSplits : kItems;  // kSplits <= 8: at least 2
#pragma unroll
  for (int i0 = 0; i0 < kItems; i0 += kChunk) {
    float4 v[kChunk][kSplits];
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const int it = lane + 32 * (i0 + i), r = it / kC4, c4 = it % kC4;
      if (i0 + i >= kItems) break;
#pragma unroll
      for (int s = 0; s < kSplits; ++s)
        v[i][s] = __ldcg(reinterpret_cast<const float4*>(part + ((long long)s * kBlockM + r) * D) + c4);
    }
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const int it = lane + 32 * (i0 + i), r = it / kC4, c4 = it % kC4;
      if (i0 + i >= kItems) break;
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int s = 0; s < kSplits; ++s) {
        const float ws = __shfl_sync(0xffffffffu, w[s], r);
        acc[0] = fmaf(ws, v[i][s].x, acc[0]); acc[1] = fmaf(ws, v[i][s].y, acc[1]);
        acc[2] = fmaf(ws, v[i][s].z, acc[2]); acc[3] = fmaf(ws, v[i][s].w, acc[3]);
      }
      if (r < rows && c4 < dim4) {
        uint2 o4;
        o4.x = ElemOps<Elem>::pack(acc[0], acc[1]);
        o4.y = ElemOps<Elem>::pack(acc[2], acc[3]);
        *reinterpret_cast<uint2*>(out + (long long)r * p.o_seq_stride + c4 * 4) = o4;
      }
    }
  }
  // The LSE last: a store before the partials' loads would keep them waiting (p.lse may alias them for the compiler).
  if (lane < 16 && p.lse != nullptr && m0 + lrow0 + lane < len_q)
    p.lse[seq.lse_index(b, h, m0 + lrow0 + lane, p.heads_q)] = lse2_all * kLn2;
}

// One warp's end of a tail piece: its rows lrow0 + lane/4 (+8) of the block (accumulator layout:
// common/mask.cuh; o(j, e) as in stage_o_rows) -> the partials; the warp that completes the rows' count
// merges them into O and the LSE of (b, h), rows m0 + lrow0 .. + 15.
template <int D, int kBlockM, typename Elem>
__device__ __forceinline__ void tail_piece_epilogue(const KernelArgs& a, const TailSplit& ts, int item, int c, int b,
                                                    int h, int m0, int lrow0, const float (&o)[D / 8][4],
                                                    const float (&inv)[2], const float (&lse2)[2], int lane) {
  static_assert(D % 32 == 0 && kBlockM % 16 == 0, "16-row slices of whole 32-column groups");
  const int slot = item - ts.n_full, g = lane >> 2, t = lane & 3;  // slot: the item's place in the tail
  const long long piece_rows = (long long)(slot * ts.splits + c) * kBlockM;
  float* po = a.part_o + piece_rows * D;
  float* pl = a.part_lse + piece_rows;
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    *reinterpret_cast<float2*>(po + (lrow0 + g) * D + 8 * j + 2 * t) = make_float2(o[j][0] * inv[0], o[j][1] * inv[0]);
    *reinterpret_cast<float2*>(po + (lrow0 + g + 8) * D + 8 * j + 2 * t) = make_float2(o[j][2] * inv[1], o[j][3] * inv[1]);
  }
  if (t == 0) {
    pl[lrow0 + g] = lse2[0];
    pl[lrow0 + g + 8] = lse2[1];
  }
  __threadfence();  // the partial is visible before the count that lets another warp read it
  __syncwarp();
  int* count = a.counters + 2 + slot * (kBlockM / 16) + lrow0 / 16;
  int before = 0;
  if (lane == 0) before = atomicAdd(count, 1);
  if (__shfl_sync(0xffffffffu, before, 0) != ts.splits - 1) return;
  __syncwarp();     // every lane after lane 0's count (a shuffle alone orders no memory between lanes)
  __threadfence();  // the other pieces' partials, counted before ours
  switch (ts.splits) {  // the plan's 2 .. kMaxSplits
#define FLASHCORE_TAIL_MERGE(k) \
  case k: tail_merge<D, kBlockM, k, Elem>(a, (long long)slot * k * kBlockM, b, h, m0, lrow0, lane); break;
    FLASHCORE_TAIL_MERGE(2) FLASHCORE_TAIL_MERGE(3) FLASHCORE_TAIL_MERGE(4) FLASHCORE_TAIL_MERGE(5)
    FLASHCORE_TAIL_MERGE(6) FLASHCORE_TAIL_MERGE(7) FLASHCORE_TAIL_MERGE(8)
#undef FLASHCORE_TAIL_MERGE
    default: break;
  }
  static_assert(kMaxSplits == 8, "a merge instance for each piece count 2 .. kMaxSplits");
  if (lane == 0) *count = 0;  // for the next launch
}

}  // namespace flashcore::cuda::detail
#endif
