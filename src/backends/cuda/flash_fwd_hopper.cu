// FlashCore forward attention, Hopper-native kernel (sm_90a only: TMA, mbarriers, warpgroup MMA).
//
// Same algorithm as flash_fwd_kernel.cuh (online softmax over K/V tiles), different machine:
//
//   block = 3 warpgroups, 128 query rows of one (batch, head), 128-key K/V tiles
//   warpgroup 0 (producer): one thread issues the bulk tensor copies (TMA) of Q and of every K/V tile
//                           into a kStages-deep ring; the warpgroup gives its registers back (setmaxnreg)
//   warpgroups 1, 2 (consumers): 64 query rows each
//     S  = Q · Kᵀ    wgmma m64n128k16, Q and K straight from shared memory
//     P  = softmax(S) in registers (accumulator layout = the mma.sync one: same masking arithmetic)
//     O += P · V     wgmma m64nDk16, P from registers, V from shared memory (MN-major: transposed)
//
// Synchronisation: FULL_K[s], FULL_V[s] mbarriers complete when slot s's bytes have landed (TMA
// complete_tx); EMPTY_K[s], EMPTY_V[s] complete when all 8 consumer warps have finished the wgmma that
// reads slot s. No block-wide barrier after the prologue.
//
// Pipelining inside a consumer warpgroup (wgmma is asynchronous): step i issues S(i+1) = Q·K(i+1)ᵀ,
// rescales O, issues P(i)·V(i), waits for S(i+1) only and runs the softmax of tile i+1 while
// P(i)·V(i) is on the tensor cores. S is declared inside the step (never loop-carried): loop-carried S
// rewritten while a wgmma group is in flight makes ptxas 13.0 serialise every wgmma (C7513).
//
// Shared memory (1024-byte aligned): every tile is stored as 64-column panels (128 bytes per row) in
// the 128-byte swizzle that TMA writes and wgmma reads: element (row, col) of a panel at byte
// row·128 + ((col/8) ^ (row%8))·16 + (col%8)·2.
//   Q [D/64 panels x 128 rows] | K slots [kStages] | V slots [kStages] | mbarriers
// TMA zero-fills rows past seqlen (query tail, key tail): masked keys meet V rows of zeros, never NaN.
#include <cuda.h>  // CUtensorMap and its enums (types only: the encoder comes through the runtime)

#include <array>
#include <map>
#include <mutex>

#include "flash_fwd_hopper.h"
#include "flash_fwd_kernel.cuh"

