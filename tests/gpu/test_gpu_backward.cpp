// GPU tests of the backward pass (run_backward): every device backend with a backward pass on device
// memory, against the fp64 backward oracle on the host, the tuned backward on both of its paths (dQ
// with atomics, the default, and Options::deterministic); bitwise determinism on the device. Without a
// CUDA device every test skips with the reason.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "gpu/gpu_support.hpp"
#include "support/backward.hpp"
#include "verify/tolerance.hpp"

using fctest::BackwardData;
using fctest::Case;
using fctest::make_case;
using flashcore::DType;
namespace verify = flashcore::verify;
namespace tolerance = flashcore::tolerance;

namespace {

// A backward call's host buffers mirrored on the device; freed with it.
struct DeviceBackward {
  std::vector<void*> owned;
  flashcore::Tensors t;
  flashcore::Gradients g;
  ~DeviceBackward() {
    for (void* p : owned) cudaFree(p);
  }
  template <class T>
  T* put(const std::vector<T>& src) {
    if (src.empty()) return nullptr;
    void* p = nullptr;
    CUDA_OK(cudaMalloc(&p, src.size() * sizeof(T)));
    owned.push_back(p);
    CUDA_OK(cudaMemcpy(p, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice));
    return static_cast<T*>(p);
  }
  explicit DeviceBackward(const BackwardData& h) {
    t.q = put(h.fwd.q), t.k = put(h.fwd.k), t.v = put(h.fwd.v), t.o = put(h.fwd.o), t.lse = put(h.fwd.lse);
    t.alibi_slopes = put(h.fwd.alibi_slopes), t.sinks = put(h.fwd.sinks);
    t.cu_seqlens_q = put(h.fwd.cu_seqlens_q), t.cu_seqlens_k = put(h.fwd.cu_seqlens_k);
    t.seqlens_k = put(h.fwd.seqlens_k), t.block_table = put(h.fwd.block_table);
    g.d_o = put(h.d_o), g.dq = put(h.dq), g.dk = put(h.dk), g.dv = put(h.dv), g.dsinks = put(h.dsinks);
  }
  void download(BackwardData& h) const {
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(h.dq.data(), g.dq, h.dq.size(), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h.dk.data(), g.dk, h.dk.size(), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h.dv.data(), g.dv, h.dv.size(), cudaMemcpyDeviceToHost));
    if (!h.dsinks.empty())
      CUDA_OK(cudaMemcpy(h.dsinks.data(), g.dsinks, h.dsinks.size() * sizeof(float), cudaMemcpyDeviceToHost));
  }
};

// The device backends with a backward pass, where registered (whether one runs a case is asked per case).
std::vector<std::string> backward_backends() {
  std::vector<std::string> out;
  for (const auto& b : flashcore::backends())
    if (b.name == "reference-cuda" || b.name == "cuda-flash") out.push_back(b.name);
  return out;
}

bool is_reference(const std::string& name) {
  for (const auto& b : flashcore::backends())
    if (b.name == name) return b.kind == flashcore::BackendKind::Reference;
  return false;
}

// What a backend promises to run: the reference every case; the tuned backward (cuda-flash,
// src/backends/cuda/flash_bwd.h) fp16/bf16 problems without variants or sequence layouts, head dims
// exactly 32, 64, 96 and 128 (any causal, GQA and stride layout of the cases below). Its gradients are
// held to a tuned kernel's bound (kernel_gradient_bound: twice the naive same-precision error).
bool promised(const std::string& backend, const Case& c) {
  if (is_reference(backend)) return true;
  if (backend != "cuda-flash") return false;
  const bool built_head_dim = c.head_dim == 32 || c.head_dim == 64 || c.head_dim == 96 || c.head_dim == 128;
  return c.dtype != DType::F32 && !c.has_variant() && !c.has_sequences() && built_head_dim;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (bool causal : {false, true}) {
    out.push_back(make_case(2, 4, 2, 77, 93, 64, DType::F16, causal));              // GQA, odd lengths
    out.push_back(make_case(1, 4, 1, 203, 113, 64, DType::BF16, causal));          // Lq > Lk
    out.push_back(make_case(1, 2, 2, 130, 257, 128, DType::F16, causal));          // Lq < Lk, D = 128
    out.push_back(make_case(2, 2, 1, 64, 64, 128, DType::BF16, causal, fctest::Layout::BHSD));
    out.push_back(make_case(1, 3, 3, 33, 40, 96, DType::F16, causal, fctest::Layout::Padded));
    out.push_back(make_case(2, 6, 2, 150, 70, 32, DType::BF16, causal));        // D = 32, GQA 3, Lq > Lk
    out.push_back(make_case(1, 2, 1, 45, 61, 40, DType::F32, causal));
    Case v = make_case(1, 4, 2, 90, 120, 64, DType::F16, causal);
    v.window_left = 20, v.window_right = causal ? -1 : 5, v.softcap = 20, v.alibi = true, v.sinks = true;
    out.push_back(v);
    out.push_back(fctest::sequence_case(4, 2, 64, DType::BF16, causal, {37, 1, 150}, {50, 3, 160},
                                        Case::KvStore::Packed));
    out.push_back(fctest::sequence_case(2, 1, 128, DType::F16, causal, {}, {20, 171, 0}, Case::KvStore::Batched, 0,
                                        70, 9));
  }
  // What the tuned backward runs, more widely: seeded random shapes (a fixed seed, so that the test
  // names are the same in every process) of its head dims, GQA groups, layouts and lengths, and two
  // larger problems (many key and query tiles per block).
  std::mt19937_64 rng(2026);
  for (int n = 0; n < 14; ++n) out.push_back(fctest::random_case(rng, 400, {32, 64, 96, 128}, DType::F16));
  out.push_back(make_case(2, 8, 2, 1024, 1024, 128, DType::BF16, true));
  out.push_back(make_case(1, 4, 4, 1000, 777, 64, DType::F16, false));
  return out;
}

