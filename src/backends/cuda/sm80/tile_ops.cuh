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

// Copy rows [row0, row0 + rows) of a [seqlen x head_dim] matrix (row stride `stride`) into a swizzled
// smem tile of D columns: rows at or past `seqlen` and columns at or past `head_dim` (when
// head_dim < D) are zero-filled, so they add nothing to Q·Kᵀ or P·V; the row
// padding past D (common/swizzle.cuh) is neither written nor read. Threads first..first+nthr-1 share it.
// When 32 is a multiple of the row's chunks (D = 32, 64, 128, 256; 96 counts its padded 16 chunks) a
// thread always copies the same column chunk, of rows r, r + nthr/chunks, ...: one pointer bump, one
// compare and one cp.async per chunk. Otherwise (D = 192: 24 chunks) it walks the flat chunk index.
template <int D, typename Elem>
__device__ __forceinline__ void load_tile_async(Elem* s, const Elem* g, long long stride, int row0, int rows,
                                                int seqlen, int head_dim, int first, int nthr) {
  constexpr int kChunks = TileConfig<D>::kChunks;
  constexpr unsigned kRowChunks = TileConfig<D>::kRow / 8;
  const uint32_t s_base = smem_u32(s);
  if constexpr (32 % kRowChunks == 0) {
    const int chunk = unsigned(first) % kRowChunks;
    if (kChunks < int(kRowChunks) && chunk >= kChunks) return;  // row padding (D = 96: chunks 12..15)
    const int row_step = unsigned(nthr) / kRowChunks;
    const bool col_ok = chunk * 8 < head_dim;
    const int r0 = unsigned(first) / kRowChunks;
    const Elem* src = g + (long long)(row0 + r0) * stride + chunk * 8;
    const long long src_step = (long long)row_step * stride;
    const Elem* safe = g + chunk * 8;  // an address for zero-filled chunks (src-size 0: nothing is read)
    for (int r = r0; r < rows; r += row_step, src += src_step) {
      const bool ok = col_ok && row0 + r < seqlen;
      cp_async_16(s_base + r * TileConfig<D>::kRowBytes + ((chunk ^ (r & 7)) << 4), ok ? src : safe, ok);
    }
  } else {
    for (int c = first; c < rows * kChunks; c += nthr) {
      const int r = c / kChunks, chunk = c % kChunks;
      const bool ok = chunk * 8 < head_dim && row0 + r < seqlen;
      cp_async_16(s_base + r * TileConfig<D>::kRowBytes + ((chunk ^ (r & 7)) << 4),
                  ok ? g + (long long)(row0 + r) * stride + chunk * 8 : g, ok);
    }
  }
}

