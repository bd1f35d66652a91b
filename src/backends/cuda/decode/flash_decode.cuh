// The decode kernel: few query rows (seqlen_q <= 64) against a long K/V, bound by reading K and V once.
//
// GQA packing. The q_heads_per_kv = G query heads that share KV head hk are computed together: packed
// row r of (sequence b, KV head hk) is query i = r / G of query head hk·G + r % G (the G heads of one
// query are adjacent rows). The G·Lq_b packed rows fill the M dimension of mma.sync m16n8k16 in 16-row
// tiles, so a block reads each K/V tile once for all G heads. A block owns block_m <= 64 packed rows
// (one to four row tiles) and one split of the keys:
//
//   block (b, hk, row block, split) (decode/schedule.cuh: the fixed grid, or the balanced schedule for
//   sequences of their own lengths):
//   keys [k_lo, k_hi) every row of the block may see (the sequence's Lk_b; causal and window limits),
//   cut into 64-key tiles, the tiles split evenly into min(splits, tiles) contiguous pieces
//   for each 64-key tile of this piece (K, V streamed through a `stages`-deep cp.async ring):
//       each of the 4 warps = (row tile mt, key group kg), MT row tiles x KG = 4/MT key groups, takes
//       the tile's keys kg·64/KG .. (kg+1)·64/KG - 1 (MT 16-key slices) for its 16 rows:
//       S = Q·Kᵀ (16 rows x 16·MT keys), transform/mask (variants, causal, tail), online softmax,
//       O = O·α + P·V
//   merge the KG key groups' states (shared memory, fixed order; decode/merge.cuh)
//   one split: O/l and LSE to the output; else an fp32 partial, and the last block of the
//   (b, hk, row block) to finish (atomic ticket) merges the pieces in split order: deterministic
//   (decode/merge.cuh); where the plan made the pieces one thread block cluster (FlashFwdPlan::split_cluster,
//   compute capability 9.0), each leaves its partial in its own shared memory and piece 0 merges them from
//   there after a cluster barrier (merge_cluster_pieces; the same bits). With KernelArgs::split_combine (plans of more than 64 pieces, one or two
//   (b, kv head) pairs; a captured call's fixed-grid split) the blocks stop at the partial; the combine
//   kernel launched after this one merges them (decode/combine.cuh).
//
// Sequences (flashcore.hpp, "Sequences"; core/sequences.hpp): lengths, the rows of Q/O and K/V and
// the LSE index come from numeric::Sequences, so fixed-length, varlen Q/K, cache lengths and paged
// K/V are one code path (paged: a tile may span pages; a thread copies consecutive rows of a tile, which
// lie in one page, through one block-table entry staged in shared memory a ring's depth ahead; D = 256
// with 2 or 4 row tiles looks up every row).
// Keys at or past k_hi are zero-filled, never read.
//
// Variants (common/variant_mask.cuh has the definitions): each row has its own query index and head,
// so the window limits, the ALiBi slope and the sink are per row; checked per tile, not compiled out
// (the kernel waits on memory, the arithmetic is hidden).
#pragma once

#include <cstdint>

#include "backends/cuda/common/cluster.cuh"
#include "backends/cuda/common/dependent_launch.cuh"
#include "backends/cuda/common/dev_timeline.cuh"
#include "backends/cuda/common/elem_ops.cuh"
#include "backends/cuda/common/online_softmax.cuh"
#include "backends/cuda/common/ptx.cuh"
#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/common/swizzle.cuh"
#include "backends/cuda/common/variant_mask.cuh"
#include "backends/cuda/decode/config.cuh"
#include "backends/cuda/decode/merge.cuh"
#include "backends/cuda/decode/schedule.cuh"
#include "backends/cuda/sm80/tile_ops.cuh"

