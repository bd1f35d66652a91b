// The 16-row mma.sync kernel (compute capability 8.0+; also what sm_89 and sm_90 run for small
// problems). One block owns `block_m` query rows of one (batch, head) and walks a range of 64-key
// K/V tiles:
//
//   for each K/V tile (64 keys):
//       S  = Q · Kᵀ                   (mma.sync m16n8k16, fp32 accumulators in registers)
//       S  = transform(S)             (Mask policy: soft-capping, ALiBi; VariantMask only)
//       S  = mask(S)                  (Mask policy, common/mask.cuh; only on tiles that need it)
//       P, α = online_softmax(S)      (common/online_softmax.cuh)
//       O  = O·α + P · V
//   O /= l;  LSE                      (common/epilogue.cuh)
//
// Every consumer warp owns 16 query rows (one m16 MMA row tile). Its Q fragments, the running
// max/sum, the score tile P and the O accumulator never leave registers; K and V tiles stream
// through a `stages`-deep shared-memory ring filled by 16-byte cp.async.
//
// Sequences (varlen Q, varlen K/V, cache lengths; common/sequences.cuh): a block owns rows of one
// sequence, with that sequence's lengths in the mask; blocks past its last query exit at once.
//
// Split-KV: when (batch · heads · query blocks) cannot fill the GPU, the key range of a query block
// is cut into `tiles_per_split`-tile pieces handled by different blocks, merged by the last one
// (common/epilogue.cuh).
//
// Warp roles. Compute warp w is (row warp rw = w % R, KV group grp = w / R), R = block_m / 16, G =
// key_split_warps: it owns query rows m0 + 16·rw .. +15 and the block's key tiles grp, grp + G, grp + 2G, ...
// (G > 1 spreads a small problem over more warps; the G partial softmax states are merged through shared
// memory at the end). kWarpSpecialized adds one producer warp (the last) that alone issues the K/V
// loads; otherwise every warp loads its share.
//
// Ring: slot s holds, for every group, {K of the group's tile i+1, V of its tile i} for step i; the K
// of each group's first tile goes into slot stages-1 before the loop. Step i issues the MMAs of
// S(i+1) = Q·K(i+1)ᵀ before the softmax and P·V of tile i, so the tensor pipe and the FMA/MUFU pipes
// work on independent instruction streams inside one warp.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backends/cuda/common/epilogue.cuh"
#include "backends/cuda/common/mask.cuh"
#include "backends/cuda/common/online_softmax.cuh"
#include "backends/cuda/common/scheduler.cuh"
#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/sm80/tile_ops.cuh"