// One thread's share of the K/V tile copies of a team of kNThr threads (64-row tiles): the wide kernel's
// block (128 threads) or the warp-specialized 16-row kernel's producer warp (32, the block's last warp).
// The copies re-derive the thread's row and chunk from threadIdx.x (team_tid) rather than hold them
// (registers). The thread copies one column chunk of rows r0, r0 + kRowStep, ...: the swizzle's r & 7 then
// takes kPhases values (one where kRowStep is a multiple of 8; 8 / kRowStep for a warp's 2 or 4 rows a
// pass), each held as one shared-memory offset, so every address is one of them plus an immediate. Its
// first source element of K and of V is computed once; a tile is then a compile-time count of pointer
// steps and cp.async (load_tile_async: a run-time loop, with a row test and a pointer select a copy).
// - The tile that holds the sequence's end (a block-uniform test) clamps its rows instead: rows at or past
//   len_k copy the last key's row, not zeros. Their scores are masked (-inf, so P = 0 exactly) wherever
//   such a tile is computed (common/mask.cuh: a tile past len_k is never an unmasked one), as were
//   load_tile_async's zero rows: P·V adds 0 times them.
// - Columns past head_dim (head_dim < D) are zero-filled (source size 0), their address at column 0.
template <int D, int kNThr, typename Elem>
struct KVTileCopy {
  using Cfg = TileConfig<D>;
  static constexpr int kRowChunks = Cfg::kRow / 8;
  static constexpr int kRowStep = kNThr / kRowChunks;
  static constexpr int kCopies = kBlockN / kRowStep;  // per thread and tile
  static constexpr int kPhases = kRowStep % 8 == 0 ? 1 : 8 / kRowStep;  // values of the swizzle's r & 7
  static_assert(kNThr % kRowChunks == 0 && (kRowStep % 8 == 0 || 8 % kRowStep == 0) && kBlockN % kRowStep == 0,
                "tile copy shape");
  const Elem* k;            // K and V at this thread's first row and column (column 0 where zero-filled)
  const Elem* v;
  uint32_t s_off[kPhases];  // bytes into a tile: row r0, this thread's chunk swizzled as in row r0 + p·kRowStep
  bool col_ok;              // false: the chunk lies past head_dim (zero-filled)
  // The thread's index in its team: the whole block, or one warp.
  __device__ __forceinline__ static unsigned team_tid() { return kNThr == 32 ? threadIdx.x & 31u : threadIdx.x; }
  __device__ __forceinline__ static int first_row(int tid) { return tid / kRowChunks; }
  // tid: team_tid().
  __device__ __forceinline__ KVTileCopy(int tid, int head_dim, const Elem* gk, long long k_stride, const Elem* gv,
                                        long long v_stride) {
    const int r0 = first_row(tid), chunk = tid % kRowChunks;
    col_ok = chunk * 8 < head_dim;
    const int col = col_ok ? chunk * 8 : 0;
    k = gk + r0 * k_stride + col;
    v = gv + r0 * v_stride + col;
#pragma unroll
    for (int ph = 0; ph < kPhases; ++ph)
      s_off[ph] = r0 * Cfg::kRowBytes + ((chunk ^ ((r0 + ph * kRowStep) & 7)) << 4);
  }
  // Rows [row0, row0 + 64) of one matrix into the tile at s_tile: g is this thread's first element (k or
  // v), `stride` the matrix's row stride, len_k the sequence's keys.
  __device__ __forceinline__ void operator()(uint32_t s_tile, const Elem* g, long long stride, int row0,
                                             int len_k) const {
    if (Cfg::kChunks < kRowChunks && team_tid() % kRowChunks >= unsigned(Cfg::kChunks)) return;  // row padding (D = 96)
    // The addresses are computed here, after the step's barrier: hoisted above it by ptxas, they spilled
    // (live across the step's Q·Kᵀ and P·V).
    asm volatile("" : "+l"(g));
    if (row0 + kBlockN <= len_k) {  // the whole tile
      const long long step = kRowStep * stride;
      g += row0 * stride;
#pragma unroll
      for (int j = 0; j < kCopies; ++j, g += step)
        cp_async_16(s_tile + s_off[j % kPhases] + j * kRowStep * Cfg::kRowBytes, g, col_ok);
    } else {
      const int last = len_k - 1 - first_row(team_tid());
#pragma unroll
      for (int j = 0; j < kCopies; ++j)
        cp_async_16(s_tile + s_off[j % kPhases] + j * kRowStep * Cfg::kRowBytes,
                    g + min(row0 + j * kRowStep, last) * stride, col_ok);
    }
  }
};

// State of a compute warp (16 query rows): Q fragments, O accumulator, softmax rows. Never leaves registers.
template <int D>
struct WarpState {
  // Q A-fragments, one per k16 step (rows: the warp's 16 query rows); above D = 128 they are re-read
  // from shared memory at q_addr (this lane's ldmatrix row address) instead (TileConfig::kQInRegisters).
  uint32_t q[TileConfig<D>::kQInRegisters ? D / 16 : 1][4];
  // Step kk = 4a + c is at q_addr + ((c << 5) ^ q_x0) + 128a (LaneBases: q_addr = the warp's rows + q,
  // q_x0 = x0).
  uint32_t q_addr, q_x0;
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
    o.k[c] = krow * TileConfig<D>::kRowBytes + (((2 * c + kchk) ^ sw) << 4);
    o.v[c] = vrow * TileConfig<D>::kRowBytes + (((2 * c + vchk) ^ sw) << 4);
  }
  return o;
}