namespace flashcore::cuda::detail {
namespace {

#include "wgmma_ops.inc"

// ---- tile configuration (one place) ------------------------------------------------------------
template <int D>
struct HopperConfig {
  static constexpr int kConsumerWGs = 2;
  static constexpr int kBlockM = 64 * kConsumerWGs;        // query rows per block
  static constexpr int kBlockN = 128;                      // keys per K/V tile
  static constexpr int kStages = D == 64 ? 3 : 2;          // K/V ring depth
  static constexpr int kThreads = 128 * (kConsumerWGs + 1);
  // setmaxnreg moves registers inside the block's launch allocation (the 64K register file over
  // kThreads, in steps of 8: 168 for 384 threads): consumers can only grow by what the producer gives
  // back, or setmaxnreg.inc waits forever (a 32-register producer hung the kernel on the H200).
  static constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumerWGs <= kLaunchRegs * kThreads,
                "setmaxnreg budget exceeds the launch allocation");
  static constexpr int kPanels = D / 64;                   // 64-column (128-byte) swizzle panels
  static constexpr uint32_t kQPanelBytes = kBlockM * 128;
  static constexpr uint32_t kKVPanelBytes = kBlockN * 128;
  static constexpr uint32_t kQBytes = kPanels * kQPanelBytes;
  static constexpr uint32_t kTileBytes = kPanels * kKVPanelBytes;  // one K or V tile
  static constexpr uint32_t kBarOffset = kQBytes + 2 * kStages * kTileBytes;
  static constexpr size_t kSmemBytes = 1024 /* alignment slack */ + kBarOffset + 8 * (1 + 4 * kStages);
  static constexpr int kSTiles = kBlockN / 8;              // n8 column tiles of S per thread row pair
  static constexpr int kPVSteps = kBlockN / 16;            // k16 steps of P·V
  static constexpr int kOAcc = D / 2;                      // O accumulator floats per thread (64 x D / 128)
  static_assert(kQBytes >= uint32_t(kBlockM) * D * 2, "output staging reuses the Q region");
  static constexpr int kBarEpilogue = 1;                   // named barrier of the consumer threads
};

struct HopperMaps {  // TMA tensor maps of Q, K, V: dims (D, seqlen, heads, batch), 64 x 128 boxes
  CUtensorMap q, k, v;
};

// wgmma shared-memory descriptor with 128-byte swizzle: bits 0-13 address >> 4, 16-29 LBO >> 4,
// 32-45 SBO >> 4, 62-63 = 1 (128B swizzle). K-major operands (Q, K): SBO = 1024 B between 8-row
// groups, LBO unused (1). V (MN-major B of P·V): SBO = 1024 B between 8-key groups, LBO = step
// between 64-column panels.
__device__ __forceinline__ uint64_t make_desc_sw128(uint32_t saddr, uint32_t lbo) {
  return uint64_t((saddr & 0x3FFFFu) >> 4) | (uint64_t(lbo >> 4) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}
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
template <typename Elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[32], const uint32_t* a, uint64_t db) { wgmma_rs_m64n64k16(o, a, db, Elem{}); }
template <typename Elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[64], const uint32_t* a, uint64_t db) { wgmma_rs_m64n128k16(o, a, db, Elem{}); }

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
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N)); }