namespace flashcore::cuda::detail {

// work on independent instruction streams inside one warp.
// ------------------------------------------------------------------------------------------------
template <int D, typename Elem, bool kWarpSpecialized, class Mask>
__global__ void __launch_bounds__(BlockShape<D, kWarpSpecialized>::kMaxThreads)
flash_fwd_kernel(const __grid_constant__ KernelArgs a) {
  using Cfg = TileConfig<D>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __shared__ int s_is_last;
  __shared__ __align__(8) uint64_t full_bar[kMaxStages];  // warp-specialized only
  Elem* sQ = reinterpret_cast<Elem*>(smem_raw);
  Elem* sRing = sQ + a.block_m * Cfg::kRow;

  const FlashFwdParams& p = a.p;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int n_threads = blockDim.x;
  const int R = a.block_m / kWarpRows, G = Cfg::kSplitsKeys ? a.key_split_warps : 1;
  const int n_compute = 32 * R * G;   // compute threads (all threads unless warp-specialized)
  const int n_epi = 32 * R;           // group-0 threads: they finish the block (epilogue)
  const int rw = warp % R, grp = warp / R;
  const int stages = a.stages;

  // ---- which (batch, head, query block, key split) this block owns, and the key tiles it visits.
  const BlockCoord blk = heavy_first_block<true>(a.n_mblocks, a.q_heads_per_kv);
  const int mblock = blk.mblock, split = blk.split, h = blk.h, b = blk.b, hk = blk.hk;
  const int m0 = mblock * a.block_m;
  // The block's sequence (common/sequences.cuh): the mask knows its lengths (held in registers up
  // to D = 128, read where used above: common/mask.cuh).
  using BlockMask = typename Mask::template WithLengths<std::conditional_t<(D > 128), ReadLengths, HeldLengths>>;
  const BlockMask mask(p, b);
  if (m0 >= mask.seq.len_q()) return;  // past this sequence's queries (seqlen_q bounds every sequence)
  // The block's key tiles are [t_first, n_tiles) (a sliding window starts past 0).
  const int t_first = mask.first_tile(m0, kBlockN);
  const int n_tiles = mask.tiles(m0 + a.block_m, kBlockN);
  const int n_span = max(0, n_tiles - t_first);
  const int n_splits = max(1, (n_span + a.tiles_per_split - 1) / a.tiles_per_split);
  if (split >= n_splits) return;  // this query block needs fewer splits (causal)
  const int t_begin = t_first + split * a.tiles_per_split;
  const int n_iter = max(0, min(n_tiles, t_begin + a.tiles_per_split) - t_begin);  // tiles of this block
  const int n_steps = (n_iter + G - 1) / G;
  // Tiles in [t_full, t_mask) need no mask at all (fully visible to every row of the block).
  const int t_mask = mask.unmasked_tiles(m0, kBlockN);
  const int t_full = mask.unmasked_first(m0 + a.block_m, kBlockN);
  // This warp's group: tiles t_begin + grp + G·i, i < n_mine; those with i in [i_full, i_mask) unmasked.
  const int n_mine = n_iter > grp ? (n_iter - grp + G - 1) / G : 0;
  const int i_mask = min(n_mine, max(0, (t_mask - t_begin - grp + G - 1) / G));
  const int i_full = Mask::kHasLeftBound ? min(n_mine, max(0, (t_full - t_begin - grp + G - 1) / G)) : 0;

  const SequenceHead<Elem> rows = sequence_head<Elem>(p, b, h, hk);
  const Elem* gQ = rows.q;
  const Elem* gK = rows.k;
  const Elem* gV = rows.v;
  auto slot_k = [&](int slot, int g) { return sRing + (slot * G + g) * 2 * Cfg::kTileElems; };
  auto slot_v = [&](int slot, int g) { return sRing + (slot * G + g) * 2 * Cfg::kTileElems + Cfg::kTileElems; };
  auto tile_key0 = [&](int g, int i) { return (t_begin + g + G * i) * kBlockN; };
  const int t_end = t_begin + n_iter;
  // Fill ring slot `slot` for step i: for every group, V of its tile i and K of its tile i+1.
  // copy(dst, is_k, key0) copies the 64 keys from key0 of K or V into the tile at dst: load_tile_async by
  // all threads (all-warps), KVTileCopy by the producer warp (warp-specialized).
  auto fill_slot = [&](int i, int slot, const auto& copy) {
    for (int g = 0; g < G; ++g) {
      const int t = t_begin + g + G * i;  // group g's tile at step i
      if (t < t_end) copy(slot_v(slot, g), std::false_type{}, t * kBlockN);
      if (t + G < t_end) copy(slot_k(slot, g), std::true_type{}, (t + G) * kBlockN);
    }
  };
  // Where the block has 128 or 256 threads (the launch table's all-warps rows up to D = 96; the attention
  // variants' rows), the whole block copies a tile with KVTileCopy (made at each copy from threadIdx.x, so that
  // it holds no registers across the step), else with load_tile_async. H100, run 60a, D = 64: bm32 g2, bm64 g1,
  // bm64 g2 and bm16 g8 0.91-0.97 of the time before, the main job's bm32 g4 0.995-0.998 (perf/dev/NOTES.md,
  // sixtieth session). D = 128 keeps load_tile_async: 20-48 bytes of spills on sm_90 (ptxas, nvcc 13.0).
  const auto block_copy = [&](Elem* dst, auto is_k, int key0) {
    constexpr bool k = decltype(is_k)::value;
    const Elem* g = k ? gK : gV;
    const long long stride = k ? p.k_seq_stride : p.v_seq_stride;
    if constexpr (D <= 96 && !kWarpSpecialized) {
      const auto team_copy = [&](auto team) {  // KVTileCopy's team size is a compile-time constant
        const KVTileCopy<D, decltype(team)::value, Elem> kv(tid, p.head_dim, g, stride, g, stride);
        kv(smem_u32(dst), kv.k, stride, key0, mask.seq.len_k());
      };
      if (n_threads == 256) return team_copy(std::integral_constant<int, 256>{});
      if (n_threads == 128) return team_copy(std::integral_constant<int, 128>{});
    }
    load_tile_async<D>(dst, g, stride, key0, kBlockN, mask.seq.len_k(), p.head_dim, tid, n_threads);
  };

  // ---- Q tile and every group's first K -> smem (all threads), one commit group
  load_tile_async<D>(sQ, gQ, p.q_seq_stride, m0, a.block_m, mask.seq.len_q(), p.head_dim, tid, n_threads);
  for (int g = 0; g < G && g < n_iter; ++g)
      load_tile_async<D>(slot_k(stages - 1, g), gK, p.k_seq_stride, tile_key0(g, 0), kBlockN, mask.seq.len_k(), p.head_dim, tid, n_threads);
  cp_async_commit();

  WarpState<D> st;
#pragma unroll
  for (int j = 0; j < Cfg::kOTiles; ++j) st.o[j][0] = st.o[j][1] = st.o[j][2] = st.o[j][3] = 0.f;
  st.sm.init();
  const int row_lo = m0 + rw * kWarpRows;  // first query row of this compute warp

  // Q A-fragments: x4 matrices (rows 0-7, d 0-7), (rows 8-15, d 0-7), (rows 0-7, d 8-15),
  // (rows 8-15, d 8-15) of k16 step kk = a0, a1, a2, a3.
  // Above D = 128 only the lane's address is kept (tile_ops.cuh, q_fragment).
  auto load_q_fragments = [&]() {
    const uint32_t base = smem_u32(sQ);
    const int row = rw * kWarpRows + (lane & 15);
    if constexpr (Cfg::kQInRegisters) {
#pragma unroll
      for (int kk = 0; kk < Cfg::kQKSteps; ++kk)
        ldmatrix_x4(st.q[kk], base + row * Cfg::kRowBytes + (((2 * kk + (lane >> 4)) ^ (lane & 7)) << 4));
    } else {
      const LaneBases lb = lane_bases<D>(lane);
      st.q_addr = base + rw * kWarpRows * Cfg::kRowBytes + lb.q;
      st.q_x0 = lb.x0;
    }
  };

  const LaneOffsets lo = lane_offsets<D>(lane);
  float s_next[Cfg::kSTiles][4];  // scores of this warp's next tile, computed one step ahead
  // One step of a compute warp: S(i+1) MMAs first, then mask, softmax and P·V of tile i (scores in
  // s_next). At the warp's last tile the K half holds stale data: its scores are computed and never used.
  // Above D = 128 (Q read from shared memory, O = D/2 floats) the two score tiles do not fit registers
  // next to O: the step runs P·V(i) first and S(i+1) after it, in one score tile (same ring slot).
  // Scores S of the group's tile i -> transform, mask, online softmax, O = O·α + P·V(slot).
  auto softmax_pv = [&](auto mask_tag, float (&s)[Cfg::kSTiles][4], int i, int slot) {
    if constexpr (Mask::kTransformsScores) mask.transform(s, row_lo + (lane >> 2), tile_key0(grp, i), lane, h);
    if constexpr (decltype(mask_tag)::value) mask.apply(s, row_lo + (lane >> 2), tile_key0(grp, i), lane);
    float alpha[2];
    st.sm.update(s, a.scale_log2, alpha);
    scale_rows(st.o, alpha);
    pv_tile<D, Elem>(st.o, s, smem_u32(slot_v(slot, grp)), lo);
  };
  auto consume = [&](auto mask_tag, int i, int slot) {
    if constexpr (Cfg::kQInRegisters) {
      float s_cur[Cfg::kSTiles][4];
#pragma unroll
      for (int k = 0; k < Cfg::kSTiles; ++k)
#pragma unroll
        for (int e = 0; e < 4; ++e) s_cur[k][e] = s_next[k][e];
      qk_tile<D, Elem>(s_next, st, smem_u32(slot_k(slot, grp)), lo);
      softmax_pv(mask_tag, s_cur, i, slot);
    } else {
      softmax_pv(mask_tag, s_next, i, slot);
      qk_tile<D, Elem>(s_next, st, smem_u32(slot_k(slot, grp)), lo);
    }
  };
  auto compute_step = [&](int i, int slot) {
    if (i < i_mask && i >= i_full) consume(std::false_type{}, i, slot);
    else if (i < n_mine) consume(std::true_type{}, i, slot);
  };

  if constexpr (!kWarpSpecialized) {
    // ================= all warps load and compute; one __syncthreads per step =================
    // Prologue: slots of steps 0..stages-2 in flight (one commit group each; empty groups keep the count).
    for (int i = 0; i < stages - 1; ++i) {
      fill_slot(i, i, block_copy);
      cp_async_commit();
    }
    cp_async_wait_dyn(stages - 1);  // the Q + first-K group has landed (this thread's copies)...
    __syncthreads();                // ...and everyone's
    load_q_fragments();
    qk_tile<D, Elem>(s_next, st, smem_u32(slot_k(stages - 1, grp)), lo);
    int slot = 0;
    for (int i = 0; i < n_steps; ++i) {
      cp_async_wait_dyn(stages - 2);  // slot of step i landed (this thread's copies)...
      __syncthreads();                // ...and everyone's; everyone is also done with step i-1
      fill_slot(i + stages - 1, slot == 0 ? stages - 1 : slot - 1, block_copy);  // slot of step i-1
      cp_async_commit();
      compute_step(i, slot);
      slot = (slot + 1 == stages) ? 0 : slot + 1;
    }
  } else {
    // ================= warp-specialized: producer warp fills the ring, compute warps consume =================
    if (tid == 0)
      for (int s = 0; s < kMaxStages; ++s) mbar_init(smem_u32(&full_bar[s]), 32);
    cp_async_wait<0>();
    __syncthreads();  // Q, first K tiles, barrier init visible; last block-wide barrier
    if (warp == R * G) {
      // ---- producer: fills slot i%S for step i once the compute warps released it (step i-S, or for
      // slot S-1 its first use, the first K tiles), then lets the slot's mbarrier track its copies.
      // Its copies are the wide kernel's (KVTileCopy, one warp a team): a compile-time count of cp.async a
      // tile, no row test or pointer select a copy (load_tile_async). The one warp issues every copy of the
      // block, on the consumers' path whenever the ring runs dry: H100, run 59a, the table's (1,8,1024,64)
      // row 16.7 -> 14.4 us (0.86), other warp-specialized shapes 0.76-0.95 (perf/dev/NOTES.md, fifty-ninth
      // session).
      const KVTileCopy<D, 32, Elem> kv(lane, p.head_dim, gK, p.k_seq_stride, gV, p.v_seq_stride);
      const int len_k = mask.seq.len_k();
      const auto warp_copy = [&](Elem* dst, auto is_k, int key0) {
        if constexpr (decltype(is_k)::value)
          kv(smem_u32(dst), kv.k, p.k_seq_stride, key0, len_k);
        else
          kv(smem_u32(dst), kv.v, p.v_seq_stride, key0, len_k);
      };
      for (int i = 0; i < n_steps; ++i) {
        const int slot = i % stages;
        if (i >= stages - 1) named_bar_sync(kBarEmpty + slot, n_threads);
        fill_slot(i, slot, warp_copy);
        cp_async_mbar_arrive(smem_u32(&full_bar[slot]));
      }
      cp_async_wait<0>();
      return;
    }
    // ---- compute warps
    load_q_fragments();
    qk_tile<D, Elem>(s_next, st, smem_u32(slot_k(stages - 1, grp)), lo);
    if (stages - 1 < n_steps) named_bar_arrive(kBarEmpty + stages - 1, n_threads);  // first K tiles read
    int slot = 0;
    uint32_t phase = 0;
    for (int i = 0; i < n_steps; ++i) {
      mbar_wait_parity(smem_u32(&full_bar[slot]), phase);
      compute_step(i, slot);
      if (i + stages < n_steps) named_bar_arrive(kBarEmpty + slot, n_threads);  // only if it will be refilled
      if (++slot == stages) { slot = 0; phase ^= 1u; }
    }
  }

  // ---- merge the G groups' softmax states (fixed order: deterministic). Groups > 0 park their fp32
  // registers in the (now idle) ring, lane-major so that each group-0 thread reads what its twin wrote.
  if (Cfg::kSplitsKeys && G > 1) {
    constexpr int kVals = Cfg::kOTiles * 4 + 4;  // O fragment + row_max[2] + row_sum[2]
    float* xbuf = reinterpret_cast<float*>(sRing);
    named_bar_sync(kBarConsumers, n_compute);  // every group done with the ring
    if (grp > 0) {
      float* dst = xbuf + ((grp - 1) * R + rw) * kVals * 32 + lane;
#pragma unroll
      for (int j = 0; j < Cfg::kOTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) dst[(j * 4 + e) * 32] = st.o[j][e];
      dst[(kVals - 4) * 32] = st.sm.row_max[0];
      dst[(kVals - 3) * 32] = st.sm.row_max[1];
      dst[(kVals - 2) * 32] = st.sm.row_sum[0];
      dst[(kVals - 1) * 32] = st.sm.row_sum[1];
    }
    named_bar_sync(kBarConsumers, n_compute);
    if (grp > 0) return;
    const float sl2 = a.scale_log2;
    float mx[2] = {st.sm.row_max[0], st.sm.row_max[1]};
    for (int g = 1; g < G; ++g) {
      const float* src = xbuf + ((g - 1) * R + rw) * kVals * 32 + lane;
      mx[0] = fmaxf(mx[0], src[(kVals - 4) * 32]);
      mx[1] = fmaxf(mx[1], src[(kVals - 3) * 32]);
    }
    // factor of a state with max m: 2^((m - mx)·scale·log2e); 0 for a state (or row) that saw no key
    auto factor = [&](float m, int r) { return m == -INFINITY ? 0.f : fast_exp2((m - mx[r]) * sl2); };
    float f0 = factor(st.sm.row_max[0], 0), f1 = factor(st.sm.row_max[1], 1);
    st.sm.row_sum[0] *= f0;
    st.sm.row_sum[1] *= f1;
    scale_rows(st.o, {f0, f1});
    for (int g = 1; g < G; ++g) {
      const float* src = xbuf + ((g - 1) * R + rw) * kVals * 32 + lane;
      f0 = factor(src[(kVals - 4) * 32], 0);
      f1 = factor(src[(kVals - 3) * 32], 1);
      st.sm.row_sum[0] = fmaf(f0, src[(kVals - 2) * 32], st.sm.row_sum[0]);
      st.sm.row_sum[1] = fmaf(f1, src[(kVals - 1) * 32], st.sm.row_sum[1]);
#pragma unroll
      for (int j = 0; j < Cfg::kOTiles; ++j) {
        st.o[j][0] = fmaf(f0, src[(j * 4 + 0) * 32], st.o[j][0]);
        st.o[j][1] = fmaf(f0, src[(j * 4 + 1) * 32], st.o[j][1]);
        st.o[j][2] = fmaf(f1, src[(j * 4 + 2) * 32], st.o[j][2]);
        st.o[j][3] = fmaf(f1, src[(j * 4 + 3) * 32], st.o[j][3]);
      }
    }
    st.sm.row_max[0] = mx[0];
    st.sm.row_max[1] = mx[1];
  }

  // =============================== epilogue (group-0 warps) ===============================
  const int g = lane >> 2;
  float inv[2], lse2[2];
  st.sm.finish(mask, h, a.scale_log2, inv, lse2);
  const int row0 = row_lo + g;

  if (!Cfg::kSplitsKeys || n_splits == 1) {
    // O -> smem (this warp's own 16 rows of the Q tile, no longer needed) -> 16-byte stores.
    Elem* sO = sQ;
    __syncwarp();  // all lanes' ldmatrix reads of these rows are done (formal WAR order for racecheck)
    stage_o_rows<D>(sO, rw * kWarpRows + g, lane, inv, [&](int j, int e) { return st.o[j][e]; });
    __syncwarp();
    store_o_rows<D>(p, b, h, sO, rw * kWarpRows, row_lo, kWarpRows, lane);
    write_lse_rows(p, b, h, row0, lse2, lane);
    return;
  }

  // ---- split-KV: write this piece's fp32 partial (normalised O, log2 LSE)
  write_split_partial<D>(a, b, h, split, row0, st.o, inv, lse2, lane);
  // Ticket: the last of the n_splits blocks of this query block merges.
  __threadfence();
  named_bar_sync(kBarEpilogue, n_epi);
  int* counter = a.counters + ((long long)b * p.heads_q + h) * a.n_mblocks + mblock;
  if (tid == 0) s_is_last = (atomicAdd(counter, 1) == n_splits - 1);
  named_bar_sync(kBarEpilogue, n_epi);
  if (!s_is_last) return;
  __threadfence();
  // Weights go to the Q region (block_m x D x 2 bytes >= block_m x kMaxSplits x 4 bytes): all warps are
  // past their last use of it (the Q fragments were loaded before the first tile).
  merge_splits<D, Elem>(a, reinterpret_cast<float*>(smem_raw), b, h, m0, n_splits, tid, n_epi, kBarEpilogue);
  if (tid == 0) *counter = 0;  // ready for the next launch
}


}  // namespace flashcore::cuda::detail