namespace flashcore::cuda::detail {

// Wait until at most n cp.async groups are pending, n < kMaxDecodeStages (common/ptx.cuh's
// cp_async_wait_dyn stops at 3; the decode ring goes deeper).
__device__ __forceinline__ void cp_async_wait_upto(int n) {
  switch (n) {
    case 7: cp_async_wait<7>(); break;
    case 6: cp_async_wait<6>(); break;
    case 5: cp_async_wait<5>(); break;
    case 4: cp_async_wait<4>(); break;
    default: cp_async_wait_dyn(n); break;
  }
}

// What one packed row sees: keys lo..hi (inclusive), its ALiBi slope in raw score units (0: none) and
// its sink in the log2 domain (-inf: none).
struct DecodeRow {
  int i, h;       // query index in the sequence, query head
  int dk;         // its diagonal key i + Lk_b - Lq_b (ALiBi distances)
  int lo, hi;
  float neg_slope;
  float sink_l2;
};

// The end of one row's softmax with an optional sink (-inf: none), from the quad-reduced sum l:
// O scale inv and log2-domain LSE; a row that saw no key gets O = 0 and LSE = sink.
__device__ __forceinline__ void finish_row(float row_max, float l, float scale_log2, float sink_l2, float& inv,
                                           float& lse2) {
  const float m = l > 0.f ? row_max * scale_log2 : -INFINITY;
  const float mx = fmaxf(m, sink_l2);
  if (mx == -INFINITY) {
    inv = 0.f;
    lse2 = -INFINITY;
    return;
  }
  const float f = fast_exp2(m - mx);
  const float total = sink_l2 == -INFINITY ? l : fmaf(l, f, fast_exp2(sink_l2 - mx));
  inv = sink_l2 == -INFINITY ? 1.f / l : f / total;
  lse2 = mx + __log2f(total);
}

// kRowTiles (MT): 16-row tiles per block (block_m = 16·MT), 1, 2 or 4.
template <int D, typename Elem, int kRowTiles>
__global__ void __launch_bounds__(kDecodeThreads, DecodeConfig<D>::kBlocksPerSm) flash_decode_kernel(const __grid_constant__ KernelArgs a) {
  using Cfg = DecodeConfig<D>;
  constexpr int kBN = kDecodeBlockN;
  constexpr int MT = kRowTiles, KG = kDecodeWarps / MT;  // row tiles, key groups
  constexpr int kWarpKeys = kBN / KG;                    // keys of a tile one warp takes: 16·MT
  constexpr int kSlices = kWarpKeys / kDecodeSliceN;     // its 16-key slices (k16 steps of P·V)
  constexpr int kSTiles = kWarpKeys / 8;                 // its n8 score tiles
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __shared__ int s_is_last;
  const FlashFwdParams& p = a.p;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int mt = warp % MT, kg = warp / MT;
  const int G = a.q_heads_per_kv;
  FLASHCORE_TIMELINE_NOW(t_entry);  // development timeline only (common/dev_timeline.cuh)

  // ---- the block's work item (decode/schedule.cuh), rows and keys
  const numeric::Sequences seq = sequences_of(p);
  DecodeWork work;
  if (!decode_work(a, seq, &work)) return;
  FLASHCORE_TIMELINE_NOW(t_work);
  const int rb = work.rb, split = work.split, hk = work.hk, b = work.b;
  const int Lq = seq.len_q(b), Lk = seq.len_k(b);
  const int rows = G * Lq;
  const int r0 = rb * a.block_m;
  if (r0 >= rows) return;
  const int r_end = min(rows, r0 + a.block_m);
  const DecodeKeys keys = decode_keys(p, G, Lq, Lk, r0, r_end, work.splits);
  const long long diag = keys.diag;
  const int left = keys.left, right = keys.right;
  const int k_hi = keys.k_hi;
  const long long u_lo = keys.u_lo, u_hi = keys.u_hi;
  const int t_lo = keys.t_lo, n_tiles = keys.n_tiles, n_splits = keys.n_splits;
  if (split == 0 && work.first >= 0 && a.split_combine && tid == 0)  // the balanced schedule merged by the combine
    reinterpret_cast<int2*>(a.part_map)[decode_item_index(a, b, hk, rb)] = make_int2(work.first, work.splits);  // kernel
  // A cluster merge (the plan's split_cluster: this launch's clusters are the pieces of one (b, hk, row block), so
  // every block of a cluster has the same n_splits): every block takes part in its two barriers.
  const bool clustered = Cfg::kClusterMergeFits && cluster_ctas() > 1;
  if (split >= n_splits) {  // this sequence has fewer tiles than splits
    if (clustered && n_splits > 1) cluster_sync_all(), cluster_sync_all();
    return;
  }
  const int t_begin = t_lo + (int)((long long)n_tiles * split / n_splits);
  const int n_iter = t_lo + (int)((long long)n_tiles * (split + 1) / n_splits) - t_begin;

  // ---- pointers and shared memory
  const Strides qs = q_strides(p), ks = k_strides(p), vs = v_strides(p), os = o_strides(p);
  const Elem* gK = static_cast<const Elem*>(p.k) + hk * p.k_head_stride;
  const Elem* gV = static_cast<const Elem*>(p.v) + hk * p.v_head_stride;
  Elem* sQ = reinterpret_cast<Elem*>(smem_raw);
  Elem* sRing = sQ + a.block_m * Cfg::kRow;
  const int stages = a.stages;

  // Q rows r0 .. r0 + block_m - 1 (rows past the sequence's and columns past head_dim zero-filled).
  for (int c = tid; c < a.block_m * Cfg::kRowChunks; c += kDecodeThreads) {
    const int r = c / Cfg::kRowChunks, ch = c % Cfg::kRowChunks;
    if (ch >= Cfg::kChunks) continue;  // row padding (D = 96)
    const int row = r0 + r;
    const bool ok = row < r_end && ch * 8 < p.head_dim;
    const Elem* src = static_cast<const Elem*>(p.q) + ch * 8;
    if (ok) src += seq.q_row(qs, b, row / G) + (long long)(hk * G + row % G) * p.q_head_stride;
    cp_async_16(smem_u32(sQ + swz<D>(r, ch)), src, ok);
  }
  cp_async_commit();

  // K and V of tile t -> ring slot: this thread copies column chunk tid % kRowChunks of kLdRows
  // consecutive rows, ld_row·kLdRows onwards. They lie in one page (kLdRows divides 16, page sizes are
  // multiples of 16), so a tile costs this thread one block-table entry and one row offset; the rows
  // follow at the sequence stride, as without pages. Keys at or past k_hi and columns past head_dim
  // are zero-filled.
  // Block-table entries travel a ring's depth ahead of their tile, through shared memory: s_pages holds
  // the entry of each 16-row chunk of a tile (a thread's rows lie in one chunk), and threads 0-3 copy the
  // entries of tile t + stages - 1 by cp.async in tile t's commit group, so they have landed when the
  // loop's barrier says tile t has (the copies are asm with a memory clobber: a lookup among them waits
  // its round trip before the next copy issues). The prologue's tiles read theirs in one round trip
  // before their copies. (Paged decode was 1.3x contiguous on an H200 with per-row lookups; entries one
  // tile ahead in a register brought it to 1.02-1.05x with two blocks per SM but not with one: that round
  // trip lay in the copy-issue path when no second block had copies in flight; perf/dev/NOTES.md,
  // fifteenth and forty-second sessions.)
  constexpr int kLdRows = kBN / Cfg::kLoadRowStep;  // rows this thread copies per tile
  static_assert(16 % kLdRows == 0, "a thread's rows of a tile must lie in one page");
  // D = 256 with 2 or 4 row tiles: no registers to spare (consecutive rows spilled 12-52 bytes even
  // without the read-ahead, 20-92 with it): a lookup per row, kLoadRowStep rows apart. One row tile
  // (Lq = 1 decode) has room.
  constexpr bool kPageAhead = D <= 128 || MT == 1;
  constexpr int kChunks16 = kBN / 16;  // 16-row chunks of a tile: entries per tile
  static_assert(kChunks16 <= 4 && 4 * (kMaxDecodeStages - 1) <= kDecodeThreads, "threads 0-3 stage a tile's entries");
  constexpr int kPageSlots = 16;  // entry slots: tile i of the piece in slot i % 16 (> 2·stages - 2 tiles in flight)
  static_assert(kPageSlots >= 2 * kMaxDecodeStages - 1, "an entry slot is refilled after its tile's copies issued");
  __shared__ int s_pages[kPageSlots][kChunks16];
  const int ld_chunk = tid % Cfg::kRowChunks, ld_row = tid / Cfg::kRowChunks;
  const int ld_r0 = kPageAhead ? ld_row * kLdRows : ld_row;
  const bool ld_col_ok = ld_chunk < Cfg::kChunks && ld_chunk * 8 < p.head_dim;
  const bool paged = seq.block_table != nullptr;
  const long long k_row0 = paged ? 0 : seq.kv_row(ks, b, 0), v_row0 = paged ? 0 : seq.kv_row(vs, b, 0);
  const int* table = paged ? seq.block_table + (long long)b * seq.pages_per_seq : nullptr;
  auto load_tile = [&](int t, int slot, int page) {
    if (ld_chunk >= Cfg::kChunks) return;
    const uint32_t sK = smem_u32(sRing + slot * 2 * Cfg::kTileElems);
    const uint32_t sV = sK + Cfg::kTileElems * 2;
    if constexpr (!kPageAhead) {
#pragma unroll
      for (int r = ld_row; r < kBN; r += Cfg::kLoadRowStep) {
        const int j = t * kBN + r;
        const bool ok = ld_col_ok && j < k_hi;
        const long long ko = ok ? seq.kv_row(ks, b, j) : 0, vo = ok ? seq.kv_row(vs, b, j) : 0;
        const uint32_t dst = r * Cfg::kRowBytes + ((ld_chunk ^ (r & 7)) << 4);
        cp_async_16(sK + dst, gK + ko + ld_chunk * 8, ok);
        cp_async_16(sV + dst, gV + vo + ld_chunk * 8, ok);
      }
      return;
    }
    const int j0 = t * kBN + ld_r0;
    long long ko = k_row0 + (long long)j0 * ks.seq, vo = v_row0 + (long long)j0 * vs.seq;
    if (paged) {
      const long long in_page = j0 % seq.page_size;
      ko = (long long)page * ks.batch + in_page * ks.seq;
      vo = (long long)page * vs.batch + in_page * vs.seq;
    }
    const Elem* k_src = gK + ko + ld_chunk * 8;
    const Elem* v_src = gV + vo + ld_chunk * 8;
#pragma unroll
    for (int n = 0; n < kLdRows; ++n) {
      const int r = ld_r0 + n;
      const bool ok = ld_col_ok && j0 + n < k_hi;
      const uint32_t dst = r * Cfg::kRowBytes + ((ld_chunk ^ (r & 7)) << 4);
      cp_async_16(sK + dst, k_src, ok);  // not read when !ok (zero-fill)
      cp_async_16(sV + dst, v_src, ok);
      k_src += ks.seq;
      v_src += vs.seq;
    }
  };
  // Does this thread copy rows of tile t (its first row before k_hi, its columns within head_dim)?
  auto copies_rows = [&](int t) { return ld_col_ok && t * kBN + ld_r0 < k_hi; };
  // Tile t's copies, and (paged) the entries of tile t + stages - 1 staged in the same commit group.
  auto load_next = [&](int t, int slot) {
    int page = 0;
    if (kPageAhead && paged) {
      const int ta = t + stages - 1;
      if (tid < kChunks16 && ta < t_begin + n_iter && ta * kBN + 16 * tid < k_hi)
        cp_async_4(smem_u32(&s_pages[(ta - t_begin) % kPageSlots][tid]), table + (ta * kBN + 16 * tid) / seq.page_size);
      if (copies_rows(t)) page = s_pages[(t - t_begin) % kPageSlots][ld_r0 / 16];
    }
    load_tile(t, slot, page);
  };
  // Prologue: the entries of tiles 0 .. stages-2 (paged; every load in flight at once), then their
  // copies, one commit group each (empty groups keep the count).
  if (kPageAhead && paged) {
    const int s = tid / kChunks16, c = tid % kChunks16;
    const int j = (t_begin + s) * kBN + 16 * c;
    if (s < stages - 1 && s < n_iter && j < k_hi) s_pages[s][c] = __ldg(table + j / seq.page_size);
    __syncthreads();
  }
  FLASHCORE_TIMELINE_NOW(t_table);
  for (int s = 0; s < stages - 1; ++s) {
    if (s < n_iter) load_next(t_begin + s, s);
    cp_async_commit();
  }
  FLASHCORE_TIMELINE_NOW(t_copies);

  // ---- this thread's two rows (row0 = lane/4 of its row tile, and row0 + 8)
  const int g = lane >> 2, t4 = lane & 3;
  DecodeRow rw[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int row = r0 + mt * kWarpRows + g + 8 * e;
    DecodeRow& x = rw[e];
    x.i = row / G;
    x.h = hk * G + row % G;
    const long long dk = x.i + diag;
    x.dk = (int)dk;
    x.hi = right >= 0 ? (int)max(-1ll, min((long long)Lk - 1, dk + right)) : Lk - 1;
    x.lo = left >= 0 ? clamp_key(dk - left, Lk) : 0;
    x.neg_slope = p.alibi_slopes != nullptr ? -__ldg(p.alibi_slopes + x.h) / p.scale : 0.f;
    x.sink_l2 = sink_log2_of(p, x.h);
  }

  float o[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  const LaneOffsets lo = lane_offsets<D>(lane);
  const uint32_t q_base = smem_u32(sQ) + (mt * kWarpRows + (lane & 15)) * Cfg::kRowBytes;
  // Q A-fragment of k16 step kk (x4: rows 0-7 / 8-15 x d 0-7 / 8-15 of the step).
  auto q_addr = [&](int kk) { return q_base + (((2 * kk + (lane >> 4)) ^ (lane & 7)) << 4); };
  uint32_t q[Cfg::kQInRegisters ? D / 16 : 1][4];

  cp_async_wait_upto(stages - 1);  // Q has landed (this thread's copies)...
  __syncthreads();                // ...and everyone's
  FLASHCORE_TIMELINE_NOW(t_qready);
  if constexpr (Cfg::kQInRegisters) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(q[kk], q_addr(kk));
  }

  // This warp's keys of the tile in ring slot (sK, sV): keys key0 .. key0 + kWarpKeys - 1 (tile rows
  // kg·kWarpKeys ..), rows of its row tile.
  auto warp_tile = [&](uint32_t sK, uint32_t sV, int key0, bool need_mask) {
    const uint32_t row_off = kg * kWarpKeys * Cfg::kRowBytes;
    float s[kSTiles][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t qa[4];
      if constexpr (Cfg::kQInRegisters) {
        qa[0] = q[kk][0], qa[1] = q[kk][1], qa[2] = q[kk][2], qa[3] = q[kk][3];
      } else {
        ldmatrix_x4(qa, q_addr(kk));
      }
#pragma unroll
      for (int k = 0; k < kSlices; ++k) {
        uint32_t bk[4];
        ldmatrix_x4(bk, sK + row_off + lo.k[kk & 3] + (kk >> 2) * 128 + k * kDecodeSliceN * Cfg::kRowBytes);
        ElemOps<Elem>::mma(s[2 * k], qa, bk[0], bk[1]);
        ElemOps<Elem>::mma(s[2 * k + 1], qa, bk[2], bk[3]);
      }
    }
    const int c0 = key0 + 2 * t4;  // key of s[n][e] (row e/2): c0 + 8n + e%2
    softcap_scores(s, p);
    if (p.alibi_slopes != nullptr) {
#pragma unroll
      for (int n = 0; n < kSTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const DecodeRow& x = rw[e >> 1];
          s[n][e] = fmaf(x.neg_slope, (float)abs(c0 + 8 * n + (e & 1) - x.dk), s[n][e]);
        }
    }
    if (need_mask) {
#pragma unroll
      for (int n = 0; n < kSTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = c0 + 8 * n + (e & 1);
          if (col < rw[e >> 1].lo || col > rw[e >> 1].hi) s[n][e] = -INFINITY;
        }
    }
    float alpha[2];
    softmax_update(s, row_max, row_sum, a.scale_log2, alpha);
    scale_rows(o, alpha);
#pragma unroll
    for (int k = 0; k < kSlices; ++k) {
      uint32_t pa[4];
      pack_p_fragment<Elem>(pa, s[2 * k], s[2 * k + 1]);
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t bv[4];
        ldmatrix_x4_trans(bv, sV + row_off + lo.v[dp & 3] + (dp >> 2) * 128 + k * kDecodeSliceN * Cfg::kRowBytes);
        ElemOps<Elem>::mma(o[2 * dp], pa, bv[0], bv[1]);
        ElemOps<Elem>::mma(o[2 * dp + 1], pa, bv[2], bv[3]);
      }
    }
  };

