// The Kokkos runtime as FlashCore uses it: flashcore::initialize()/finalize() for applications
// that do not manage Kokkos themselves, and the configuration line of build_info().
#include <sstream>
#include <string>

#include "backends/reference/kokkos_compat.hpp"
#include "core/internal.hpp"

namespace flashcore {

namespace {
bool g_we_initialized_kokkos = false;
}

bool initialize() {
  if (Kokkos::is_initialized()) return false;
  Kokkos::initialize();
  g_we_initialized_kokkos = true;
  return true;
}

void finalize() {
  if (g_we_initialized_kokkos && Kokkos::is_initialized()) Kokkos::finalize();
  g_we_initialized_kokkos = false;
}

namespace detail {

std::string kokkos_configuration() {
  std::ostringstream os;
  os << "Kokkos " << kc::version_string() << " (execution spaces:";
#if defined(KOKKOS_ENABLE_SERIAL)
  os << " Serial";
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  os << " OpenMP";
#endif
#if defined(KOKKOS_ENABLE_THREADS)
  os << " Threads";
#endif
#if defined(KOKKOS_ENABLE_CUDA)
  os << " Cuda";
#endif
  os << "; default host: " << Kokkos::DefaultHostExecutionSpace::name()
     << "; default: " << Kokkos::DefaultExecutionSpace::name() << ")";
  return os.str();
}

}  // namespace detail

}  // namespace flashcore
