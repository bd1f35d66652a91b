// GPU tests of the backward pass (run_backward): every device backend with a backward pass on device
// memory, against the fp64 backward oracle on the host, the tuned backward on both of its paths (dQ
// with atomics, the default, and Options::deterministic); bitwise determinism on the device. Without a
// CUDA device every test skips with the reason.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "flashcore/flashcore.h"
#include "gpu/gpu_support.hpp"
#include "support/backward.hpp"
#include "support/cases.hpp"
#include "verify/elements.hpp"
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

// The device backends with a backward pass, where registered (whether one runs a case is asked per case):
// the reference, cuda-flash, and its two forced dK/dV kernels (mma.sync: cuda-flash-allwarps; TMA +
// wgmma on compute capability 9.0: cuda-flash-hopper).
std::vector<std::string> backward_backends() {
  std::vector<std::string> out;
  for (const auto& b : flashcore::backends())
    if (b.name == "reference-cuda" || b.name == "cuda-flash" || b.name == "cuda-flash-allwarps" ||
        b.name == "cuda-flash-hopper")
      out.push_back(b.name);
  return out;
}

// Compute capability 9.0 (where the Hopper backward runs, when this build has it).
bool hopper_device() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return major == 9 && minor == 0;
}
// The head dims the Hopper backward runs (64, 128, and 96 on its D = 128 kernel).
bool hopper_head_dim(const Case& c) { return c.head_dim == 64 || c.head_dim == 96 || c.head_dim == 128; }
// The build has the sm_90a kernels (sm_90 among its CUDA architectures: build_info names them).
bool hopper_built() {
  const std::string info = flashcore::build_info();
  const size_t at = info.find("CUDA kernels: built for ");
  return at != std::string::npos && info.find("90", at) < info.find(" (CUDA", at);
}

bool is_reference(const std::string& name) {
  for (const auto& b : flashcore::backends())
    if (b.name == name) return b.kind == flashcore::BackendKind::Reference;
  return false;
}