// ------------------------------------------------------------------------------------------------
// The kernel. Warp roles: warpgroup 0 = producer (its warp 0, lane 0 issues every copy); warpgroup
// 1 + c (c = 0, 1) = consumer c, query rows m0 + 64c .. +63 (its warp w & 3 the accumulator rows
// 16·(w & 3) + lane/4 (+8)).
// ------------------------------------------------------------------------------------------------
template <int D, typename Elem>
__global__ void __launch_bounds__(HopperConfig<D>::kThreads, 1)
flash_fwd_hopper_kernel(const __grid_constant__ KernelArgs a, const __grid_constant__ HopperMaps maps) {
  using Cfg = HopperConfig<D>;
  using Ops = ElemOps<Elem>;
  constexpr int kS = Cfg::kStages, kBN = Cfg::kBlockN;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t sQ = (smem_u32(smem_raw) + 1023u) & ~1023u;  // swizzle atoms need 1024-byte alignment
  const uint32_t sK = sQ + Cfg::kQBytes;                       // K slot s at sK + s·kTileBytes
  const uint32_t sV = sK + kS * Cfg::kTileBytes;               // V slot s at sV + s·kTileBytes
  const uint32_t bar_q = sQ + Cfg::kBarOffset;
  auto full_k = [&](int s) { return bar_q + 8 * (1 + s); };
  auto full_v = [&](int s) { return bar_q + 8 * (1 + kS + s); };
  auto empty_k = [&](int s) { return bar_q + 8 * (1 + 2 * kS + s); };
  auto empty_v = [&](int s) { return bar_q + 8 * (1 + 3 * kS + s); };

  const FlashFwdParams& p = a.p;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
  const int mblock = a.n_mblocks - 1 - (int)blockIdx.x;  // heavy (causal) query blocks first
  const int h = blockIdx.y, b = blockIdx.z, hk = h / a.q_heads_per_kv;
  const int m0 = mblock * Cfg::kBlockM;
  const int diag = p.seqlen_k - p.seqlen_q;  // causal: row i sees keys j <= i + diag
  int n_end = p.seqlen_k;
  if (p.causal) n_end = min(n_end, m0 + Cfg::kBlockM + diag);
  const int n_tiles = n_end > 0 ? (n_end + kBN - 1) / kBN : 0;  // tiles the block loads

  if (tid == 0) {
    mbar_init(bar_q, 1);
    for (int s = 0; s < kS; ++s) {
      mbar_init(full_k(s), 1);
      mbar_init(full_v(s), 1);
      mbar_init(empty_k(s), 4 * Cfg::kConsumerWGs);
      mbar_init(empty_v(s), 4 * Cfg::kConsumerWGs);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {  // ---------------- producer ----------------
    setmaxnreg_dec<Cfg::kProducerRegs>();
    if (tid == 0) {
      mbar_expect_tx(bar_q, Cfg::kQBytes);
      for (int pn = 0; pn < Cfg::kPanels; ++pn) tma_load_4d(sQ + pn * Cfg::kQPanelBytes, &maps.q, 64 * pn, m0, h, b, bar_q);
      for (int t = 0; t < n_tiles; ++t) {
        const int s = t % kS;
        const uint32_t parity = ((t / kS) + 1) & 1;  // the previous use of slot s (tile t - kS) was released
        if (t >= kS) mbar_wait_parity(empty_k(s), parity);
        mbar_expect_tx(full_k(s), Cfg::kTileBytes);
        for (int pn = 0; pn < Cfg::kPanels; ++pn)
          tma_load_4d(sK + s * Cfg::kTileBytes + pn * Cfg::kKVPanelBytes, &maps.k, 64 * pn, t * kBN, hk, b, full_k(s));
        if (t >= kS) mbar_wait_parity(empty_v(s), parity);
        mbar_expect_tx(full_v(s), Cfg::kTileBytes);
        for (int pn = 0; pn < Cfg::kPanels; ++pn)
          tma_load_4d(sV + s * Cfg::kTileBytes + pn * Cfg::kKVPanelBytes, &maps.v, 64 * pn, t * kBN, hk, b, full_v(s));
      }
    }
    return;
  }

  // ---------------- consumers ----------------
  setmaxnreg_inc<Cfg::kConsumerRegs>();
  const int cw = wg - 1;                       // consumer warpgroup index
  const int g = lane >> 2, t4 = lane & 3;
  const int wg_row0 = m0 + 64 * cw;
  // Tiles before wg_full need no mask; tiles from wg_tiles on hold no key this warpgroup's rows see.
  int wg_end = p.seqlen_k;
  if (p.causal) wg_end = min(wg_end, wg_row0 + 64 + diag);
  const int wg_tiles = min(n_tiles, wg_end > 0 ? (wg_end + kBN - 1) / kBN : 0);
  int wg_full = p.seqlen_k / kBN;
  if (p.causal) wg_full = min(wg_full, max(0, wg_row0 + diag + 1) / kBN);
  const int row_lo = wg_row0 + 16 * (warp & 3);  // this warp's first accumulator row

  float o[Cfg::kOAcc];         // O accumulator (64 rows x D per warpgroup)
  uint32_t pf[4 * Cfg::kPVSteps];     // P of the next P·V as its A operand: kPVSteps k16 steps x 4 registers
#pragma unroll
  for (int i = 0; i < Cfg::kOAcc; ++i) o[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  float alpha[2] = {1.f, 1.f};  // rescale of O before the next P·V

  // Descriptor address fields are in 16-byte units: adding (bytes >> 4) moves the start address. Inside
  // a panel the k16 step kk moves 32 bytes along the (swizzled) row; the panel index moves kk / 4 panels.
  const uint64_t q_desc = make_desc_sw128(sQ + cw * 64 * 128, 16);
  const uint64_t k_desc = make_desc_sw128(sK, 16);
  const uint64_t v_desc = make_desc_sw128(sV, Cfg::kKVPanelBytes);
  auto issue_qk = [&](float (&s)[kBN / 2], int slot) {
    const uint64_t kd = k_desc + ((slot * Cfg::kTileBytes) >> 4);
    wgmma_ss_m64n128k16_init(s, q_desc, kd, Elem{});
#pragma unroll
    for (int kk = 1; kk < D / 16; ++kk) {
      const uint32_t qo = ((kk / 4) * Cfg::kQPanelBytes + (kk % 4) * 32) >> 4;
      const uint32_t ko = ((kk / 4) * Cfg::kKVPanelBytes + (kk % 4) * 32) >> 4;
      wgmma_ss_m64n128k16(s, q_desc + qo, kd + ko, 1, Elem{});
    }
  };
  auto issue_pv = [&](int slot) {
    const uint64_t vd = v_desc + ((slot * Cfg::kTileBytes) >> 4);
#pragma unroll
    for (int k = 0; k < Cfg::kPVSteps; ++k) wgmma_pv<Elem>(o, pf + 4 * k, vd + ((k * 16 * 128) >> 4));
  };

  const float sl2 = a.scale_log2;
  // Mask (tiles from wg_full on), online softmax of S(tile) in place, alpha for O. Tiles this warpgroup
  // does not need (from wg_tiles on) leave the state alone and give P = 0.
  auto softmax = [&](float (&s)[kBN / 2], int tile) {
    alpha[0] = alpha[1] = 1.f;
    if (tile >= wg_tiles) {
#pragma unroll
      for (int j = 0; j < kBN / 2; ++j) s[j] = 0.f;
      return;
    }
    if (tile >= wg_full) {  // causal diagonal / key tail: s[4j + e] is key tile·kBN + 8j + 2t + (e & 1), row g + 8(e >> 1)
      const int seqlen_k = p.seqlen_k, r0 = row_lo + g;
      const int lim0 = p.causal ? min(seqlen_k - 1, r0 + diag) : seqlen_k - 1;
      const int lim1 = p.causal ? min(seqlen_k - 1, r0 + 8 + diag) : seqlen_k - 1;
#pragma unroll
      for (int j = 0; j < Cfg::kSTiles; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = tile * kBN + 8 * j + 2 * t4 + e;
          if (col > lim0) s[4 * j + e] = -INFINITY;
          if (col > lim1) s[4 * j + 2 + e] = -INFINITY;
        }
    }
    // rows g and g+8 (a row's keys live in the 4 threads of a quad)
    float mx[2] = {row_max[0], row_max[1]};
#pragma unroll
    for (int j = 0; j < Cfg::kSTiles; ++j) {
      mx[0] = fmaxf(mx[0], fmaxf(s[4 * j], s[4 * j + 1]));
      mx[1] = fmaxf(mx[1], fmaxf(s[4 * j + 2], s[4 * j + 3]));
    }
    float ms[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      ms[r] = (mx[r] == -INFINITY) ? 0.f : mx[r] * sl2;  // all-masked so far: exp2(-inf - 0) = 0, not NaN
      alpha[r] = fast_exp2(row_max[r] * sl2 - ms[r]);
      row_max[r] = mx[r];
    }
    float sum[2] = {0.f, 0.f};
#pragma unroll
    for (int j = 0; j < Cfg::kSTiles; ++j) {
      s[4 * j + 0] = fast_exp2(fmaf(s[4 * j + 0], sl2, -ms[0]));
      s[4 * j + 1] = fast_exp2(fmaf(s[4 * j + 1], sl2, -ms[0]));
      s[4 * j + 2] = fast_exp2(fmaf(s[4 * j + 2], sl2, -ms[1]));
      s[4 * j + 3] = fast_exp2(fmaf(s[4 * j + 3], sl2, -ms[1]));
      sum[0] += s[4 * j + 0] + s[4 * j + 1];
      sum[1] += s[4 * j + 2] + s[4 * j + 3];
    }
    row_sum[0] = row_sum[0] * alpha[0] + sum[0];
    row_sum[1] = row_sum[1] * alpha[1] + sum[1];
  };
  // C-fragments of S column tiles 2k, 2k+1 = the A-fragment of k16 step k (as in the mma.sync kernel)
  auto pack_p = [&](const float (&s)[kBN / 2]) {
#pragma unroll
    for (int k = 0; k < Cfg::kPVSteps; ++k) {
      pf[4 * k + 0] = Ops::pack(s[8 * k + 0], s[8 * k + 1]);
      pf[4 * k + 1] = Ops::pack(s[8 * k + 2], s[8 * k + 3]);
      pf[4 * k + 2] = Ops::pack(s[8 * k + 4], s[8 * k + 5]);
      pf[4 * k + 3] = Ops::pack(s[8 * k + 6], s[8 * k + 7]);
    }
  };
  // Slot release: every consumer warp arrives once its wgmma reading the slot has completed.
  auto release = [&](uint32_t bar) {
    __syncwarp();
    if (lane == 0) mbar_arrive(bar);
  };

  mbar_wait_parity(bar_q, 0);
  {  // tile 0: S, softmax, P (S registers are fresh in every step: never loop-carried, see header)
    float s[kBN / 2];
    if (n_tiles > 0) mbar_wait_parity(full_k(0), 0);
    wgmma_fence();
    issue_qk(s, 0);  // no tile (n_tiles == 0): result ignored (softmax gives P = 0)
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(s);
    if (n_tiles > 0) release(empty_k(0));
    softmax(s, 0);
    pack_p(s);
  }
  for (int i = 0; i < n_tiles; ++i) {
    const int sc = i % kS, sn = (i + 1) % kS;
    const bool has_next = i + 1 < n_tiles;
    if (has_next) mbar_wait_parity(full_k(sn), ((i + 1) / kS) & 1);
    float s[kBN / 2];
    wgmma_fence();
    issue_qk(s, sn);  // past the last tile: stale slot, result ignored
    wgmma_commit();
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {  // O is idle: P(i-1)·V(i-1) completed in the last step
      o[4 * j + 0] *= alpha[0]; o[4 * j + 1] *= alpha[0];
      o[4 * j + 2] *= alpha[1]; o[4 * j + 3] *= alpha[1];
    }
    mbar_wait_parity(full_v(sc), (i / kS) & 1);
    wgmma_fence();
    issue_pv(sc);
    wgmma_commit();
    wgmma_wait<1>();  // S(i+1) done; P(i)·V(i) runs under the softmax
    fence_regs(s);
    if (has_next) release(empty_k(sn));
    softmax(s, i + 1);
    wgmma_wait<0>();  // P(i)·V(i) done: pf may be overwritten, V slot free
    fence_regs(o);
    fence_regs(pf);
    release(empty_v(sc));
    pack_p(s);
  }
  // Both consumer warpgroups are done reading Q (wgmma waits above): its region takes the output staging.
  named_bar_sync(Cfg::kBarEpilogue, 128 * Cfg::kConsumerWGs);

  // ---- epilogue: O / l -> this warp's 16 rows of the Q region (row-major, swizzled) -> 16-byte stores
  float inv[2], lse2[2];
  finish_rows(row_sum, row_max, sl2, inv, lse2);
  Elem* sO = reinterpret_cast<Elem*>(smem_raw + (sQ - smem_u32(smem_raw)));
  stage_o_rows<D>(sO, row_lo - m0 + g, lane, inv, [&](int j, int e) { return o[4 * j + e]; });
  write_lse_rows(p, b, h, row_lo + g, lse2, lane);
  __syncwarp();
  store_o_rows<D>(p, b, h, sO, row_lo - m0, row_lo, 16, lane);
}

// ---- host side: tensor maps ----------------------------------------------------------------------
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiledFn encode_tiled_fn() {  // cuTensorMapEncodeTiled through the runtime (no libcuda link)
  static EncodeTiledFn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      f = nullptr;
    return reinterpret_cast<EncodeTiledFn>(f);
  }();
  return fn;
}

// A [batch][heads][seqlen][D] view (element strides; the D stride is 1) as TMA sees it: dims innermost
// first and byte strides of dims 1..3.
struct TmaView {
  const char* name;
  const void* ptr;
  cuuint64_t dim[4];
  cuuint64_t stride[3];
  cuuint32_t box_rows;
};

// Empty string if TMA can read the view, else why not (naming the tensor, the stride and its value).
std::string make_view(TmaView* v, const char* name, const void* ptr, int batch, int heads, int seqlen, int d,
                      long long batch_stride, long long head_stride, long long seq_stride, int box_rows) {
  const std::string who = std::string("the Hopper kernel (TMA) needs ") + name;
  if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return who + " 16-byte aligned";
  const long long strides[3] = {seq_stride, head_stride, batch_stride};
  const int extents[3] = {seqlen, heads, batch};
  const char* sname[3] = {"seq_stride", "head_stride", "batch_stride"};
  *v = TmaView{name, ptr, {(cuuint64_t)d, (cuuint64_t)seqlen, (cuuint64_t)heads, (cuuint64_t)batch}, {}, (cuuint32_t)box_rows};
  long long span = d;  // elements spanned by the inner dimensions: stand-in stride of extent-1 dims
  for (int i = 0; i < 3; ++i) {
    long long s = strides[i];
    if (extents[i] == 1) s = (span + 7) / 8 * 8;  // never stepped: any valid stride will do
    if (s <= 0 || s % 8 != 0 || s >= (1ll << 37))
      return who + " " + sname[i] + " to be a positive multiple of 8 elements (16 bytes), got " + std::to_string(strides[i]);
    v->stride[i] = (cuuint64_t)s * 2;
    span = std::max(span, s * extents[i]);
  }
  return {};
}

std::string encode_view(CUtensorMap* map, const TmaView& v, bool bf16) {
  EncodeTiledFn enc = encode_tiled_fn();
  if (enc == nullptr) return "the Hopper kernel needs cuTensorMapEncodeTiled (driver entry point not found)";
  const cuuint32_t box[4] = {64, v.box_rows, 1, 1};
  const cuuint32_t estride[4] = {1, 1, 1, 1};
  const CUresult r = enc(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
                         const_cast<void*>(v.ptr), v.dim, v.stride, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                         CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return std::string("the Hopper kernel (TMA) needs ") + v.name + " in a layout cuTensorMapEncodeTiled accepts (error " +
           std::to_string((int)r) + ")";
  return {};
}

// Every layout check first (they need no driver), then the three encodings.
std::string encode_maps(const FlashFwdParams& p, HopperMaps* m) {
  static_assert(HopperConfig<64>::kBlockM == HopperConfig<128>::kBlockM &&
                    HopperConfig<64>::kBlockN == HopperConfig<128>::kBlockN,
                "one box shape for both head dims");
  constexpr int bm = HopperConfig<64>::kBlockM, bn = HopperConfig<64>::kBlockN;
  TmaView q, k, v;
  std::string why = make_view(&q, "q", p.q, p.batch, p.heads_q, p.seqlen_q, p.head_dim, p.q_batch_stride,
                              p.q_head_stride, p.q_seq_stride, bm);
  if (why.empty())
    why = make_view(&k, "k", p.k, p.batch, p.heads_kv, p.seqlen_k, p.head_dim, p.k_batch_stride, p.k_head_stride,
                    p.k_seq_stride, bn);
  if (why.empty())
    why = make_view(&v, "v", p.v, p.batch, p.heads_kv, p.seqlen_k, p.head_dim, p.v_batch_stride, p.v_head_stride,
                    p.v_seq_stride, bn);
  if (why.empty()) why = encode_view(&m->q, q, p.bf16);
  if (why.empty()) why = encode_view(&m->k, k, p.bf16);
  if (why.empty()) why = encode_view(&m->v, v, p.bf16);
  return why;
}

// The tensor maps of the last problem this thread asked about: flash_fwd() checks the layout (Auto's
// choice, the decline reason) and then launches, and applications repeat calls on the same buffers,
// so one encoding serves them all. Keyed on every input of the encoding.
const std::string& cached_maps(const FlashFwdParams& p, HopperMaps* out) {
  using Key = std::array<long long, 19>;
  const Key key = {(long long)(uintptr_t)p.q, (long long)(uintptr_t)p.k, (long long)(uintptr_t)p.v,
                   p.batch, p.heads_q, p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim, p.bf16,
                   p.q_batch_stride, p.q_head_stride, p.q_seq_stride, p.k_batch_stride, p.k_head_stride,
                   p.k_seq_stride, p.v_batch_stride, p.v_head_stride, p.v_seq_stride};
  thread_local bool valid = false;
  thread_local Key last{};
  thread_local HopperMaps maps;
  thread_local std::string why;
  if (!valid || key != last) {
    why = encode_maps(p, &maps);
    last = key;
    valid = true;
  }
  if (out != nullptr) *out = maps;
  return why;
}

template <int D, typename Elem>
cudaError_t launch_typed(const KernelArgs& args, const HopperMaps& maps, int device, cudaStream_t stream) {
  using Cfg = HopperConfig<D>;
  void (*kernel)(KernelArgs, HopperMaps) = flash_fwd_hopper_kernel<D, Elem>;
  const cudaError_t e = raise_smem_limit(reinterpret_cast<const void*>(kernel), device, Cfg::kSmemBytes);
  if (e != cudaSuccess) return e;
  const dim3 grid((unsigned)args.n_mblocks, (unsigned)args.p.heads_q, (unsigned)args.p.batch);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(args, maps);
  return cudaGetLastError();
}

}  // namespace

int hopper_block_m(int head_dim) { return head_dim == 64 ? HopperConfig<64>::kBlockM : HopperConfig<128>::kBlockM; }

size_t hopper_smem_bytes(int head_dim) {
  return head_dim == 64 ? HopperConfig<64>::kSmemBytes : HopperConfig<128>::kSmemBytes;
}

std::string hopper_unsupported_reason(const FlashFwdParams& p) { return cached_maps(p, nullptr); }

bool hopper_kernel_available(int device) {
  static std::mutex m;
  static std::map<int, bool> cache;
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(device);
  if (it != cache.end()) return it->second;
  int prev = -1;
  bool ok = cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(device) == cudaSuccess;
  if (ok) {
    cudaFuncAttributes attr{};
    ok = cudaFuncGetAttributes(&attr, flash_fwd_hopper_kernel<64, __half>) == cudaSuccess;
    if (!ok) cudaGetLastError();  // no sm_90a image for this device: not an error of the caller
    cudaSetDevice(prev);
  }
  cache[device] = ok && encode_tiled_fn() != nullptr;
  return cache[device];
}

cudaError_t launch_hopper(const KernelArgs& args, int device, cudaStream_t stream) {
  HopperMaps maps;
  if (!cached_maps(args.p, &maps).empty()) return cudaErrorInvalidValue;
  if (args.p.head_dim == 64)
    return args.p.bf16 ? launch_typed<64, __nv_bfloat16>(args, maps, device, stream)
                       : launch_typed<64, __half>(args, maps, device, stream);
  return args.p.bf16 ? launch_typed<128, __nv_bfloat16>(args, maps, device, stream)
                     : launch_typed<128, __half>(args, maps, device, stream);
}

}  // namespace flashcore::cuda::detail
