// The per-warp pieces of the backward kernels (bwd_dkdv.cuh, bwd_dq.cuh), on top of the forward's
// (sm80/tile_ops.cuh: tile loads, ldmatrix lane offsets, pv_tile; common/: mma.sync, swizzle, staging):
//   AOperand          a warp's 16 rows of a swizzled tile as the MMA A operand (registers or re-read),
//   nt_tile           C[16 x 64] = A[16 x D] · B[64 x D]ᵀ (S, Sᵀ, dP, dPᵀ); pv_tile does C += A[16 x 64] · B[64 x D],
//   bwd_mask          the mask policy's -inf (common/mask.cuh), keys on rows or on columns,
//   bwd_p_ds_transformed  P and dS in one pass where the policy transforms scores (soft-capping, ALiBi),
//   p_from_scores_*   P = exp2(S·scale·log2e − lse2) and dS = P ∘ (dP − delta), rows or columns,
//   ds_k_tile         the atomic path's dQ_tile = dS·K from the staged dSᵀ (ds_lane_offset: its A operand),
//   red_add_frags     ... added to the fp32 accumulator in fragment order (dq_frag_index, dq_frag_offset),
//   store_tile_rows   a staged [64 x D] tile to global memory, 16-byte stores.
// Fragment layout (mma.sync m16n8 C, common/mask.cuh): a thread holds rows row0 = lane/4 and row0 + 8
// of the warp's 16 rows and, in n8 column tile i, columns 8i + 2(lane%4) + {0,1}: s[i][0..1] row0, s[i][2..3] row0 + 8.
#pragma once

#include <climits>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/backward/bwd_config.cuh"
#include "backends/cuda/backward/bwd_sequences.cuh"
#include "backends/cuda/common/elem_ops.cuh"
#include "backends/cuda/common/epilogue.cuh"
#include "backends/cuda/common/mask.cuh"
#include "backends/cuda/common/variant_mask.cuh"
#include "backends/cuda/common/ptx.cuh"
#include "backends/cuda/common/swizzle.cuh"
#include "backends/cuda/sm80/tile_ops.cuh"

namespace flashcore::cuda::detail {

// A warp's 16 rows [row0, row0 + 16) of a swizzled [64 x D] smem tile as the A operand (row-major 16 x 16
// per k16 step). kInRegs: all D/16 fragments loaded once (init) and kept; else each step re-reads its
// fragment (ldmatrix_x4) from the tile. Lane l addresses row row0 + (l & 15), half-chunk l >> 4; with
// row & 7 == l & 7 step kk = 4·grp + c is at addr + ((c << 5) ^ x0) + 128·grp (sm80/tile_ops.cuh, LaneBases).
template <int D, bool kInRegs>
struct AOperand {
  uint32_t frag[kInRegs ? D / 16 : 1][4];
  uint32_t addr, x0;
  __device__ __forceinline__ void init(uint32_t tile, int row0, int lane) {
    const int sw = lane & 7;
    addr = tile + (row0 + (lane & 15)) * TileConfig<D>::kRowBytes + (((lane >> 4) ^ (sw & 1)) << 4);
    x0 = (sw & 6) << 4;
  }
  __device__ __forceinline__ uint32_t step_addr(int kk) const {
    return addr + ((uint32_t(kk & 3) << 5) ^ x0) + (kk >> 2) * 128;
  }
  // After the tile has landed (and a barrier): the fragments into registers (kInRegs only).
  __device__ __forceinline__ void load() {
    if constexpr (kInRegs) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(frag[kk], step_addr(kk));
    }
  }
  __device__ __forceinline__ const uint32_t (&get(int kk, uint32_t (&tmp)[4]) const)[4] {
    if constexpr (kInRegs) {
      return frag[kk];
    } else {
      ldmatrix_x4(tmp, step_addr(kk));
      return tmp;
    }
  }
};

