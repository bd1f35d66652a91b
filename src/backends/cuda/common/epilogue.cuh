// The epilogue every kernel shares: O / l staged through shared memory and stored with 16-byte
// writes, the LSE, and split-KV (a query block's key range cut across blocks): each piece writes an
// fp32 partial, the last block to finish (an atomic ticket) merges all pieces in fixed split order,
// so the result does not depend on which block finishes last (bitwise deterministic).
//
// A warp holds rows row0 and row0 + 8 (row0 = first row of a 16-row tile + lane/4) of an accumulator
// tile; o(j, e) is register e of n8 column tile j (layout: common/mask.cuh). Query rows count from the
// start of the block's sequence; O and the LSE are addressed through common/sequences.cuh. Split-KV
// partials keep the fixed [batch][heads_q][seqlen_q] rows (seqlen_q bounds every sequence).
#pragma once

#include <cstdint>

#include "backends/cuda/common/elem_ops.cuh"
#include "backends/cuda/common/kernel_args.h"
#include "backends/cuda/common/online_softmax.cuh"
#include "backends/cuda/common/ptx.cuh"
#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/common/swizzle.cuh"

namespace flashcore::cuda::detail {

// O·inv of the two rows (o(j, e) = C-fragment register e of n8 column tile j) -> rows lr0, lr0 + 8 of
// a swizzled [rows x D] smem tile.
template <int D, typename Elem, typename GetO>
__device__ __forceinline__ void stage_o_rows(Elem* sO, int lr0, int lane, const float (&inv)[2], GetO o) {
  const int t = lane & 3;
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    *reinterpret_cast<uint32_t*>(sO + swz<D>(lr0, j) + 2 * t) = ElemOps<Elem>::pack(o(j, 0) * inv[0], o(j, 1) * inv[0]);
    *reinterpret_cast<uint32_t*>(sO + swz<D>(lr0 + 8, j) + 2 * t) = ElemOps<Elem>::pack(o(j, 2) * inv[1], o(j, 3) * inv[1]);
  }
}
// LSE (natural log) of query rows row0 and row0 + 8 of (b, h), by the quad leader.
__device__ __forceinline__ void write_lse_rows(const FlashFwdParams& p, int b, int h, int row0, const float (&lse2)[2],
                                               int lane) {
  if (p.lse == nullptr || (lane & 3) != 0) return;
  const numeric::Sequences seq = sequences_of(p);
  const int len_q = seq.len_q(b);
  float* lse = p.lse + seq.lse_index(b, h, 0, p.heads_q);  // the rows of (b, h) are contiguous in both layouts
  if (row0 < len_q) lse[row0] = lse2[0] * kLn2;
  if (row0 + 8 < len_q) lse[row0 + 8] = lse2[1] * kLn2;
}
// A warp's `rows` staged rows (smem rows lrow0..) -> global query rows row0.. of (b, h) (those of its
// sequence: common/sequences.cuh), 16-byte stores of the head_dim columns (a kernel compiled for D >= head_dim stages D; the zero padding stays).
template <int D, typename Elem>
__device__ __forceinline__ void store_o_rows(const FlashFwdParams& p, int b, int h, const Elem* sO, int lrow0, int row0,
                                             int rows, int lane) {
  constexpr int kChunks = D / 8;
  const int dim_chunks = p.head_dim / 8;
  const numeric::Sequences seq = sequences_of(p);
  const int len_q = seq.len_q(b);
  Elem* gO = static_cast<Elem*>(p.o) + seq.q_row(o_strides(p), b, 0) + (long long)h * p.o_head_stride;
#pragma unroll
  for (int c = lane; c < rows * kChunks; c += 32) {
    const int r = c / kChunks, ch = c % kChunks;
    const int row = row0 + r;
    if (row < len_q && ch < dim_chunks)
      *reinterpret_cast<uint4*>(gO + row * p.o_seq_stride + ch * 8) = *reinterpret_cast<const uint4*>(sO + swz<D>(lrow0 + r, ch));
  }
}


// Split-KV, one piece: this block's fp32 partial of rows row0, row0 + 8 (O normalised by the piece's
// own l, and its log2-domain LSE), for merge_splits. Partial rows are D floats (the kernel's head dim).
template <int D, int N>
__device__ __forceinline__ void write_split_partial(const KernelArgs& a, int b, int h, int split, int row0,
                                                    const float (&o)[N][4], const float (&inv)[2],
                                                    const float (&lse2)[2], int lane) {
  const FlashFwdParams& p = a.p;
  const int t = lane & 3, row1 = row0 + 8;
  const long long split_rows = (long long)p.batch * p.heads_q * p.seqlen_q;  // rows per split
  const long long bh_row = ((long long)b * p.heads_q + h) * p.seqlen_q;
  float* po = a.part_o + (split * split_rows + bh_row) * D;
  float* pl = a.part_lse + split * split_rows + bh_row;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if (row0 < p.seqlen_q)
      *reinterpret_cast<float2*>(po + (long long)row0 * D + 8 * j + 2 * t) = make_float2(o[j][0] * inv[0], o[j][1] * inv[0]);
    if (row1 < p.seqlen_q)
      *reinterpret_cast<float2*>(po + (long long)row1 * D + 8 * j + 2 * t) = make_float2(o[j][2] * inv[1], o[j][3] * inv[1]);
  }
  if (t == 0) {
    if (row0 < p.seqlen_q) pl[row0] = lse2[0];
    if (row1 < p.seqlen_q) pl[row1] = lse2[1];
  }
}

