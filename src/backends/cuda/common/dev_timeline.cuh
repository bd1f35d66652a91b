// A development timeline of the Hopper forward's work items: where a block's time goes, item by item
// (perf/dev/hopper_dev.cu `timeline`, perf/dev/timeline_summary.py). Compiled in only where
// FLASHCORE_DEV_TIMELINE is defined: one kernel instance built aside with it and linked before the
// library (perf/dev/build_hopper_dev.sh, EXTRA_OBJS); everywhere else the marks below are empty and the
// kernels are the same code.
//
// Each consumer warp's lane 0 records, per item it runs: the work index, the piece (tail split), its key
// tiles, and the global timer (ns) when the item's Q had landed, when its last P·V had completed and when
// its epilogue (stores, or a tail piece's partial and merge) was done.
#pragma once

#ifdef FLASHCORE_DEV_TIMELINE
#include <cuda_runtime.h>

namespace flashcore::cuda::detail {

constexpr int kTimelineBlocks = 160, kTimelineWarps = 12, kTimelineItems = 32, kTimelineFields = 4;
constexpr size_t kTimelineWords = (size_t)kTimelineBlocks * kTimelineWarps * kTimelineItems * kTimelineFields;
__device__ unsigned long long g_timeline[kTimelineWords];

__device__ __forceinline__ unsigned long long timeline_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// cw_warp: the consumer warp (0 .. 4·kWGs - 1); n: the items it ran before this one.
__device__ __forceinline__ void timeline_record(int cw_warp, int lane, int n, int w, int piece, int n_tiles,
                                                unsigned long long t_q, unsigned long long t_pv,
                                                unsigned long long t_end) {
  if (lane != 0 || blockIdx.x >= kTimelineBlocks || cw_warp >= kTimelineWarps || n >= kTimelineItems) return;
  unsigned long long* r = g_timeline + (((size_t)blockIdx.x * kTimelineWarps + cw_warp) * kTimelineItems + n) * kTimelineFields;
  r[0] = (unsigned long long)(unsigned)w | (unsigned long long)(unsigned)(piece + 1) << 32 |
         (unsigned long long)(unsigned)n_tiles << 40 | 1ull << 63;  // bit 63: a record
  r[1] = t_q;
  r[2] = t_pv;
  r[3] = t_end;
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
#else
#define FLASHCORE_TIMELINE_NOW(t)
#define FLASHCORE_TIMELINE_RECORD(...)
#endif