// C = A · Bᵀ for a warp's 16 A rows and the 64 rows of the swizzled tile at sB (fp32 C-fragments:
// c[i] covers B rows 8i..8i+7). B[k][n] = tile[n][k]: plain ldmatrix as in qk_tile (sm80/tile_ops.cuh).
template <int D, typename Elem, bool kInRegs>
__device__ __forceinline__ void nt_tile(float (&c)[kBlockN / 8][4], const AOperand<D, kInRegs>& a, uint32_t sB,
                                        const LaneOffsets& lo) {
  using Cfg = TileConfig<D>;
#pragma unroll
  for (int i = 0; i < Cfg::kSTiles; ++i) c[i][0] = c[i][1] = c[i][2] = c[i][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < Cfg::kQKSteps; ++kk) {
    uint32_t tmp[4];
    const uint32_t(&af)[4] = a.get(kk, tmp);
    const uint32_t base = sB + lo.k[kk & 3] + (kk >> 2) * 128;
#pragma unroll
    for (int np = 0; np < Cfg::kSTiles / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, base + np * 16 * Cfg::kRowBytes);
      ElemOps<Elem>::mma(c[2 * np], af, b[0], b[1]);
      ElemOps<Elem>::mma(c[2 * np + 1], af, b[2], b[3]);
    }
  }
}

// The backward kernels' mask policy: CausalMask (causal or not, the key tail) or, with windows,
// soft-capping or ALiBi, VariantMask (sinks need neither: they are in the forward's LSE, and their
// gradient is the delta pass's, bwd_delta.cuh). kSeq: the sequence layouts, each block's sequence's
// lengths read where used (ReadLengths; bwd_sequences.cuh), causal read from p.causal; else the
// fixed-length problem's (FixedLengths). Without variants and sequences causal is a template argument
// (CausalMaskOf's kCausal), as the kernels had it before the policies: a run-time flag cost the D = 128
// dK/dV kernel with the dQ atomics 12 bytes more spill.
template <bool kVariants, bool kCausal, bool kSeq = false>
using BwdMask = std::conditional_t<
    kSeq, std::conditional_t<kVariants, VariantMaskOf<ReadLengths>, CausalMaskOf<ReadLengths>>,
    std::conditional_t<kVariants, VariantMaskOf<FixedLengths>, CausalMaskOf<FixedLengths, kCausal>>>;

// ---- Mask (every backward kernel) --------------------------------------------------------------------
// The forward's mask policies (common/mask.cuh: CausalMask; common/variant_mask.cuh: VariantMask for
// windows, soft-capping and ALiBi), asked the same questions from the other side: a dK/dV block the
// rows that see its keys (row_begin, row_end), a dQ block its key tiles (first_tile, tiles), every
// fragment row what it sees (visible: keys of a query row, or query rows of a key). Query rows past
// seqlen_q need no mask: their lse2 is +inf. Rows that see no key are masked like any other (with sinks
// their LSE is the sink's, finite), and a tile is mask-free only if every row sees all its keys.
//
// Whether the 64 x 64 tile (queries q0.., keys k0.., k0 a multiple of 64) has a pair some row does not
// see (block-uniform): the policy's mask-free tiles for those rows, as the forward asks.
template <class Mask>
__device__ __forceinline__ bool bwd_tile_needs_mask(const Mask& m, int q0, int k0) {
  const int tile = k0 / kBwdBlockN;
  return tile < m.unmasked_first(q0 + kBwdBlockM, kBwdBlockN) || tile >= m.unmasked_tiles(q0, kBwdBlockN);
}
// -inf for the pairs not seen, in one warp fragment: rows row0, row0 + 8 (row0 = the warp's first row
// + lane/4), column tile i from col0 + 8i. kKeysOnRows: rows are keys, columns queries (Sᵀ in dK/dV);
// else rows are queries (S in dQ).
template <bool kKeysOnRows, class Mask>
__device__ __forceinline__ void bwd_mask(const Mask& m, float (&s)[kBlockN / 8][4], int row0, int col0, int lane) {
  const int t = lane & 3;
  const int2 vis[2] = {m.template visible<kKeysOnRows>(row0), m.template visible<kKeysOnRows>(row0 + 8)};
#pragma unroll
  for (int i = 0; i < kBlockN / 8; ++i) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = col0 + 8 * i + 2 * t + (e & 1);
      const int2 v = vis[e >> 1];
      if (col < v.x || col > v.y) s[i][e] = -INFINITY;
    }
  }
}