// What a backend promises to run: the reference every case; the tuned backward (cuda-flash,
// src/backends/cuda/flash_bwd.h) fp16/bf16 problems, head dims exactly 32, 64, 96 and 128 (any causal,
// GQA, stride layout and attention variant of the cases below: windows, soft-capping and ALiBi through
// the VariantMask kernels, sinks and their gradient; the sequence layouts varlen Q, varlen K/V and cache
// lengths; paged K/V has no backward pass). Its gradients are
// held to a tuned kernel's bound (kernel_gradient_bound: twice the naive same-precision error).
// cuda-flash-allwarps promises the same; cuda-flash-hopper head dims 64, 96 (on its D = 128 kernel) and
// 128 on a compute capability 9.0 device (default path only), where cuda-flash then runs it too (the plan
// says sm90-bwd).
bool promised(const std::string& backend, const Case& c) {
  if (is_reference(backend)) return true;
  const bool tuned = c.dtype != DType::F32 && c.kv != Case::KvStore::Paged;
  if (backend == "cuda-flash-hopper")
    return tuned && hopper_head_dim(c) && hopper_device() && hopper_built();
  if (backend != "cuda-flash" && backend != "cuda-flash-allwarps") return false;
  const bool built_head_dim = c.head_dim == 32 || c.head_dim == 64 || c.head_dim == 96 || c.head_dim == 128;
  return tuned && built_head_dim;
}
// The dK/dV kernel the plan should name on the default path ("" for the reference).
std::string expected_kernel(const std::string& backend, const Case& c, bool deterministic) {
  if (is_reference(backend)) return "";
  if (backend == "cuda-flash-hopper") return "sm90-bwd";
  const bool hopper =
      backend == "cuda-flash" && !deterministic && hopper_head_dim(c) && hopper_device() && hopper_built();
  return hopper ? "sm90-bwd" : "sm80-bwd";
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
    // Each variant alone, on every head dim of the tuned backward, GQA and odd lengths.
    out.push_back(fctest::with_variants(make_case(2, 4, 2, 200, 333, 128, DType::BF16, causal), 70,
                                        causal ? -1 : 30));
    out.push_back(fctest::with_variants(make_case(1, 6, 2, 257, 190, 96, DType::F16, causal), -1, -1, 15.0));
    out.push_back(fctest::with_variants(make_case(2, 4, 4, 130, 130, 32, DType::BF16, causal), -1, -1, 0, true));
    out.push_back(fctest::with_variants(make_case(1, 4, 1, 100, 300, 64, DType::F16, causal), -1, -1, 0, false, true));
    // A narrow window with Lq > Lk: the first rows see no key at all (LSE -inf), whole key blocks and
    // query tiles fall outside every window.
    out.push_back(fctest::with_variants(make_case(1, 2, 1, 150, 40, 64, DType::F16, causal), 3, causal ? -1 : 2));
    if (!causal)  // a right bound only: rows see every key up to 5 past their diagonal
      out.push_back(fctest::with_variants(make_case(2, 2, 1, 77, 77, 64, DType::F16, false), -1, 5));
    out.push_back(fctest::sequence_case(4, 2, 64, DType::BF16, causal, {37, 1, 150}, {50, 3, 160},
                                        Case::KvStore::Packed));
    out.push_back(fctest::sequence_case(2, 1, 128, DType::F16, causal, {}, {20, 171, 0}, Case::KvStore::Batched, 0,
                                        70, 9));
    // Varlen Q over a cache (NaN in the rows past each length): an empty sequence, an empty cache, a
    // sequence of 3 queries; D = 96.
    out.push_back(fctest::sequence_case(6, 2, 96, DType::F16, causal, {0, 65, 200, 3}, {70, 64, 190, 0},
                                        Case::KvStore::Batched, 0, 1, 5));
    // Packed Q and K/V at D = 32, a sequence with 7 queries and 300 keys.
    out.push_back(fctest::sequence_case(4, 4, 32, DType::BF16, causal, {130, 7, 64}, {129, 300, 64},
                                        Case::KvStore::Packed));
    // A cache with Lq > Lk in some sequences (causal: rows that see no key).
    out.push_back(fctest::sequence_case(4, 1, 64, DType::F16, causal, {}, {10, 300, 77}, Case::KvStore::Batched, 0,
                                        100, 20));
    // Every variant on packed sequences: each sequence's own diagonal for the window and ALiBi.
    out.push_back(fctest::with_variants(fctest::sequence_case(4, 2, 64, DType::F16, causal, {90, 1, 200},
                                                              {120, 40, 150}, Case::KvStore::Packed),
                                        30, causal ? -1 : 10, 20.0, true, true));
  }
  // What the tuned backward runs, more widely: seeded random shapes (a fixed seed, so that the test
  // names are the same in every process) of its head dims, GQA groups, layouts and lengths, and two
  // larger problems (many key and query tiles per block).
  std::mt19937_64 rng(2026);
  for (int n = 0; n < 14; ++n) out.push_back(fctest::random_case(rng, 400, {32, 64, 96, 128}, DType::F16));
  out.push_back(make_case(2, 8, 2, 1024, 1024, 128, DType::BF16, true));
  out.push_back(make_case(1, 4, 4, 1000, 777, 64, DType::F16, false));
  // Packed sequences over many tiles (the Hopper kernel's 128-key blocks end inside a sequence).
  out.push_back(fctest::sequence_case(8, 2, 128, DType::BF16, true, {1000, 130, 513}, {1000, 700, 513},
                                      Case::KvStore::Packed));
  // Many tiles under a window: tile ranges that start past the first key, mask-free tiles in between.
  out.push_back(fctest::with_variants(make_case(2, 8, 2, 1024, 1024, 128, DType::BF16, true), 256, -1, 0, true));
  out.push_back(fctest::with_variants(make_case(1, 4, 2, 700, 900, 64, DType::F16, false), 100, 60, 30.0, false,
                                      true));
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
    if (deterministic && (is_reference(prm.backend) || prm.backend == "cuda-flash-hopper")) break;  // one path
    SCOPED_TRACE(deterministic ? "deterministic" : "default");
    CUDA_OK(cudaMemset(d.g.dq, 0xff, h.dq.size()));  // NaN in every dtype
    CUDA_OK(cudaMemset(d.g.dk, 0xff, h.dk.size()));
    CUDA_OK(cudaMemset(d.g.dv, 0xff, h.dv.size()));
    if (d.g.dsinks != nullptr) CUDA_OK(cudaMemset(d.g.dsinks, 0xff, h.dsinks.size() * sizeof(float)));
    opts.deterministic = deterministic;
    const flashcore::Report ran = flashcore::run_backward(h.fwd.problem, d.t, d.g, opts);
    const std::string kernel = expected_kernel(prm.backend, c, deterministic);
    // Head dim 96: the deterministic path only on the mma.sync kernels (the Hopper kernel has the atomic one).
    const bool atomic = !deterministic && (c.head_dim != 96 || kernel == "sm90-bwd");
    if (!is_reference(prm.backend))
      EXPECT_NE(ran.plan.find(atomic ? "dq_path=atomic" : "dq_path=deterministic"), std::string::npos) << ran.plan;
    EXPECT_NE(ran.plan.find(kernel), std::string::npos) << ran.plan;
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
// The attention variants (windows, soft-capping, ALiBi: the VariantMask kernels) and the sinks'
// gradient too, and packed sequences (varlen Q and K/V).
TEST(GpuBackward, BitwiseTheSameEveryRun) {
  REQUIRE_DEVICE();
  const Case plain = make_case(2, 8, 2, 300, 333, 64, DType::BF16, true);
  const Case variants = fctest::with_variants(make_case(2, 8, 2, 300, 333, 128, DType::F16, false), 90, 40, 25.0,
                                              true, true);
  const Case packed = fctest::sequence_case(8, 2, 128, DType::BF16, true, {300, 17, 190}, {333, 40, 190},
                                            Case::KvStore::Packed);
  for (const Case& c : {plain, variants, packed})
  for (const std::string& b : backward_backends()) {
    SCOPED_TRACE(b + (c.has_variant() ? " (variants)" : "") + (c.has_sequences() ? " (sequences)" : ""));
    const BackwardData h0 = fctest::make_backward_data(c, fctest::run_seed() ^ 0xb4c4);
    BackwardData first = h0, second = h0;
    DeviceBackward d(h0);
    flashcore::Options opts;
    opts.backend = b;
    for (bool deterministic : {true, false}) {
      SCOPED_TRACE(deterministic ? "deterministic" : "default");
      opts.deterministic = deterministic;
      if (flashcore::explain_backward(h0.fwd.problem, d.t, d.g, opts).chosen.empty()) continue;  // e.g. Hopper: default only
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
        ASSERT_EQ(first.dsinks, second.dsinks) << "run " << n;  // empty without sinks
      }
    }
  }
}

