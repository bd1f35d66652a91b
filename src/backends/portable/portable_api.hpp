// Entry points of the portable tier that the rest of FlashCore calls (no Kokkos include).
#pragma once

#include <memory>
#include <string>

#include "flashcore/flashcore.hpp"

namespace flashcore::portable {

/// The CPU kernel on the default host execution space (OpenMP or Serial): "portable-host".
std::unique_ptr<Backend> make_host_backend();

#if defined(FLASHCORE_HAVE_KOKKOS_CUDA)
/// The team kernel on Kokkos::Cuda, reading device memory: "portable-cuda".
std::unique_ptr<Backend> make_cuda_backend();
#endif

/// For tests: the team kernel (portable-cuda's) on the host execution space, host data, waiting
/// for it. Throws std::invalid_argument when it cannot run p. Returns its tile shape in words.
std::string run_team_kernel_on_host(const Problem& p, const Tensors& t);

}  // namespace flashcore::portable
