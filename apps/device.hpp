// CUDA device memory and event timing for the flashcore tool. Only built when FlashCore links
// the CUDA runtime (FLASHCORE_HAVE_CUDA_RUNTIME); every CUDA call's status is checked and a
// failure throws DeviceError naming the call.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fcapp {

class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)

/// One device allocation, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes, const char* what);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t size() const { return bytes_; }
  void upload(const void* src, std::size_t bytes);
  void download(void* dst, std::size_t bytes) const;

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  std::string what_;
};

/// Waits for the device (checks for asynchronous errors of earlier calls).
void device_synchronize(const char* after);

/// Calls `call` n times back to back on the default stream, with a CUDA event recorded before
/// the first call and after every call. Returns the per-call times (us) and sets *total_us to
/// the time of all n calls.
std::vector<double> time_device_calls(const std::function<void()>& call, int n, double* total_us);

/// Name of the current CUDA device, e.g. "cuda:0 NVIDIA H100 80GB HBM3".
std::string current_device_name();

#endif

}  // namespace fcapp
