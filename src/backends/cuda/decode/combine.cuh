// The decode kernel's split merge as a kernel of its own (FlashFwdPlan::split_combine, KernelArgs::split_combine):
//   - plans with more pieces than one block merges quickly: one or two (b, kv head) pairs with long caches, whose
//     key tiles are cut into up to kMaxDecodeCombineSplits pieces so that every SM streams K/V. With the in-kernel
//     merge those rows stopped at 64 pieces and the last block merged all of them alone: on an H200,
//     (1,8,1,1,65536,128) spent 8.7 of its 24 us in that block (perf/results/2026-11-29_decode-paged-staging.md);
//   - a captured call of a split of up to 16 packed rows, on the fixed grid or the balanced schedule
//     (FlashFwdPlan::combine_when_captured, flash_fwd_run): the last block's merge needs tickets zeroed by a memset
//     node of the call's own, 1.6-1.9 us a replay on an H200, a second kernel 0.3-0.5 us (perf/dev/graph_nodes_dev.cu,
//     perf/dev/NOTES.md, forty-third session). The balanced schedule's pieces are where the block scans put them:
//     each item's first block writes that block and the piece count to KernelArgs::part_map, which this kernel
//     reads (after the decode kernel has completed: dependent_launch_wait).
//
//   block (packed row r, KV head hk, sequence b), kCombineThreads threads:
//     n = the row block's piece count (decode_keys, as the decode kernel cut it); n == 1: the decode kernel
//         wrote the row, nothing to do
//     n <= kMaxDecodeSplits: the last block's merge of this row, operation for operation (decode/merge.cuh:
//         merge_row_weights by warp 0, merge_add4 in split order by a thread a column quad): the same bits as
//         an eager call
//     more: weights w_s = 2^(lse_s - m) / (sum_s 2^(lse_s - m) + sink), m the max (block reductions in a fixed
//         order), the row's LSE; O = sum_s w_s O_s: thread = (column quad, group of pieces g, g + groups, ...),
//         the groups' sums added in group order: the same bits on every run
//
// Partials (decode/flash_decode.cuh): O normalised by the piece's own l (fp32, D columns a row), log2-domain
// LSE, at workspace row ws_row0 + split · split_rows + row (decode/schedule.cuh, decode_workspace).
#pragma once

#include <cstdint>

#include "backends/cuda/common/dependent_launch.cuh"
#include "backends/cuda/common/elem_ops.cuh"
#include "backends/cuda/common/kernel_args.h"
#include "backends/cuda/common/online_softmax.cuh"
#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/decode/config.cuh"
#include "backends/cuda/decode/merge.cuh"
#include "backends/cuda/decode/schedule.cuh"

namespace flashcore::cuda::detail {

constexpr int kCombineThreads = 256;

// Max (is_max) or sum of v over the block, the same order on every call; every thread gets the result.
template <bool is_max>
__device__ __forceinline__ float combine_block_reduce(float v, float* s_red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float t = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, t) : v + t;
  }
  if (lane == 0) s_red[warp] = v;
  __syncthreads();
  float r = s_red[0];
#pragma unroll
  for (int k = 1; k < kCombineThreads / 32; ++k) r = is_max ? fmaxf(r, s_red[k]) : r + s_red[k];
  __syncthreads();  // s_red is free for the next call
  return r;
}

