// The atomic path's last kernel: dQ = scale · dq_accum (the fp32 sums the dK/dV kernel added with
// red.global.add, bwd_dkdv.cuh) in the problem's dtype and dQ strides. One block per (64 query rows,
// query head, batch); each thread converts 8-element chunks: four 8-byte loads, one 16-byte store.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/backward/bwd_config.cuh"
#include "backends/cuda/backward/bwd_tile_ops.cuh"  // dq_frag_index
#include "backends/cuda/common/elem_ops.cuh"

namespace flashcore::cuda::detail {

// The accumulator of a 64-query tile is in fragment order (bwd_tile_ops.cuh, dq_frag_index): the 8 columns
// 8ch.. of row r are 4 float pairs, one per lane 4(r%8) + t of warp r/16's column tile ch. D is the
// accumulator's width (a.acc_dim); the first head_dim columns are dQ (fewer when a head dim 96 ran on the
// D = 128 Hopper kernel).
// kSeq false: the fixed-length layout only (bwd_sequences.cuh).
template <int D, typename Elem, bool kSeq>
__global__ void __launch_bounds__(kBwdConvertThreads) flash_bwd_convert_dq_kernel(const __grid_constant__ BwdArgs a) {
  const FlashFwdParams& p = a.p.fwd;
  const FlashBwdParams& g = a.p;
  const int h = blockIdx.y, b = blockIdx.z, q0 = blockIdx.x * kBwdBlockM;
  const BwdSequenceRows<Elem, kSeq> rows(a, b);
  const int len_q = rows.seqs().len_q(b);
  if (kSeq && q0 >= len_q) return;  // past sequence b's queries
  const int chunks = p.head_dim / 8;  // of dQ's row; the accumulator's rows are D wide
  const float* acc = a.dq_accum + bwd_ws_row<kSeq>(a, b, h, q0) * D;
  Elem* dq = rows.dq(h);
  for (int c = threadIdx.x; c < kBwdBlockM * chunks; c += kBwdConvertThreads) {
    const int r = c / chunks, ch = c % chunks;
    if (q0 + r >= len_q) break;  // rows are in order: the rest are padding too
    uint32_t out[4];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const float2 v = *reinterpret_cast<const float2*>(acc + dq_frag_index<D>(r, 8 * ch + 2 * t));
      out[t] = ElemOps<Elem>::pack(v.x * p.scale, v.y * p.scale);
    }
    *reinterpret_cast<uint4*>(dq + (long long)(q0 + r) * g.dq_seq_stride + 8 * ch) = make_uint4(out[0], out[1], out[2], out[3]);
  }
}

}  // namespace flashcore::cuda::detail
