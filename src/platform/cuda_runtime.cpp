// Device detection through the CUDA runtime: devices, their limits, and where a pointer lives.
// Plain C++ against cuda_runtime_api.h (no kernels, no Kokkos).
#include <cuda_runtime_api.h>

#include <mutex>

#include "core/internal.hpp"

namespace flashcore {

namespace {

bool query_device(int index, DeviceInfo* out, std::string* why) {
  cudaDeviceProp prop{};
  const cudaError_t err = cudaGetDeviceProperties(&prop, index);
  if (err != cudaSuccess) {
    if (why != nullptr) *why = std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(err);
    return false;
  }
  DeviceInfo d;
  d.index = index;
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.smem_optin_per_block = prop.sharedMemPerBlockOptin;
  d.smem_per_sm = prop.sharedMemPerMultiprocessor;
  d.global_mem_bytes = prop.totalGlobalMem;
  d.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, index) == cudaSuccess) d.clock_mhz = khz / 1000;
  *out = d;
  return true;
}

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state
    if (why != nullptr) *why = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    return 0;
  }
  if (n == 0 && why != nullptr) *why = "no CUDA device found";
  return n;
}

}  // namespace

std::vector<DeviceInfo> cuda_devices(std::string* why) {
  std::vector<DeviceInfo> out;
  const int n = device_count(why);
  for (int i = 0; i < n; ++i) {
    DeviceInfo d;
    if (query_device(i, &d, why)) out.push_back(d);
  }
  return out;
}

namespace detail {

MemoryLocation pointer_location(const void* p, int* device) {
  if (device != nullptr) *device = -1;
  if (p == nullptr) return MemoryLocation::Host;
  static const bool have_device = device_count(nullptr) > 0;
  if (!have_device) return MemoryLocation::Host;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return MemoryLocation::Host;
  }
  // Managed memory is reachable from both; the device backends are the natural consumers.
  const bool on_device = attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
  if (on_device && device != nullptr) *device = attr.device;
  return on_device ? MemoryLocation::Device : MemoryLocation::Host;
}

void copy_to_host(void* dst, const void* src, std::size_t bytes, void* stream, const char* what) {
  const auto s = static_cast<cudaStream_t>(stream);
  // A stream being captured into a CUDA graph cannot wait for the host: say so before enqueuing anything
  // (a copy and a synchronize would invalidate the capture).
  // (The legacy default stream cannot even be asked while another stream is being captured: the same.)
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  const cudaError_t asked = cudaStreamIsCapturing(s, &cap);
  if (asked != cudaSuccess) cudaGetLastError();
  if (asked != cudaSuccess || cap != cudaStreamCaptureStatusNone)
    throw Error(what, std::string(what) + ": is in device memory and " +
                          (asked != cudaSuccess ? std::string("Options::stream cannot wait for the host (") +
                                                      cudaGetErrorString(asked) + ", e.g. a capture on another stream)"
                                                : std::string("Options::stream is being captured into a CUDA graph")) +
                          ", so it cannot be copied to the host to validate it (set Options::check_sequences = false, "
                          "the C API's trust_sequences = 1, to capture)");
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw Error(what, std::string(what) + ": copying it to the host to validate it failed: " + cudaGetErrorString(err) +
                          " (Options::check_sequences = false skips the check)");
  }
}

bool current_cuda_device(DeviceInfo* out, std::string* why) {
  static std::mutex mutex;
  static std::vector<DeviceInfo> cache;  // by device index
  if (device_count(why) == 0) return false;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    if (why != nullptr) *why = "cudaGetDevice failed";
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex);
  for (const DeviceInfo& d : cache)
    if (d.index == dev) {
      *out = d;
      return true;
    }
  DeviceInfo d;
  if (!query_device(dev, &d, why)) return false;
  cache.push_back(d);
  *out = d;
  return true;
}

}  // namespace detail
}  // namespace flashcore