// (At least one block an SM: without the second bound ptxas 13.0 gave the sm_80 build 32 registers and a 12-byte
// spill once the balanced schedule's map read was added; with it 64 on sm_80/86/89/90, no spill. 64 registers is
// kDecodeCombineBlocksPerSm = 4 blocks an SM, which the plan's bound on a captured balanced call assumes; the bound
// (kCombineThreads, 4) would enforce it, but gives other SASS than the build tested on a GPU (run 53f): not yet.)
template <int D, typename Elem>
__global__ void __launch_bounds__(kCombineThreads, 1) decode_combine_kernel(const __grid_constant__ KernelArgs a) {
  constexpr int kQuads = D / 4;                       // float4 columns of a partial row
  constexpr int kGroups = kCombineThreads / kQuads;   // piece groups
  static_assert(kCombineThreads % kQuads == 0, "whole column quads per group");
  __shared__ float s_w[kMaxDecodeCombineSplits];
  __shared__ float s_red[kCombineThreads / 32];
  __shared__ float4 s_acc[kCombineThreads];
  dependent_launch_wait();  // the decode kernel's partials are complete (common/dependent_launch.cuh)
  dependent_launch_allow();  // at once: the work is short, and the kernel after it is an ordinary launch
  const FlashFwdParams& p = a.p;
  const numeric::Sequences seq = sequences_of(p);
  const int row = blockIdx.x, hk = blockIdx.y, b = blockIdx.z, tid = threadIdx.x;
  const int G = a.q_heads_per_kv;
  const int Lq = seq.len_q(b), Lk = seq.len_k(b);
  const int rows = G * Lq;
  if (row >= rows) return;
  const int rb = row / a.block_m, r0 = rb * a.block_m, r_end = min(rows, r0 + a.block_m);
  DecodeWork w;
  w.b = b, w.hk = hk, w.rb = rb, w.split = 0, w.splits = a.max_splits, w.first = -1;  // the fixed grid
  if (a.work_slots > 0) {  // the balanced schedule: the item's first block and piece count, as its first block wrote them
    const int2 m = __ldcg(reinterpret_cast<const int2*>(a.part_map) + decode_item_index(a, b, hk, rb));
    w.first = m.x, w.splits = m.y;
  }
  const int n = decode_keys(p, G, Lq, Lk, r0, r_end, w.splits).n_splits;
  if (n <= 1) return;  // one piece: the decode kernel wrote O and the LSE
  long long ws_row0, split_rows;
  decode_workspace(a, w, &ws_row0, &split_rows);
  const int h = hk * G + row % G, i = row / G;
  const float sink = sink_log2_of(p, h);
  Elem* dst = static_cast<Elem*>(p.o) + seq.q_row(o_strides(p), b, i) + (long long)h * p.o_head_stride;
  const float4* po = reinterpret_cast<const float4*>(a.part_o + (ws_row0 + row) * D);
  const long long stride4 = split_rows * (D / 4);
  const int dim4 = p.head_dim / 4;

  if (n <= kMaxDecodeSplits) {
    // As many pieces as the last block merges (a captured call's split, flash_fwd_run): its merge,
    // operation for operation (decode/merge.cuh: merge_row_weights, merge_add4 in split order), so that a
    // captured call gives the eager call's bits. Weights by warp 0's first gw lanes, then a thread a column quad.
    if (tid < 32) {
      const int gw = merge_row_lanes(n), gl = tid & (gw - 1);
      const bool has0 = tid < gw && gl < n, has1 = tid < gw && gl + gw < n;
      const float v0 = has0 ? __ldcg(a.part_lse + ws_row0 + gl * split_rows + row) : -INFINITY;
      const float v1 = has1 ? __ldcg(a.part_lse + ws_row0 + (gl + gw) * split_rows + row) : -INFINITY;
      const MergeRowWeights rw = merge_row_weights(gw, tid < gw ? sink : -INFINITY, v0, v1, has0, has1);
      if (has0) s_w[gl] = rw.w0;
      if (has1) s_w[gl + gw] = rw.w1;
      if (tid == 0 && p.lse != nullptr) p.lse[seq.lse_index(b, h, i, p.heads_q)] = merged_lse(rw.mx, rw.sum);
    }
    __syncthreads();
    if (tid < dim4) {
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 8
      for (int s = 0; s < n; ++s) merge_add4(acc, s_w[s], __ldcg(po + tid + s * stride4));
      uint2 out;
      out.x = ElemOps<Elem>::pack(acc[0], acc[1]);
      out.y = ElemOps<Elem>::pack(acc[2], acc[3]);
      *reinterpret_cast<uint2*>(dst + tid * 4) = out;
    }
    return;
  }

  // More pieces: weights (and the LSE) from the pieces' LSEs, their max with the sink, the sum.
  float mx = sink;
  for (int s = tid; s < n; s += kCombineThreads) {
    const float v = __ldcg(a.part_lse + ws_row0 + s * split_rows + row);
    s_w[s] = v;
    mx = fmaxf(mx, v);
  }
  mx = combine_block_reduce<true>(mx, s_red);
  float sum = 0.f;
  for (int s = tid; s < n; s += kCombineThreads) {
    const float e = mx == -INFINITY ? 0.f : fast_exp2(s_w[s] - mx);
    s_w[s] = e;
    sum += e;
  }
  sum = combine_block_reduce<false>(sum, s_red);  // its barriers also publish s_w
  if (sink != -INFINITY) sum += fast_exp2(sink - mx);
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
  if (tid == 0 && p.lse != nullptr)
    p.lse[seq.lse_index(b, h, i, p.heads_q)] = merged_lse(mx, sum);

  // O = sum_s w_s O_s: group g of column quad c4 takes pieces g, g + kGroups, ...
  const int c4 = tid % kQuads, g = tid / kQuads;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  if (c4 < dim4) {
#pragma unroll 8
    for (int s = g; s < n; s += kGroups) {
      const float ws = s_w[s] * inv;
      const float4 v = __ldcg(po + c4 + s * stride4);
      acc.x = fmaf(ws, v.x, acc.x);
      acc.y = fmaf(ws, v.y, acc.y);
      acc.z = fmaf(ws, v.z, acc.z);
      acc.w = fmaf(ws, v.w, acc.w);
    }
  }
  s_acc[tid] = acc;
  __syncthreads();
  if (g == 0 && c4 < dim4) {
    for (int k = 1; k < kGroups; ++k) {
      const float4 v = s_acc[k * kQuads + c4];
      acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
    }
    uint2 out;
    out.x = ElemOps<Elem>::pack(acc.x, acc.y);
    out.y = ElemOps<Elem>::pack(acc.z, acc.w);
    *reinterpret_cast<uint2*>(dst + c4 * 4) = out;
  }
}

}  // namespace flashcore::cuda::detail
