// The state behind kokkos_exec.hpp: the host launch lock and the per-stream Kokkos::Cuda instances.
#include "backends/common/kokkos_exec.hpp"

#include <utility>
#include <vector>

#include "core/internal.hpp"

namespace flashcore::kexec {

std::mutex& host_launch_mutex() {
  static std::mutex mutex;
  return mutex;
}

#if defined(KOKKOS_ENABLE_CUDA)
Kokkos::Cuda cuda_instance(cudaStream_t stream) {
  static std::mutex mutex;
  static std::vector<std::pair<cudaStream_t, Kokkos::Cuda>> instances;
  static bool hook_pushed = false;
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [s, exec] : instances)
    if (s == stream) return exec;
  if (!hook_pushed) {
    Kokkos::push_finalize_hook([] {
      std::lock_guard<std::mutex> lock(mutex);
      instances.clear();
      hook_pushed = false;
    });
    hook_pushed = true;
  }
  instances.emplace_back(stream, Kokkos::Cuda(stream));
  return instances.back().second;
}

Support on_current_cuda_device(const std::string& why) {
  DeviceInfo dev;
  std::string no_device;
  if (!detail::current_cuda_device(&dev, &no_device)) return Support::no(no_device);
  return why.empty() ? Support::yes() : Support::no(why);
}
#endif

}  // namespace flashcore::kexec
