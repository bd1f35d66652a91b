// FlashCore forward attention, Hopper-native kernel (sm_90a only: TMA, mbarriers, warpgroup MMA).
// Included by the per-instance translation units in sm90/instances/ (one per compiled head dim: 32, 64,
// 96, 128, 192, 256, and D = 64 with three consumer warpgroups; they compile in parallel);
// sm90/launch_sm90.cu dispatches to them.
//
// Same algorithm as the sm80/ kernels, with the same building blocks (common/: mask policy, online
// softmax, epilogue), on a different machine:
//
//   block = 1 + kWGs warpgroups (kWGs consumers: 3 at D = 32 and on the second D = 64 instance, else 2;
//   sm90/config.h), persistent (one per SM, common/work_list.h): it walks work items of 64·kWGs query
//   rows of one (batch, head) each, K/V tiles of kBlockN keys (128 up to D = 128, 96 at 192, 64 at 256)
//   warpgroup 0 (producer): one thread issues the bulk tensor copies (TMA) of Q and of every K/V tile
//                           into a kStages-deep ring; the warpgroup gives its registers back (setmaxnreg);
//                           in pages of 16 rows its warps 1-3 gather the V tiles instead (gather_paged_v_tile)
//   warpgroups 1 .. kWGs (consumers): 64 query rows each
//     S  = Q · Kᵀ    wgmma m64n{kBlockN}k16, Q and K straight from shared memory
//     S  = transform, mask(S)  the Mask policy (common/mask.cuh; VariantMask adds window, softcap, ALiBi, sinks)
//     P  = softmax(S) in registers (accumulator layout = the mma.sync one: same masking arithmetic; from
//          D = 96 and on the three-warpgroup D = 64 instance with a lazy max: O is rescaled only in
//          steps where a row's max grew by more than 8 in the log2 domain, which P, up to 2^8 in
//          between, absorbs; config.h, kMaxSlack)
//     O += P · V     wgmma m64nDk16, P from registers, V from shared memory (MN-major: transposed)
//
// Synchronisation: FULL_K[s], FULL_V[s] mbarriers complete when slot s's bytes have landed (TMA
// complete_tx); EMPTY_K[s], EMPTY_V[s] complete when all 4·kWGs consumer warps have finished the wgmma
// that reads slot s. Q_EMPTY completes when all consumer warps are done with an item's Q (its last S
// computed; where O is staged in Q's region, D = 192 and 256, its O stored), before the producer loads
// the next item's Q. The producer picks the items (ticket counter
// or static order, common/work_list.h), skips those past their sequence's queries and writes the next
// one, decoded (HandedItem: rows, tiles), into a shared-memory slot before its Q's copy (-1 and a plain
// arrival on BAR_Q: no more); the consumers read it after BAR_Q, the slot's write and reads ordered by a
// pair of named barriers per consumer warpgroup (ITEM_FULL, ITEM_EMPTY). No block-wide barrier after the
// prologue.
//
// Pipelining inside a consumer warpgroup (wgmma is asynchronous): step i issues S(i+1) = Q·K(i+1)ᵀ,
// rescales O, issues P(i)·V(i), waits for S(i+1) only and runs the softmax of tile i+1 while
// P(i)·V(i) is on the tensor cores; the last step has only P·V. With 16-bit inputs the consumer warpgroups
// take turns issuing a step's wgmmas (HopperConfig::kTurns), so that one's softmax and epilogue run
// under another's wgmmas instead of all at once. S is declared inside the step (never
// loop-carried): loop-carried S rewritten while a wgmma group is in flight makes ptxas 13.0 serialise
// every wgmma (C7513).
//
// Shared memory (1024-byte aligned): every tile is stored as 64-column panels (128 bytes per row) in
// the 128-byte swizzle that TMA writes and wgmma reads: element (row, col) of a panel at byte
// row·128 + ((col/8) ^ (row%8))·16 + (col%8)·2. At D = 32 a row is one panel of 64 bytes in the
// 64-byte swizzle (sm90/config.h, kRowBytes).
//   Q [D/64 panels x 64·kWGs rows] | K slots [kStages] | V slots [kStages] | O staging (D <= 128) | mbarriers
// TMA zero-fills rows past seqlen (query tail, key tail): masked keys meet V rows of zeros, never NaN.
// It zero-fills columns past head_dim too: a head dim between compiled ones (80 on the D = 128 kernel)
// gets zeros in Q, K and V's padding columns, so S is exact and O's padding columns (0) are not stored.
// Sequences (varlen Q and K/V, cache lengths; common/sequences.cuh): packed tensors are one TMA batch
// of total rows and a block's rows start at its sequence's offset; past a sequence's keys the last V
// tile is zeroed in shared memory by the producer before its full_v completes (bar_vtail), since TMA
// only zero-fills past the tensor. Paged K/V (block_table): a tile is loaded in pieces of
// paged_box_rows keys, each from its page (load_paged_tile); the pools are the maps' batch dimension.
// FP8 inputs (Elem = __nv_fp8_e4m3, sm90/fp8.cuh): the same kernel with k32 steps (a 128-byte row holds
// 128 elements: one panel), V read as Vᵀ (a transposed copy, K-major, since fp8 wgmma cannot transpose)
// whose keys are permuted within groups of 32 so that P's accumulator registers are the A operand as
// they are; P comes out of the softmax scaled by 256 and is rounded to e4m3; O (OutElem: fp16 or bf16)
// takes descale_v.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "backends/cuda/common/dependent_launch.cuh"
#include "backends/cuda/common/dev_timeline.cuh"
#include "backends/cuda/common/elem_ops.cuh"
#include "backends/cuda/common/epilogue.cuh"
#include "backends/cuda/common/mask.cuh"
#include "backends/cuda/common/online_softmax.cuh"
#include "backends/cuda/common/ptx.cuh"
#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/common/tail_split.cuh"
#include "backends/cuda/common/work_list.h"
#include "backends/cuda/common/variant_mask.cuh"
#include "backends/cuda/kernels.h"
#include "backends/cuda/sm90/config.h"
#include "backends/cuda/sm90/fp8.cuh"
#include "backends/cuda/sm90/ptx_sm90.cuh"