class BackwardCases : public ::testing::TestWithParam<fcgpu::BackendCase> {};

TEST_P(BackwardCases, MatchesFp64Oracle) {
  REQUIRE_DEVICE();
  const fcgpu::BackendCase& prm = GetParam();
  const Case& c = prm.c;
  BackwardData h = fctest::make_backward_data(c, fctest::run_seed() ^ 0xb4c3);
  DeviceBackward d(h);
  flashcore::Options opts;
  opts.backend = prm.backend;
  const flashcore::Report r = flashcore::explain_backward(h.fwd.problem, d.t, d.g, opts);
  if (r.chosen.empty()) {
    std::string why;
    for (const auto& dec : r.decisions)
      if (dec.backend == prm.backend) why = dec.reason;
    if (promised(prm.backend, c)) FAIL() << prm.backend << " declined a case it promises: " << why;
    GTEST_SKIP() << prm.backend << " declines: " << why;
  }
  const verify::Gradients ref = fctest::backward_oracle(h, verify::Precision::Exact, 8);
  const std::array<double, 3> scale = verify::gradient_scales(ref);
  double sinks_scale = 0;
  for (double x : ref.dsinks) sinks_scale = std::max(sinks_scale, std::fabs(x));
  std::array<tolerance::Bound, 3> bounds;
  if (is_reference(prm.backend)) {
    for (int t = 0; t < 3; ++t) bounds[t] = tolerance::reference_gradient_bound(c.dtype, scale[t]);
  } else {
    const std::array<double, 3> naive =
        verify::gradient_differences(fctest::backward_oracle(h, verify::Precision::Same, 8), ref);
    for (int t = 0; t < 3; ++t) bounds[t] = tolerance::kernel_gradient_bound(c.dtype, naive[t], scale[t]);
  }
  // Both paths of the tuned backward (the reference has one): the default, then deterministic, each
  // on freshly poisoned gradients; the plan names the path it took.
  std::string errors;
  for (bool deterministic : {false, true}) {
    if (deterministic && is_reference(prm.backend)) break;
    SCOPED_TRACE(deterministic ? "deterministic" : "default");
    CUDA_OK(cudaMemset(d.g.dq, 0xff, h.dq.size()));  // NaN in every dtype
    CUDA_OK(cudaMemset(d.g.dk, 0xff, h.dk.size()));
    CUDA_OK(cudaMemset(d.g.dv, 0xff, h.dv.size()));
    opts.deterministic = deterministic;
    const flashcore::Report ran = flashcore::run_backward(h.fwd.problem, d.t, d.g, opts);
    if (!is_reference(prm.backend))
      EXPECT_NE(ran.plan.find(deterministic || c.head_dim == 96 ? "dq=deterministic" : "dq=atomic"), std::string::npos)
          << ran.plan;  // head dim 96: the deterministic path only
    d.download(h);
    const fctest::GradientErrors e =
        fctest::compare_gradients(h, ref, bounds, tolerance::reference_sinks_bound(c.dtype, sinks_scale));
    EXPECT_EQ(e.bad, 0) << ran.plan << ": " << e.summary();
    errors += std::string(errors.empty() ? "" : "; ") + (deterministic ? "deterministic: " : "") + e.summary();
  }
  RecordProperty("errors", errors);
}

// Builds whose Kokkos has no CUDA backend register no device backend with a backward pass (no
// reference-cuda): the suite then has no case, which is not an error.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BackwardCases);
INSTANTIATE_TEST_SUITE_P(Gpu, BackwardCases,
                         ::testing::ValuesIn(fcgpu::every_pair(backward_backends(), cases())),
                         fcgpu::BackendCaseName());

}  // namespace

// Options::deterministic: bitwise the same gradients every run, on every backend. Without it the tuned
// backward's dK and dV are still bitwise the same (no atomics there); only dQ's sums vary in order.
TEST(GpuBackward, BitwiseTheSameEveryRun) {
  REQUIRE_DEVICE();
  Case c = make_case(2, 8, 2, 300, 333, 64, DType::BF16, true);
  const BackwardData h0 = fctest::make_backward_data(c, fctest::run_seed() ^ 0xb4c4);
  for (const std::string& b : backward_backends()) {
    SCOPED_TRACE(b);
    BackwardData first = h0, second = h0;
    DeviceBackward d(h0);
    flashcore::Options opts;
    opts.backend = b;
    if (flashcore::explain_backward(h0.fwd.problem, d.t, d.g, opts).chosen.empty()) continue;
    for (bool deterministic : {true, false}) {
      SCOPED_TRACE(deterministic ? "deterministic" : "default");
      opts.deterministic = deterministic;
      flashcore::run_backward(h0.fwd.problem, d.t, d.g, opts);
      d.download(first);
      for (int n = 0; n < 3; ++n) {
        CUDA_OK(cudaMemset(d.g.dq, 0xff, h0.dq.size()));  // poisoned again
        CUDA_OK(cudaMemset(d.g.dk, 0xff, h0.dk.size()));
        CUDA_OK(cudaMemset(d.g.dv, 0xff, h0.dv.size()));
        flashcore::run_backward(h0.fwd.problem, d.t, d.g, opts);
        d.download(second);
        if (deterministic) ASSERT_EQ(first.dq, second.dq) << "run " << n;
        ASSERT_EQ(first.dk, second.dk) << "run " << n;
        ASSERT_EQ(first.dv, second.dv) << "run " << n;
      }
    }
  }
}
