// The wide-warp mma.sync kernel (large problems, compute capability 8.0+): every warp owns 32 query
// rows (two m16 tiles) that share each K and V fragment read from shared memory, halving the ldmatrix
// traffic per MMA (16 rows per warp re-read the whole K/V tile for every 16 rows: 16 FLOP per byte of
// ldmatrix; here 32 where Q stays in registers (D = 64), less where Q is re-read from shared memory:
// D = 96/128, where 2x(Q, O, S) fragments do not fit registers, and D = 32's two-tile steps).
// Fixed shape: 4 warps x 32 rows = 128 rows per block, one K/V tile ring (`stages` deep, slot s holds
// K and V of the same tile), AllWarps loads, one __syncthreads per step (one tile; two at D = 32:
// kWideTilesPerStep), no KV groups, no split-KV, no S(i+1) prefetch (two blocks per SM = 2 warps per
// scheduler hide the softmax instead).
// Mask, online softmax, scheduler, sequence layouts and epilogue: common/.
#pragma once

#include <cstdint>

#include "backends/cuda/common/epilogue.cuh"
#include "backends/cuda/common/mask.cuh"
#include "backends/cuda/common/online_softmax.cuh"
#include "backends/cuda/common/scheduler.cuh"
#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/sm80/tile_ops.cuh"

namespace flashcore::cuda::detail {

template <int D>
struct WideState {
  // Q A-fragments kept in registers: D = 64 (one tile a step). Two-tile steps (D = 32) read Q from shared
  // memory: beside their 128 score registers Q spills on sm_90 (ptxas, nvcc 13.0).
  static constexpr bool kQRegs = D <= 64 && kWideTilesPerStep<D> == 1;
  uint32_t q[2][kQRegs ? D / 16 : 1][4];
  float o[2][D / 8][4];
  float row_max[2][2];  // [m tile][rows g, g+8]: the softmax state of common/online_softmax.cuh
  float row_sum[2][2];
};

// The wide kernel's lazy max (common/online_softmax.cuh, slack; the Hopper kernel's kMaxSlack): 8 in the log2
// domain at D = 96 and 128 (P up to 2^8, held by fp16 and bf16, the only inputs this kernel takes), off
// below. H200, forced cuda-flash-allwarps, run 35a: D = 128 rows 1-2 % faster with it, D = 64 up to 1.7 %
// slower; D = 96 neutral alone (run 36c: 0.988-1.011), but with it D = 96's Q·Kᵀ k-loop unrolls fully
// without spills (kWideQKUnroll), and the two together take 3.4-5.4 % off every D = 96 row (perf/dev/NOTES.md,
// thirty-fifth and thirty-sixth sessions).
template <int D>
constexpr float kWideSlack = D >= 96 ? 8.f : 0.f;
// The Q·Kᵀ k-loop's unroll where Q comes from shared memory, one tile a step: by 2 at D = 128 (registers
// at the 255 cap, S 64 + O 128 floats: the one unroll without spills on sm_80/86/89/90 with the lazy max;
// ptxas, nvcc 13.0), fully at D = 96 (6 steps, no spills with the lazy max; without it the full unroll
// spilled). D = 64 (Q in registers) and two-tile steps unroll fully.
template <int D>
constexpr int kWideQKUnroll = D == 128 ? 2 : TileConfig<D>::kQKSteps;

// S = Q·Kᵀ of one step (one 64-key tile; two at D = 32) for a 32-row warp: both m tiles share each K fragment.
// Where Q is not in registers (D = 32, 96, 128) each Q fragment is read from shared memory once a step: 40 KB
// of ldmatrix per 256 MMAs at D = 128, where two 32-key halves (before run 35a) read 48 KB. kT tiles a step
// (kWideTilesPerStep): S over 64·kT keys (sK: the step's ring slots). The k-loop's unroll: kWideQKUnroll.
template <int D, typename Elem, int kT>
__device__ __forceinline__ void wide_scores(const WideState<D>& st, float (&s)[2][TileConfig<D>::kSTiles * kT][4],
                                            uint32_t sQw, const uint32_t (&sK)[kT], const LaneBases& lo) {
  using Cfg = TileConfig<D>;
  using Ops = ElemOps<Elem>;
  constexpr bool kQRegs = WideState<D>::kQRegs;
  constexpr int kQKUnroll = kWideQKUnroll<D>;
  constexpr int kST = Cfg::kSTiles * kT;  // n8 score tiles of the step's 64·kT keys
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int i = 0; i < kST; ++i) s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.f;
#pragma unroll kQKUnroll
  for (int kk = 0; kk < Cfg::kQKSteps; ++kk) {
    uint32_t qa[2][4];
    if constexpr (kQRegs) {
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e) qa[mt][e] = st.q[mt][kk][e];
    } else {
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) ldmatrix_x4(qa[mt], sQw + lo.q + lo.x(kk & 3) + (kk >> 2) * 128 + mt * 16 * Cfg::kRowBytes);
    }
