// Launch scratch (launch_scratch.h): the stream's cached buffer for eager launches, a graph-owned one
// for captured launches.
#include "backends/cuda/launch_scratch.h"

#include <map>
#include <memory>
#include <thread>
#include <tuple>

namespace flashcore::cuda::detail {
namespace {

struct StreamScratch {
  std::mutex mutex;  // held from acquire to release
  int* counters = nullptr;
  size_t counter_bytes = 0;
  char* partial = nullptr;
  size_t partial_bytes = 0;
};
// (device, stream, thread): the thread only for cudaStreamPerThread, one stream per calling thread.
using Key = std::tuple<int, cudaStream_t, std::thread::id>;
std::mutex g_map_mutex;
std::map<Key, std::unique_ptr<StreamScratch>> g_stream_scratch;

StreamScratch& stream_entry(int device, cudaStream_t stream) {
  const std::thread::id thread = stream == cudaStreamPerThread ? std::this_thread::get_id() : std::thread::id();
  std::lock_guard<std::mutex> lock(g_map_mutex);
  std::unique_ptr<StreamScratch>& e = g_stream_scratch[Key{device, stream, thread}];
  if (!e) e = std::make_unique<StreamScratch>();
  return *e;  // entries are never removed
}

// A new buffer of `bytes` in place of *ptr (freed once the new one exists); zeroed on the stream (ordered
// before the launch, whatever the stream's flags). false: none (the old one is kept), no error pending.
template <typename T>
bool grow(T** ptr, size_t* have, size_t bytes, bool zero, cudaStream_t stream) {
  void* fresh = nullptr;
  if (cudaMalloc(&fresh, bytes) != cudaSuccess) { cudaGetLastError(); return false; }
  if (zero && cudaMemsetAsync(fresh, 0, bytes, stream) != cudaSuccess) {
    cudaGetLastError();
    if (cudaFree(fresh) != cudaSuccess) cudaGetLastError();
    return false;
  }
  if (*ptr != nullptr && cudaFree(*ptr) != cudaSuccess) cudaGetLastError();  // the stream was synchronized
  *ptr = static_cast<T*>(fresh);
  *have = bytes;
  return true;
}

// The stream's buffers, grown (after the stream's pending work) where too small; locked into *out.
cudaError_t stream_scratch(int device, cudaStream_t stream, size_t counter_bytes, size_t partial_bytes, LaunchScratch* out) {
  StreamScratch& s = stream_entry(device, stream);
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.counter_bytes < counter_bytes || s.partial_bytes < partial_bytes) {
    const cudaError_t e = cudaStreamSynchronize(stream);  // the old buffers' last launch is done
    if (e != cudaSuccess) return e;                       // an earlier error: the caller's to see
    if (s.counter_bytes < counter_bytes && !grow(&s.counters, &s.counter_bytes, counter_bytes, true, stream))
      return cudaSuccess;
    if (s.partial_bytes < partial_bytes && !grow(&s.partial, &s.partial_bytes, partial_bytes, false, stream))
      return cudaSuccess;
  }
  out->counters = counter_bytes > 0 ? s.counters : nullptr;
  out->partial = partial_bytes > 0 ? s.partial : nullptr;
  out->hold = std::move(lock);
  return cudaSuccess;
}

// One allocation the graph owns: the tickets (zeroed by a memset node) and the partials after them.
void graph_scratch(cudaStream_t stream, size_t counter_bytes, size_t partial_bytes, LaunchScratch* out) {
  const size_t counters = scratch_align_up(counter_bytes);
  void* block = nullptr;
  if (cudaMallocAsync(&block, counters + partial_bytes, stream) != cudaSuccess) { cudaGetLastError(); return; }
  if (counter_bytes > 0 && cudaMemsetAsync(block, 0, counter_bytes, stream) != cudaSuccess) {
    cudaGetLastError();
    if (cudaFreeAsync(block, stream) != cudaSuccess) cudaGetLastError();
    return;
  }
  out->graph_block = block;
  out->counters = counter_bytes > 0 ? static_cast<int*>(block) : nullptr;
  out->partial = partial_bytes > 0 ? static_cast<char*>(block) + counters : nullptr;
}

}  // namespace

cudaError_t acquire_launch_scratch(int device, cudaStream_t stream, size_t counter_bytes, size_t partial_bytes,
                                   LaunchScratch* out) {
  *out = LaunchScratch{};
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &cap) != cudaSuccess) {  // e.g. the legacy stream beside a capture
    cudaGetLastError();
    return cudaSuccess;
  }
  if (cap == cudaStreamCaptureStatusNone) return stream_scratch(device, stream, counter_bytes, partial_bytes, out);
  if (cap == cudaStreamCaptureStatusActive) graph_scratch(stream, counter_bytes, partial_bytes, out);
  return cudaSuccess;  // an invalidated capture: it fails at its end anyway
}

bool stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &cap) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return cap == cudaStreamCaptureStatusActive;
}

cudaError_t release_launch_scratch(LaunchScratch& s, cudaStream_t stream) {
  if (s.hold.owns_lock()) s.hold.unlock();
  if (s.graph_block == nullptr) return cudaSuccess;
  const cudaError_t e = cudaFreeAsync(s.graph_block, stream);
  s.graph_block = nullptr;
  return e;
}

}  // namespace flashcore::cuda::detail
