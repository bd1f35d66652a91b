// Kokkos Tools see FlashCore: every run() is a profiling region named after the backend that ran,
// and the reference's Kokkos launches carry readable labels. A real Kokkos Tools library
// (recorder.cpp) is loaded by Kokkos through its environment variable, as a user's kernel timer
// or space-time stack would be, and the test reads what it recorded.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "flashcore/flashcore.h"
#include "flashcore/flashcore.hpp"
#include "support/testing.hpp"

#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
#include <cuda_runtime.h>
#endif

extern "C" {
int fc_recorder_loaded();
std::size_t fc_recorder_count();
const char* fc_recorder_event(std::size_t i);
void fc_recorder_clear();
}

using flashcore::DType;

namespace {

std::vector<std::string> events() {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < fc_recorder_count(); ++i) out.emplace_back(fc_recorder_event(i));
  return out;
}

std::string joined(const std::vector<std::string>& ev) {
  std::string s;
  for (const auto& e : ev) s += "\n  " + e;
  return s.empty() ? " (none)" : s;
}

// The events of one call: "push flashcore::<backend>", then only what the backend launched, then
// "pop". Returns the launches in between.
std::vector<std::string> expect_one_region(const std::vector<std::string>& ev, const std::string& backend) {
  std::vector<std::string> inside;
  EXPECT_GE(ev.size(), 2u) << joined(ev);
  if (ev.size() < 2) return inside;
  EXPECT_EQ(ev.front(), "push flashcore::" + backend) << joined(ev);
  EXPECT_EQ(ev.back(), "pop") << joined(ev);
  for (std::size_t i = 1; i + 1 < ev.size(); ++i) {
    EXPECT_NE(ev[i].rfind("push", 0), 0u) << "nested region" << joined(ev);
    EXPECT_NE(ev[i], "pop") << joined(ev);
    inside.push_back(ev[i]);
  }
  return inside;
}

struct ThrowingBackend : flashcore::Backend {
  std::string name() const override { return "test-throwing"; }
  int priority() const override { return 0; }
  flashcore::MemoryLocation location() const override { return flashcore::MemoryLocation::Host; }
  std::string description() const override { return "test backend whose run() throws"; }
  flashcore::Support supports(const flashcore::Query&) const override { return flashcore::Support::yes(); }
  bool automatic() const override { return false; }
  void run(const flashcore::Query&, const flashcore::Options&) const override {
    throw std::runtime_error("test-throwing: failed on purpose");
  }
};

// Kokkos is initialized by main() where it can be (not with a CUDA-enabled Kokkos and no GPU).
class KokkosTools : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Kokkos::is_initialized()) GTEST_SKIP() << "Kokkos not initialized: built with CUDA and no CUDA device here";
  }
};

}  // namespace

TEST_F(KokkosTools, ToolLibraryIsLoaded) { ASSERT_EQ(fc_recorder_loaded(), 1) << "Kokkos did not load the recorder"; }

TEST_F(KokkosTools, HostRunIsARegionNamedAfterTheBackendWithLabelledLaunches) {
  // Automatic: portable-host, whose launch label names its kernel, dtype and tiles (13 queries: a
  // block of 16 rows); forced: reference-host.
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    fctest::Case c = fctest::make_case(2, 4, 2, 13, 29, 32, dt, true);
    for (const std::string forced : {"", "reference-host"}) {
      SCOPED_TRACE(forced);
      fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 1);
      fc_recorder_clear();
      flashcore::Options opts;
      opts.backend = forced;
      const std::string chosen = flashcore::run(d.problem, d.tensors(), opts).chosen;
      EXPECT_EQ(chosen, forced.empty() ? "portable-host" : forced);
      const auto inside = expect_one_region(events(), chosen);
      ASSERT_EQ(inside.size(), 1u) << joined(events());
      const std::string dtype = flashcore::to_string(dt);
      EXPECT_EQ(inside[0], forced.empty() ? "for flashcore::portable[cpu, " + dtype + ", 16x64 tiles]"
                                          : "for flashcore::reference[" + dtype + " in, fp32 acc]");
      // The region wraps real work: the result is right.
      const fctest::Errors e = fctest::compare(d, fctest::oracle(d));
      EXPECT_EQ(e.bad, 0) << e.first_bad;
    }
  }
}

TEST_F(KokkosTools, Fp8LaunchLabelsNameInputsAndOutput) {
  // fp8 (e4m3) inputs: the labels say "fp8_e4m3 in" and the output dtype.
  const fctest::Case c = fctest::fp8_case(fctest::make_case(1, 4, 2, 13, 29, 32, DType::E4M3, true), DType::F16, 0.5, 2, 0.25);
  for (const std::string forced : {"", "reference-host"}) {
    SCOPED_TRACE(forced);
    fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 4);
    fc_recorder_clear();
    flashcore::Options opts;
    opts.backend = forced;
    const std::string chosen = flashcore::run(d.problem, d.tensors(), opts).chosen;
    const auto inside = expect_one_region(events(), chosen);
    ASSERT_EQ(inside.size(), 1u) << joined(events());
    EXPECT_EQ(inside[0], forced.empty() ? "for flashcore::portable[cpu, fp8_e4m3 in, fp16 out, 16x64 tiles]"
                                        : "for flashcore::reference[fp8_e4m3 in, fp16 out, fp32 acc]");
    const fctest::Errors e = fctest::compare(d, fctest::oracle(d));
    EXPECT_EQ(e.bad, 0) << e.first_bad;
  }
}