#pragma unroll
    for (int t = 0; t < kT; ++t) {
      const uint32_t base = sK[t] + lo.k + lo.x(kk & 3) + (kk >> 2) * 128;
#pragma unroll
      for (int np = 0; np < Cfg::kSTiles / 2; ++np) {
        uint32_t b[4];
        ldmatrix_x4(b, base + np * 16 * Cfg::kRowBytes);
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          Ops::mma(s[mt][t * Cfg::kSTiles + 2 * np], qa[mt], b[0], b[1]);
          Ops::mma(s[mt][t * Cfg::kSTiles + 2 * np + 1], qa[mt], b[2], b[3]);
        }
      }
    }
  }
}

// The rest of a step: mask, online softmax (one update and one O rescale a step), O += P·V (P C-fragments are
// the A-fragments: pack_p_fragment; each V fragment feeds both m tiles; sV: the step's ring slots).
template <int D, typename Elem, int kT, bool kMask, class Mask>
__device__ __forceinline__ void wide_softmax_pv(WideState<D>& st, float (&s)[2][TileConfig<D>::kSTiles * kT][4],
                                                const uint32_t (&sV)[kT], const LaneBases& lo, const Mask& mask,
                                                float sl2, int row_lo, int key0, int lane) {
  using Cfg = TileConfig<D>;
  using Ops = ElemOps<Elem>;
  constexpr float kSlack = kWideSlack<D>;
  constexpr int kST = Cfg::kSTiles * kT;
  const int g = lane >> 2;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    if constexpr (kMask) mask.apply(s[mt], row_lo + 16 * mt + g, key0, lane);
    float alpha[2];
    softmax_update<kST, 0, true>(s[mt], st.row_max[mt], st.row_sum[mt], sl2, alpha, kSlack);
    rescale_rows(st.o[mt], alpha, kSlack);
  }
#pragma unroll
  for (int kk = 0; kk < kST / 2; ++kk) {
    uint32_t pa[2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) pack_p_fragment<Elem>(pa[mt], s[mt][2 * kk], s[mt][2 * kk + 1]);
#pragma unroll
    for (int dp = 0; dp < Cfg::kOTiles / 2; ++dp) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, sV[kk / Cfg::kPVSteps] + lo.v + lo.x(dp & 3) + (dp >> 2) * 128 +
                               (kk % Cfg::kPVSteps) * 16 * Cfg::kRowBytes);
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        Ops::mma(st.o[mt][2 * dp], pa[mt], b[0], b[1]);
        Ops::mma(st.o[mt][2 * dp + 1], pa[mt], b[2], b[3]);
      }
    }
  }
}

// One step: S = Q·Kᵀ, then the rest.
template <int D, typename Elem, int kT, bool kMask, class Mask>
__device__ __forceinline__ void wide_tile(WideState<D>& st, uint32_t sQw, const uint32_t (&sK)[kT],
                                          const uint32_t (&sV)[kT], const LaneBases& lo, const Mask& mask, float sl2,
                                          int row_lo, int key0, int lane) {
  float s[2][TileConfig<D>::kSTiles * kT][4];
  wide_scores<D, Elem, kT>(st, s, sQw, sK, lo);
  wide_softmax_pv<D, Elem, kT, kMask>(st, s, sV, lo, mask, sl2, row_lo, key0, lane);
}

