// A development timeline of the Hopper forward's work items and of the decode kernel's blocks: where a
// block's time goes, item by item (perf/dev/hopper_dev.cu `timeline`, perf/dev/timeline_summary.py;
// perf/dev/decode_dev.cu `timeline`). Compiled in only where
// FLASHCORE_DEV_TIMELINE is defined: one kernel instance built aside with it and linked before the
// library (perf/dev/build_hopper_dev.sh, EXTRA_OBJS); everywhere else the marks below are empty and the
// kernels are the same code.
//
// Each consumer warp's lane 0 records, per item it runs: the work index, the piece (tail split), its key
// tiles, and the global timer (ns) when the item's Q had landed, when its first K tile had landed, when
// its first tile's S and softmax were done (P packed), when its last P·V had completed and when its
// epilogue (stores, or a tail piece's partial and merge) was done (the two first-tile marks 0 for an item
// without tiles).
//
// The decode kernel's thread 0 records five entries per block, at the slot of the block's linear index
// (blockIdx.x fastest): (0) when the block started, when its first K/V tile had landed, when its key
// loop ended; (1) when its output or partial was stored (split: after the ticket), when the merge's
// weights were done and when the merge ended (the merging block; else 0); (2) when the key groups'
// states were merged, when the rows' sums were final and when the output or partial stores were issued;
// (3) when the block had its work item, when Q's copies were issued (paged: and the first tiles'
// block-table entries read) and when the first tiles' copies were issued; (4) when Q had landed.
#pragma once

#ifdef FLASHCORE_DEV_TIMELINE
#include <cuda_runtime.h>

namespace flashcore::cuda::detail {

constexpr int kTimelineBlocks = 160, kTimelineWarps = 12, kTimelineItems = 32, kTimelineFields = 6;
constexpr size_t kTimelineWords = (size_t)kTimelineBlocks * kTimelineWarps * kTimelineItems * kTimelineFields;
__device__ unsigned long long g_timeline[kTimelineWords];

__device__ __forceinline__ unsigned long long timeline_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// cw_warp: the consumer warp (0 .. 4·kWGs - 1); n: the items it ran before this one.
__device__ __forceinline__ void timeline_record(int cw_warp, int lane, int n, int w, int piece, int n_tiles,
                                                unsigned long long t_q, unsigned long long t_k0,
                                                unsigned long long t_s0, unsigned long long t_pv,
                                                unsigned long long t_end) {
  if (lane != 0 || blockIdx.x >= kTimelineBlocks || cw_warp >= kTimelineWarps || n >= kTimelineItems) return;
  unsigned long long* r = g_timeline + (((size_t)blockIdx.x * kTimelineWarps + cw_warp) * kTimelineItems + n) * kTimelineFields;
  r[0] = (unsigned long long)(unsigned)w | (unsigned long long)(unsigned)(piece + 1) << 32 |
         (unsigned long long)(unsigned)n_tiles << 40 | 1ull << 63;  // bit 63: a record
  r[1] = t_q;
  r[2] = t_pv;
  r[3] = t_end;
  r[4] = t_k0;
  r[5] = t_s0;
}

// Decode: record n (0, 1 or 2) of this block; head packs the split, its tiles, the splits, a kind and the SM.
__device__ __forceinline__ void timeline_block(int n, int split, int n_tiles, int n_splits, int kind,
                                               unsigned long long t1, unsigned long long t2, unsigned long long t3) {
  const unsigned long long slot =
      blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
  if (threadIdx.x != 0 || slot >= (unsigned long long)kTimelineBlocks * kTimelineWarps || n >= kTimelineItems) return;
  unsigned long long* r = g_timeline + (slot * kTimelineItems + n) * kTimelineFields;
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  r[0] = (unsigned long long)(split & 0xffff) | (unsigned long long)(n_tiles & 0xffff) << 16 |
         (unsigned long long)(n_splits & 0xff) << 32 | (unsigned long long)(kind & 0xff) << 40 |
         (unsigned long long)(smid & 0xff) << 48 | 1ull << 63;
  r[1] = t1;
  r[2] = t2;
  r[3] = t3;
}

}  // namespace flashcore::cuda::detail

// The host side (the harness declares these; defined once, in the instance built with the timeline).
extern "C" cudaError_t flashcore_dev_timeline_clear() {
  void* d = nullptr;
  const cudaError_t e = cudaGetSymbolAddress(&d, flashcore::cuda::detail::g_timeline);
  return e != cudaSuccess ? e : cudaMemset(d, 0, sizeof(flashcore::cuda::detail::g_timeline));
}
extern "C" cudaError_t flashcore_dev_timeline_read(unsigned long long* host, size_t count, int* blocks, int* warps,
                                                   int* items, int* fields) {
  using namespace flashcore::cuda::detail;
  *blocks = kTimelineBlocks, *warps = kTimelineWarps, *items = kTimelineItems, *fields = kTimelineFields;
  if (count < kTimelineWords) return cudaErrorInvalidValue;
  return cudaMemcpyFromSymbol(host, g_timeline, sizeof(g_timeline));
}
#define FLASHCORE_TIMELINE_NOW(t) const unsigned long long t = flashcore::cuda::detail::timeline_now()
#define FLASHCORE_TIMELINE_RECORD(...) flashcore::cuda::detail::timeline_record(__VA_ARGS__)
#define FLASHCORE_TIMELINE_DECL(t) unsigned long long t = 0
#define FLASHCORE_TIMELINE_SET_IF(cond, t) \
  if (cond) t = flashcore::cuda::detail::timeline_now()
#define FLASHCORE_TIMELINE_BLOCK(...) flashcore::cuda::detail::timeline_block(__VA_ARGS__)
#else
#define FLASHCORE_TIMELINE_NOW(t)
#define FLASHCORE_TIMELINE_RECORD(...)
#define FLASHCORE_TIMELINE_DECL(t)
#define FLASHCORE_TIMELINE_SET_IF(cond, t)
#define FLASHCORE_TIMELINE_BLOCK(...)
#endif