// Masks that transform the scores (Mask::kTransformsScores: soft-capping, ALiBi; common/variant_mask.cuh):
// P and dS of one fragment in one pass, layout as bwd_mask. In: s the raw scores (q·k), dp = dO·vᵀ;
// out: s = P = exp2(logit·scale_log2 − lse2), dp = dS = P ∘ (dP − delta) ∘ d(logit)/d(score) (the
// soft-capping's 1 − tanh²; the scale is applied at the end as for plain scores). `masked`: the tile
// needs the mask (bwd_tile_needs_mask). vals(i, e) gives the element's {lse2, delta} (its query's).
// dS needs dP before P's registers are reused: the kernels compute S and dP first, then call this.
template <bool kKeysOnRows, class Mask, class Vals>
__device__ __forceinline__ void bwd_p_ds_transformed(const Mask& m, bool masked, float (&s)[kBlockN / 8][4],
                                                     float (&dp)[kBlockN / 8][4], int row0, int col0, int lane, int h,
                                                     float scale_log2, Vals vals) {
  const int t = lane & 3;
  const float neg_slope = m.alibi_neg_slope(h);
  int2 vis[2] = {make_int2(INT_MIN, INT_MAX), make_int2(INT_MIN, INT_MAX)};
  if (masked) vis[0] = m.template visible<kKeysOnRows>(row0), vis[1] = m.template visible<kKeysOnRows>(row0 + 8);
  // key − (query + diag) at column 8i + e of each row: base ∓ (8i + e), exact in float below 2^24.
  const int diag = m.seq.diag();
  float base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r)
    base[r] = kKeysOnRows ? (float)(row0 + 8 * r - diag - col0 - 2 * t) : (float)(col0 + 2 * t - row0 - 8 * r - diag);
#pragma unroll
  for (int i = 0; i < kBlockN / 8; ++i) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = col0 + 8 * i + 2 * t + (e & 1);
      const float step = (float)(8 * i + (e & 1));
      const float dist = fabsf(kKeysOnRows ? base[e >> 1] - step : base[e >> 1] + step);
      float dx;
      float x = m.transform_one(s[i][e], dist, neg_slope, dx);
      if (col < vis[e >> 1].x || col > vis[e >> 1].y) x = -INFINITY;
      const float2 v = vals(i, e);
      const float pr = fast_exp2(fmaf(x, scale_log2, -v.x));
      s[i][e] = pr;
      dp[i][e] = pr * (dp[i][e] - v.y) * dx;
    }
  }
}

