// Hopper-only PTX (sm_90a): wgmma (asynchronous warpgroup MMA) and its shared-memory descriptors,
// TMA bulk tensor copies, mbarrier transaction counts, setmaxnreg. The instructions every kernel
// uses are in common/ptx.cuh.
#pragma once

#include <cuda.h>  // CUtensorMap (type only)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace flashcore::cuda::detail {

#include "backends/cuda/sm90/wgmma_ops.inc"

// wgmma shared-memory descriptor of a tile stored in rows of kRowBytes (128, 64 or 32) in the swizzle of
// that width: bits 0-13 address >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4, 62-63 the swizzle (1: 128-byte,
// 2: 64-byte, 3: 32-byte). K-major operands (Q, K): SBO = 8 rows (1024 B at 128-byte rows) between
// 8-row groups, LBO unused (1). V (MN-major B of P·V): SBO = 8 keys between 8-key groups, LBO = step
// between panels (64 columns; 32 in the 64-byte swizzle).
template <int kRowBytes>
__device__ __forceinline__ uint64_t make_desc_swizzled(uint32_t saddr, uint32_t lbo) {
  static_assert(kRowBytes == 128 || kRowBytes == 64 || kRowBytes == 32, "wgmma swizzles: 128, 64 or 32 bytes");
  constexpr uint64_t kMode = kRowBytes == 128 ? 1 : kRowBytes == 64 ? 2 : 3;
  return uint64_t((saddr & 0x3FFFFu) >> 4) | (uint64_t(lbo >> 4) << 16) | (uint64_t(8 * kRowBytes >> 4) << 32) |
         (kMode << 62);
}
__device__ __forceinline__ uint64_t make_desc_sw128(uint32_t saddr, uint32_t lbo) { return make_desc_swizzled<128>(saddr, lbo); }
// Orders this thread's generic-proxy shared-memory writes before later async-proxy reads (wgmma, TMA).
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// Keeps the compiler from moving register reads/writes across an asynchronous wgmma's issue or wait.
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}
// The shapes by accumulator size: S = Q·Kᵀ (N = kBlockN keys: 64, 96 or 128) and O += P·V (N = D).
template <typename Elem>
__device__ __forceinline__ void wgmma_qk_init(float (&s)[32], uint64_t da, uint64_t db, Elem e) { wgmma_ss_m64n64k16_init(s, da, db, e); }
template <typename Elem>
__device__ __forceinline__ void wgmma_qk_init(float (&s)[64], uint64_t da, uint64_t db, Elem e) { wgmma_ss_m64n128k16_init(s, da, db, e); }
template <typename Elem>
__device__ __forceinline__ void wgmma_qk_init(float (&s)[48], uint64_t da, uint64_t db, Elem e) { wgmma_ss_m64n96k16_init(s, da, db, e); }
template <typename Elem>
__device__ __forceinline__ void wgmma_qk(float (&s)[32], uint64_t da, uint64_t db, Elem e) { wgmma_ss_m64n64k16(s, da, db, 1, e); }
template <typename Elem>
__device__ __forceinline__ void wgmma_qk(float (&s)[48], uint64_t da, uint64_t db, Elem e) { wgmma_ss_m64n96k16(s, da, db, 1, e); }
template <typename Elem>
__device__ __forceinline__ void wgmma_qk(float (&s)[64], uint64_t da, uint64_t db, Elem e) { wgmma_ss_m64n128k16(s, da, db, 1, e); }
// FP8: k32 steps (32 bytes of a row, as k16 is for 16-bit types); P·V reads Vᵀ K-major (no transpose in fp8 wgmma).
__device__ __forceinline__ void wgmma_qk_init(float (&s)[64], uint64_t da, uint64_t db, __nv_fp8_e4m3 e) { wgmma_ss_m64n128k32_init(s, da, db, e); }
__device__ __forceinline__ void wgmma_qk(float (&s)[64], uint64_t da, uint64_t db, __nv_fp8_e4m3 e) { wgmma_ss_m64n128k32(s, da, db, e); }
template <typename Elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[16], const uint32_t* a, uint64_t db) { wgmma_rs_m64n32k16(o, a, db, Elem{}); }
template <typename Elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[32], const uint32_t* a, uint64_t db) { wgmma_rs_m64n64k16(o, a, db, Elem{}); }
template <typename Elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[48], const uint32_t* a, uint64_t db) { wgmma_rs_m64n96k16(o, a, db, Elem{}); }
template <typename Elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[64], const uint32_t* a, uint64_t db) { wgmma_rs_m64n128k16(o, a, db, Elem{}); }
template <typename Elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[80], const uint32_t* a, uint64_t db) { wgmma_rs_m64n160k16(o, a, db, Elem{}); }
template <typename Elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[96], const uint32_t* a, uint64_t db) { wgmma_rs_m64n192k16(o, a, db, Elem{}); }
template <typename Elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[128], const uint32_t* a, uint64_t db) { wgmma_rs_m64n256k16(o, a, db, Elem{}); }
template <>
__device__ __forceinline__ void wgmma_pv<__nv_fp8_e4m3>(float (&o)[64], const uint32_t* a, uint64_t db) { wgmma_rs_m64n128k32(o, a, db, __nv_fp8_e4m3{}); }

// ---- mbarrier and TMA ---------------------------------------------------------------------------
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// One box of a 4-D tensor map (coordinates innermost first) -> shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}
// A box of shared memory at src -> a 4-D tensor map's global box at the coordinates (innermost first), in
// the issuing thread's bulk group; what lies past the tensor's extents is not written. The writes to src
// must have been fenced for the async proxy (fence_proxy_async_smem) by every thread that made them.
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// The thread's bulk groups but the newest n have read their shared memory (.read), or are complete.
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() { asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory"); }
template <int N>
__device__ __forceinline__ void bulk_wait_group() { asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory"); }
// Rows [r_first, rows) of a shared-memory tile of row_bytes-byte rows (128 unless named) in `panels`
// panels panel_bytes apart set to 0 by threads thread, thread + nthreads, ... (16-byte stores of whole
// rows, so whatever the swizzle). The caller fences them for the async proxy (wgmma) before use.
__device__ __forceinline__ void zero_smem_rows(uint32_t tile, int panels, uint32_t panel_bytes, int r_first, int rows,
                                               int thread, int nthreads, int row_bytes = 128) {
  const int per_row = row_bytes / 16;
  const int chunks = max(0, rows - r_first) * per_row;  // 16-byte chunks per panel
  for (int c = thread; c < panels * chunks; c += nthreads) {
    const uint32_t addr = tile + (c / chunks) * panel_bytes + r_first * row_bytes + (c % chunks) * 16;
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(addr), "r"(0u) : "memory");
  }
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N)); }


}  // namespace flashcore::cuda::detail
