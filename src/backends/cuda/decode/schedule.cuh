// Which work item a block of the decode kernel takes: the fixed grid, or the balanced schedule for a
// batch of sequences of their own lengths.
//
// Work item = (sequence b, KV head hk, row block rb, split): `split` of the `splits` pieces of the key
// tiles that row block sees.
//
// Fixed grid (no length arrays (contiguous or paged K/V of equal lengths), a forced split count, or more than
// 128 sequences): grid (row blocks x splits, heads_kv, batch),
// every (b, hk, rb) cut into the same max_splits pieces. With every sequence as long as the longest,
// that is one wave of equal blocks.
//
// Balanced schedule (plan: work_slots > 0, length arrays). With the fixed grid, a batch of one long
// and many short caches waits on the long one's few blocks, each walking a long chain of tiles (16
// caches of 1..8192 keys on an H100: 2 splits, 64 tiles per block of the longest). Here every block
// takes about the same number of tiles, whatever its sequence:
//
//   W    = heads_kv · sum_b (row blocks of b) · (64-key tiles of Lk_b)     the batch's tile work
//   tps  = ceil(W / (waves · work_slots))                                    tiles per block
//   splits_b = clamp(ceil(tiles_b / tps), 1, kMaxDecodeSplits)  (0 for a sequence without queries)
//
// work_slots = the blocks resident at once (one wave). waves: one if the pieces of one wave's tps fit
// in one wave (equal lengths: every block the same chain, as the fixed grid), else two (the rounding
// of many short sequences spills into a second wave; smaller pieces shorten its tail). With two, the
// rounding up of each sequence's pieces may still make more than two waves of them (the suite's 16 caches of
// 1..8192 keys: 568 pieces of <= 10 tiles for 528 slots, so 40 full pieces start last, as the others end);
// then tps + 1 is taken where its pieces fit (528 of <= 11 tiles there: on an H100 paged 0.4-2.8 % faster,
// contiguous 0.4-0.8 %, perf/dev/NOTES.md, fifty-second session). Measured on an
// H100, 16 caches of 1..8192 keys: fixed grid 116.1 us, 1 wave 89.9, 2 waves 78.9, 4 81.2, 8 89.8;
// 8 caches of 8192: fixed grid 98.3, 1 wave 98.7, 2 waves 104.4 (perf/dev/NOTES.md, thirteenth session).
// work_waves > 0 (a launch override) forces the count.
//
// The one-wave fit: where one wave's rounded-up pieces overflow it but the lengths are near equal (9 caches of
// 8192 keys, 8 KV heads: 72 items of 128 tiles make 288 pieces of <= 35 tiles for 264 slots), two waves run
// every slot's prologue and merge twice. Instead every (b, hk, rb) item takes the same q = slots / items pieces
// (<= 64), so q · items <= slots blocks fill one wave whatever the lengths, each item cut evenly as in the fixed
// grid (pieces of at most ceil(longest / q) tiles). Taken where q >= 2 and those pieces are at least
// kDecodeFitFillNum / Den full (decode/config.cuh: the batch's tile work against q · items · their largest piece),
// i.e. lengths near equal; launch_override.work_fit takes it wherever items <= slots (1; with q = 1 too) or never
// (-1). Measured on H100s against two waves (fit -1, same binary; perf/dev/NOTES.md, fifty-third session, runs
// 53b-53d): B caches of 8192 keys, 8 KV heads, B = 9, 10, 12 (q = 3, 3, 2) 0-2.6 % faster, 9 x 8192 in pages of
// 16 0-2.9 %, 12 x 2048 4.5-5.6 %, lengths 7400..8192 0.3-4.3 %; with q = 1 (one piece an item) 17 x 8192 0.2-3.2 %
// faster but 20 x 8192 5 % slower, hence q >= 2. Spreads the fill declines (12 x 4096..8192, 20 x 1..8192, the
// suite's mixed batch) ran 5-16 % slower with the fit forced.
//
// Items are numbered sequence by sequence, then KV head, row block, split (split fastest), and block L
// of the 1-D grid takes item L (with the fit: piece L % q of (b, hk, rb) item L / q). Since sum ceil(x) <=
// sum x + count, there are at most waves · work_slots + batch · heads_kv · n_mblocks items: the plan's grid
// (work_blocks); blocks past the last item return. The pieces of one (b, hk, rb) are consecutive blocks, so their
// fp32 partials go to the workspace rows of their block index (L · block_m ..), where the merging block finds them.
//
// Every block computes the schedule from the lengths in device memory (the host does not have them):
// one sequence per thread, two block scans (the work; then the block counts at one wave's tps, two waves'
// and two waves' + 1, packed in kDecodeCountBits-bit fields of one 64-bit value, decode/config.cuh; a third
// scan where the fit is taken), 1.95-2.1 us p50 on an H100 against 0.3 for the fixed grid's item (the block
// timelines of run 53c; one wave of equal lengths through cache lengths runs 2.5-3.5 % slower than the fixed grid
// with the same pieces: (8,32,8,1,8192,128) 98.4-98.9 against 96.0-96.5 us captured, run 53f, perf/dev/NOTES.md,
// fifty-third session). Hence at most 128
// sequences (kDecodeBalanceMaxBatch): a version with rounds of 128 per pass ran 512 caches of 1..4096
// keys 13 % slower than the fixed grid on an H200 (1300 against 1155 us; H100 at par), where B · Hkv
// blocks are many waves and balance themselves. The same lengths on the same GPU give the same
// schedule, so results are deterministic.
#pragma once

