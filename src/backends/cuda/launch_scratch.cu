// Launch scratch (launch_scratch.h): the stream's cached buffer for eager launches, a graph-owned one
// for captured launches.
#include "backends/cuda/launch_scratch.h"

#include <map>
#include <mutex>
#include <utility>

namespace flashcore::cuda::detail {
namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

struct StreamScratch { int* counters = nullptr; size_t counter_bytes = 0; char* partial = nullptr; size_t partial_bytes = 0; };
std::mutex g_mutex;
std::map<std::pair<int, cudaStream_t>, StreamScratch> g_stream_scratch;

// The stream's buffers, grown (after the stream's pending work) where too small.
bool stream_scratch(int device, cudaStream_t stream, size_t counter_bytes, size_t partial_bytes, LaunchScratch* out) {
  std::lock_guard<std::mutex> lock(g_mutex);
  StreamScratch& s = g_stream_scratch[{device, stream}];
  if (s.counter_bytes < counter_bytes || s.partial_bytes < partial_bytes) {
    if (cudaStreamSynchronize(stream) != cudaSuccess) return false;  // an earlier error: left for the caller
    if (s.counter_bytes < counter_bytes) {
      if (s.counters) cudaFree(s.counters);
      s.counters = nullptr; s.counter_bytes = 0;
      void* ptr = nullptr;
      if (cudaMalloc(&ptr, counter_bytes) != cudaSuccess) { cudaGetLastError(); return false; }
      if (cudaMemset(ptr, 0, counter_bytes) != cudaSuccess) { cudaGetLastError(); cudaFree(ptr); return false; }
      s.counters = static_cast<int*>(ptr); s.counter_bytes = counter_bytes;
    }
    if (s.partial_bytes < partial_bytes) {
      if (s.partial) cudaFree(s.partial);
      s.partial = nullptr; s.partial_bytes = 0;
      void* ptr = nullptr;
      if (cudaMalloc(&ptr, partial_bytes) != cudaSuccess) { cudaGetLastError(); return false; }
      s.partial = static_cast<char*>(ptr); s.partial_bytes = partial_bytes;
    }
  }
  out->counters = s.counters;
  out->partial = s.partial;
  return true;
}

// One allocation the graph owns: the tickets (zeroed by a memset node) and the partials after them.
bool graph_scratch(cudaStream_t stream, size_t counter_bytes, size_t partial_bytes, LaunchScratch* out) {
  const size_t counters = align_up(counter_bytes);
  void* block = nullptr;
  if (cudaMallocAsync(&block, counters + partial_bytes, stream) != cudaSuccess) { cudaGetLastError(); return false; }
  if (counter_bytes > 0 && cudaMemsetAsync(block, 0, counter_bytes, stream) != cudaSuccess) {
    cudaGetLastError();
    cudaFreeAsync(block, stream);
    cudaGetLastError();
    return false;
  }
  out->graph_block = block;
  out->counters = counter_bytes > 0 ? static_cast<int*>(block) : nullptr;
  out->partial = partial_bytes > 0 ? static_cast<char*>(block) + counters : nullptr;
  return true;
}

}  // namespace

bool acquire_launch_scratch(int device, cudaStream_t stream, size_t counter_bytes, size_t partial_bytes,
                            LaunchScratch* out) {
  *out = LaunchScratch{};
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &cap) != cudaSuccess) { cudaGetLastError(); return false; }
  if (cap == cudaStreamCaptureStatusNone) return stream_scratch(device, stream, counter_bytes, partial_bytes, out);
  if (cap != cudaStreamCaptureStatusActive) return false;  // an invalidated capture: it fails at its end anyway
  return graph_scratch(stream, counter_bytes, partial_bytes, out);
}

cudaError_t release_launch_scratch(const LaunchScratch& s, cudaStream_t stream) {
  return s.graph_block != nullptr ? cudaFreeAsync(s.graph_block, stream) : cudaSuccess;
}

}  // namespace flashcore::cuda::detail
