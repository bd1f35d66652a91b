// FP8 (e4m3) inputs on the Hopper forward kernel: what differs from 16-bit inputs, in one place.
//
// 1. wgmma with e4m3 operands reads both of them K-major (it has no transpose bit), so O += P·V needs
//    V with the keys contiguous: a transposed copy Vᵀ [batch][heads_kv][head_dim][keys], made per call
//    by fp8_transpose_v_kernel (sm90/fp8_transpose_v.cuh) into a workspace (sm90/launch_sm90.cu). Its key count is padded to a
//    multiple of 32 with zeros (kFp8KeyPad); TMA zero-fills the rest.
//
// 2. P goes from the S accumulator to P·V's A operand without shuffles. The e4m3 A fragment of a k32
//    step (the mma.sync m16n8k32 layout, g = lane/4, t = lane%4) holds in register r, byte i:
//        r = 0: row g,   column 4t + i        r = 1: row g + 8, column 4t + i
//        r = 2: row g,   column 16 + 4t + i   r = 3: row g + 8, column 16 + 4t + i
//    while the thread's S registers of the same 32 keys are, per n8 tile j = 0..3, keys 8j + 2t and
//    8j + 2t + 1 of rows g and g + 8. Packing tiles (0, 1) into r = 0, 1 and (2, 3) into r = 2, 3 puts the
//    key 16h + 8(i/2) + 2t + (i%2) at column 16h + 4t + i. P·V sums over the keys, so any order works
//    when V's rows follow the same one: Vᵀ stores key fp8_key_of(c) at column c of each 32-key group.
//
// 3. P in [0, 1] comes out of the softmax scaled by 2^kFp8PLog2 = 256 (common/online_softmax.cuh: the
//    exponent's offset, no extra multiply), before rounding to e4m3 (largest finite 448), so that every
//    P >= 2^-14 is a normal number (relative error <= 2^-4). The row sums carry the same factor, so O / l
//    needs no correction; the LSE takes kFp8PLog2 off. The sums stay in fp32, from the unrounded P.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

namespace flashcore::cuda::detail {

constexpr int kFp8PLog2 = 8;

// The key (0..31, within its group of 32) whose value column c of a group in Vᵀ holds (point 2 above).
__host__ __device__ constexpr int fp8_key_of(int c) {
  return (c & 16) + 8 * ((c >> 1) & 1) + 2 * ((c >> 2) & 3) + (c & 1);
}

__device__ __forceinline__ uint32_t pack_e4m3x4(float a, float b, float c, float d) {
  const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
  return lo | (hi << 16);
}

// P of 32 keys (S n8 tiles s0..s3, accumulator layout, already scaled by 2^kFp8PLog2) as the A operand of
// one e4m3 k32 step.
__device__ __forceinline__ void pack_p_fragment_e4m3(uint32_t (&pa)[4], const float (&s0)[4], const float (&s1)[4],
                                                     const float (&s2)[4], const float (&s3)[4]) {
  pa[0] = pack_e4m3x4(s0[0], s0[1], s1[0], s1[1]);
  pa[1] = pack_e4m3x4(s0[2], s0[3], s1[2], s1[3]);
  pa[2] = pack_e4m3x4(s2[0], s2[1], s3[0], s3[1]);
  pa[3] = pack_e4m3x4(s2[2], s2[3], s3[2], s3[3]);
}

}  // namespace flashcore::cuda::detail