#include "backends/cuda/common/kernel_args.h"
#include "backends/cuda/decode/config.cuh"
#include "core/sequences.hpp"

namespace flashcore::cuda::detail {

struct DecodeWork {
  int b, hk, rb, split;
  int splits;       // pieces of (b, hk, rb)'s key tiles (at most; its row block may see fewer tiles)
  int first;        // balanced schedule: the block of split 0 (its workspace rows); -1: the fixed grid
};

// Index of the (b, hk, rb) item among batch x heads_kv x n_mblocks: its merge ticket (KernelArgs::counters) and, for
// a captured balanced call merged by the combine kernel, its entry of KernelArgs::part_map.
__device__ __forceinline__ long long decode_item_index(const KernelArgs& a, int b, int hk, int rb) {
  return ((long long)b * a.p.heads_kv + hk) * a.n_mblocks + rb;
}

// Workspace row of packed row `row` of piece `split`: ws_row0 + split·split_rows + row. Fixed grid:
// [b][hk][split][packed row]; balanced schedule: block_m rows per block, by block index.
__device__ __forceinline__ void decode_workspace(const KernelArgs& a, const DecodeWork& w, long long* ws_row0,
                                                 long long* split_rows) {
  if (w.first < 0) {
    *split_rows = (long long)a.q_heads_per_kv * a.p.seqlen_q;
    *ws_row0 = ((long long)w.b * a.p.heads_kv + w.hk) * a.max_splits * *split_rows;
  } else {
    *split_rows = a.block_m;
    *ws_row0 = (long long)(w.first - w.rb) * a.block_m;  // rows of this row block start at rb·block_m
  }
}

__device__ __forceinline__ int clamp_key(long long k, int lk) { return k < 0 ? 0 : (k > lk ? lk : (int)k); }

// The keys packed rows r0 .. r_end-1 of a sequence (Lq queries, Lk keys, G heads a KV head) see, and how a
// row block's 64-key tiles are cut into pieces: the decode kernel's key loop, and the split combine
// (decode/combine.cuh), which must find the same piece count.
struct DecodeKeys {
  long long diag;         // row i's diagonal key is i + diag
  int left, right;        // window (causal: right 0); -1 unbounded
  int k_lo, k_hi;         // [k_lo, k_hi): every key some row of the block sees
  long long u_lo, u_hi;   // [u_lo, u_hi): keys every row sees
  int t_lo, n_tiles;      // its first tile and tile count
  int n_splits;           // pieces: min(splits, tiles) (1 when the block sees no key)
};
__device__ __forceinline__ DecodeKeys decode_keys(const FlashFwdParams& p, int G, int Lq, int Lk, int r0, int r_end,
                                                  int splits) {
  DecodeKeys k;
  const int i_first = r0 / G, i_last = (r_end - 1) / G;
  k.diag = (long long)Lk - Lq;
  k.left = p.window_left;
  k.right = p.causal ? 0 : p.window_right;
  k.k_lo = k.left >= 0 ? clamp_key(i_first + k.diag - k.left, Lk) : 0;
  k.k_hi = k.right >= 0 ? clamp_key(i_last + k.diag + k.right + 1, Lk) : Lk;
  k.u_lo = k.left >= 0 ? i_last + k.diag - k.left : 0;
  k.u_hi = k.right >= 0 ? min((long long)Lk, i_first + k.diag + k.right + 1) : (long long)Lk;
  k.t_lo = k.k_lo / kDecodeBlockN;
  k.n_tiles = k.k_hi > k.k_lo ? (k.k_hi + kDecodeBlockN - 1) / kDecodeBlockN - k.t_lo : 0;
  k.n_splits = k.n_tiles > 0 ? min(splits, k.n_tiles) : 1;
  return k;
}

// Exclusive prefix sum of v over the block's threads in thread order, and the block's total in *total.
__device__ __forceinline__ long long block_exclusive_scan(long long v, long long* s_warp, long long* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  long long incl = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const long long t = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += t;
  }
  if (lane == 31) s_warp[warp] = incl;
  __syncthreads();
  long long before = 0, all = 0;
#pragma unroll
  for (int k = 0; k < kDecodeWarps; ++k) {
    const long long x = s_warp[k];
    before += k < warp ? x : 0;
    all += x;
  }
  __syncthreads();  // s_warp is free for the next call
  *total = all;
  return before + incl - v;
}