template <int D, typename Elem, class Mask>
__global__ void __launch_bounds__(32 * kWideWarps, 2)
flash_fwd_wide_kernel(const __grid_constant__ KernelArgs a) {
  using Cfg = TileConfig<D>;
  constexpr int kThreads = 32 * kWideWarps;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Elem* sQ = reinterpret_cast<Elem*>(smem_raw);
  Elem* sRing = sQ + kWideBlockM * Cfg::kRow;

  const FlashFwdParams& p = a.p;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int stages = a.stages;
  const BlockCoord blk = heavy_first_block<false>(a.n_mblocks, a.q_heads_per_kv);
  const int h = blk.h, b = blk.b, hk = blk.hk;
  const int m0 = blk.mblock * kWideBlockM;
  const Mask mask(p, b);  // knows the lengths of the block's sequence (common/sequences.cuh)
  if (m0 >= mask.seq.len_q()) return;  // past this sequence's queries
  const int n_tiles = mask.tiles(m0 + kWideBlockM, kBlockN);  // tiles the block loads
  const int row_lo = m0 + warp * kWideWarpRows;  // this warp's first query row
  // This warp computes tiles [0, w_tiles); tiles before w_full need no mask.
  const int w_tiles = min(n_tiles, mask.tiles(row_lo + kWideWarpRows, kBlockN));
  const int w_full = mask.unmasked_tiles(row_lo, kBlockN);

  const SequenceHead<Elem> rows = sequence_head<Elem>(p, b, h, hk);
  const uint32_t ring = smem_u32(sRing);
  // Tiles to load: n_tiles rounded up to whole steps, so that a step's second tile always holds loaded
  // data: rows past len_k (zeros from load_tile_async at D = 32, copies of the last key from KVTileCopy
  // above), or keys below len_k that no row of the block sees (causal); their scores are masked, so P·V adds
  // 0 times them, as for any masked key.
  constexpr int kT = kWideTilesPerStep<D>;
  const int n_load = (n_tiles + kT - 1) / kT * kT;
  // K and V of tile t into ring slot `slot`. One tile a step (D = 64, 96, 128): KVTileCopy (sm80/tile_ops.cuh).
  // H100, forced cuda-flash-allwarps, run 56b (with the ring depth compiled in as well, which alone changed
  // nothing): D = 128 rows 0.90-0.98 of the time before, D = 64 0.91-0.95 (perf/dev/NOTES.md, fifty-sixth
  // session). D = 32's two-tile steps keep load_tile_async: with KVTileCopy they spill on sm_80 and sm_90
  // (ptxas, nvcc 13.0).
  constexpr bool kLeanCopies = kT == 1;
  // (unused at D = 32)
  const KVTileCopy<D, kThreads, Elem> copy(tid, p.head_dim, rows.k, p.k_seq_stride, rows.v, p.v_seq_stride);
  auto fill = [&](int t, int slot) {
    if (t < n_load) {
      if constexpr (kLeanCopies) {
        const uint32_t k = ring + slot * 4 * Cfg::kTileElems;  // bytes: K then V of the slot
        copy(k, copy.k, p.k_seq_stride, t * kBlockN, mask.seq.len_k());
        copy(k + 2 * Cfg::kTileElems, copy.v, p.v_seq_stride, t * kBlockN, mask.seq.len_k());
      } else {
        Elem* k = sRing + slot * 2 * Cfg::kTileElems;
        const int len_k = mask.seq.len_k();
        load_tile_async<D>(k, rows.k, p.k_seq_stride, t * kBlockN, kBlockN, len_k, p.head_dim, tid, kThreads);
        load_tile_async<D>(k + Cfg::kTileElems, rows.v, p.v_seq_stride, t * kBlockN, kBlockN, len_k, p.head_dim, tid,
                           kThreads);
      }
    }
  };
  // Steps of kT tiles: the ring (stages >= 2·kT, the plan's wide_min_stages) holds the step's tiles and
  // the next step's in flight. Prologue: Q + tile 0 (group 0), tiles 1..stages-kT-1 (one group a tile;
  // empty groups keep the count).
  load_tile_async<D>(sQ, rows.q, p.q_seq_stride, m0, kWideBlockM, mask.seq.len_q(), p.head_dim, tid, kThreads);
  for (int i = 0; i < stages - kT; ++i) {
    fill(i, i);
    cp_async_commit();
  }

  WideState<D> st;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
    for (int j = 0; j < Cfg::kOTiles; ++j) st.o[mt][j][0] = st.o[mt][j][1] = st.o[mt][j][2] = st.o[mt][j][3] = 0.f;
    st.row_max[mt][0] = st.row_max[mt][1] = -INFINITY;
    st.row_sum[mt][0] = st.row_sum[mt][1] = 0.f;
  }
  // Q A-fragments: x4 = rows 0-7 / 8-15 of the m tile at chunk 2kk, then at chunk 2kk+1 (as load_q_fragments).
  const LaneBases lo = lane_bases<D>(lane);
  const uint32_t sQw = smem_u32(sQ) + warp * kWideWarpRows * Cfg::kRowBytes;

  // Ring slot arithmetic (tile t in slot t mod stages); with one tile a step, the forms of before
  // (the same SASS as a kernel without steps).
  const auto wrap = [stages](int x) { return x >= stages ? x - stages : x; };  // x < 2·stages
  int slot = 0;  // ring slot of tile i
  for (int i = 0; i < n_tiles; i += kT) {
    cp_async_wait_dyn(stages - 2 * kT);  // tiles i..i+kT-1 landed (this thread's copies)...
    __syncthreads();                     // ...and everyone's; everyone is done with the previous step's tiles
#pragma unroll
    for (int u = 0; u < kT; ++u) {  // the next step's tiles into the previous step's slots
      if constexpr (kT == 1)
        fill(i + stages - 1, slot == 0 ? stages - 1 : slot - 1);
      else
        fill(i + stages - kT + u, wrap(slot + stages - kT + u));
      cp_async_commit();
    }
    if constexpr (WideState<D>::kQRegs) {
      if (i == 0) {
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int kk = 0; kk < Cfg::kQKSteps; ++kk)
            ldmatrix_x4(st.q[mt][kk], sQw + lo.q + lo.x(kk & 3) + (kk >> 2) * 128 + mt * 16 * Cfg::kRowBytes);
      }
    }
    uint32_t sK[kT], sV[kT];
