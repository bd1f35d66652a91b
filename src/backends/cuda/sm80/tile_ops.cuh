// The per-warp pieces of the mma.sync kernels (sm80/): K/V/Q tile loads by cp.async into the
// swizzled layout (common/swizzle.cuh), ldmatrix lane offsets, S = Q·Kᵀ and O += P·V of one 64-key
// tile for a warp's 16 query rows. Mask and softmax between them are common/mask.cuh and
// common/online_softmax.cuh.
#pragma once

#include <cstdint>

#include "backends/cuda/common/elem_ops.cuh"
#include "backends/cuda/common/online_softmax.cuh"
#include "backends/cuda/common/ptx.cuh"
#include "backends/cuda/sm80/config.cuh"

namespace flashcore::cuda::detail {

// Copy rows [row0, row0 + rows) of a [seqlen x D] matrix (row stride `stride`) into a swizzled smem
// tile; rows at or past `seqlen` are zero-filled (never read). Threads first..first+nthr-1 share it.
// nthr is a multiple of D/8 (32 threads or more), so a thread always copies the same 16-byte column
// chunk, of rows r, r + nthr/(D/8), ...: one pointer bump, one compare and one cp.async per chunk.
template <int D, typename Elem>
__device__ __forceinline__ void load_tile_async(Elem* s, const Elem* g, long long stride, int row0, int rows,
                                                int seqlen, int first, int nthr) {
  constexpr int kChunks = TileConfig<D>::kChunks;
  const int chunk = first % kChunks;
  const int row_step = nthr / kChunks;
  const uint32_t s_base = smem_u32(s);
  const Elem* src = g + (long long)(row0 + first / kChunks) * stride + chunk * 8;
  const long long src_step = (long long)row_step * stride;
  const Elem* safe = g + chunk * 8;  // a valid address for zero-filled rows (nothing is read)
  for (int r = first / kChunks; r < rows; r += row_step, src += src_step) {
    const bool ok = row0 + r < seqlen;
    cp_async_16(s_base + r * (2 * D) + ((chunk ^ (r & 7)) << 4), ok ? src : safe, ok);
  }
}

// State of a compute warp (16 query rows): Q fragments, O accumulator, softmax rows. Never leaves registers.
template <int D>
struct WarpState {
  uint32_t q[D / 16][4];   // Q A-fragments, one per k16 step (rows: the warp's 16 query rows)
  float o[D / 8][4];       // O accumulator, C-fragment per n8 column tile of the head dim
  SoftmaxRows sm;          // running max and sum of rows g and g+8
};

// Per-lane byte offsets of the ldmatrix row addresses inside a swizzled [64 x D] tile. With the
// swizzle chunk ^ (row & 7) and row & 7 == lane & 7 for every address below, k16 step kk = 4a + c
// reads chunk 8a + ((2c + half) ^ (lane & 7)): four per-lane offsets plus compile-time immediates.
struct LaneOffsets {
  uint32_t k[4];  // K (non-transposed B operand): row (lane&7) + 8·(lane>>4), chunk half (lane>>3)&1
  uint32_t v[4];  // V (transposed B operand):     row (lane&7) + 8·((lane>>3)&1), chunk half lane>>4
};
template <int D>
__device__ __forceinline__ LaneOffsets lane_offsets(int lane) {
  LaneOffsets o;
  const int sw = lane & 7;
  const int krow = (lane & 7) + ((lane >> 4) << 3), kchk = (lane >> 3) & 1;
  const int vrow = (lane & 7) + (((lane >> 3) & 1) << 3), vchk = lane >> 4;
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    o.k[c] = 2 * krow * D + (((2 * c + kchk) ^ sw) << 4);
    o.v[c] = 2 * vrow * D + (((2 * c + vchk) ^ sw) << 4);
  }
  return o;
}

// S = Q · Kᵀ for one 64-key tile (fp32 C-fragments: s[i] covers keys 8i..8i+7).
// B[k][n] = K[n][k]: K rows are B columns, so plain ldmatrix. x4 matrices:
// (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 0-7), (keys 8-15, d 8-15)
//   -> {b0, b1} of key tile 2np, {b0, b1} of key tile 2np+1.
template <int D, typename Elem>
__device__ __forceinline__ void qk_tile(float (&s)[kBlockN / 8][4], const WarpState<D>& st, uint32_t sK,
                                        const LaneOffsets& lo) {
  using Cfg = TileConfig<D>;
#pragma unroll
  for (int i = 0; i < Cfg::kSTiles; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < Cfg::kQKSteps; ++kk) {
    const uint32_t base = sK + lo.k[kk & 3] + (kk >> 2) * 128;
#pragma unroll
    for (int np = 0; np < Cfg::kSTiles / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, base + np * 16 * D * 2);
      ElemOps<Elem>::mma(s[2 * np], st.q[kk], b[0], b[1]);
      ElemOps<Elem>::mma(s[2 * np + 1], st.q[kk], b[2], b[3]);
    }
  }
}

// O += P · V for one 64-key tile; P = the softmax's probabilities in the score registers (see
// pack_p_fragment). B[k][n] = V[key k][d n] is "col" only after transposing: ldmatrix.trans. x4
// matrices: (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 8-15)
//   -> {b0, b1} of d tile 2dp, {b0, b1} of d tile 2dp+1.
template <int D, typename Elem>
__device__ __forceinline__ void pv_tile(float (&o)[D / 8][4], const float (&s)[kBlockN / 8][4], uint32_t sV,
                                        const LaneOffsets& lo) {
  using Cfg = TileConfig<D>;
#pragma unroll
  for (int kk = 0; kk < Cfg::kPVSteps; ++kk) {
    uint32_t pa[4];
    pack_p_fragment<Elem>(pa, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
    for (int dp = 0; dp < Cfg::kOTiles / 2; ++dp) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, sV + lo.v[dp & 3] + (dp >> 2) * 128 + kk * 16 * D * 2);
      ElemOps<Elem>::mma(o[2 * dp], pa, b[0], b[1]);
      ElemOps<Elem>::mma(o[2 * dp + 1], pa, b[2], b[3]);
    }
  }
}

}  // namespace flashcore::cuda::detail
