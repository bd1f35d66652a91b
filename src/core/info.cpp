// Version and build configuration.
#include <sstream>

#include "core/internal.hpp"
#include "flashcore/flashcore.hpp"

#ifndef FLASHCORE_VERSION
#define FLASHCORE_VERSION "unknown"
#endif
#ifndef FLASHCORE_BUILD_TYPE
#define FLASHCORE_BUILD_TYPE "unknown"
#endif

namespace flashcore {

const char* version() { return FLASHCORE_VERSION; }

std::string build_info() {
  std::ostringstream os;
  os << "FlashCore " << FLASHCORE_VERSION << ", build type " << FLASHCORE_BUILD_TYPE << "\n";
#if defined(__clang__)
  os << "compiler: clang " << __clang_major__ << "." << __clang_minor__ << "\n";
#elif defined(__GNUC__)
  os << "compiler: g++ " << __GNUC__ << "." << __GNUC_MINOR__ << "." << __GNUC_PATCHLEVEL__ << ", C++ " << __cplusplus
     << "\n";
#endif
  os << detail::kokkos_configuration() << "\n";
#if defined(FLASHCORE_HAVE_CUDA_KERNELS)
  os << "CUDA kernels: built for " << FLASHCORE_CUDA_ARCHS << " (CUDA " << FLASHCORE_CUDA_VERSION << ")\n";
#else
  os << "CUDA kernels: not built\n";
#endif
#if defined(FLASHCORE_HAVE_KOKKOS_CUDA)
  os << "Kokkos reference on CUDA: built\n";
#else
  os << "Kokkos reference on CUDA: not built (Kokkos has no CUDA backend)\n";
#endif
  return os.str();
}

}  // namespace flashcore
