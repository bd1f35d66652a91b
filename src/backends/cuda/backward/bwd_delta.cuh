// The backward's first kernel: per query row i of (sequence, query head), delta_i = dO_i·O_i (fp32) and
// lse2_i = LSE_i·log2(e) (the main kernels use exp2), into the workspace (BwdArgs, bwd_ws_row).
// Rows that see no key (LSE = -inf) and the padding rows past a sequence's queries (up to a multiple
// of 64) get lse2 = +inf and delta = 0, so
// that every P of theirs is exp2(S·c − inf) = 0: they add nothing to dK, dV and their dQ is 0; the
// padding rows need no mask in the main kernels (with sinks a row that sees no key has the sink's finite
// LSE and is masked like the others). On the atomic path (a.dq_accum set) the same threads zero the
// rows' fp32 dQ accumulator, padding rows included, before the dK/dV kernel adds to it.
// With sinks and dsinks asked for, a second kernel then sums the sinks' gradient from the same rows
// (flash_bwd_dsinks_kernel).
#pragma once

#include <cmath>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/backward/bwd_sequences.cuh"

namespace flashcore::cuda::detail {

__device__ __forceinline__ float2 unpack2(uint32_t x, __half) {
  return __half22float2(*reinterpret_cast<const __half2*>(&x));
}
__device__ __forceinline__ float2 unpack2(uint32_t x, __nv_bfloat16) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&x));
}

// Grid (seqlen_q rounded up to 64 / rows per block, heads_q, batch); kBwdDeltaThreadsPerRow lanes per
// row, each on every 8th 16-byte chunk of the row, then a shuffle sum (fixed order: deterministic). A
// sequence's rows past its queries, up to the next multiple of 64, are its padding rows; the rows past
// that are not its own (packed Q: the next sequence's) and are left alone. kSeq false: the fixed-length
// layout only (bwd_sequences.cuh).
template <typename Elem, bool kSeq>
__global__ void __launch_bounds__(kBwdDeltaThreads) flash_bwd_delta_kernel(const __grid_constant__ BwdArgs a) {
  constexpr int kRowsPerBlock = kBwdDeltaThreads / kBwdDeltaThreadsPerRow;
  const FlashFwdParams& p = a.p.fwd;  // the forward call
  const FlashBwdParams& g = a.p;      // dO and the gradients
  const numeric::Sequences seq = bwd_seqs<kSeq>(p);
  const int h = blockIdx.y, b = blockIdx.z;
  const int row = blockIdx.x * kRowsPerBlock + threadIdx.x / kBwdDeltaThreadsPerRow;
  const int sub = threadIdx.x % kBwdDeltaThreadsPerRow;
  const int len_q = seq.len_q(b);
  const int rows = (len_q + kBwdBlockM - 1) / kBwdBlockM * kBwdBlockM;  // with the padding rows
  if (blockIdx.x * kRowsPerBlock >= rows) return;  // block-uniform: before the shuffles
  const bool in = row < len_q;
  float acc = 0.f;
  if (in) {
    const Elem* o = static_cast<const Elem*>(p.o) + seq.q_row(o_strides(p), b, row) + h * p.o_head_stride;
    const Elem* d = BwdSequenceRows<Elem, kSeq>(a, b).d_o(h) + (long long)row * g.do_seq_stride;
    for (int c = sub; c < p.head_dim / 8; c += kBwdDeltaThreadsPerRow) {
      const uint4 ov = *reinterpret_cast<const uint4*>(o + c * 8);
      const uint4 dv = *reinterpret_cast<const uint4*>(d + c * 8);
      const uint32_t ow[4] = {ov.x, ov.y, ov.z, ov.w}, dw[4] = {dv.x, dv.y, dv.z, dv.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 of = unpack2(ow[j], Elem{}), df = unpack2(dw[j], Elem{});
        acc = fmaf(of.x, df.x, acc);
        acc = fmaf(of.y, df.y, acc);
      }
    }
  }
  const long long w = bwd_ws_row<kSeq>(a, b, h, row);
  if (a.dq_accum != nullptr && row < rows) {
    float4* z = reinterpret_cast<float4*>(a.dq_accum + w * a.acc_dim);
    for (int c = sub; c < a.acc_dim / 4; c += kBwdDeltaThreadsPerRow) z[c] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
#pragma unroll
  for (int off = kBwdDeltaThreadsPerRow / 2; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (sub == 0 && row < rows) {
    float lse2 = INFINITY;
    if (in) {
      const float l = p.lse[seq.lse_index(b, h, row, p.heads_q)];
      if (l != -INFINITY) lse2 = l * 1.4426950408889634f;
    }
    a.delta[w] = in ? acc : 0.f;
    a.lse2[w] = lse2;
  }
}

// dsinks_h = −Σ_{b,i} exp(sink_h − LSE_bi)·delta_bi: the sink's share of row i's softmax denominator
// (P_sink,i, the LSE includes the sink) times the row's delta, d(loss)/d(sink) since the sink has no
// value (src/backends/reference/backward.hpp, the same sum). One block per query head, over the delta
// kernel's rows (padding rows: lse2 = +inf, delta = 0, add 0), each thread a fixed stride, then a tree
// in a fixed order: the same bits every run.
// (A template, so that only instances/bwd_delta.cu, which launches it, compiles it.)
constexpr int kBwdDsinksThreads = 256;
template <int kThreads = kBwdDsinksThreads>
__global__ void __launch_bounds__(kThreads) flash_bwd_dsinks_kernel(const __grid_constant__ BwdArgs a) {
  const FlashFwdParams& p = a.p.fwd;
  const int h = blockIdx.x;
  const float sink2 = p.sinks[h] * 1.4426950408889634f;
  const numeric::Sequences seq = sequences_of(p);
  float acc = 0.f;
  for (int b = 0; b < p.batch; ++b) {
    const long long w0 = bwd_ws_row(a, b, h, 0);
    const int rows = seq.len_q(b);
    for (int i = threadIdx.x; i < rows; i += kThreads)
      acc = fmaf(exp2f(sink2 - a.lse2[w0 + i]), a.delta[w0 + i], acc);
  }
  __shared__ float warp_sums[kThreads / 32];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
    a.p.dsinks[h] = -total;
  }
}

}  // namespace flashcore::cuda::detail