// ---- P and dS ---------------------------------------------------------------------------------------
// Queries on rows (dQ): P = exp2(S·scale_log2 − lse2 of the row) in place.
__device__ __forceinline__ void p_from_scores_rows(float (&s)[kBlockN / 8][4], float scale_log2, float lse2_r0,
                                                   float lse2_r1) {
#pragma unroll
  for (int i = 0; i < kBlockN / 8; ++i) {
    s[i][0] = fast_exp2(fmaf(s[i][0], scale_log2, -lse2_r0));
    s[i][1] = fast_exp2(fmaf(s[i][1], scale_log2, -lse2_r0));
    s[i][2] = fast_exp2(fmaf(s[i][2], scale_log2, -lse2_r1));
    s[i][3] = fast_exp2(fmaf(s[i][3], scale_log2, -lse2_r1));
  }
}
// dS = P ∘ (dP − delta of the row), into dp.
__device__ __forceinline__ void ds_rows(float (&dp)[kBlockN / 8][4], const float (&p)[kBlockN / 8][4], float delta_r0,
                                        float delta_r1) {
#pragma unroll
  for (int i = 0; i < kBlockN / 8; ++i) {
    dp[i][0] = p[i][0] * (dp[i][0] - delta_r0);
    dp[i][1] = p[i][1] * (dp[i][1] - delta_r0);
    dp[i][2] = p[i][2] * (dp[i][2] - delta_r1);
    dp[i][3] = p[i][3] * (dp[i][3] - delta_r1);
  }
}
// Queries on columns (dK/dV): the tile's 64 lse2 (delta) values in shared memory, column 8i + 2t + e.
__device__ __forceinline__ void p_from_scores_cols(float (&s)[kBlockN / 8][4], float scale_log2, const float* s_lse2,
                                                   int lane) {
  const int t = lane & 3;
#pragma unroll
  for (int i = 0; i < kBlockN / 8; ++i) {
    const float2 l = *reinterpret_cast<const float2*>(s_lse2 + 8 * i + 2 * t);
    s[i][0] = fast_exp2(fmaf(s[i][0], scale_log2, -l.x));
    s[i][1] = fast_exp2(fmaf(s[i][1], scale_log2, -l.y));
    s[i][2] = fast_exp2(fmaf(s[i][2], scale_log2, -l.x));
    s[i][3] = fast_exp2(fmaf(s[i][3], scale_log2, -l.y));
  }
}
__device__ __forceinline__ void ds_cols(float (&dp)[kBlockN / 8][4], const float (&p)[kBlockN / 8][4],
                                        const float* s_delta, int lane) {
  const int t = lane & 3;
#pragma unroll
  for (int i = 0; i < kBlockN / 8; ++i) {
    const float2 d = *reinterpret_cast<const float2*>(s_delta + 8 * i + 2 * t);
    dp[i][0] = p[i][0] * (dp[i][0] - d.x);
    dp[i][1] = p[i][1] * (dp[i][1] - d.y);
    dp[i][2] = p[i][2] * (dp[i][2] - d.x);
    dp[i][3] = p[i][3] * (dp[i][3] - d.y);
  }
}

// ---- dQ in the dK/dV kernel (the atomic path) ---------------------------------------------------------
// The block's dSᵀ (64 keys x 64 queries) is staged as Elem in a swizzled [64 x 64] tile (rows = keys), then
// every warp computes 16 query rows of dQ_tile = dS·K (A = dS read with ldmatrix.trans from the keys-on-rows
// tile, B = the K tile as pv_tile reads V) and adds them to the fp32 accumulator in global memory.
//
// A-fragment addresses (ldmatrix_x4_trans) of a warp's 16 query columns q0w.. of the staged tile: lane l
// reads tile row (key) 16·kk + (l & 7) + 8·(l >> 4) at chunk q0w/8 + ((l >> 3) & 1); transposed, the four
// 8x8 matrices are A's (rows 0-7, k 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15). Returns step 0's byte
// offset; step kk adds kk · 16 · 128.
__device__ __forceinline__ uint32_t ds_lane_offset(int q0w, int lane) {
  const int row = (lane & 7) + 8 * (lane >> 4), chunk = q0w / 8 + ((lane >> 3) & 1);
  return uint32_t(row * 128 + ((chunk ^ (lane & 7)) << 4));
}
// acc[16 x kCols] (columns c0.. of D) = dS[16 warp rows x 64 keys] · K[64 keys x columns c0..c0 + kCols).
template <int D, typename Elem, int kCols>
__device__ __forceinline__ void ds_k_tile(float (&acc)[kCols / 8][4], uint32_t sdS_lane, uint32_t sK, int c0,
                                          const LaneOffsets& lo) {
  using Cfg = TileConfig<D>;
#pragma unroll
  for (int j = 0; j < kCols / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < kBlockN / 16; ++kk) {
    uint32_t a[4];
    ldmatrix_x4_trans(a, sdS_lane + kk * 16 * 128);
#pragma unroll
    for (int dp = 0; dp < kCols / 16; ++dp) {
      const int g = c0 / 16 + dp;  // 16-column group of D, as pv_tile's dp
      uint32_t b[4];
      ldmatrix_x4_trans(b, sK + lo.v[g & 3] + (g >> 2) * 128 + kk * 16 * Cfg::kRowBytes);
      ElemOps<Elem>::mma(acc[2 * dp], a, b[0], b[1]);
      ElemOps<Elem>::mma(acc[2 * dp + 1], a, b[2], b[3]);
    }
  }
}
// The dQ accumulator of one 64-query tile is kept in fragment order, not row-major: the warps'
// C-fragment pairs (e = 0, 1: row 16w + l/4; e = 2, 3: that row + 8; columns 8j + 2(l%4) + {0, 1}) of
// warp w, n8 column tile j, half e/2 lie at float (((w · D/8 + j) · 2 + e/2) · 32 + l) · 2 + e%2
// (dq_frag_index). One warp's reduction of a half tile is then 256 contiguous bytes (two 128-byte lines)
// instead of 32-byte pieces of eight rows: a quarter of the L1 wavefronts for the same data (ncu: the
// row-major atomics took the L1 to 86 % and the kernel 1.66x the deterministic one's dK/dV time).
template <int D>
__host__ __device__ constexpr long long dq_frag_index(int row, int col) {
  const int w = row / 16, rr = row % 16, j = col / 8, c = col % 8;
  return (((long long)(w * (D / 8) + j) * 2 + rr / 8) * 32 + 4 * (rr % 8) + c / 2) * 2 + c % 2;
}
// dst[0] += a, dst[1] += b in global memory (8-byte aligned): one vector reduction on sm_90, two before.
__device__ __forceinline__ void red_add_f32x2(float* dst, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(dst), "f"(a), "f"(b) : "memory");
#else
  atomicAdd(dst, a);
  atomicAdd(dst + 1, b);
