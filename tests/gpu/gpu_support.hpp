// What the GPU test files share: CUDA error checks, the device question (tests skip with its reason
// when there is none) and test-name sanitizing.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cctype>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "flashcore/flashcore.hpp"
#include "support/testing.hpp"

namespace fcgpu {

// A failed CUDA call throws; GoogleTest reports the exception as a failure of the test.
#define CUDA_OK(call)                                                                                          \
  do {                                                                                                         \
    const cudaError_t err_ = (call);                                                                           \
    if (err_ != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(err_)); \
  } while (0)

/// Whether a CUDA device is visible; no_device_reason() says why not.
inline const std::string& no_device_reason() {
  static std::string why;
  return why;
}
inline bool have_device() {
  static const bool ok = [] {
    std::string why;
    const bool any = !flashcore::cuda_devices(&why).empty();
    const_cast<std::string&>(no_device_reason()) = why;
    return any;
  }();
  return ok;
}
#define REQUIRE_DEVICE() \
  if (!fcgpu::have_device()) GTEST_SKIP() << "no CUDA device: " << fcgpu::no_device_reason()

/// A test name from any text: every character but letters and digits becomes '_'.
inline std::string sanitize(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

/// One parameter of the per-backend suites: a backend and a case it is asked to run.
struct BackendCase {
  std::string backend;
  fctest::Case c;
};
inline void PrintTo(const BackendCase& g, std::ostream* os) { *os << g.backend << " " << g.c.name(); }
/// Every backend with every case.
inline std::vector<BackendCase> every_pair(const std::vector<std::string>& backends, const std::vector<fctest::Case>& cases) {
  std::vector<BackendCase> out;
  for (const std::string& b : backends)
    for (const fctest::Case& c : cases) out.push_back({b, c});
  return out;
}
/// The test name of a parameter (INSTANTIATE_TEST_SUITE_P's name generator): backend_case, sanitized.
struct BackendCaseName {
  template <class Info>
  std::string operator()(const Info& info) const {
    return sanitize(info.param.backend + "_" + info.param.c.name());
  }
};

}  // namespace fcgpu
