// The decode kernel's two merges (decode/flash_decode.cuh):
//   merge_key_groups: inside a block, the KG key groups' online-softmax states of each row tile, in group
//     order, into key group 0's warps;
//   the split merge (merge_loads_ahead, merge_weights, merge_sums): the last of the n_splits blocks of a
//     (b, hk, row block) to finish (the kernel's atomic ticket) combines the pieces' fp32 partials (O
//     normalised by the piece's own l, log2-domain LSE) in split order: the same bits whichever block
//     came last;
//   merge_cluster_pieces: the same merge where the pieces are one thread block cluster (compute capability 9.0),
//     by piece 0 from its peers' shared memory: no fence, ticket or workspace; the same bits.
// Online softmax state: common/online_softmax.cuh; accumulator fragment layout (o[j][e], rows lane/4 and
// lane/4 + 8): sm80/tile_ops.cuh.
#pragma once

#include <cstdint>

#include "backends/cuda/common/cluster.cuh"
#include "backends/cuda/common/elem_ops.cuh"
#include "backends/cuda/common/kernel_args.h"
#include "backends/cuda/common/online_softmax.cuh"
#include "backends/cuda/common/ptx.cuh"
#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/common/variant_mask.cuh"
#include "backends/cuda/decode/config.cuh"

namespace flashcore::cuda::detail {

// Warp (row tile mt, key group kg) holds its rows' state over its keys: O fragments, row max and sum.
// Groups > 0 park theirs in xbuf (shared memory, lane-major), one barrier; key group 0's warps then
// rescale and add them in group order and hold the block's state. Every thread of the block calls it.
template <int D, int MT, int KG>
__device__ __forceinline__ void merge_key_groups(float* xbuf, int mt, int kg, int lane, float scale_log2,
                                                 float (&o)[D / 8][4], float (&row_max)[2], float (&row_sum)[2]) {
  if constexpr (KG > 1) {
    constexpr int kVals = DecodeConfig<D>::kMergeVals;
    if (kg > 0) {
      float* dst = xbuf + ((kg - 1) * MT + mt) * kVals * 32 + lane;
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) dst[(j * 4 + e) * 32] = o[j][e];
      dst[(kVals - 4) * 32] = row_max[0];
      dst[(kVals - 3) * 32] = row_max[1];
      dst[(kVals - 2) * 32] = row_sum[0];
      dst[(kVals - 1) * 32] = row_sum[1];
    }
    __syncthreads();
    if (kg == 0) {
      const float sl2 = scale_log2;
      float mx[2] = {row_max[0], row_max[1]};
      for (int k = 1; k < KG; ++k) {
        const float* src = xbuf + ((k - 1) * MT + mt) * kVals * 32 + lane;
        mx[0] = fmaxf(mx[0], src[(kVals - 4) * 32]);
        mx[1] = fmaxf(mx[1], src[(kVals - 3) * 32]);
      }
      // factor of a state with max m: 2^((m - mx)·scale·log2e); 0 for a state that saw no key
      auto factor = [&](float m, int r) { return m == -INFINITY ? 0.f : fast_exp2((m - mx[r]) * sl2); };
      float f[2] = {factor(row_max[0], 0), factor(row_max[1], 1)};
      row_sum[0] *= f[0];
      row_sum[1] *= f[1];
      scale_rows(o, f);
      for (int k = 1; k < KG; ++k) {
        const float* src = xbuf + ((k - 1) * MT + mt) * kVals * 32 + lane;
        f[0] = factor(src[(kVals - 4) * 32], 0);
        f[1] = factor(src[(kVals - 3) * 32], 1);
        row_sum[0] = fmaf(f[0], src[(kVals - 2) * 32], row_sum[0]);
        row_sum[1] = fmaf(f[1], src[(kVals - 1) * 32], row_sum[1]);
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
          o[j][0] = fmaf(f[0], src[(j * 4 + 0) * 32], o[j][0]);
          o[j][1] = fmaf(f[0], src[(j * 4 + 1) * 32], o[j][1]);
          o[j][2] = fmaf(f[1], src[(j * 4 + 2) * 32], o[j][2]);
          o[j][3] = fmaf(f[1], src[(j * 4 + 3) * 32], o[j][3]);
        }
      }
      row_max[0] = mx[0];
      row_max[1] = mx[1];
    }
  }
}

