// GoogleTest main for the CPU tests: Kokkos is initialized by the test program (as an
// application would), never by the library.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include "support/testing.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Listing the tests (CTest's discovery) must print only test names: no Kokkos, no seed.
  if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();
  fctest::set_openmp_binding_defaults();
  Kokkos::initialize(argc, argv);
  fctest::run_seed();  // print the seed up front
  const int rc = RUN_ALL_TESTS();
  Kokkos::finalize();
  return rc;
}