  // ---- the key loop: one __syncthreads per tile; the slot of tile i-1 is refilled with tile i+stages-1
  int slot = 0;
  FLASHCORE_TIMELINE_DECL(t_first);
  for (int i = 0; i < n_iter; ++i) {
    cp_async_wait_upto(stages - 2);  // tile i landed (this thread's copies)...
    __syncthreads();                // ...and everyone's; everyone is done with tile i-1
    FLASHCORE_TIMELINE_SET_IF(i == 0, t_first);
    if (i + stages - 1 < n_iter) load_next(t_begin + i + stages - 1, slot == 0 ? stages - 1 : slot - 1);
    cp_async_commit();
    const int key0 = (t_begin + i) * kBN;
    const bool need_mask = key0 < u_lo || key0 + kBN > u_hi;
    const uint32_t sK = smem_u32(sRing + slot * 2 * Cfg::kTileElems);
    const uint32_t sV = sK + Cfg::kTileElems * 2;
    warp_tile(sK, sV, key0 + kg * kWarpKeys, need_mask);
    slot = slot + 1 == stages ? 0 : slot + 1;
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring and Q are free
  dependent_launch_allow();  // K/V read: the combine kernel may launch beside the merges (common/dependent_launch.cuh)
  FLASHCORE_TIMELINE_NOW(t_loop);
  FLASHCORE_TIMELINE_BLOCK(0, split, n_iter, n_splits, 0, t_entry, t_first, t_loop);
  FLASHCORE_TIMELINE_BLOCK(3, split, n_iter, n_splits, 0, t_work, t_table, t_copies);  // the prologue's steps
  FLASHCORE_TIMELINE_BLOCK(4, split, n_iter, n_splits, 0, t_qready, 0, 0);

  // ---- merge the KG key groups (fixed order; decode/merge.cuh), through the ring
  float* xbuf = reinterpret_cast<float*>(sRing);
  merge_key_groups<D, MT, KG>(xbuf, mt, kg, lane, a.scale_log2, o, row_max, row_sum);

  // ---- epilogue: warps of key group 0 hold their row tile's state
  FLASHCORE_TIMELINE_NOW(t_groups);
  long long ws_row0, split_rows;  // workspace row: ws_row0 + split·split_rows + row
  decode_workspace(a, work, &ws_row0, &split_rows);
  if (kg == 0) {
    float inv[2], lse2[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float l = row_sum[e];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      finish_row(row_max[e], l, a.scale_log2, n_splits == 1 ? rw[e].sink_l2 : -INFINITY, inv[e], lse2[e]);
    }
    FLASHCORE_TIMELINE_NOW(t_finish);
    const int row_a = r0 + mt * kWarpRows + g;
    if (n_splits == 1) {
      // O·inv -> this row tile's rows of the Q tile (free) -> 16-byte stores to each row's (query, head).
      Elem* sO = sQ + mt * kWarpRows * Cfg::kRow;
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        *reinterpret_cast<uint32_t*>(sO + swz<D>(g, j) + 2 * t4) = ElemOps<Elem>::pack(o[j][0] * inv[0], o[j][1] * inv[0]);
        *reinterpret_cast<uint32_t*>(sO + swz<D>(g + 8, j) + 2 * t4) = ElemOps<Elem>::pack(o[j][2] * inv[1], o[j][3] * inv[1]);
      }
      __syncwarp();
      for (int c = lane; c < kWarpRows * Cfg::kChunks; c += 32) {
        const int r = c / Cfg::kChunks, ch = c % Cfg::kChunks;
        const int row = r0 + mt * kWarpRows + r;
        if (row < r_end && ch * 8 < p.head_dim) {
          Elem* dst = static_cast<Elem*>(p.o) + seq.q_row(os, b, row / G) +
                      (long long)(hk * G + row % G) * p.o_head_stride + ch * 8;
          *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(sO + swz<D>(r, ch));
        }
      }
      if (p.lse != nullptr && t4 == 0) {
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (row_a + 8 * e < r_end) p.lse[seq.lse_index(b, rw[e].h, rw[e].i, p.heads_q)] = lse2[e] * kLn2;
      }
      FLASHCORE_TIMELINE_NOW(t_stored);
      FLASHCORE_TIMELINE_BLOCK(1, split, n_iter, n_splits, 1, t_stored, 0, 0);
      FLASHCORE_TIMELINE_BLOCK(2, split, n_iter, n_splits, 1, t_groups, t_finish, t_stored);
      return;
    }
    // Split: this piece's fp32 partial (O normalised by its own l, log2-domain LSE): to the workspace, or in a
    // cluster to this block's shared memory ([block_m][D] floats, then block_m LSEs; merge_cluster_pieces).
    float* const sP = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(sRing) + Cfg::kClusterPartOffset);
    const long long ws = ws_row0 + split * split_rows;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int row = row_a + 8 * e;
      if (row >= r_end) continue;
      float* po = clustered ? sP + (row - r0) * D + 2 * t4 : a.part_o + (ws + row) * D + 2 * t4;
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        *reinterpret_cast<float2*>(po + 8 * j) = make_float2(o[j][2 * e] * inv[e], o[j][2 * e + 1] * inv[e]);
      if (t4 == 0) *(clustered ? sP + a.block_m * D + (row - r0) : a.part_lse + ws + row) = lse2[e];
    }
    FLASHCORE_TIMELINE_NOW(t_part);
    FLASHCORE_TIMELINE_BLOCK(2, split, n_iter, n_splits, 2, t_groups, t_finish, t_part);
  }
  if (n_splits == 1 || a.split_combine) return;  // split_combine: decode/combine.cuh's kernel merges

  // ---- a cluster's pieces: piece 0 merges them from its peers' shared memory; the second barrier keeps every peer
  // resident until it has read them
  if (clustered) {
    cluster_sync_all();
    FLASHCORE_TIMELINE_NOW(t_sync);
    if (split == 0) {
      const DecodeSplitMerge m{b, hk, G, r0, r_end - r0, n_splits, p.head_dim / 4, 0, 0};
      merge_cluster_pieces<D, Elem>(a, seq, m, smem_u32(sRing) + uint32_t(Cfg::kClusterPartOffset), xbuf, tid);
      FLASHCORE_TIMELINE_NOW(t_merged);
      FLASHCORE_TIMELINE_BLOCK(1, split, n_iter, n_splits, 3, t_sync, t_sync, t_merged);
    } else {
      FLASHCORE_TIMELINE_BLOCK(1, split, n_iter, n_splits, 2, t_sync, 0, 0);
    }
    cluster_sync_all();
    return;
  }

  // ---- ticket: the last of the n_splits blocks of this (b, hk, row block) merges
  __threadfence();
  __syncthreads();
  int* counter = a.counters + decode_item_index(a, b, hk, rb);
  if (tid == 0) s_is_last = atomicAdd(counter, 1) == n_splits - 1;
  __syncthreads();
  FLASHCORE_TIMELINE_NOW(t_ticket);
  if (!s_is_last) {
    FLASHCORE_TIMELINE_BLOCK(1, split, n_iter, n_splits, 2, t_ticket, 0, 0);
    return;
  }
  __threadfence();

  // The pieces' partials, in split order (decode/merge.cuh): the first item's partials in flight, the
  // weights and LSE (phase 1), the sums (phase 2).
  const DecodeSplitMerge m{b, hk, G, r0, r_end - r0, n_splits, p.head_dim / 4, ws_row0, split_rows};
  float4 ahead[decode_merge_ahead<D> > 0 ? decode_merge_ahead<D> : 1];
  merge_loads_ahead<D>(a, m, tid, ahead);
  float* s_w = xbuf;  // [block_m][kMaxDecodeSplits]
  merge_weights(a, seq, m, s_w, tid);
  FLASHCORE_TIMELINE_NOW(t_weights);
  merge_sums<D, Elem>(a, seq, m, s_w, tid, ahead);
  if (tid == 0) *counter = 0;  // ready for the next launch
  FLASHCORE_TIMELINE_NOW(t_merged);
  FLASHCORE_TIMELINE_BLOCK(1, split, n_iter, n_splits, 3, t_ticket, t_weights, t_merged);
}

}  // namespace flashcore::cuda::detail