// ---- the split merge, run by the block that took the last ticket (its threads tid = 0 .. kDecodeThreads-1)

// The rows it merges: packed rows r0 .. r0 + rows - 1 of (b, hk); piece s's partial of packed row r at
// workspace row ws_row0 + s·split_rows + r (decode/schedule.cuh, decode_workspace). Phase-2 item `it` is
// row r0 + it / dim4, columns 4·(it % dim4) .. + 3.
struct DecodeSplitMerge {
  int b, hk, G;
  int r0, rows;  // rows: r_end - r0
  int n_splits;
  int dim4;      // head_dim / 4
  long long ws_row0, split_rows;
};

// The partials of a thread's first phase-2 item, up to decode_merge_ahead<D> pieces, are loaded before
// phase 1: they do not depend on the weights, so they are in flight with phase 1's LSE loads and while
// phase 1 computes. Without, phase 2 began with an L2 round trip after phase 1's two barriers. On an H200
// (perf/dev/NOTES.md, fortieth session) the sums went from 1.06 to 0.42 us on (8,32,8,1,8192,128), the
// weights from 1.5 to 2.0 (their LSE loads queue behind these): the call 71.1 -> 70.6 us, the 32k row
// 42.4 -> 42.0. Issued after the LSE loads instead, the calls were 0.4-0.6 us slower than this.
// Registers are free there: the block's O fragments are stored. D = 256 keeps the plain loop: any pieces
// ahead (4 to 16) moved its instances from 255 registers into 4-28 bytes of spills.
template <int D>
constexpr int decode_merge_ahead = D <= 128 ? 16 : 0;

// Piece 0's partial of phase-2 item it (float4 units; the next piece's is piece_stride4 further).
template <int D>
__device__ __forceinline__ const float4* merge_partial4(const KernelArgs& a, const DecodeSplitMerge& m, int it) {
  return reinterpret_cast<const float4*>(a.part_o + (m.ws_row0 + m.r0 + it / m.dim4) * D) + it % m.dim4;
}

template <int D>
__device__ __forceinline__ void merge_loads_ahead(const KernelArgs& a, const DecodeSplitMerge& m, int tid,
                                                  float4 (&ahead)[decode_merge_ahead<D> > 0 ? decode_merge_ahead<D> : 1]) {
  const long long piece_stride4 = m.split_rows * (D / 4);
  if (tid < m.rows * m.dim4) {
    const float4* po = merge_partial4<D>(a, m, tid);
#pragma unroll
    for (int s = 0; s < decode_merge_ahead<D>; ++s)
      if (s < m.n_splits) ahead[s] = __ldcg(po + s * piece_stride4);
  }
}

// A merged row's LSE (natural log) from its log2-domain max and sum of weights; −inf for a row that saw no key.
__device__ __forceinline__ float merged_lse(float mx, float sum) {
  return mx == -INFINITY ? -INFINITY : (mx + __log2f(sum)) * kLn2;
}

