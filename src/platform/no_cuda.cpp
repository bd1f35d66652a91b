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

bool current_cuda_device(DeviceInfo*, std::string* why) {
  if (why != nullptr) *why = "this build of FlashCore has no CUDA support";
  return false;
}

}  // namespace detail
}  // namespace flashcore
