// FP8 inputs: the transposed copy Vᵀ the Hopper kernel reads (sm90/fp8.cuh, points 1 and 2), made per call
// before the attention kernel. Included by the FP8 instance only (sm90/instances/fwd_fp8_hdim128.cu).
#pragma once

#include <cstdint>

#include "backends/cuda/sm90/fp8.cuh"

namespace flashcore::cuda::detail {

// Vᵀ of one (batch, KV head) and 64 keys per block: grid (ceil(keys_pad / 64), heads_kv, batch), 256
// threads. V is (batch, seq, heads_kv, head_dim) bytes with element strides (head dim contiguous);
// vt[((b · heads_kv + hk) · head_dim + d) · keys_pad + key] = V[b][key's source row][hk][d], where
// column c of each 32-key group holds key fp8_key_of(c) of that group, and keys >= seqlen_k hold 0.
constexpr int kFp8TransposeKeys = 64, kFp8TransposeThreads = 256;
__global__ void __launch_bounds__(kFp8TransposeThreads)
fp8_transpose_v_kernel(const uint8_t* __restrict__ v, long long batch_stride, long long seq_stride, long long head_stride,
                       int seqlen_k, int head_dim, int heads_kv, int keys_pad, uint8_t* __restrict__ vt) {
  __shared__ uint8_t tile[kFp8TransposeKeys][128 + 16];  // [key - key0][d]; the pad staggers rows over banks
  const int key0 = blockIdx.x * kFp8TransposeKeys, hk = blockIdx.y, b = blockIdx.z, tid = threadIdx.x;
  const uint8_t* src = v + b * batch_stride + hk * head_stride;
  // Rows key0 .. key0 + 63 (zeros past seqlen_k), 16 bytes at a time where the rows allow it.
  const bool vec = head_dim % 16 == 0 && seq_stride % 16 == 0 && (reinterpret_cast<uintptr_t>(src) % 16) == 0;
  if (vec) {
    const int chunks = head_dim / 16;
    for (int i = tid; i < kFp8TransposeKeys * chunks; i += kFp8TransposeThreads) {
      const int r = i / chunks, c = i % chunks, key = key0 + r;
      uint4 x = make_uint4(0, 0, 0, 0);
      if (key < seqlen_k) x = *reinterpret_cast<const uint4*>(src + key * seq_stride + 16 * c);
      *reinterpret_cast<uint4*>(&tile[r][16 * c]) = x;
    }
  } else {
    for (int i = tid; i < kFp8TransposeKeys * head_dim; i += kFp8TransposeThreads) {
      const int r = i / head_dim, d = i % head_dim, key = key0 + r;
      tile[r][d] = key < seqlen_k ? src[key * seq_stride + d] : uint8_t(0);
    }
  }
  __syncthreads();
  // Row d of Vᵀ, columns key0 + 16c .. + 15 (c = 0..3): one 16-byte store each.
  uint8_t* dst = vt + ((long long)(b * heads_kv + hk) * head_dim) * keys_pad;
  for (int i = tid; i < head_dim * (kFp8TransposeKeys / 16); i += kFp8TransposeThreads) {
    const int d = i % head_dim, c = i / head_dim, col0 = key0 + 16 * c;
    if (col0 >= keys_pad) continue;  // keys_pad is a multiple of 32: a chunk is all in or all out
    uint32_t w[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint32_t x = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int col = 16 * c + 4 * q + j;  // column within the block's 64
        const int src_key = (col & ~31) + fp8_key_of(col & 31);
        x |= uint32_t(tile[src_key][d]) << (8 * j);
      }
      w[q] = x;
    }
    *reinterpret_cast<uint4*>(dst + (long long)d * keys_pad + col0) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

}  // namespace flashcore::cuda::detail