// One row's merge, written once for the last block's merge (merge_weights, merge_sums) and the combine kernel's
// (decode/combine.cuh), so that both give the same bits (a captured call merges by the combine kernel, an eager
// one by the last block: flash_fwd_run).
//
// Weights over gw lanes (merge_row_lanes: the fewest, a power of two, with at most two pieces each): lane gl of
// the row's group holds the LSEs of pieces gl and gl + gw (v0, v1; -inf where has0 / has1 is false); max and
// sum by shuffles within the group in a fixed order, then the sink. Every lane of the warp calls it (groups of
// gw lanes side by side). Returns the normalised weights of the lane's two pieces, the max and the sum.
__device__ __forceinline__ int merge_row_lanes(int n_splits) {
  int gw = 1;
  while (2 * gw < n_splits) gw <<= 1;  // <= 32 for n_splits <= 64
  return gw;
}
struct MergeRowWeights {
  float w0, w1;  // pieces gl and gl + gw
  float mx, sum;  // log2 domain, for merged_lse
};
__device__ __forceinline__ MergeRowWeights merge_row_weights(int gw, float sink, float v0, float v1, bool has0, bool has1) {
  float mx = fmaxf(sink, fmaxf(v0, v1));
  for (int o = gw >> 1; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  const float e0 = has0 && mx != -INFINITY ? fast_exp2(v0 - mx) : 0.f;
  const float e1 = has1 && mx != -INFINITY ? fast_exp2(v1 - mx) : 0.f;
  float sum = e0 + e1;
  for (int o = gw >> 1; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (sink != -INFINITY) sum += fast_exp2(sink - mx);
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
  return {e0 * inv, e1 * inv, mx, sum};
}
// acc += w · v, column by column: the sums run over the pieces in split order.
__device__ __forceinline__ void merge_add4(float (&acc)[4], float w, const float4& v) {
  acc[0] = fmaf(w, v.x, acc[0]);
  acc[1] = fmaf(w, v.y, acc[1]);
  acc[2] = fmaf(w, v.z, acc[2]);
  acc[3] = fmaf(w, v.w, acc[3]);
}

// Per row of the merge, a group of gw lanes (merge_row_lanes) turns the pieces' LSEs into weights: lane gl of the
// group takes pieces gl and gl + gw, lse_of(r, s) giving piece s's log2-domain LSE of local row r (0 .. m.rows - 1,
// packed row m.r0 + r; from shared memory or a cluster peer); merge_row_weights, the sink and the row's final LSE
// (stored). The weights go to s_w
// ([block_m][kMaxDecodeSplits] floats). Written once for the ticket merge (merge_weights) and the cluster's
// (merge_cluster_pieces). Every thread of the block calls it, with the same trip count in every lane.
template <class LseOf>
__device__ __forceinline__ void merge_rows_weights(const FlashFwdParams& p, const numeric::Sequences& seq,
                                                   const DecodeSplitMerge& m, float* s_w, int tid, const LseOf& lse_of) {
  const int n_splits = m.n_splits;
  const int gw = merge_row_lanes(n_splits), gl = tid & (gw - 1);
  for (int rg = 0; rg < m.rows; rg += kDecodeThreads / gw) {
    const int r = rg + tid / gw;
    const bool live = r < m.rows;
    const int row = m.r0 + r, h = m.hk * m.G + row % m.G;
    const float sink = live ? sink_log2_of(p, h) : -INFINITY;
    const bool has0 = live && gl < n_splits, has1 = live && gl + gw < n_splits;
    const float v0 = has0 ? lse_of(r, gl) : -INFINITY, v1 = has1 ? lse_of(r, gl + gw) : -INFINITY;
    const MergeRowWeights rw = merge_row_weights(gw, sink, v0, v1, has0, has1);
    if (has0) s_w[r * kMaxDecodeSplits + gl] = rw.w0;
    if (has1) s_w[r * kMaxDecodeSplits + gl + gw] = rw.w1;
    if (live && gl == 0 && p.lse != nullptr)
      p.lse[seq.lse_index(m.b, h, row / m.G, p.heads_q)] = merged_lse(rw.mx, rw.sum);
  }
}

// Column quad c4 of merged row `row` (packed row of (b, hk): query row row / G of head hk·G + row % G) -> O, as Elem.
template <typename Elem>
__device__ __forceinline__ void store_merged4(const FlashFwdParams& p, const numeric::Sequences& seq, const Strides& os,
                                              const DecodeSplitMerge& m, int row, int c4, const float (&acc)[4]) {
  uint2 out;
  out.x = ElemOps<Elem>::pack(acc[0], acc[1]);
  out.y = ElemOps<Elem>::pack(acc[2], acc[3]);
  Elem* dst = static_cast<Elem*>(p.o) + seq.q_row(os, m.b, row / m.G) + (long long)(m.hk * m.G + row % m.G) * p.o_head_stride;
  *reinterpret_cast<uint2*>(dst + c4 * 4) = out;
}

// Phase 1: the pieces' LSEs -> shared memory (a thread's loads in flight together); per row, a group of
// gw lanes computes the weights (lane l of the group takes pieces l and l + gw; max and sum by shuffles
// in a fixed order), the sink and the final LSE (stored). s_w: [block_m][kMaxDecodeSplits] floats, the
// weights on return. gw: the fewest lanes (a power of two) with at most two pieces each, so few pieces
// keep a row to one or two lanes and many rows in one pass. (One thread a row, looping over the pieces,
// left the block's other threads waiting at the barrier: half of the merge at 64 pieces; a warp a row was
// slower at 4 pieces of 16 rows; perf/dev/NOTES.md, thirty-fourth session.)
__device__ __forceinline__ void merge_weights(const KernelArgs& a, const numeric::Sequences& seq,
                                              const DecodeSplitMerge& m, float* s_w, int tid) {
  static_assert(kMaxDecodeSplits <= 64, "two pieces a lane");
  const FlashFwdParams& p = a.p;
  const int n_splits = m.n_splits, rows_here = m.rows, r0 = m.r0;
  const int n_lse = rows_here * n_splits;
  for (int it0 = tid; it0 < n_lse; it0 += 4 * kDecodeThreads) {
    float v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int it = it0 + j * kDecodeThreads;
      if (it < n_lse) v[j] = __ldcg(a.part_lse + m.ws_row0 + (it % n_splits) * m.split_rows + r0 + it / n_splits);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int it = it0 + j * kDecodeThreads;
      if (it < n_lse) s_w[(it / n_splits) * kMaxDecodeSplits + it % n_splits] = v[j];
    }
  }
  __syncthreads();
  merge_rows_weights(p, seq, m, s_w, tid, [&](int r, int s) { return s_w[r * kMaxDecodeSplits + s]; });
  __syncthreads();
}

// Phase 2: O = sum_s w_s O_s, 4 columns per item, in split order (the first item's first pieces from
// `ahead`), stored as Elem.
template <int D, typename Elem>
__device__ __forceinline__ void merge_sums(const KernelArgs& a, const numeric::Sequences& seq, const DecodeSplitMerge& m,
                                           const float* s_w, int tid,
                                           const float4 (&ahead)[decode_merge_ahead<D> > 0 ? decode_merge_ahead<D> : 1]) {
  constexpr int kMergeAhead = decode_merge_ahead<D>;
  const FlashFwdParams& p = a.p;
  const Strides os = o_strides(p);
  const int n_splits = m.n_splits, dim4 = m.dim4;
  const long long piece_stride4 = m.split_rows * (D / 4);
  for (int it = tid; it < m.rows * dim4; it += kDecodeThreads) {
    const int r = it / dim4, c4 = it % dim4;
    const int row = m.r0 + r;
    const float4* po = merge_partial4<D>(a, m, it);
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    const bool first = it == tid;
    if (first) {
#pragma unroll
      for (int s = 0; s < kMergeAhead; ++s)
        if (s < n_splits) merge_add4(acc, s_w[r * kMaxDecodeSplits + s], ahead[s]);
    }
#pragma unroll 8
    for (int s = first ? kMergeAhead : 0; s < n_splits; ++s)
      merge_add4(acc, s_w[r * kMaxDecodeSplits + s], __ldcg(po + s * piece_stride4));
    store_merged4<Elem>(p, seq, os, m, row, c4, acc);
  }
}

// The split merge of a cluster: run by every thread of piece 0's block once every piece of the cluster has left its
// partial in its own shared memory at `parts` (this block's address of the same offset: [block_m][D] floats, then
// block_m log2-domain LSEs) and a cluster barrier has published them. merge_weights' and merge_sums' arithmetic in the
// same order (merge_row_weights, then merge_add4 over the pieces in split order), the LSEs and partials read from the
// peers instead of the workspace: the ticket merge's bits. s_w: [block_m][kMaxDecodeSplits] floats of this block.
template <int D, typename Elem>
__device__ __forceinline__ void merge_cluster_pieces(const KernelArgs& a, const numeric::Sequences& seq,
                                                     const DecodeSplitMerge& m, uint32_t parts, float* s_w, int tid) {
  const FlashFwdParams& p = a.p;
  const uint32_t lses = parts + uint32_t(a.block_m * D * 4);
  const int n_splits = m.n_splits, rows_here = m.rows, r0 = m.r0, dim4 = m.dim4;
  merge_rows_weights(p, seq, m, s_w, tid, [&](int r, int s) { return ld_peer_f32(cluster_peer(lses + 4 * r, s)); });
  __syncthreads();
  const Strides os = o_strides(p);
  for (int it = tid; it < rows_here * dim4; it += kDecodeThreads) {
    const int r = it / dim4, c4 = it % dim4;
    const int row = r0 + r;
    const uint32_t src = parts + uint32_t((r * D + 4 * c4) * 4);
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int s = 0; s < n_splits; ++s) merge_add4(acc, s_w[r * kMaxDecodeSplits + s], ld_peer_v4(cluster_peer(src, s)));
    store_merged4<Elem>(p, seq, os, m, row, c4, acc);
  }
}

}  // namespace flashcore::cuda::detail
