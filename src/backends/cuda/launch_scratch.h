// Where a launch keeps its tickets (ints that are 0 at launch; every kernel that draws from them sets
// them back to 0 before it ends) and its split-KV partials (fp32, no initial value needed).
//  - An eager launch uses a buffer cached per (device, stream) and grown outside any capture: launches
//    on one stream are ordered, so they can share it. The buffer is held (a lock per stream) from
//    acquire_launch_scratch to release_launch_scratch, so that a thread growing it cannot free it under
//    another thread's launch on the same stream. cudaStreamPerThread gets a buffer per calling thread.
//    (A stream destroyed while FlashCore work on it is pending, whose handle a new stream then gets at
//    once, would share the old one's buffer with that work: destroy streams after their work.)
//  - A launch captured into a CUDA graph gets a buffer the graph owns (an allocation node, a memset of
//    the tickets, the kernel, a free node), so that graphs captured on one stream may be replayed at
//    once on other streams. (Two launches avoid the memset when captured, flash_fwd_run: a decode split
//    merged by the combine kernel takes partials only; the Hopper kernel on equal items takes nothing.) A graph with allocation nodes can be instantiated once at a time (CUDA's
//    rule for cudaGraphInstantiate), which is what makes a buffer per graph safe; a slot per captured
//    launch in a shared array would not be (two instantiations of one graph could run at once).
// Host code only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <mutex>

namespace flashcore::cuda::detail {

// Sizes and offsets inside the scratch (the plan's tickets, O and LSE partials): multiples of 256 bytes.
inline size_t scratch_align_up(size_t x) { return (x + 255) & ~size_t(255); }

struct LaunchScratch {
  int* counters = nullptr;
  char* partial = nullptr;
  void* graph_block = nullptr;       // the graph's allocation (captured launches), freed by release
  std::unique_lock<std::mutex> hold;  // the stream buffer's lock (eager launches), released by release
  bool have() const { return counters != nullptr || partial != nullptr; }
};

// cudaSuccess with *out filled, or with *out empty when no scratch can be had (the caller then runs
// without: the Hopper kernel's static order, the split-KV kernels un-split; no CUDA error is left
// pending then). Another error is one the stream already had (its synchronize failed): return it.
cudaError_t acquire_launch_scratch(int device, cudaStream_t stream, size_t counter_bytes, size_t partial_bytes,
                                   LaunchScratch* out);

// True while `stream` is being captured into a graph (false on a query error, which is cleared).
bool stream_capturing(cudaStream_t stream);

// After the launch: the free node of a captured launch's buffer; the stream buffer's lock.
cudaError_t release_launch_scratch(LaunchScratch& s, cudaStream_t stream);

}  // namespace flashcore::cuda::detail
