// Kokkos Tools regions: Kokkos::Profiling::pushRegion/popRegion, present from Kokkos 3.x on.
#include "platform/profiling.hpp"

#include <Kokkos_Core.hpp>

namespace flashcore::detail {

bool profiling_active() { return Kokkos::Profiling::profileLibraryLoaded(); }
void push_profiling_region(const std::string& name) { Kokkos::Profiling::pushRegion(name); }
void pop_profiling_region() { Kokkos::Profiling::popRegion(); }

}  // namespace flashcore::detail
