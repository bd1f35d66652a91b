#include "device.hpp"

#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)

#include <cuda_runtime_api.h>

namespace fcapp {

namespace {

void check(cudaError_t err, const std::string& what) {
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear a non-sticky error so that the cleanup calls still work
    throw DeviceError(what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
  }
}

// Events destroyed on scope exit, also when a call throws.
struct Events {
  std::vector<cudaEvent_t> ev;
  explicit Events(std::size_t n) {
    ev.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "cudaEventCreate");
      ev.push_back(e);
    }
  }
  ~Events() {
    for (cudaEvent_t e : ev) cudaEventDestroy(e);
  }
};

}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes, const char* what) : bytes_(bytes), what_(what) {
  check(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes), std::string("cudaMalloc of ") + std::to_string(bytes) +
                                                       " bytes for " + what);
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) cudaFree(ptr_);  // status ignored: nothing useful to do in a destructor
}

void DeviceBuffer::upload(const void* src, std::size_t bytes) {
  check(cudaMemcpy(ptr_, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy of " + what_ + " to the device");
}

void DeviceBuffer::download(void* dst, std::size_t bytes) const {
  check(cudaMemcpy(dst, ptr_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy of " + what_ + " to the host");
}

void device_synchronize(const char* after) {
  check(cudaDeviceSynchronize(), std::string("cudaDeviceSynchronize after ") + after);
}

std::vector<double> time_device_calls(const std::function<void()>& call, int n, double* total_us) {
  std::vector<double> per_call;
  *total_us = 0;
  if (n <= 0) return per_call;
  Events events(static_cast<std::size_t>(n) + 1);
  check(cudaEventRecord(events.ev[0], nullptr), "cudaEventRecord");
  for (int i = 0; i < n; ++i) {
    call();
    check(cudaEventRecord(events.ev[i + 1], nullptr), "cudaEventRecord");
  }
  check(cudaEventSynchronize(events.ev[n]), "cudaEventSynchronize after the timed calls");
  for (int i = 0; i < n; ++i) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, events.ev[i], events.ev[i + 1]), "cudaEventElapsedTime");
    per_call.push_back(ms * 1e3);
  }
  float total_ms = 0;
  check(cudaEventElapsedTime(&total_ms, events.ev[0], events.ev[n]), "cudaEventElapsedTime");
  *total_us = total_ms * 1e3;
  return per_call;
}

std::string current_device_name() {
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  return "cuda:" + std::to_string(dev) + " " + prop.name;
}

}  // namespace fcapp

#endif  // FLASHCORE_HAVE_CUDA_RUNTIME