// Per-lane ldmatrix offsets in 4 registers for Q, K and V (the wide kernel; the 16-row kernel's Q above
// kMaxRegisterHeadDim): with sw = lane & 7 and the
// half-chunk bit h, ((2c + h) ^ sw) << 4 = ((h ^ (sw & 1)) << 4) + ((c << 5) ^ ((sw & 6) << 4)), so the
// row part and h go into one base per operand and the chunk term x(c) is one XOR (registers are short).
struct LaneBases {
  uint32_t q, k, v;  // row offset + half-chunk term (Q: row lane&15, h lane>>4; K, V as in LaneOffsets)
  uint32_t x0;       // (lane & 6) << 4
  __device__ __forceinline__ uint32_t x(int c) const { return x0 ^ (uint32_t(c) << 5); }
};
template <int D>
__device__ __forceinline__ LaneBases lane_bases(int lane) {
  LaneBases o;
  const int sw = lane & 7;
  const int krow = (lane & 7) + ((lane >> 4) << 3), kchk = (lane >> 3) & 1;
  const int vrow = (lane & 7) + (((lane >> 3) & 1) << 3), vchk = lane >> 4;
  const int qrow = lane & 15, qchk = lane >> 4;
  constexpr int kRowBytes = TileConfig<D>::kRowBytes;
  o.q = qrow * kRowBytes + ((qchk ^ (sw & 1)) << 4);
  o.k = krow * kRowBytes + ((kchk ^ (sw & 1)) << 4);
  o.v = vrow * kRowBytes + ((vchk ^ (sw & 1)) << 4);
  o.x0 = (sw & 6) << 4;
  return o;
}

// The Q A-fragment of k16 step kk: from registers, or (D > 128) read into `tmp` from the Q tile. x4
// matrices (rows 0-7, d 0-7), (rows 8-15, d 0-7), (rows 0-7, d 8-15), (rows 8-15, d 8-15) of step kk.
template <int D>
__device__ __forceinline__ const uint32_t (&q_fragment(const WarpState<D>& st, int kk, uint32_t (&tmp)[4]))[4] {
  if constexpr (TileConfig<D>::kQInRegisters) {
    return st.q[kk];
  } else {
    ldmatrix_x4(tmp, st.q_addr + ((uint32_t(kk & 3) << 5) ^ st.q_x0) + (kk >> 2) * 128);  // kk = 4·group + c
    return tmp;
  }
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
  // k16 step kk = 4·grp + c: 64-column group grp, chunk pair c (c compile-time: it indexes lo.k).
  auto step = [&](int grp, int c) {
    const uint32_t base = sK + lo.k[c] + grp * 128;
    uint32_t qs[4];
    const uint32_t(&qa)[4] = q_fragment<D>(st, 4 * grp + c, qs);
#pragma unroll
    for (int np = 0; np < Cfg::kSTiles / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, base + np * 16 * Cfg::kRowBytes);
      ElemOps<Elem>::mma(s[2 * np], qa, b[0], b[1]);
      ElemOps<Elem>::mma(s[2 * np + 1], qa, b[2], b[3]);
    }
  };
  if constexpr (Cfg::kQInRegisters) {
#pragma unroll
    for (int kk = 0; kk < Cfg::kQKSteps; ++kk) step(kk >> 2, kk & 3);
  } else {
    // Q from shared memory: one 64-column group (4 k16 steps) per iteration, not unrolled, or ptxas
    // hoists every group's Q and K fragments ahead and spills next to the D/2-float O accumulator.
#pragma unroll 1
    for (int grp = 0; grp < Cfg::kQKSteps / 4; ++grp)
#pragma unroll
      for (int c = 0; c < 4; ++c) step(grp, c);
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
  auto step = [&](int kk, const uint32_t(&pa)[4]) {
#pragma unroll
    for (int dp = 0; dp < Cfg::kOTiles / 2; ++dp) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, sV + lo.v[dp & 3] + (dp >> 2) * 128 + kk * 16 * Cfg::kRowBytes);
      ElemOps<Elem>::mma(o[2 * dp], pa, b[0], b[1]);
      ElemOps<Elem>::mma(o[2 * dp + 1], pa, b[2], b[3]);
    }
  };
  if constexpr (Cfg::kQInRegisters) {
#pragma unroll
    for (int kk = 0; kk < Cfg::kPVSteps; ++kk) {
      uint32_t pa[4];
      pack_p_fragment<Elem>(pa, s[2 * kk], s[2 * kk + 1]);
      step(kk, pa);
    }
  } else {  // D > 128: pack all of P first (16 registers) so the 32 fp32 scores are dead during P·V
    uint32_t pa[Cfg::kPVSteps][4];
#pragma unroll
    for (int kk = 0; kk < Cfg::kPVSteps; ++kk) pack_p_fragment<Elem>(pa[kk], s[2 * kk], s[2 * kk + 1]);
#pragma unroll
    for (int kk = 0; kk < Cfg::kPVSteps; ++kk) step(kk, pa[kk]);
  }
}

}  // namespace flashcore::cuda::detail