// This block's work item; false for a block past the last one (the whole block returns).
__device__ __forceinline__ bool decode_work(const KernelArgs& a, const numeric::Sequences& seq, DecodeWork* w) {
  const FlashFwdParams& p = a.p;
  if (a.work_slots <= 0) {  // fixed grid
    w->rb = blockIdx.x % a.n_mblocks;
    w->split = blockIdx.x / a.n_mblocks;
    w->hk = blockIdx.y;
    w->b = blockIdx.z;
    w->splits = a.max_splits;
    w->first = -1;
    return true;
  }
  __shared__ long long s_warp[kDecodeWarps];
  __shared__ int s_item[5];  // b (-1: none yet), hk, rb, split, splits
  const int tid = threadIdx.x;
  auto shape_of = [&](int b, int* mblocks, int* tiles) {
    *mblocks = (a.q_heads_per_kv * seq.len_q(b) + a.block_m - 1) / a.block_m;
    *tiles = (seq.len_k(b) + kDecodeBlockN - 1) / kDecodeBlockN;
  };
  // 32-bit divisions where the operands allow (a 64-bit one is a subroutine of ~70 instructions, and the schedule is
  // every block's prologue): tiles < 2^25 (int keys / 64), so a tps past 2^26 gives one piece as any larger one does.
  auto splits_of = [](int mb, int tl, long long tps) {
    const unsigned t = (unsigned)min(tps, 1ll << 26);
    return mb > 0 ? (int)min((unsigned)kMaxDecodeSplits, max(1u, ((unsigned)tl + t - 1) / t)) : 0;
  };
  auto tiles_per_block = [&](long long work, int waves) {
    const long long slots = (long long)a.work_slots * waves;
    if (work < (1ll << 31) && slots < (1ll << 31))
      return max(1ll, (long long)(((unsigned)work + (unsigned)slots - 1) / (unsigned)slots));
    return max(1ll, (work + slots - 1) / slots);
  };
  if (tid == 0) s_item[0] = -1;
  const long long L = blockIdx.x;

  // One sequence per thread (the plan allows at most kDecodeThreads): its lengths read once, two
  // scans. The second scans the block counts at one wave's tps, at two waves' and at two waves' + 1
  // together (kDecodeCountBits each: at these tps every count is at most the plan's work_blocks, which it keeps
  // below 2^kDecodeCountBits), so the choice needs no third pass; the fit, where taken, scans the items.
  int mb = 0, tl = 0;
  if (tid < p.batch) shape_of(tid, &mb, &tl);
  // The fit's inputs (below): the batch's row blocks and its longest cache in tiles, by warp reductions whose
  // shared-memory writes the first scan's barriers publish.
  __shared__ unsigned s_fit[2 * kDecodeWarps];
  {
    const unsigned row_blocks = __reduce_add_sync(0xffffffffu, (unsigned)mb);
    const unsigned longest = __reduce_max_sync(0xffffffffu, mb > 0 ? (unsigned)tl : 0u);
    if ((tid & 31) == 0) s_fit[tid >> 5] = row_blocks, s_fit[kDecodeWarps + (tid >> 5)] = longest;
  }
  long long w_all;
  block_exclusive_scan((long long)mb * tl, s_warp, &w_all);
  const long long work = w_all * p.heads_kv;  // the batch's tile work W
  const long long tps1 = tiles_per_block(work, a.work_waves > 0 ? a.work_waves : 1);
  const long long tps2 = a.work_waves > 0 ? tps1 : tiles_per_block(work, 2);
  const int sp1 = splits_of(mb, tl, tps1), sp2 = splits_of(mb, tl, tps2), sp3 = splits_of(mb, tl, tps2 + 1);
  const long long per_split = (long long)p.heads_kv * mb;  // its blocks: per_split · splits
  constexpr int kBits = kDecodeCountBits;
  constexpr long long kField = (1ll << kBits) - 1;
  long long all;
  const long long firsts =  // its first blocks at tps1, tps2 and tps2 + 1, packed
      block_exclusive_scan(per_split * sp1 << 2 * kBits | per_split * sp2 << kBits | per_split * sp3, s_warp, &all);
  const long long slots = a.work_slots;
  const bool over = (all >> 2 * kBits) > slots;  // one wave's pieces at tps1 overflow it
  // The fit (above): q = slots / items pieces an item, of at most ceil(longest / q) tiles, where one wave overflows,
  // q >= 2 and the pieces are 9/10 full (kDecodeFitFillNum / Den). 32-bit divisions: items < 2^21 (the plan's grid
  // bound), tiles < 2^25.
  unsigned fit_q = 0;
  if ((over || a.work_fit > 0) && a.work_waves == 0 && a.work_fit >= 0) {
    unsigned items = 0, longest = 0;
#pragma unroll
    for (int k = 0; k < kDecodeWarps; ++k) items += s_fit[k], longest = max(longest, s_fit[kDecodeWarps + k]);
    items *= (unsigned)p.heads_kv;
    if (items > 0 && items <= (unsigned)slots && longest > 0) {
      fit_q = min(min((unsigned)slots / items, longest), (unsigned)kMaxDecodeSplits);
      const unsigned fit_tps = (longest + fit_q - 1) / fit_q;
      if (a.work_fit == 0 &&
          (fit_q < 2 || work * kDecodeFitFillDen < kDecodeFitFillNum * fit_q * (long long)items * fit_tps))
        fit_q = 0;
    }
  }
  long long first_item = 0, n_items;  // with the fit: this sequence's first (b, hk, rb) item, by a third scan
  if (fit_q) first_item = block_exclusive_scan(per_split, s_warp, &n_items);
  const bool two = !fit_q && a.work_waves == 0 && over;
  const bool plus = two && (all >> kBits & kField) > 2 * slots && (all & kField) <= 2 * slots;  // tps2 + 1 fits
  // This sequence's pieces an item (sp) and its items' first block: with the fit, block L takes piece L % q of
  // item L / q; else a sequence's blocks are consecutive from its first.
  const int sp = fit_q ? (int)fit_q : !two ? sp1 : plus ? sp3 : sp2;
  const long long first = fit_q ? first_item * fit_q
                                : !two ? firsts >> 2 * kBits : plus ? firsts & kField : firsts >> kBits & kField;
  const long long n = per_split * sp;
  if (n > 0 && L >= first && L < first + n) {  // the thread of the sequence holding item L
    const unsigned local = (unsigned)(L - first), rest = local / (unsigned)sp;  // < the grid: < 2^kDecodeCountBits
    s_item[0] = tid;
    s_item[1] = (int)(rest / (unsigned)mb);
    s_item[2] = (int)(rest % (unsigned)mb);
    s_item[3] = (int)(local % (unsigned)sp);
    s_item[4] = sp;
  }
  __syncthreads();
  if (s_item[0] < 0) return false;
  w->b = s_item[0];
  w->hk = s_item[1];
  w->rb = s_item[2];
  w->split = s_item[3];
  w->splits = s_item[4];
  w->first = (int)(L - w->split);
  return true;
}

}  // namespace flashcore::cuda::detail
