// GoogleTest main for the GPU tests. Kokkos is initialized only where it can be: a Kokkos built
// with CUDA aborts in initialize() on a machine without a GPU, and then every test skips anyway.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include "flashcore/flashcore.hpp"
#include "support/testing.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Listing the tests (CTest's discovery) must print only test names: no CUDA, no Kokkos.
  if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();
  fctest::set_openmp_binding_defaults();
  std::string why;
  const bool device = !flashcore::cuda_devices(&why).empty();
#if defined(KOKKOS_ENABLE_CUDA)
  const bool init_kokkos = device;
#else
  const bool init_kokkos = true;
#endif
  if (device) {
    for (const auto& d : flashcore::cuda_devices())
      std::printf("[flashcore gpu tests] device %d: %s, compute capability %d.%d, %d SMs\n", d.index, d.name.c_str(),
                  d.cc_major, d.cc_minor, d.sm_count);
  } else {
    std::printf("[flashcore gpu tests] no CUDA device (%s): every GPU test skips\n", why.c_str());
  }
  if (init_kokkos) Kokkos::initialize(argc, argv);
  fctest::run_seed();
  const int rc = RUN_ALL_TESTS();
  if (init_kokkos) Kokkos::finalize();
  return rc;
}