namespace {

// Device tensors of n 16-bit elements of one dtype, random in [-1, 1) or left as allocated, and fp32
// arrays; freed with it. For the large cases that build their inputs on the device (no oracle).
struct DeviceTensors {
  DType dt;
  size_t n;
  std::mt19937_64 rng;
  std::vector<std::uint16_t> host;
  std::vector<void*> owned;
  DeviceTensors(DType dtype, size_t elements, std::uint64_t seed) : dt(dtype), n(elements), rng(seed), host(elements) {}
  ~DeviceTensors() {
    for (void* ptr : owned) cudaFree(ptr);
  }
  void* tensor(bool random) {
    void* ptr = nullptr;
    CUDA_OK(cudaMalloc(&ptr, 2 * n));
    owned.push_back(ptr);
    if (random) {
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      for (size_t i = 0; i < n; ++i) verify::store_element(dt, host.data(), i, u(rng));
      CUDA_OK(cudaMemcpy(ptr, host.data(), 2 * n, cudaMemcpyHostToDevice));
    }
    return ptr;
  }
  float* floats(size_t count) {
    void* ptr = nullptr;
    CUDA_OK(cudaMalloc(&ptr, count * sizeof(float)));
    owned.push_back(ptr);
    return static_cast<float*>(ptr);
  }
};

// Runs cuda-flash's backward of h on the device with Options::deterministic `det`; the gradients in out.
// False when cuda-flash declines (no tuned device).
bool tuned_backward(const BackwardData& h, DeviceBackward& d, bool det, BackwardData& out) {
  flashcore::Options opts;
  opts.backend = "cuda-flash";
  opts.deterministic = det;
  if (flashcore::explain_backward(h.fwd.problem, d.t, d.g, opts).chosen.empty()) return false;
  CUDA_OK(cudaMemset(d.g.dq, 0xff, h.dq.size()));
  CUDA_OK(cudaMemset(d.g.dk, 0xff, h.dk.size()));
  CUDA_OK(cudaMemset(d.g.dv, 0xff, h.dv.size()));
  flashcore::run_backward(h.fwd.problem, d.t, d.g, opts);
  d.download(out);
  return true;
}

}  // namespace

