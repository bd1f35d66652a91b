// Platform queries for builds without the CUDA toolkit: everything is host memory.
#include "core/internal.hpp"

namespace flashcore {

std::vector<DeviceInfo> cuda_devices(std::string* why) {
  if (why != nullptr) *why = "this build of FlashCore has no CUDA support";
  return {};
}

namespace detail {

MemoryLocation pointer_location(const void*, int* device) {
  if (device != nullptr) *device = -1;
  return MemoryLocation::Host;
}

void copy_to_host(void*, const void*, std::size_t, void*, const char* what) {
  throw Error(what, std::string(what) + ": is in device memory, but this build of FlashCore has no CUDA support");
}

bool current_cuda_device(DeviceInfo*, std::string* why) {
  if (why != nullptr) *why = "this build of FlashCore has no CUDA support";
  return false;
}

}  // namespace detail
}  // namespace flashcore