#pragma unroll
    for (int u = 0; u < kT; ++u) {
      sK[u] = ring + (u == 0 ? slot : wrap(slot + u)) * 4 * Cfg::kTileElems;
      sV[u] = sK[u] + 2 * Cfg::kTileElems;
    }
    if (i + kT <= w_full)
      wide_tile<D, Elem, kT, false>(st, sQw, sK, sV, lo, mask, a.scale_log2, row_lo, i * kBlockN, lane);
    else if (i < w_tiles)  // a step that ends past w_tiles masks its keys there like any other
      wide_tile<D, Elem, kT, true>(st, sQw, sK, sV, lo, mask, a.scale_log2, row_lo, i * kBlockN, lane);
    if constexpr (kT == 1)
      slot = (slot + 1 == stages) ? 0 : slot + 1;
    else
      slot = wrap(slot + kT);
  }
  cp_async_wait<0>();  // nothing of this thread in flight (only empty groups can remain)
  if (n_tiles == 0) __syncthreads();  // Q copies of all threads landed before the staging below

  // ---- epilogue: O / l -> this warp's own 32 rows of the Q tile -> 16-byte stores; LSE.
  const int g = lane >> 2;
  Elem* sO = sQ;
  __syncwarp();  // all lanes' ldmatrix reads of these rows are done
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    float inv[2], lse2[2];
    softmax_finish(st.row_max[mt], st.row_sum[mt], a.scale_log2, inv, lse2);
    stage_o_rows<D>(sO, warp * kWideWarpRows + 16 * mt + g, lane, inv, [&](int j, int e) { return st.o[mt][j][e]; });
    write_lse_rows(p, b, h, row_lo + 16 * mt + g, lse2, lane);
  }
  __syncwarp();
  store_o_rows<D>(p, b, h, sO, warp * kWideWarpRows, row_lo, kWideWarpRows, lane);
}

}  // namespace flashcore::cuda::detail