// The C field fc_problem::deterministic reaches the backend: with 1 the C call gives bitwise the
// gradients of the C++ deterministic call (the atomic path sums dQ per key block in another order; with
// 5 key blocks its bits differ from the deterministic path's, checked below so the test can fail).
TEST(GpuBackward, CApiDeterministicFieldSelectsThePath) {
  REQUIRE_DEVICE();
  const Case c = make_case(1, 4, 2, 200, 300, 64, DType::F16, false);
  const BackwardData h = fctest::make_backward_data(c, fctest::run_seed() ^ 0xb4c5);
  DeviceBackward d(h);
  BackwardData fixed = h, atomic = h, from_c = h;
  if (!tuned_backward(h, d, true, fixed)) GTEST_SKIP() << "cuda-flash declines on this device";
  ASSERT_TRUE(tuned_backward(h, d, false, atomic));
  EXPECT_NE(fixed.dq, atomic.dq) << "the two paths gave the same dQ bits: this test cannot tell them apart";
  fc_problem cp;
  fc_problem_init(&cp, 1, 4, 2, 200, 300, 64, FC_F16, 0);
  const flashcore::Problem& p = h.fwd.problem;
  ASSERT_EQ(cp.q.seq, p.q.seq);  // the case is contiguous BSHD, as fc_problem_init describes
  ASSERT_EQ(cp.k.seq, p.k.seq);
  cp.deterministic = 1;
  CUDA_OK(cudaMemset(d.g.dq, 0xff, h.dq.size()));
  CUDA_OK(cudaMemset(d.g.dk, 0xff, h.dk.size()));
  CUDA_OK(cudaMemset(d.g.dv, 0xff, h.dv.size()));
  ASSERT_EQ(fc_attention_backward(&cp, d.t.q, d.t.k, d.t.v, d.t.o, d.t.lse, d.g.d_o, d.g.dq, d.g.dk, d.g.dv, nullptr,
                                  FC_LOC_DEVICE, "cuda-flash", nullptr),
            FC_OK)
      << fc_last_error();
  d.download(from_c);
  EXPECT_EQ(from_c.dq, fixed.dq);
  EXPECT_EQ(from_c.dk, fixed.dk);
  EXPECT_EQ(from_c.dv, fixed.dv);
}