#endif
}
// A warp's acc (column tiles c0/8 ..) added to the tile's accumulator `tile` (64 x D floats, fragment
// order); frag_off = dq_frag_offset<D>(warp, lane), computed once per thread.
template <int D>
__device__ __forceinline__ int dq_frag_offset(int warp, int lane) { return warp * (D / 8) * 128 + 2 * lane; }
template <int D, int kCols>
__device__ __forceinline__ void red_add_frags(float* tile, int frag_off, int c0, const float (&acc)[kCols / 8][4]) {
  float* lo = tile + frag_off + c0 * 16;  // half 0 of column tile c0/8
#pragma unroll
  for (int j = 0; j < kCols / 8; ++j) {
    red_add_f32x2(lo + 128 * j, acc[j][0], acc[j][1]);
    red_add_f32x2(lo + 128 * j + 64, acc[j][2], acc[j][3]);
  }
}

// ---- Output -----------------------------------------------------------------------------------------
// A warp's accumulator rows (C-fragments, D/8 n8 tiles) times `mul` -> rows lr0, lr0 + 8 of the
// swizzled smem tile s (lr0 = the warp's first row + lane/4).
template <int D, typename Elem>
__device__ __forceinline__ void stage_acc_rows(Elem* s, int lr0, int lane, const float (&acc)[D / 8][4], float mul) {
  const float m[2] = {mul, mul};
  stage_o_rows<D, Elem>(s, lr0, lane, m, [&](int j, int e) { return acc[j][e]; });
}
// Rows [0, 64) of the staged tile s -> global rows row0 + r (those < len) of g (row stride `stride`
// elements), the first `chunks` 16-byte chunks of each (all D / 8 but for a padded head dim), 16-byte
// stores, all threads of the block.
template <int D, typename Elem>
__device__ __forceinline__ void store_tile_rows(Elem* g, long long stride, const Elem* s, int row0, int len, int tid,
                                                int nthr, int chunks = D / 8) {
  for (int c = tid; c < 64 * chunks; c += nthr) {
    const int r = c / chunks, ch = c % chunks;
    if (row0 + r < len)
      *reinterpret_cast<uint4*>(g + (long long)(row0 + r) * stride + ch * 8) =
          *reinterpret_cast<const uint4*>(s + swz<D>(r, ch));
  }
}

}  // namespace flashcore::cuda::detail
