// The backends this build provides, in one place.
#include "backends/portable/portable_api.hpp"
#include "backends/reference/reference_api.hpp"
#include "core/internal.hpp"

#if defined(FLASHCORE_HAVE_CUDA_KERNELS)
namespace flashcore::cuda {
std::vector<std::unique_ptr<Backend>> make_flash_backends();
}
#endif

namespace flashcore::detail {

std::vector<std::unique_ptr<Backend>> builtin_backends() {
  std::vector<std::unique_ptr<Backend>> out;
  out.push_back(reference::make_host_backend());
  out.push_back(portable::make_host_backend());
#if defined(FLASHCORE_HAVE_KOKKOS_CUDA)
  out.push_back(reference::make_cuda_backend());
  out.push_back(portable::make_cuda_backend());
#endif
#if defined(FLASHCORE_HAVE_CUDA_KERNELS)
  for (auto& b : cuda::make_flash_backends()) out.push_back(std::move(b));
#endif
  return out;
}

}  // namespace flashcore::detail