namespace flashcore::cuda::detail {

// ------------------------------------------------------------------------------------------------
// The kernel. Warp roles: warpgroup 0 = producer (its warp 0, lane 0 issues every copy); warpgroup
// 1 + c (c = 0 .. kWGs - 1) = consumer c, query rows m0 + 64c .. +63 (its warp w & 3 the accumulator rows
// 16·(w & 3) + lane/4 (+8)).
// ------------------------------------------------------------------------------------------------

// A work item as the producer hands it over, decoded (the item slot: two int4 in shared memory): w as
// drawn (-1: no more), its rows m0 .. of (b, h), its tiles [t_first, t_first + n_tiles) and, with the
// tail split, its item and piece (-1: whole). The producer decodes w anyway, for its copies. Decoded
// again by the consumers (six chained integer divisions, the lengths), after the item's Q had landed and
// with the tensor cores idle, it cost 0.74-0.93 µs between an item's Q and its first K tile; handed over,
// 0.16-0.42 after a block's first item, 0.22-0.64 at it (H100, (16,16,512,64) and (4,16,1024,64) timelines;
// perf/dev/NOTES.md, forty-eighth session).
struct HandedItem {
  int w, b, h, m0, t_first, n_tiles, item, piece;
};
__device__ __forceinline__ void store_item(uint32_t slot, const HandedItem& x) {
  st_shared_v4_s32(slot, make_int4(x.w, x.b, x.h, x.m0));
  st_shared_v4_s32(slot + 16, make_int4(x.t_first, x.n_tiles, x.item, x.piece));
}
__device__ __forceinline__ HandedItem load_item(uint32_t slot) {
  const int4 u = ld_shared_v4_s32(slot), v = ld_shared_v4_s32(slot + 16);
  return HandedItem{u.x, u.y, u.z, u.w, v.x, v.y, v.z, v.w};
}

// Paged K/V: one K or V tile (keys key0 .. key0 + kBN of sequence b) into shared memory at dst,
// completing on bar: one box per 64-column panel and piece of `box` keys, each piece from its page
// (block_table). A piece past the sequence's last key (len_k) reloads the piece holding that key (in
// bounds, and no block_table entry past the last used page is read): its keys are masked in S and its
// V rows zeroed (bar_vtail), like the key tail of any sequence.
template <int D>
__device__ __forceinline__ void load_paged_tile(const FlashFwdParams& p, const CUtensorMap* map, uint32_t dst, int key0,
                                                int hk, int table0, int last, uint32_t bar) {
  using Cfg = HopperConfig<D>;
  const int box = paged_box_rows(p.page_size, Cfg::kBlockN);
  const int shift = __ffs(p.page_size) - 1;  // page_size is a power of two here (the plan's condition)
#pragma unroll 1  // the paged producer thread has 56 registers (setmaxnreg): one piece at a time
  for (int c = 0; c < Cfg::kBlockN; c += box) {
    const int key = min(key0 + c, last);
    const int page = p.block_table[table0 + (key >> shift)], row = key & (p.page_size - 1);
#pragma unroll
    for (int pn = 0; pn < Cfg::kPanels; ++pn)
      tma_load_4d(dst + pn * Cfg::kKVPanelBytes + c * Cfg::kRowBytes, map, Cfg::kPanelCols * pn, row, hk, page, bar);
  }
}

// Paged K/V in small pages (KernelArgs::paged_gather; sm90/plan_sm90.cu): the TMA boxes of a page piece are small (pages of
// 16 at D = 128: 16 boxes of 2 KB a K or V tile, issued one after another by one thread) and their rate, not the
// bytes, set the time (1.3-1.7x the contiguous cache). There the K tiles stay TMA boxes and the V tiles are gathered
// by cp.async of the producer warpgroup's warps 1-3, so that both copy engines work at once.
// A V tile (keys key0 .. key0 + kBN of a sequence of len_k keys) goes into the swizzled layout TMA writes, its
// rows in groups of 32 / R (R 16-byte chunks a swizzle row), one group per warp instruction: gather warp gw (0..2)
// takes groups gw, gw + 3, ..., lane l chunk l % R of row l / R of each; each warp reads the tile's block_table
// entries once (lane j the j-th page of the tile) and shuffles them. Rows past the sequence's last key and columns
// past head_dim are zero-filled (src-size), so the last V tile needs no zeroing, and no block_table entry past the
// sequence's last page is read. Each thread then arrives on bar once its own copies have landed
// (cp.async.mbarrier.arrive.noinc: bar counts 96). The consumers fence the tile for the async proxy (wgmma) after
// their wait: cp.async writes through the generic proxy. Measured on an H200 (runs 44b, 44c; perf/dev/NOTES.md):
// K and V both gathered by one warp, 2.6-4.3x the time of the TMA boxes; by warps 1-3, still 1.1-1.9x (about 130 ns
// a row for each warp, unrolled or not: the gather's own rate). Warp 0, which holds the item loop, issues the K boxes
// (it spills at 56 registers with a gather of its own).
constexpr int kGatherWarps = 3;
template <int D, typename Elem>
__device__ __forceinline__ void gather_paged_v_tile(const FlashFwdParams& p, uint32_t dst, int key0, int len_k, int b, int hk,
                                                  int gw, int lane, uint32_t bar) {
  using Cfg = HopperConfig<D, sizeof(Elem)>;
  constexpr int kBN = Cfg::kBlockN, kR = Cfg::kRowBytes / 16, kGroupRows = 32 / kR;
  constexpr int kChunkElems = 16 / sizeof(Elem);
  const int shift = __ffs(p.page_size) - 1;  // page_size: a power of two (the plan's condition)
  const int first_page = key0 >> shift, last_page = max(0, len_k - 1) >> shift;
  const int pages = ((key0 + kBN - 1) >> shift) - first_page + 1;  // at most kBN / 16 + 1 (D = 192: 96-key tiles)
  const int entry = lane < pages ? p.block_table[b * p.pages_per_seq + min(first_page + lane, last_page)] : 0;
  const int c = lane % kR;
  const Elem* pool = static_cast<const Elem*>(p.v) + hk * p.v_head_stride + c * kChunkElems;
  const long long page_stride = p.v_batch_stride, row_stride = p.v_seq_stride;
  const int chunk_bytes = (p.head_dim - c * kChunkElems) * (int)sizeof(Elem);  // bytes of the row from chunk c on
  // Rows a thread has in flight at once: 4 at D = 64 and 128, 2 at 192 and 256, 1 in 64-byte rows (D = 32, 96); more
  // spill in some instance at 56 registers.
  constexpr int kUnroll = kR == 4 ? 1 : Cfg::kPanels <= 2 ? 4 : 2;
#pragma unroll kUnroll
  for (int r = gw * kGroupRows + lane / kR; r < kBN; r += kGatherWarps * kGroupRows) {
    const int key = key0 + r;
    const int page = __shfl_sync(0xffffffffu, entry, (key >> shift) - first_page);
    const Elem* row = pool + page * page_stride + (key & (p.page_size - 1)) * row_stride;
    // The swizzle: the 128-byte one XORs the chunk with row % 8, the 64-byte one with (row / 2) % 4.
    const uint32_t to = dst + r * Cfg::kRowBytes + ((c ^ ((kR == 8 ? r : r >> 1) & (kR - 1))) << 4);
    const int left = key < len_k ? chunk_bytes : 0;
#pragma unroll
    for (int pn = 0; pn < Cfg::kPanels; ++pn) {
      const int bytes = min(16, max(0, left - pn * Cfg::kRowBytes));
      cp_async_16_bytes(to + pn * Cfg::kKVPanelBytes, bytes > 0 ? row + pn * Cfg::kPanelCols : pool, bytes);
    }
  }
  cp_async_mbar_arrive(bar);
}

// kPaged: K and V are pools of pages (block_table); its own instance, so that the kernels of the other
// layouts keep their producer lean (24 registers beside 240-register consumers; paged: 56 and 224).
//
// Persistent: the grid has at most one block per SM (plan: work_blocks) and each block walks its work
// items (common/work_list.h): one item = kBlockM query rows of one (batch, head). The K/V ring
// runs on across items (its slots and mbarrier phases count the block's tiles, not the item's), so the
// producer loads the next item's Q (once the consumers are done with the current one's: q_empty) and
// its first K/V tiles while the consumers finish the current item. Where the last round of items would be
// at most half full, its items run as pieces of their key tiles, merged by the last piece (kTail below).
// kWGs: consumer warpgroups (sm90/config.h, HopperConfig).
// kTail: the tail split (common/tail_split.cuh), its own instance of the plain-mask, non-paged, 16-bit kernel, so
// that the launches without a split run code with none of it.
template <int D, typename Elem, class Mask, bool kPaged, typename OutElem = Elem, int kWGs = hopper_default_wgs(D),
          bool kTail = false>
__global__ void __launch_bounds__(HopperConfig<D, 2, kWGs>::kThreads, 1)
flash_fwd_hopper_kernel(const __grid_constant__ KernelArgs a, const __grid_constant__ HopperMaps maps) {
  using Cfg = HopperConfig<D, sizeof(Elem), kWGs>;
  using ItemMask = typename Mask::template WithLengths<ReadLengths>;
  constexpr int kS = Cfg::kStages, kBN = Cfg::kBlockN;
  // O by TMA stores (KernelArgs::o_tma, where the plan encoded O's map: sm90/tensor_maps.cpp): compiled into the
  // D = 64 instances, whose staging rows (common/swizzle.cuh: 128-byte rows, chunk ^ row % 8, in O's own
  // 1024-aligned region) are the boxes of the 128-byte swizzle as they are.
  constexpr bool kOTma = D == 64 && !Cfg::kFp8 && Cfg::kOwnOStage && sizeof(OutElem) == 2 && Cfg::kRowBytes == 128;
  static_assert(!kOTma || (Cfg::kOStageOffset % 1024 == 0 && kOStoreRows * Cfg::kRowBytes % 1024 == 0),
                "TMA's 128-byte swizzle needs each warp's staged rows at a 1024-byte boundary");
  // The tail split (common/tail_split.cuh): work index w -> item and piece of its key tiles (-1: whole).
  static_assert(!kTail || (!kPaged && !Cfg::kFp8 && std::is_same<Mask, CausalMask>::value),
                "the tail split: plain mask, 16-bit, non-paged (the plan's condition)");
  const TailSplit ts(a.tail_first, a.tail_items, a.tail_splits);
  extern __shared__ unsigned char smem_raw[];
  const uint32_t sQ = (smem_u32(smem_raw) + 1023u) & ~1023u;  // swizzle atoms need 1024-byte alignment
  const uint32_t sK = sQ + Cfg::kQRegionBytes;                 // K slot s at sK + s·kTileBytes
  const uint32_t sV = sK + kS * Cfg::kTileBytes;               // V slot s at sV + s·kTileBytes
  const uint32_t bar_q = sQ + Cfg::kBarOffset;
  auto full_k = [&](int s) { return bar_q + 8 * (1 + s); };
  auto full_v = [&](int s) { return bar_q + 8 * (1 + kS + s); };
  auto empty_k = [&](int s) { return bar_q + 8 * (1 + 2 * kS + s); };
  auto empty_v = [&](int s) { return bar_q + 8 * (1 + 3 * kS + s); };
  const uint32_t bar_vtail = bar_q + 8 * (1 + 4 * kS);  // varlen K/V: the last V tile lands here first
  const uint32_t q_empty = bar_q + 8 * (2 + 4 * kS);    // the consumers are done with Q's region
  const uint32_t item_slot = bar_q + Cfg::kItemSlotOffset;  // the item whose Q lands on bar_q next (HandedItem)

  const FlashFwdParams& p = a.p;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
  // An item's rows and tiles, alike in both roles: rows m0 .. m0 + kBlockM - 1 of (b, h); the item loads
  // tiles [t_first, t_first + n_tiles) (a sliding window starts past 0), its step i is tile t_first + i.
  // Its sequence (common/sequences.cuh): packed Q or K/V are one TMA "batch" of total rows
  // (sm90/tensor_maps.cpp), the sequence starts at row cu_seqlens[b] of batch 0. Its lengths are read
  // where used (common/mask.cuh, ReadLengths): the consumers' registers are spoken for.
  auto item_tiles = [&](const ItemMask& mask, int m0, int* t_first, int* n_tiles) {
    *t_first = mask.first_tile(m0, kBN);
    *n_tiles = max(0, mask.tiles(m0 + Cfg::kBlockM, kBN) - *t_first);
  };

  if (tid == 0) {
    mbar_init(bar_q, 1);
    const int full_v_count = kPaged && a.paged_gather ? 32 * kGatherWarps : 1;  // the V gather: each thread arrives
    for (int s = 0; s < kS; ++s) {
      mbar_init(full_k(s), 1);
      mbar_init(full_v(s), full_v_count);
      mbar_init(empty_k(s), 4 * Cfg::kConsumerWGs);
      mbar_init(empty_v(s), 4 * Cfg::kConsumerWGs);
    }
    mbar_init(bar_vtail, 1);
    mbar_init(q_empty, 4 * Cfg::kConsumerWGs);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  // A dependent launch (common/dependent_launch.cuh): the barriers above were set up under the kernel before;
  // nothing global is touched before it has completed. One block per SM (registers, shared memory): the next call's
  // blocks, let launch at once, take SMs only as this kernel's blocks leave them.
  dependent_launch_wait();
  dependent_launch_allow();

  if (wg == 0) {  // ---------------- producer ----------------
    setmaxnreg_dec<Cfg::producer_regs(kPaged)>();
    // Small pages (KernelArgs::paged_gather): warps 1-3 gather every V tile (gather_paged_v_tile), reading each
    // item from the slot that warp 0 writes (GATHER_ITEM_FULL/EMPTY, like a consumer warpgroup's ITEM_FULL/EMPTY).
    const bool gather = kPaged && a.paged_gather;
    if (warp != 0) {
      if constexpr (kPaged) {
        if (gather) {
          for (int ring = 0, n_items = 0;; ++n_items) {
            // As the consumers: the item's Q has landed (or there is none), then the slot. The wait on bar_q, which
            // follows lane 0's write through its arrival, also orders the read for compute-sanitizer racecheck: with
            // the named barriers alone (arrive and sync, ordered by the PTX memory model) it reported the last
            // item's read as a race with its write (run 44h).
            mbar_wait_parity(bar_q, n_items & 1);
            named_bar_sync(Cfg::kBarGatherItemFull, 128);
            const HandedItem it = load_item(item_slot);  // (no tail split with pages)
            if (it.w < 0) break;
            named_bar_arrive(Cfg::kBarGatherItemEmpty, 128);
            const int t_first = it.t_first, n_tiles = it.n_tiles, hk = it.h / a.q_heads_per_kv;
            const int len_k = ItemMask(p, it.b).seq.len_k();
#pragma unroll 1
            for (int t = 0; t < n_tiles; ++t) {
              const int r = ring + t, s = r % kS, key0 = (t_first + t) * kBN;
              const uint32_t parity = ((r / kS) + 1) & 1;  // the previous use of slot s (tile r - kS) was released
              mbar_wait_parity(empty_v(s), parity);
              gather_paged_v_tile<D, Elem>(p, sV + s * Cfg::kTileBytes, key0, len_k, it.b, hk, warp - 1, lane, full_v(s));
            }
            ring += n_tiles;
          }
          cp_async_wait<0>();  // the last V tile's copies land before the warp exits (the -1 comes once S is done)
        }
      }
      return;
    }
    // ring: K/V tiles loaded so far (slot ring % kS, its phase ring / kS). phases: bit 0 the parity of
    // the items begun (q_empty), bit 1 that of the V tails zeroed (bar_vtail). An empty barrier's wait
    // for parity 1 before its first phase completes returns at once (a fresh mbarrier counts the phase
    // before its first as complete): the first use of every slot and of Q's region waits for nothing.
    int ring = 0, phases = 0;
    // The item hand-off: lane 0 writes the item into the slot and issues its Q copy; the whole warp then
    // arrives on each consumer warpgroup's ITEM_FULL (a barrier instruction counts whole warps, so lane 0
    // cannot arrive alone), before the item's K/V copies, which wait for slots the consumers free only
    // once they have read the item. Before the next write the warp waits on every ITEM_EMPTY (each
    // warpgroup has read the slot). The named barriers order the slot's write and reads for
    // compute-sanitizer racecheck too, which does not follow mbarriers for plain shared-memory accesses.
    bool handed = false;  // a slot value is out: wait for its reads before the next write
    auto hand_item = [&](const HandedItem& x) {
      if (handed) {
        for (int c = 0; c < Cfg::kConsumerWGs; ++c) named_bar_sync(Cfg::kBarItemEmpty + c, Cfg::kItemBarThreads);
        if (gather) named_bar_sync(Cfg::kBarGatherItemEmpty, 128);
      }
      if (lane == 0) {
        mbar_wait_parity(q_empty, (phases & 1) ^ 1);  // the consumers are done with Q's region
        store_item(item_slot, x);
        if (x.w >= 0) {  // Q rows m0.. of (b, h)
          const TmaRows qr = tma_q_rows(p, x.b);
          mbar_expect_tx(bar_q, Cfg::kQBytes);
          for (int pn = 0; pn < Cfg::kPanels; ++pn) tma_load_4d(sQ + pn * Cfg::kQPanelBytes, &maps.q, Cfg::kPanelCols * pn, qr.row0 + x.m0, x.h, qr.batch, bar_q);
        } else {
          mbar_arrive(bar_q);  // no more: bar_q completes by a plain arrival, the consumers read -1 and stop
        }
      }
      __syncwarp();
      for (int c = 0; c < Cfg::kConsumerWGs; ++c) named_bar_arrive(Cfg::kBarItemFull + c, Cfg::kItemBarThreads);
      if (gather) named_bar_arrive(Cfg::kBarGatherItemFull, 128);
      handed = true;
    };
    // The schedule (common/work_list.h): the block's first item is its index; the next ones come from
    // the plan's ticket counter (dynamic: a block takes the next item when it is free, so that blocks
    // on faster SMs or with lighter items take more), or without one from the static snake.
    const WorkList work(a.n_mblocks, p.heads_q, p.batch, a.q_heads_per_kv, a.pair_groups, (int)gridDim.x, (int)blockIdx.x);
    for (int w = work.item(0), round = 1; w >= 0; ++round) {
      int item = w, piece = -1;
      if constexpr (kTail) piece = ts.decode(w, &item);
      const WorkItem blk = work.coord(item);
      const int h = blk.h, b = blk.b, hk = blk.hk, m0 = blk.mblock * Cfg::kBlockM;
      const ItemMask mask(p, b);
      const bool live = m0 < mask.seq.len_q();  // else past this sequence's queries: skipped
      int t_first = 0, n_tiles = 0;
      if (live) item_tiles(mask, m0, &t_first, &n_tiles);
      if (piece >= 0) tail_piece_tiles(piece, a.tail_tiles, a.tail_extra, &t_first, &n_tiles);  // a tail piece's tiles
      if (live) hand_item(HandedItem{w, b, h, m0, t_first, n_tiles, item, piece});
      if (live && lane == 0) {  // one thread issues every copy (with the V gather: K's)
        const TmaRows kr = tma_kv_rows(p, b);
        // K/V tile t (keys from (t_first + t)·kBN) into slot dst, completing on bar: one box per 64-column
        // panel, or with pages one per panel and piece (load_paged_tile).
        const int table0 = kPaged ? b * p.pages_per_seq : 0;  // paged: this sequence's block_table row
        const int box = kPaged ? paged_box_rows(p.page_size, kBN) : 1;
        const int last = kPaged ? (mask.seq.len_k() - 1) / box * box : 0;  // paged: the piece holding the last key
        auto load_tile = [&](const CUtensorMap* map, uint32_t dst, int t, uint32_t bar) {
          if constexpr (kPaged) {
            load_paged_tile<D>(p, map, dst, (t_first + t) * kBN, hk, table0, last, bar);
          } else {
            for (int pn = 0; pn < Cfg::kPanels; ++pn)
              tma_load_4d(dst + pn * Cfg::kKVPanelBytes, map, Cfg::kPanelCols * pn, kr.row0 + (t_first + t) * kBN, hk, kr.batch, bar);
          }
        };
        for (int t = 0; t < n_tiles; ++t) {
          const int r = ring + t, s = r % kS;
          const uint32_t parity = ((r / kS) + 1) & 1;  // the previous use of slot s (tile r - kS) was released
          mbar_wait_parity(empty_k(s), parity);
          mbar_expect_tx(full_k(s), Cfg::kTileBytes);
          load_tile(&maps.k, sK + s * Cfg::kTileBytes, t, full_k(s));
          if (gather) continue;  // V: warps 1-3
          mbar_wait_parity(empty_v(s), parity);
          const uint32_t v_bar = kv_ends_per_sequence(p) && t == n_tiles - 1 ? bar_vtail : full_v(s);  // see below
          mbar_expect_tx(v_bar, Cfg::kTileBytes);
          if constexpr (Cfg::kFp8)  // Vᵀ: one box of kBN keys (columns) x 128 head-dim rows
            tma_load_4d(sV + s * Cfg::kTileBytes, &maps.v, (t_first + t) * kBN, 0, hk, b, v_bar);
          else
            load_tile(&maps.v, sV + s * Cfg::kTileBytes, t, v_bar);
        }
      }
      // Varlen K/V: past the sequence's last key TMA filled the last V tile from the rows that follow in
      // memory (the next sequence, or cache rows no one wrote: possibly NaN), where the fixed layout gets
      // zeros. Their scores are masked (-inf), but P = 0 times a NaN is NaN. So that tile lands on
      // bar_vtail instead; the warp zeroes those rows, fences them for the async proxy (wgmma) and then
      // completes the slot's full_v phase itself (its one arrival, no bytes). The consumers see a full_v
      // like any other. The warp waits for it before the next item's copies, so bar_vtail's phases
      // cannot run ahead of it.
      if (live && !gather && kv_ends_per_sequence(p) && n_tiles > 0) {  // (the gather zero-fills those rows itself)
        const int t = n_tiles - 1, s = (ring + t) % kS;
        const int row0 = mask.seq.len_k() - (t_first + t) * kBN;  // first row past the sequence (kBN: none)
        mbar_wait_parity(bar_vtail, (phases >> 1) & 1);
        zero_smem_rows(sV + s * Cfg::kTileBytes, Cfg::kPanels, Cfg::kKVPanelBytes, row0, kBN, lane, 32, Cfg::kRowBytes);
        fence_proxy_async_smem();
        __syncwarp();
        if (lane == 0) mbar_arrive(full_v(s));
        phases ^= 2;
      }
      if (live) ring += n_tiles, phases ^= 1;
      // The next item, drawn once this one's copies are issued (the wait for q_empty hides the atomic).
      if (lane == 0) w = a.counters != nullptr ? next_ticket(a.counters, (int)gridDim.x, kTail ? a.work_total : work.total) : work.item(round);
      w = __shfl_sync(0xffffffffu, w, 0);
    }
    hand_item(HandedItem{-1, 0, 0, 0, 0, 0, -1, -1});  // no more
    if (lane == 0) {
      // Dynamic: the last block to finish drawing sets the counter back to 0 for the next launch.
      if (a.counters != nullptr && atomicAdd(a.counters + 1, 1) == (int)gridDim.x - 1) {
        a.counters[0] = 0;
        a.counters[1] = 0;
      }
    }
    return;
  }

  // ---------------- consumers ----------------
  setmaxnreg_inc<Cfg::consumer_regs(kPaged)>();
  const int cw = wg - 1;  // consumer warpgroup index
  const int g = lane >> 2;
  // Descriptor address fields are in 16-byte units: adding (bytes >> 4) moves the start address. Inside
  // a panel the k16 step kk moves 32 bytes along the (swizzled) row; the panel index moves
  // kk / kStepsPerPanel panels (4 steps in a 128-byte row, 2 in the 64-byte rows of D = 32).
  constexpr int kRB = Cfg::kRowBytes, kSPP = Cfg::kStepsPerPanel;
  const uint64_t q_desc = make_desc_swizzled<kRB>(sQ + cw * 64 * kRB, 16);
  const uint64_t k_desc = make_desc_swizzled<kRB>(sK, 16);
  const uint64_t v_desc = make_desc_swizzled<kRB>(sV, Cfg::kFp8 ? 16 : Cfg::kKVPanelBytes);  // FP8: Vᵀ is K-major like K
  const float sl2 = a.scale_log2;
  // A V tile has landed: its full barrier's phase. Gathered tiles (paged_gather) were written by cp.async, through
  // the generic proxy: fenced for the async proxy (wgmma) after the wait.
  auto wait_full_v = [&](uint32_t bar, uint32_t parity) {
    mbar_wait_parity(bar, parity);
    if constexpr (kPaged) {
      if (a.paged_gather) fence_proxy_async_smem();
    }
  };
  // Slot release: every consumer warp arrives once its wgmma reading the slot has completed.
  auto release = [&](uint32_t bar) {
    __syncwarp();
    if (lane == 0) mbar_arrive(bar);
  };

  int ring = 0, n_items = 0;  // as the producer counts them
  // Turns (HopperConfig::kTurns): each step's wgmmas are issued between turn_take() and turn_pass(), the
  // warpgroups in order 0, 1, .., 0, ... Every warpgroup runs the same steps (an item's tiles are the
  // block's), so the turns go round; the data waits of a step's first wgmma come before its turn.
  auto turn_take = [&] {
    if constexpr (Cfg::kTurns) named_bar_sync(Cfg::kBarTurn + cw, Cfg::kTurnBarThreads);
  };
  auto turn_pass = [&] {
    if constexpr (Cfg::kTurns) named_bar_arrive(Cfg::kBarTurn + (cw + 1) % Cfg::kConsumerWGs, Cfg::kTurnBarThreads);
  };
  if (cw == Cfg::kConsumerWGs - 1) turn_pass();  // warpgroup 0 takes the first turn
  for (;;) {
    mbar_wait_parity(bar_q, n_items & 1);  // the item's Q has landed (or the producer says there is none)
    named_bar_sync(Cfg::kBarItemFull + cw, Cfg::kItemBarThreads);
    const HandedItem it = load_item(item_slot);  // decoded by the producer
    if (it.w < 0) break;
    FLASHCORE_TIMELINE_NOW(t_q);
    named_bar_arrive(Cfg::kBarItemEmpty + cw, Cfg::kItemBarThreads);
    const int item = it.item, piece = it.piece, h = it.h, b = it.b, m0 = it.m0;
    const int t_first = it.t_first, n_tiles = it.n_tiles;
    const ItemMask mask(p, b);
    const int wg_row0 = m0 + 64 * cw;
    // Steps in [wg_full_lo, wg_full) need no mask (steps count from t_first).
    const int wg_full = mask.unmasked_tiles(wg_row0, kBN) - t_first;
    const int wg_full_lo = mask.unmasked_first(wg_row0 + 64, kBN) - t_first;
    const int row_lo = wg_row0 + 16 * (warp & 3);  // this warp's first accumulator row

    // Accumulators in the mma.sync C-fragment layout (common/mask.cuh), n8 column tile j in [j][0..3];
    // wgmma sees the same registers as one flat array.
    float o[D / 8][4];              // O accumulator (64 rows x D per warpgroup)
    auto& o_flat = reinterpret_cast<float (&)[Cfg::kOAcc]>(o);
    uint32_t pf[Cfg::kPVSteps][4];  // P of the next P·V as its A operand, one k16 step per [k]
    auto& pf_flat = reinterpret_cast<uint32_t (&)[4 * Cfg::kPVSteps]>(pf);
#pragma unroll
    for (int i = 0; i < Cfg::kOAcc; ++i) o_flat[i] = 0.f;
    SoftmaxRows sm;
    sm.init();
    float alpha[2] = {1.f, 1.f};  // rescale of O before the next P·V

    auto issue_qk = [&](float (&s2)[Cfg::kSTiles][4], int slot) {
      auto& s = reinterpret_cast<float (&)[kBN / 2]>(s2);
      const uint64_t kd = k_desc + ((slot * Cfg::kTileBytes) >> 4);
      wgmma_qk_init(s, q_desc, kd, Elem{});
#pragma unroll
      for (int kk = 1; kk < Cfg::kKSteps; ++kk) {
        const uint32_t qo = ((kk / kSPP) * Cfg::kQPanelBytes + (kk % kSPP) * 32) >> 4;
        const uint32_t ko = ((kk / kSPP) * Cfg::kKVPanelBytes + (kk % kSPP) * 32) >> 4;
        wgmma_qk(s, q_desc + qo, kd + ko, Elem{});
      }
    };
    auto issue_pv = [&](int slot) {
      const uint64_t vd = v_desc + ((slot * Cfg::kTileBytes) >> 4);
#pragma unroll
      for (int k = 0; k < Cfg::kPVSteps; ++k)  // FP8: step k reads bytes 32k.. of Vᵀ's rows; else 16 V rows further
        wgmma_pv<Elem>(o_flat, pf[k], vd + ((Cfg::kFp8 ? k * 32 : k * 16 * kRB) >> 4));
    };
    // Mask (tiles from wg_full on), online softmax of S(tile) in place, alpha for O. A tile with no key
    // this warpgroup's rows see (causal: the item's last tiles for its first warpgroup) is masked in
    // full: S = -inf, so P = 0 and the state stays (alpha 1, or 0 while a row has seen no key and O is
    // 0). No branch of its own for them: a path that set P = 0 directly made ptxas keep a second, zeroed
    // copy of S beside the computed one (D = 64: ~60 registers and 31 CS2R a step; the D = 128 variant
    // instances spilled 112 bytes).
    auto softmax = [&](float (&s)[Cfg::kSTiles][4], int tile) {
      const int key0 = (t_first + tile) * kBN;
      if constexpr (Mask::kTransformsScores) mask.transform(s, row_lo + g, key0, lane, h);
      if (tile >= wg_full || (Mask::kHasLeftBound && tile < wg_full_lo)) mask.apply(s, row_lo + g, key0, lane);
      sm.update<Cfg::kFp8 ? kFp8PLog2 : 0>(s, sl2, alpha, Cfg::kMaxSlack);
    };
    auto pack_p = [&](const float (&s)[Cfg::kSTiles][4]) {
#pragma unroll
      for (int k = 0; k < Cfg::kPVSteps; ++k) {
        if constexpr (Cfg::kFp8)
          pack_p_fragment_e4m3(pf[k], s[4 * k], s[4 * k + 1], s[4 * k + 2], s[4 * k + 3]);
        else
          pack_p_fragment<Elem>(pf[k], s[2 * k], s[2 * k + 1]);
      }
    };

    FLASHCORE_TIMELINE_DECL(t_k0);
    FLASHCORE_TIMELINE_DECL(t_s0);
    if (n_tiles > 0) {  // tile 0: S, softmax, P (S registers are fresh in every step: never loop-carried, see header)
      const int s0 = ring % kS;
      float s[Cfg::kSTiles][4];
      mbar_wait_parity(full_k(s0), (ring / kS) & 1);
      FLASHCORE_TIMELINE_SET_IF(true, t_k0);
      turn_take();
      wgmma_fence();
      issue_qk(s, s0);
      wgmma_commit();
      turn_pass();
      wgmma_wait<0>();
      fence_regs(reinterpret_cast<float (&)[kBN / 2]>(s));
      release(empty_k(s0));
      if constexpr (Cfg::kOwnOStage) {
        if (n_tiles == 1) release(q_empty);  // the item's only S is computed: Q's region is free
      }
      softmax(s, 0);
      pack_p(s);
      FLASHCORE_TIMELINE_SET_IF(true, t_s0);
    }
    // Step i: S(i+1) issued, P(i)·V(i) under the softmax of tile i + 1. The last step has no next tile.
    for (int i = 0; i + 1 < n_tiles; ++i) {
      const int rc = ring + i, sc = rc % kS, sn = (rc + 1) % kS;
      mbar_wait_parity(full_k(sn), ((rc + 1) / kS) & 1);
      float s[Cfg::kSTiles][4];
      turn_take();
      wgmma_fence();
      issue_qk(s, sn);
      wgmma_commit();
      rescale_rows(o, alpha, Cfg::kMaxSlack);  // O is idle: P(i-1)·V(i-1) completed in the last step
      wait_full_v(full_v(sc), (rc / kS) & 1);  // issued with K(i), before K(i + 1): no wait on a turn
      wgmma_fence();
      issue_pv(sc);
      wgmma_commit();
      turn_pass();
      wgmma_wait<1>();  // S(i+1) done; P(i)·V(i) runs under the softmax
      fence_regs(reinterpret_cast<float (&)[kBN / 2]>(s));
      release(empty_k(sn));
      if constexpr (Cfg::kOwnOStage) {
        if (i + 2 == n_tiles) release(q_empty);  // the item's last S is computed: Q's region is free
      }
      softmax(s, i + 1);
      wgmma_wait<0>();  // P(i)·V(i) done: pf may be overwritten, V slot free
      fence_regs(o_flat);
      fence_regs(pf_flat);
      release(empty_v(sc));
      pack_p(s);
    }
    // Own O staging region: Q's region may take the next item's Q as soon as the item's last S is computed (above,
    // before its softmax), or at once for an item without tiles. Released after the last softmax instead, the short
    // items waited for their Q: H200 run 45a, (16,16,512,64) 55.4 -> 51.1 us, (4,16,1024,64) 46.7 -> 44.7.
    if constexpr (Cfg::kOwnOStage) {
      if (n_tiles == 0) release(q_empty);
    }
    if (n_tiles > 0) {  // the last step: P·V of the last tile
      const int rc = ring + n_tiles - 1, sc = rc % kS;
      wait_full_v(full_v(sc), (rc / kS) & 1);
      turn_take();
      rescale_rows(o, alpha, Cfg::kMaxSlack);
      wgmma_fence();
      issue_pv(sc);
      wgmma_commit();
      turn_pass();
      wgmma_wait<0>();
      fence_regs(o_flat);
      release(empty_v(sc));
    }
    // O staged in Q's region (D = 192, 256): both consumer warpgroups must be done reading Q (wgmma
    // waits above). In its own region, each warp stages and stores only its own 16 rows.
    if constexpr (!Cfg::kOwnOStage) named_bar_sync(Cfg::kBarEpilogue, 128 * Cfg::kConsumerWGs);

    // ---- epilogue: O / l -> this warp's 16 rows of the Q region (row-major, swizzled) -> 16-byte stores
    FLASHCORE_TIMELINE_NOW(t_pv);
    float inv[2], lse2[2];
    sm.finish(mask, h, sl2, inv, lse2);
    if constexpr (Cfg::kFp8) {  // P and l carry 2^kFp8PLog2 (O / l does not); V stands for descale_v · V
      inv[0] *= p.descale_v, inv[1] *= p.descale_v;
      lse2[0] -= float(kFp8PLog2), lse2[1] -= float(kFp8PLog2);
    }
    bool whole = true;
    if constexpr (kTail) {
      if (piece >= 0) {  // a tail piece: the partial, and the merge by the last piece's warp
        tail_piece_epilogue<D, Cfg::kBlockM, Elem>(a, ts, item, piece, b, h, m0, row_lo - m0, o, inv, lse2, lane);
        whole = false;
      }
    }
    if (whole) {
      OutElem* sO = reinterpret_cast<OutElem*>(smem_raw + (sQ + Cfg::kOStageOffset - smem_u32(smem_raw)));
      const bool o_tma = kOTma && a.o_tma;
      if (o_tma) {  // the warp's previous TMA store has read its staged rows
        if (lane == 0) bulk_wait_group_read<0>();
        __syncwarp();
      }
      stage_o_rows<D>(sO, row_lo - m0 + g, lane, inv, [&](int j, int e) { return o[j][e]; });
      write_lse_rows(p, b, h, row_lo + g, lse2, lane);
      if (o_tma) {  // the warp's 16 staged rows (2 KB, 128-byte swizzle rows) -> O by one TMA store
        fence_proxy_async_smem();
        __syncwarp();
        if (lane == 0) {
          tma_store_4d(&maps.o, smem_u32(sO) + (row_lo - m0) * Cfg::kRowBytes, 0, row_lo, h, b);
          bulk_commit_group();
        }
      } else {
        __syncwarp();
        store_o_rows<D>(p, b, h, sO, row_lo - m0, row_lo, 16, lane);
      }
    }
    if constexpr (!Cfg::kOwnOStage) {
      // This warp's staged rows are read: the next item's Q may land (generic accesses ordered before
      // the async proxy's writes).
      fence_proxy_async_smem();
      release(q_empty);
    } else {
      __syncwarp();  // the warp's stores have read its staged rows before the next item's staging
    }
    FLASHCORE_TIMELINE_NOW(t_end);
    FLASHCORE_TIMELINE_RECORD(warp - 4, lane, n_items, it.w, piece, n_tiles, t_q, t_k0, t_s0, t_pv, t_end);
    ring += n_tiles;
    ++n_items;
  }
  if (kOTma && a.o_tma && lane == 0) bulk_wait_group<0>();  // the TMA stores are complete before the block leaves
}

// kWGs other than the head dim's default (D = 64 with three warpgroups): the lean instance, built without
// paged K/V and the attention variants (the plan sends it neither: hopper_instance).
template <int D, int kWGs, typename Elem>
cudaError_t launch_typed(const FlashFwdPlan& plan, const KernelArgs& args, const HopperMaps& maps, cudaStream_t stream) {
  using Cfg = HopperConfig<D, sizeof(Elem), kWGs>;
  const bool variants = has_variants(args.p), paged = args.p.block_table != nullptr;
  if (args.paged_gather && !paged) return cudaErrorInvalidValue;
  void (*kernel)(KernelArgs, HopperMaps) = nullptr;
  if (args.tail_items > 0) {  // the tail split: the plan splits nothing else, and it needs the counters
    if (paged || variants || args.p.causal || has_sequences(args.p) || args.counters == nullptr || args.part_o == nullptr ||
        args.tail_splits < 2 || args.tail_splits > kMaxSplits)  // the merge has an instance for each of 2 .. kMaxSplits
      return cudaErrorInvalidValue;
    kernel = flash_fwd_hopper_kernel<D, Elem, CausalMask, false, Elem, kWGs, true>;
  } else if constexpr (kWGs == hopper_default_wgs(D)) {
    kernel = paged ? (variants ? flash_fwd_hopper_kernel<D, Elem, VariantMask, true> : flash_fwd_hopper_kernel<D, Elem, CausalMask, true>)
                   : (variants ? flash_fwd_hopper_kernel<D, Elem, VariantMask, false> : flash_fwd_hopper_kernel<D, Elem, CausalMask, false>);
  } else {
    if (paged || variants) return cudaErrorInvalidValue;
    kernel = flash_fwd_hopper_kernel<D, Elem, CausalMask, false, Elem, kWGs>;
  }
  const cudaError_t e = raise_smem_limit(reinterpret_cast<const void*>(kernel), plan.device, Cfg::kSmemBytes);
  if (e != cudaSuccess) return e;
  // A dependent launch where the loaded code has griddepcontrol (common/dependent_launch.cuh): its launch and
  // barrier set-up under the previous kernel's last blocks. H200, run 43i, graph-timed: (1,8,1024,64) 14.5 ->
  // 13.8 us, (1,8,2048,64) 24.3 -> 23.6, (16,16,512,64) 57.1 -> 55.7; rows of 100 us and more within 1 %.
  return launch_kernel(kernel, dim3(plan.work_blocks), dim3(Cfg::kThreads), Cfg::kSmemBytes, stream,
                       dependent_launch_loads(reinterpret_cast<const void*>(kernel), plan.device), args, maps);
}

template <int D, int kWGs>
cudaError_t launch_sm90_instance(const FlashFwdPlan& plan, const KernelArgs& args, const HopperMaps& maps,
                                 cudaStream_t stream) {
  return args.p.bf16 ? launch_typed<D, kWGs, __nv_bfloat16>(plan, args, maps, stream)
                     : launch_typed<D, kWGs, __half>(plan, args, maps, stream);
}

template <int D>
const void* sm90_kernel_address() {
  return reinterpret_cast<const void*>(flash_fwd_hopper_kernel<D, __half, CausalMask, false>);
}

}  // namespace flashcore::cuda::detail

// The instance of head dim D with W consumer warpgroups (an instance file each: sm90/instances/).
#define FLASHCORE_SM90_INSTANTIATE_WGS(D, W)                                                                   \
  template cudaError_t flashcore::cuda::detail::launch_sm90_instance<D, W>(                                    \
      const flashcore::cuda::FlashFwdPlan&, const flashcore::cuda::detail::KernelArgs&,                        \
      const flashcore::cuda::detail::HopperMaps&, cudaStream_t);
#define FLASHCORE_SM90_INSTANTIATE(D)                                                                          \
  FLASHCORE_SM90_INSTANTIATE_WGS(D, flashcore::cuda::detail::hopper_default_wgs(D))                            \
  template const void* flashcore::cuda::detail::sm90_kernel_address<D>();