// When the atomic path's workspace (an fp32 dQ accumulator) cannot be allocated, the call runs the
// deterministic path. The device's memory is taken but for a margin in which the stream-ordered pool can
// still give the deterministic workspace (2 MB here) but not the accumulator (136 MB): the default call
// then gives bitwise the deterministic gradients instead of failing. (The default pool reserves in large
// steps: on an H200 with 31 MB free even a 1 MB cudaMallocAsync failed, so the margin is searched.)
// Random inputs, O and LSE from cuda-flash's forward: the comparison is bitwise between the two paths.
TEST(GpuBackward, AtomicWorkspaceThatDoesNotFitRunsTheDeterministicPath) {
  REQUIRE_DEVICE();
  constexpr int kH = 16, kL = 16384, kD = 128;
  const flashcore::Problem p = flashcore::Problem::make(1, kH, kH, kL, kL, kD, DType::BF16, true);
  const size_t n = size_t(kL) * kH * kD, bytes = 2 * n;
  const size_t fixed_ws = sizeof(float) * 2 * kH * kL, atomic_ws = sizeof(float) * (2 + kD) * kH * size_t(kL);
  DeviceTensors mem(DType::BF16, n, fctest::run_seed() ^ 0xb4c6);
  void *q = mem.tensor(true), *k = mem.tensor(true), *v = mem.tensor(true), *d_o = mem.tensor(true);
  void *o = mem.tensor(false), *dq = mem.tensor(false), *dk = mem.tensor(false), *dv = mem.tensor(false);
  float* lse = mem.floats(size_t(kH) * kL);
  const flashcore::Tensors t{q, k, v, o, lse};
  const flashcore::Gradients g{d_o, dq, dk, dv};
  flashcore::Options opts;
  opts.backend = "cuda-flash";
  if (flashcore::explain_backward(p, t, g, opts).chosen.empty()) GTEST_SKIP() << "cuda-flash declines on this device";
  flashcore::run(p, t, opts);
  auto gradients = [&](bool det) {
    opts.deterministic = det;
    for (void* ptr : {dq, dk, dv}) CUDA_OK(cudaMemset(ptr, 0xff, bytes));
    flashcore::run_backward(p, t, g, opts);
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<std::uint16_t> out(3 * n);
    CUDA_OK(cudaMemcpy(out.data(), dq, bytes, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(out.data() + n, dk, bytes, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(out.data() + 2 * n, dv, bytes, cudaMemcpyDeviceToHost));
    return out;
  };
  const std::vector<std::uint16_t> fixed = gradients(true);
  int dev = 0;
  CUDA_OK(cudaGetDevice(&dev));
  cudaMemPool_t pool;
  CUDA_OK(cudaDeviceGetDefaultMemPool(&pool, dev));
  // Can the pool give `size` bytes now? (The probe is given back and the pool trimmed.)
  auto pool_gives = [&](size_t size) {
    void* probe = nullptr;
    const bool ok = cudaMallocAsync(&probe, size, nullptr) == cudaSuccess;
    cudaGetLastError();
    if (ok) cudaFreeAsync(probe, nullptr);
    cudaStreamSynchronize(nullptr);
    cudaMemPoolTrimTo(pool, 0);
    return ok;
  };
  CUDA_OK(cudaMemPoolTrimTo(pool, 0));
  void* hog = nullptr;
  size_t left_mb = 0;
  for (size_t margin : {48, 64, 96, 128}) {
    size_t free_bytes = 0, total = 0;
    CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
    if (free_bytes <= (margin << 20) + (256u << 20)) break;
    if (cudaMalloc(&hog, free_bytes - (margin << 20)) != cudaSuccess) {
      cudaGetLastError();
      hog = nullptr;
      continue;
    }
    if (pool_gives(fixed_ws) && !pool_gives(atomic_ws)) {
      left_mb = margin;
      break;
    }
    cudaFree(hog);
    hog = nullptr;
  }
  if (hog == nullptr)
    GTEST_SKIP() << "no margin of free memory (48-128 MB) where the pool gives " << fixed_ws << " bytes but not "
                 << atomic_ws;
  mem.owned.push_back(hog);
  RecordProperty("margin_mb", static_cast<int>(left_mb));
  std::vector<std::uint16_t> starved;
  try {
    starved = gradients(false);
  } catch (const std::exception& e) {
    FAIL() << "the default call failed instead of running the deterministic path (" << left_mb
           << " MB left): " << e.what();
  }
  EXPECT_TRUE(starved == fixed) << "the default call with no room for its accumulator differs from the deterministic path";
}

// The Hopper kernel's causal blocks go heavy-first in groups of (KV head, batch) pairs sized for L2
// (common/scheduler.cuh, key_block_order): 25 pairs of (L 2048, D 64) make a group of 24 and a last
// group of one, a layout no oracle case reaches (the oracle's cases have one group). Its gradients are
// compared with the mma.sync kernels' (cuda-flash-allwarps, which keeps the launch order) on the same
// inputs, O and LSE from cuda-flash's forward: both accumulate in fp32 from fp16 P and dS, so they agree
// to well within 1 % of each tensor's largest magnitude, while a block skipped or run twice leaves NaN
// (the gradients are poisoned first) or doubles dQ.
TEST(GpuBackward, HopperHeavyFirstGroupsMatchTheMmaSyncKernel) {
  REQUIRE_DEVICE();
  constexpr int kB = 5, kH = 5, kL = 2048, kD = 64;
  const flashcore::Problem p = flashcore::Problem::make(kB, kH, kH, kL, kL, kD, DType::F16, true);
  const size_t n = size_t(kB) * kL * kH * kD, bytes = 2 * n;
  DeviceTensors mem(DType::F16, n, fctest::run_seed() ^ 0xb4c7);
  std::vector<std::uint16_t>& host = mem.host;
  void *q = mem.tensor(true), *k = mem.tensor(true), *v = mem.tensor(true), *d_o = mem.tensor(true);
  void *o = mem.tensor(false), *dq = mem.tensor(false), *dk = mem.tensor(false), *dv = mem.tensor(false);
  float* lse = mem.floats(size_t(kB) * kH * kL);
  const flashcore::Tensors t{q, k, v, o, lse};
  const flashcore::Gradients g{d_o, dq, dk, dv};
  flashcore::Options opts;
  opts.backend = "cuda-flash-hopper";
  if (flashcore::explain_backward(p, t, g, opts).chosen.empty())
    GTEST_SKIP() << "cuda-flash-hopper declines on this device (compute capability 9.0 and sm_90a kernels only)";
  opts.backend = "cuda-flash";
  flashcore::run(p, t, opts);
  auto gradients = [&](const char* backend, std::string* plan) {
    opts.backend = backend;
    for (void* ptr : {dq, dk, dv}) CUDA_OK(cudaMemset(ptr, 0xff, bytes));  // NaN
    *plan = flashcore::run_backward(p, t, g, opts).plan;
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<std::vector<double>> out(3, std::vector<double>(n));
    void* src[3] = {dq, dk, dv};
    for (int x = 0; x < 3; ++x) {
      CUDA_OK(cudaMemcpy(host.data(), src[x], bytes, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < n; ++i) out[x][i] = verify::load_element(DType::F16, host.data(), i);
    }
    return out;
  };
  std::string hopper_plan, mma_plan;
  const auto hopper = gradients("cuda-flash-hopper", &hopper_plan);
  const auto mma = gradients("cuda-flash-allwarps", &mma_plan);
  EXPECT_NE(hopper_plan.find("sm90-bwd"), std::string::npos) << hopper_plan;
  EXPECT_NE(hopper_plan.find("heavy_group=24"), std::string::npos) << hopper_plan;  // groups of 24 and 1
  EXPECT_NE(mma_plan.find("sm80-bwd"), std::string::npos) << mma_plan;
  const char* name[3] = {"dQ", "dK", "dV"};
  for (int x = 0; x < 3; ++x) {
    double max_ref = 0, max_diff = 0;
    size_t bad = 0;
    for (double r : mma[x]) max_ref = std::max(max_ref, std::fabs(r));
    ASSERT_TRUE(std::isfinite(max_ref) && max_ref > 0) << name[x] << ": the mma.sync gradients are not finite";
    for (size_t i = 0; i < n; ++i) {
      const double d = std::fabs(hopper[x][i] - mma[x][i]);
      if (!(d <= 1e-2 * max_ref)) ++bad;  // NaN counts as bad
      if (d > max_diff) max_diff = d;
    }
    EXPECT_EQ(bad, 0u) << name[x] << ": max |hopper - mma.sync| " << max_diff << " against max |mma.sync| " << max_ref;
    RecordProperty(name[x], std::to_string(max_diff / max_ref));
  }
}

// A packed sequence's gradients do not depend on another sequence's inputs. Sequence 1's Q and dO are
// +inf, which makes its own gradients NaN; the gradients of sequences 0 and 2 must still match the
// oracle of the clean inputs. The Hopper kernel's Q tiles cross into the next sequence's rows (TMA
// reads 64 rows from the sequence's offset: sequence 0 has 100 queries), where 0 times inf would be
// NaN unless those rows are zeroed; the mma.sync kernels read rows up to the sequence's length.
TEST(GpuBackward, APackedSequencesGradientsIgnoreTheOtherSequencesInputs) {
  REQUIRE_DEVICE();
  for (int head_dim : {64, 128}) {
    const Case c = fctest::sequence_case(4, 2, head_dim, DType::BF16, head_dim == 64, {100, 70, 130}, {100, 70, 130},
                                         Case::KvStore::Packed);
    BackwardData h = fctest::make_backward_data(c, fctest::run_seed() ^ 0xb4c9);
    verify::Gradients ref = fctest::backward_oracle(h, verify::Precision::Exact, 8);
    const std::array<double, 3> naive =
        verify::gradient_differences(fctest::backward_oracle(h, verify::Precision::Same, 8), ref);
    const std::array<double, 3> scale = verify::gradient_scales(ref);
    std::array<tolerance::Bound, 3> bounds;
    for (int t = 0; t < 3; ++t) bounds[t] = tolerance::kernel_gradient_bound(c.dtype, naive[t], scale[t]);
    const flashcore::Problem& p = h.fwd.problem;
    // Sequence 1 is not compared (NaN in the oracle: skipped), and its Q and dO rows are +inf (bf16 0x7f80).
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int i = 0; i < p.seqlen_q; ++i)
      for (int hq = 0; hq < p.heads_q; ++hq)
        for (int d = 0; d < p.head_dim; ++d) ref.dq[verify::o_index(p, 1, i, hq, d)] = nan;
    for (int j = 0; j < p.seqlen_k; ++j)
      for (int hk = 0; hk < p.heads_kv; ++hk)
        for (int d = 0; d < p.head_dim; ++d) ref.dk[verify::kv_index(p, 1, j, hk, d)] = ref.dv[verify::kv_index(p, 1, j, hk, d)] = nan;
    const std::uint16_t inf = 0x7f80;
    for (int i = 0; i < h.fwd.len_q(1); ++i)
      for (int hq = 0; hq < p.heads_q; ++hq) {
        const long long q_at = h.fwd.sequences().q_offset(p, p.q, 1, i, hq), o_at = h.fwd.o_offset(1, i, hq);
        for (int d = 0; d < p.head_dim; ++d) {
          std::memcpy(&h.fwd.q[2 * (q_at + d)], &inf, 2);
          std::memcpy(&h.d_o[2 * (o_at + d)], &inf, 2);
        }
      }
    DeviceBackward dev(h);
    int ran_backends = 0;
    for (const char* backend : {"cuda-flash", "cuda-flash-allwarps", "cuda-flash-hopper"}) {
      SCOPED_TRACE(std::string(backend) + ", D = " + std::to_string(head_dim));
      flashcore::Options opts;
      opts.backend = backend;
      if (flashcore::explain_backward(p, dev.t, dev.g, opts).chosen.empty()) continue;  // (the oracle case says why)
      CUDA_OK(cudaMemset(dev.g.dq, 0xff, h.dq.size()));  // NaN
      CUDA_OK(cudaMemset(dev.g.dk, 0xff, h.dk.size()));
      CUDA_OK(cudaMemset(dev.g.dv, 0xff, h.dv.size()));
      const flashcore::Report ran = flashcore::run_backward(p, dev.t, dev.g, opts);
      dev.download(h);
      const fctest::GradientErrors e = fctest::compare_gradients(h, ref, bounds, tolerance::Bound{});
      EXPECT_EQ(e.bad, 0) << ran.plan << ": " << e.summary();
      ++ran_backends;
    }
    EXPECT_GT(ran_backends, 0) << "cuda-flash, cuda-flash-allwarps and cuda-flash-hopper all declined a packed bf16 case";
  }
}