// The weights of one row's n <= kMaxSplits split partials, in split order, from their log2-domain LSEs
// lse[0], lse[stride], ...: w_s = 2^(lse_s - max) / Σ (0 past n); returns the merged log2-domain LSE
// (-inf, with weights 0, where no partial saw a key). merge_splits and the Hopper tail split
// (common/tail_split.cuh) both merge with it.
__device__ __forceinline__ float split_merge_weights(const float* lse, long long stride, int n, float (&w)[kMaxSplits]) {
  float mx = -INFINITY;
#pragma unroll
  for (int sp = 0; sp < kMaxSplits; ++sp) {
    w[sp] = sp < n ? __ldcg(lse + sp * stride) : -INFINITY;
    mx = fmaxf(mx, w[sp]);
  }
  float sum = 0.f;
#pragma unroll
  for (int sp = 0; sp < kMaxSplits; ++sp) {
    w[sp] = mx == -INFINITY ? 0.f : fast_exp2(w[sp] - mx);
    sum += w[sp];
  }
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
#pragma unroll
  for (int sp = 0; sp < kMaxSplits; ++sp) w[sp] *= inv;
  return mx == -INFINITY ? -INFINITY : mx + __log2f(sum);
}

// Split-KV merge, run by the last block of a query block: O = Σ w_s O_s with w_s = 2^(lse_s - max)/Σ,
// in fixed split order (deterministic). Two phases, each with all its loads in flight at once; the
// `n_consumers` threads meet at named barrier `bar` between them.
template <int D, typename Elem>
__device__ __forceinline__ void merge_splits(const KernelArgs& a, float* s_w, int b, int h, int m0, int n_splits,
                                             int tid, int n_consumers, int bar) {
  const FlashFwdParams& p = a.p;
  const long long split_rows = (long long)p.batch * p.heads_q * p.seqlen_q;
  const long long bh_row = ((long long)b * p.heads_q + h) * p.seqlen_q;  // partials: seqlen_q rows per (b, h)
  const numeric::Sequences seq = sequences_of(p);
  const int rows_here = min(a.block_m, seq.len_q(b) - m0);
  // Phase 1: per-row weights -> smem, final LSE.
  for (int r = tid; r < rows_here; r += n_consumers) {
    float w[kMaxSplits];
    const float lse2 = split_merge_weights(a.part_lse + bh_row + m0 + r, split_rows, n_splits, w);
#pragma unroll
    for (int sp = 0; sp < kMaxSplits; ++sp) s_w[r * kMaxSplits + sp] = w[sp];
    if (p.lse != nullptr) p.lse[seq.lse_index(b, h, m0 + r, p.heads_q)] = lse2 * kLn2;
  }
  named_bar_sync(bar, n_consumers);
  // Phase 2: O, 4 columns per item, the head_dim columns of the D-float partial rows.
  Elem* gO = static_cast<Elem*>(p.o) + seq.q_row(o_strides(p), b, 0) + (long long)h * p.o_head_stride;
  const int dim4 = p.head_dim / 4;
  for (int it = tid; it < rows_here * dim4; it += n_consumers) {
    const int r = it / dim4, c4 = it % dim4;
    float4 v[kMaxSplits];
#pragma unroll
    for (int sp = 0; sp < kMaxSplits; ++sp)
      if (sp < n_splits)
        v[sp] = __ldcg(reinterpret_cast<const float4*>(a.part_o + (sp * split_rows + bh_row + m0 + r) * D) + c4);
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int sp = 0; sp < kMaxSplits; ++sp)
      if (sp < n_splits) {
        const float w = s_w[r * kMaxSplits + sp];
        acc[0] = fmaf(w, v[sp].x, acc[0]); acc[1] = fmaf(w, v[sp].y, acc[1]);
        acc[2] = fmaf(w, v[sp].z, acc[2]); acc[3] = fmaf(w, v[sp].w, acc[3]);
      }
    uint2 out;
    out.x = ElemOps<Elem>::pack(acc[0], acc[1]);
    out.y = ElemOps<Elem>::pack(acc[2], acc[3]);
    *reinterpret_cast<uint2*>(gO + (m0 + r) * p.o_seq_stride + c4 * 4) = out;
  }
}

}  // namespace flashcore::cuda::detail
