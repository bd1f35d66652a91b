// GoogleTest main for the CPU tests: Kokkos is initialized by the test program (as an
// application would), never by the library.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include "support/testing.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  Kokkos::initialize(argc, argv);
  fctest::run_seed();  // print the seed up front
  const int rc = RUN_ALL_TESTS();
  Kokkos::finalize();
  return rc;
}