TEST_F(KokkosTools, CApiCallIsARegionToo) {
  fctest::Case c = fctest::make_case(1, 2, 1, 7, 9, 16, DType::F32, false);
  fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 2);
  fc_problem p;
  fc_problem_init(&p, 1, 2, 1, 7, 9, 16, FC_F32, 0);
  fc_recorder_clear();
  ASSERT_EQ(fc_attention(&p, d.q.data(), d.k.data(), d.v.data(), d.o.data(), nullptr, FC_LOC_HOST, nullptr, nullptr),
            FC_OK)
      << fc_last_error();
  expect_one_region(events(), "portable-host");
}

TEST_F(KokkosTools, NoRegionWithoutWorkAndRegionsClosedOnErrors) {
  fctest::Case c = fctest::make_case(1, 2, 2, 5, 5, 16, DType::F16, false);
  fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 3);
  // explain() does no work: no region, no launch.
  fc_recorder_clear();
  flashcore::explain(d.problem, d.tensors());
  EXPECT_TRUE(events().empty()) << joined(events());
  // Invalid input fails before any backend runs: no region.
  flashcore::Problem bad = d.problem;
  bad.head_dim = 0;
  EXPECT_THROW(flashcore::run(bad, d.tensors()), flashcore::Error);
  EXPECT_TRUE(events().empty()) << joined(events());
  // A backend that throws inside run(): its region is still closed.
  static bool registered = false;
  if (!registered) {
    flashcore::register_backend(std::make_unique<ThrowingBackend>());
    registered = true;
  }
  flashcore::Options opts;
  opts.backend = "test-throwing";
  EXPECT_THROW(flashcore::run(d.problem, d.tensors(), opts), std::runtime_error);
  const auto inside = expect_one_region(events(), "test-throwing");
  EXPECT_TRUE(inside.empty()) << joined(events());
}

#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
TEST_F(KokkosTools, DeviceRunsAreRegionsNamedAfterTheBackend) {
  std::string why;
  if (flashcore::cuda_devices(&why).empty()) GTEST_SKIP() << "no CUDA device: " << why;
  const auto p = flashcore::Problem::make(1, 8, 2, 77, 130, 64, DType::F16, true);
  const std::size_t nq = 1ull * 77 * 8 * 64, nk = 1ull * 130 * 2 * 64;
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  ASSERT_EQ(cudaMalloc(&q, nq * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&k, nk * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&v, nk * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&o, nq * 2), cudaSuccess);
  cudaMemset(q, 0, nq * 2), cudaMemset(k, 0, nk * 2), cudaMemset(v, 0, nk * 2);
  const flashcore::Tensors t{q, k, v, o, nullptr};
  std::vector<std::string> device_backends;
  for (const auto& b : flashcore::backends())
    if (b.location == flashcore::MemoryLocation::Device) device_backends.push_back(b.name);
  for (const std::string& name : device_backends) {
    flashcore::Options opts;
    opts.backend = name;
    const flashcore::Report r = flashcore::explain(p, t, opts);
    if (r.chosen != name) continue;  // declines here (e.g. the Hopper kernel off cc 9.0)
    fc_recorder_clear();
    flashcore::run(p, t, opts);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto inside = expect_one_region(events(), name);
    if (name.rfind("reference", 0) == 0) {
      ASSERT_FALSE(inside.empty()) << joined(events());
      EXPECT_EQ(inside.back(), "for flashcore::reference[fp16 in, fp32 acc]") << joined(events());
    } else if (name.rfind("portable", 0) == 0) {
      ASSERT_FALSE(inside.empty()) << joined(events());
      EXPECT_EQ(inside.back().rfind("for flashcore::portable[team, fp16, ", 0), 0u) << joined(events());
    } else {
      EXPECT_TRUE(inside.empty()) << "the tuned kernels launch no Kokkos work" << joined(events());
    }
  }
  // Automatic choice: the region names the backend that was chosen.
  fc_recorder_clear();
  const std::string chosen = flashcore::run(p, t).chosen;
  cudaDeviceSynchronize();
  expect_one_region(events(), chosen);
  cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o);
}
#endif

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();
  fctest::set_openmp_binding_defaults();
  // The tool library, as a user would load it (the variable's name changed in Kokkos 4); its
  // build path, or FLASHCORE_TOOLS_RECORDER where the binaries were moved (the GPU machine).
  const char* moved = std::getenv("FLASHCORE_TOOLS_RECORDER");
  const char* tool = moved != nullptr && *moved ? moved : FLASHCORE_TOOLS_RECORDER;
#if KOKKOS_VERSION >= 40000
  setenv("KOKKOS_TOOLS_LIBS", tool, 1);
#else
  setenv("KOKKOS_PROFILE_LIBRARY", tool, 1);
#endif
  bool init_kokkos = true;
#if defined(KOKKOS_ENABLE_CUDA)
  // A Kokkos built with CUDA cannot initialize without a GPU: every test skips.
  init_kokkos = !flashcore::cuda_devices().empty();
#endif
  if (init_kokkos) Kokkos::initialize(argc, argv);
  fctest::run_seed();
  const int rc = RUN_ALL_TESTS();
  if (init_kokkos) Kokkos::finalize();
  return rc;
}
