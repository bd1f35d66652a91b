// Element types of the kernels (fp16, bf16): packing two fp32 values into one 32-bit operand
// register, and the mma.sync m16n8k16 tensor-core instruction (fp32 accumulate) of each type.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace flashcore::cuda::detail {

// Element type traits: packing two floats into one 32-bit MMA operand register, and the MMA itself.
//
// m16n8k16 fragments (g = lane/4, t = lane%4), each register holds 2 consecutive 16-bit elements:
//   A (16x16, row-major): a0 = A[g][2t..2t+1]   a1 = A[g+8][2t..]   a2 = A[g][2t+8..]   a3 = A[g+8][2t+8..]
//   B (16x8, "col"):      b0 = B[2t..2t+1][g]   b1 = B[2t+8..2t+9][g]
//   C (16x8 fp32):        c0,c1 = C[g][2t..2t+1]   c2,c3 = C[g+8][2t..2t+1]
template <typename Elem>
struct ElemOps;

template <>
struct ElemOps<__half> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

template <>
struct ElemOps<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

// P as an MMA A operand: the fp32 C-fragments of score tiles 2k and 2k+1 (keys 16k .. 16k+15) are
// exactly the A-fragment of k16 step k of O += P·V (a0 = S[2k] row g, a1 = S[2k] row g+8, a2, a3 =
// S[2k+1]), so P never leaves registers. Used by the mma.sync kernels and by wgmma's register A.
template <typename Elem>
__device__ __forceinline__ void pack_p_fragment(uint32_t (&pa)[4], const float (&s0)[4], const float (&s1)[4]) {
  pa[0] = ElemOps<Elem>::pack(s0[0], s0[1]);
  pa[1] = ElemOps<Elem>::pack(s0[2], s0[3]);
  pa[2] = ElemOps<Elem>::pack(s1[0], s1[1]);
  pa[3] = ElemOps<Elem>::pack(s1[2], s1[3]);
}

}  // namespace flashcore::cuda::detail
