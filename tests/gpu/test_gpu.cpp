// GPU tests: every device backend (reference-cuda, portable-cuda and the tuned kernels) on device memory,
// checked against the fp64 host oracle; large problems checked on sampled rows and against the
// device reference; fp8 (e4m3) inputs with the fp8 kernel bound on tuned backends. Without a CUDA
// device every test skips with the reason.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <random>

#include "gpu/gpu_support.hpp"
#include "support/testing.hpp"
#include "verify/elements.hpp"
#include "verify/fp8.hpp"
#include "verify/tolerance.hpp"
#if defined(FLASHCORE_HAVE_KOKKOS_CUDA)
#include "flashcore/kokkos.hpp"
#endif

using fctest::Case;
using fctest::Layout;
using flashcore::DType;

namespace {

using fcgpu::have_device;

std::vector<std::string> device_backends() {
  std::vector<std::string> out;
  for (const auto& b : flashcore::backends())
    if (b.location == flashcore::MemoryLocation::Device) out.push_back(b.name);
  return out;
}

bool is_reference(const std::string& name) {
  for (const auto& b : flashcore::backends())
    if (b.name == name) return b.kind == flashcore::BackendKind::Reference;
  return false;
}

// The Kokkos tiers (reference-cuda, portable-cuda): every dtype, head dim, mask, variant and
// sequence layout is promised, fp32 accumulation throughout, so the reference's bound applies.
bool is_kokkos_tier(const std::string& name) {
  for (const auto& b : flashcore::backends())
    if (b.name == name)
      return b.kind == flashcore::BackendKind::Reference || b.kind == flashcore::BackendKind::Portable;
  return false;
}

// Host data mirrored on the device.
struct DeviceData {
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  float* lse = nullptr;
  float *alibi_slopes = nullptr, *sinks = nullptr;  // the variants' per-head parameters, or null
  int *cu_seqlens_q = nullptr, *cu_seqlens_k = nullptr, *seqlens_k = nullptr, *block_table = nullptr;  // or null
  ~DeviceData() {
    cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o), cudaFree(lse), cudaFree(alibi_slopes), cudaFree(sinks);
    cudaFree(cu_seqlens_q), cudaFree(cu_seqlens_k), cudaFree(seqlens_k), cudaFree(block_table);
  }
  flashcore::Tensors tensors() const {
    flashcore::Tensors t{q, k, v, o, lse, alibi_slopes, sinks};
    t.cu_seqlens_q = cu_seqlens_q, t.cu_seqlens_k = cu_seqlens_k, t.seqlens_k = seqlens_k, t.block_table = block_table;
    return t;
  }
};

void upload(const fctest::HostData& h, DeviceData& d) {
  auto put = [](void** dst, const void* src, std::size_t bytes) {
    CUDA_OK(cudaMalloc(dst, bytes));
    CUDA_OK(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice));
  };
  put(&d.q, h.q.data(), h.q.size());
  put(&d.k, h.k.data(), h.k.size());
  put(&d.v, h.v.data(), h.v.size());
  put(&d.o, h.o.data(), h.o.size());  // poisoned by make_data
  if (!h.lse.empty()) {
    void* l = nullptr;
    put(&l, h.lse.data(), h.lse.size() * sizeof(float));
    d.lse = static_cast<float*>(l);
  }
  auto put_floats = [&](float** dst, const std::vector<float>& src) {
    if (src.empty()) return;
    void* x = nullptr;
    put(&x, src.data(), src.size() * sizeof(float));
    *dst = static_cast<float*>(x);
  };
  put_floats(&d.alibi_slopes, h.alibi_slopes);
  put_floats(&d.sinks, h.sinks);
  auto put_ints = [&](int** dst, const std::vector<int>& src) {
    if (src.empty()) return;
    void* x = nullptr;
    put(&x, src.data(), src.size() * sizeof(int));
    *dst = static_cast<int*>(x);
  };
  put_ints(&d.cu_seqlens_q, h.cu_seqlens_q);
  put_ints(&d.cu_seqlens_k, h.cu_seqlens_k);
  put_ints(&d.seqlens_k, h.seqlens_k);
  put_ints(&d.block_table, h.block_table);
}

void download(const DeviceData& d, fctest::HostData& h) {
  CUDA_OK(cudaMemcpy(h.o.data(), d.o, h.o.size(), cudaMemcpyDeviceToHost));
  if (!h.lse.empty()) CUDA_OK(cudaMemcpy(h.lse.data(), d.lse, h.lse.size() * sizeof(float), cudaMemcpyDeviceToHost));
}

// Does `backend` run this case? Declines are allowed only outside what the backend promises.
bool accepts(const std::string& backend, const fctest::HostData& h, const DeviceData& d, std::string* why) {
  flashcore::Options opts;
  opts.backend = backend;
  opts.location = flashcore::MemoryLocation::Device;
  flashcore::Report r;
  try {
    r = flashcore::explain(h.problem, d.tensors(), opts);
  } catch (const flashcore::Error& e) {
    *why = e.what();
    return false;
  }
  if (r.chosen == backend) return true;
  for (const auto& dec : r.decisions)
    if (dec.backend == backend) *why = dec.reason;
  return false;
}

// The tuned kernels promise fp16/bf16 with every head_dim that is a multiple of 8 up to 256, on any
// shape, mask and GQA: the Hopper kernel too (compiled for 32, 64, 96, 128, 160, 192, 256; the rest zero-padded
// by TMA), the warp-specialized one up to 128
// and without the attention variants (window, softcap, ALiBi, sinks), which every other one runs.
// Above 128 the smallest mma.sync tile (16 query rows, two stages of 64-key K and V tiles, rows of
// D rounded up to 64 elements: 544 bytes per row element) must fit the device's shared memory per
// block: it does on A100/H100/H200, not on sm_86/sm_89 (99 KB).
// Sequence layouts on the tuned path: varlen Q and K/V and cache lengths with the same promise as
// fixed lengths (every tuned kernel; cuda-flash runs up to 64 queries on the decode kernel). Paged
// K/V: the decode kernel's for seqlen_q <= 64 (cuda-flash, every head dim and variant; above D = 128
// it needs the shared memory of an A100/H100, not the 99 KB of sm_86/sm_89), and the Hopper kernel's
// on compute capability 9.0 with a power-of-two page size (cuda-flash-hopper, and cuda-flash above
// 64 queries: paged prefill); other paged prefill is the reference's.
size_t device_smem_optin();
bool device_is_hopper() {
  int dev = 0, major = 0, minor = 0;
  return cudaGetDevice(&dev) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
         cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 && minor == 0;
}
bool paged_promised(const std::string& backend, const fctest::HostData& h) {
  const flashcore::Problem& p = h.problem;
  const bool hopper = device_is_hopper() && (p.page_size & (p.page_size - 1)) == 0;
  if (backend == "cuda-flash-hopper") return hopper;
  if (backend != "cuda-flash") return false;
  return p.seqlen_q <= 64 ? p.head_dim <= 128 || device_smem_optin() > 100 * 1024 : hopper;
}

size_t device_smem_optin() {
  int dev = 0, bytes = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
    return 0;
  return static_cast<size_t>(bytes);
}
// fp8 (e4m3) inputs: the Kokkos tiers run every case (promised in promised()). The tuned kernels: the
// Hopper kernel's fp8 instance (plan_fp8 in src/backends/cuda/sm90/plan_sm90.cu) on compute capability 9.0,
// through cuda-flash and cuda-flash-hopper, head dims up to 128 (asked here: multiples of 16), no
// variants, no sequence layouts, and (TMA) every stride a multiple of 16 bytes: e4m3 Q/K/V, 2-byte O.
// Every other decline skips; whatever a tuned backend accepts is checked with the fp8 kernel bound.
bool fp8_promised(const std::string& backend, const fctest::HostData& h) {
  const flashcore::Problem& p = h.problem;
  if (backend != "cuda-flash" && backend != "cuda-flash-hopper") return false;
  if (!device_is_hopper() || p.head_dim % 16 != 0 || p.head_dim > 128) return false;
  if (p.has_window() || p.softcap > 0 || !h.alibi_slopes.empty() || !h.sinks.empty()) return false;
  if (p.has_sequence_layout() || !h.seqlens_k.empty()) return false;
  auto aligned = [](const flashcore::Strides& s, int bytes) {
    return (s.batch * bytes) % 16 == 0 && (s.seq * bytes) % 16 == 0 && (s.head * bytes) % 16 == 0;
  };
  return aligned(p.q, 1) && aligned(p.k, 1) && aligned(p.v, 1) && aligned(p.o, 2);
}

bool promised(const std::string& backend, const fctest::HostData& h) {
  const flashcore::Problem& p = h.problem;
  if (is_kokkos_tier(backend)) return true;
  if (p.dtype == DType::E4M3) return fp8_promised(backend, h);
  const int d = p.head_dim;
  if (p.dtype == DType::F32 || d % 8 != 0 || d < 8 || d > 256) return false;
  if (p.page_size > 0) return paged_promised(backend, h);
  if (backend == "cuda-flash-hopper") return true;
  const bool variants = p.has_window() || p.softcap > 0 || !h.alibi_slopes.empty() || !h.sinks.empty();
  if (backend == "cuda-flash-warpspec" && (d > 128 || variants)) return false;
  const size_t row = (d + 63) / 64 * 64;
  return d <= 128 || 544 * row <= device_smem_optin();
}

// Runs one case on one device backend and checks it against the fp64 oracle.
// row_stride > 1 checks sampled rows only (large problems).
// The fp64 oracle of a case, computed once for all backends (same seed, same data).
const fctest::OracleOut& cached_oracle(const fctest::HostData& h, const std::string& key, int row_stride) {
  static std::map<std::string, fctest::OracleOut> cache;
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, fctest::oracle(h, row_stride)).first;
  return it->second;
}

// check_on_device for given host data (tests that shape their inputs); key names the data for the
// oracle's cache ("<case name>/<salt>"). large_logits_v_max > 0 (inputs made to score very high, |V| at most
// that): the Kokkos tiers' reference bound adds the fp32 logits' error (tolerance::reference_logit_atol, the
// logits' size taken from the oracle's largest |LSE|).
bool check_data_on_device(const std::string& backend, fctest::HostData h, const std::string& key, int row_stride,
                          std::string* declined, double large_logits_v_max = 0);

// Returns false (and sets *declined) when the backend declines a case it does not promise; a
// declined promised case is a failure.
// What cuda-flash's plan says for h (flashcore::explain on a device copy of its data).
std::string cuda_flash_plan(const fctest::HostData& h) {
  DeviceData d;
  upload(h, d);
  flashcore::Options opts;
  opts.backend = "cuda-flash";
  return flashcore::explain(h.problem, d.tensors(), opts).plan;
}

// Rows the host oracle checks: every row_stride-th, keeping it under ~2e8 multiply-adds per case.
int oracle_row_stride(const Case& c) {
  const double work = 1.0 * c.batch * c.heads_q * c.seqlen_q * c.seqlen_k * c.head_dim;
  return work > 2e8 ? static_cast<int>(std::ceil(work / 2e8)) : 1;
}

bool check_on_device(const std::string& backend, const Case& c, std::uint64_t salt, int row_stride = 0,
                     std::string* declined = nullptr) {
  SCOPED_TRACE(backend + " " + c.name());
  if (row_stride == 0) row_stride = oracle_row_stride(c);
  return check_data_on_device(backend, fctest::make_data(c, fctest::run_seed() ^ (salt * 0x9e3779b97f4a7c15ull)),
                              c.name() + "/" + std::to_string(salt), row_stride, declined);
}

bool check_data_on_device(const std::string& backend, fctest::HostData h, const std::string& key, int row_stride,
                          std::string* declined, double large_logits_v_max) {
  const std::string name = key.substr(0, key.find('/'));
  DeviceData d;
  upload(h, d);
  std::string why;
  if (!accepts(backend, h, d, &why)) {
    EXPECT_FALSE(promised(backend, h)) << backend << " declined a promised case: " << why;
    if (declined != nullptr) *declined = why;
    return false;
  }
  flashcore::Options opts;
  opts.backend = backend;
  EXPECT_EQ(flashcore::run(h.problem, d.tensors(), opts).chosen, backend);
  CUDA_OK(cudaDeviceSynchronize());
  download(d, h);
  const fctest::OracleOut& ref = cached_oracle(h, key, row_stride);
  if (h.problem.dtype == DType::E4M3 && !is_kokkos_tier(backend)) {
    // A tuned kernel on fp8 inputs rounds P to e4m3: tolerance::fp8_kernel_bound, per element and as
    // an RMS over O (the Kokkos tiers keep the output dtype's reference bound, below).
    const flashcore::verify::Fp8Check f = flashcore::verify::check_fp8_kernel_output(
        h.problem, h.q.data(), h.k.data(), h.v.data(), ref, h.o.data(), h.lse.empty() ? nullptr : h.lse.data(),
        h.sequences());
    std::printf("[gpu] %-22s %-42s max_abs %.3e rms %.3e of rms ref %.3e, worst/bound %.3f, LSE worst/bound %.3f\n",
                backend.c_str(), name.c_str(), f.max_abs, f.rms_err, f.rms_ref, f.worst_ratio, f.lse_worst_ratio);
    EXPECT_TRUE(f.passed()) << f.summary() << "; first: " << f.first_bad;
    return true;
  }
  fctest::Errors e;
  double bound_abs = 0;
  if (is_kokkos_tier(backend)) {
    double logit_atol = 0;
    if (large_logits_v_max > 0) {
      double lse_max = 0;
      for (const double l : ref.lse)
        if (std::isfinite(l)) lse_max = std::max(lse_max, std::fabs(l));
      logit_atol = flashcore::tolerance::reference_logit_atol(h.problem.head_dim, lse_max, large_logits_v_max);
    }
    e = fctest::compare(h, ref, logit_atol);
  } else {
    const double naive = fctest::naive_error(h, ref, row_stride);
    const auto bound = flashcore::tolerance::kernel_bound(h.problem.dtype, naive);
    bound_abs = bound.atol;
    e = fctest::compare_o(h, ref, bound.atol, bound.rtol, /*kernel_lse=*/true);
  }
  std::printf("[gpu] %-22s %-42s max_abs %.3e rel_l2 %.3e worst/bound %.3f%s\n", backend.c_str(), name.c_str(), e.max_abs,
              e.rel_l2, e.worst_ratio, bound_abs > 0 ? (" bound " + std::to_string(bound_abs)).c_str() : "");
  EXPECT_EQ(e.bad, 0) << "max abs " << e.max_abs << ", worst/bound " << e.worst_ratio << "; first: " << e.first_bad;
  EXPECT_EQ(e.lse_bad, 0) << e.first_bad;
  return true;
}

using fctest::make_case;

// The CPU acceptance set and corners, plus the tuned-kernel matrix of the tuned-kernel issue.
std::vector<Case> gpu_cases() {
  std::vector<Case> out;
  const int acceptance[][4] = {{1, 8, 512, 64}, {1, 8, 128, 64}, {2, 4, 256, 64}, {1, 8, 1024, 64}, {4, 8, 64, 128}};
  for (bool causal : {false, true}) {
    for (auto& s : acceptance)
      for (DType dt : {DType::F16, DType::BF16}) out.push_back(make_case(s[0], s[1], s[1], s[2], s[2], s[3], dt, causal));
    out.push_back(make_case(1, 2, 2, 1, 1, 64, DType::F16, causal));
    out.push_back(make_case(1, 2, 2, 203, 113, 64, DType::F16, causal, Layout::BHSD));
    out.push_back(make_case(1, 8, 1, 65, 97, 64, DType::F32, causal));
    for (int d : {32, 80, 96, 256}) out.push_back(make_case(1, 2, 1, 33, 45, d, DType::F16, causal));
    out.push_back(make_case(1, 2, 1, 33, 45, 36, DType::F16, causal));  // not a multiple of 8: declined
    // every native head dim of the mma.sync kernels and ones that run zero-padded on the next
    // (8 -> 32, 40 -> 64, 80 -> 96, 112 -> 128, 144 and 160 -> 192; on the Hopper kernel 144 -> 160 and
    // 160 its own), GQA, odd lengths, all layouts
    const int hd_lens[][2] = {{17, 17}, {113, 203}, {203, 113}, {1, 333}, {1000, 1000}};
    auto hd_cases = [&](int d, DType dt) {
      for (auto& l : hd_lens)
        out.push_back(make_case(l[0] == 1000 ? 1 : 2, 6, 2, l[0], l[1], d, dt, causal,
                                l[0] == 113 ? Layout::BHSD : l[0] == 203 ? Layout::Padded : Layout::BSHD));
    };
    for (int d : {8, 32, 40, 80, 96, 112, 144, 160, 192, 256})
      for (DType dt : {DType::F16, DType::BF16}) hd_cases(d, dt);
    out.push_back(make_case(2, 4, 4, 31, 29, 48, DType::BF16, causal, Layout::Padded));
    // The Hopper schedule's tail split (common/tail_split.cuh), every row checked: on 132 SMs, non-causal,
    // 150 items of 128 rows, the last 18 in 3 pieces (GQA 5:1, 250 queries: the last item's rows half past
    // them, 300 keys: a partial last key tile).
    out.push_back(make_case(1, 75, 15, 250, 300, 128, DType::F16, causal));
    // fp32 (the Kokkos tiers; the tuned kernels decline it): the portable tier's three tile widths (64, 128,
    // 256) and head dims padded to them (36, 80, 160, 192: zero-filled copies past D), GQA, odd lengths, every layout
    for (int d : {64, 128, 256, 36, 80, 160, 192}) hd_cases(d, DType::F32);
    // head dims 64/128 x fp16/bf16 x GQA x odd lengths
    const int lens[][2] = {{1, 1}, {17, 17}, {77, 77}, {113, 203}, {203, 113}, {1000, 1000}, {4097, 4097}, {1, 333}};
    for (int d : {64, 128})
      for (DType dt : {DType::F16, DType::BF16})
        for (auto& l : lens) {
          const bool big = l[0] > 2000;
          out.push_back(make_case(big ? 1 : 2, big ? 2 : 6, big ? 1 : 2, l[0], l[1], d, dt, causal,
                              (l[0] == 77 ? Layout::Padded : l[0] == 113 ? Layout::BHSD : Layout::BSHD)));
        }
  }
  return out;
}

// The attention variants (tests/test_variants.cpp has their definitions checked on the host): each
// alone and together, with causal, GQA, odd lengths, Lq != Lk, head dims native and padded, windows
// that skip whole tiles (long sequences), and decode-like rows (Lq = 1, long Lk: split-KV).
std::vector<Case> variant_cases() {
  std::vector<Case> out;
  auto with = [](Case c, int wl, int wr, double cap, bool alibi, bool sinks) {
    c.window_left = wl, c.window_right = wr, c.softcap = cap, c.alibi = alibi, c.sinks = sinks;
    return c;
  };
  int n = 0;
  for (bool causal : {false, true})
    for (int d : {64, 128, 40, 96, 192, 256, 32, 160}) {
      const DType dt = (n++ % 2) ? DType::BF16 : DType::F16;
      const Case sq = make_case(2, 6, 2, 300, 300, d, dt, causal);
      const Case lq = make_case(1, 4, 1, 203, 113, d, dt, causal, Layout::BHSD);  // rows above the diagonal
      const Case lk = make_case(1, 4, 2, 77, 1000, d, dt, causal, Layout::Padded);
      const Case dec = make_case(2, 8, 2, 1, 3333, d, dt, causal);              // one query row, long cache
      const Case big = make_case(1, 4, 2, 1500, 1500, d, dt, causal);          // windows skip tiles
      for (const Case& base : {sq, lq, lk}) {
        out.push_back(with(base, 37, causal ? -1 : 21, 0, false, false));  // local band
        out.push_back(with(base, 0, 0, 0, false, false));                  // the diagonal key only
        out.push_back(with(base, -1, -1, 12.5, false, false));             // soft-capping
        out.push_back(with(base, -1, -1, 0, true, false));                 // ALiBi
        out.push_back(with(base, -1, -1, 0, false, true));                 // sinks
        out.push_back(with(base, 50, causal ? -1 : 3, 30, true, true));    // everything
      }
      out.push_back(with(dec, 200, -1, 0, false, false));
      out.push_back(with(dec, -1, -1, 20, true, false));
      out.push_back(with(dec, 100, -1, 0, false, true));
      out.push_back(with(big, 128, causal ? -1 : 64, 0, false, false));
      out.push_back(with(big, 200, causal ? -1 : 0, 15, true, true));
    }
  // fp32 (the Kokkos tiers): every variant together and a local band, at each of the portable tier's tile widths
  for (bool causal : {false, true})
    for (int d : {64, 128, 256}) {
      out.push_back(with(make_case(2, 6, 2, 300, 300, d, DType::F32, causal), 50, causal ? -1 : 3, 30, true, true));
      out.push_back(with(make_case(1, 4, 2, 77, 1000, d, DType::F32, causal, Layout::Padded), 37, causal ? -1 : 21, 0,
                         false, false));
    }
  return out;
}


// Sequences (tests/test_sequences.cpp checks the definitions on the host): decode rows against
// cache lengths (empty and length-1 caches), several queries per sequence, pages of 16..256 rows
// partly filled, varlen batches with empty sequences, varlen prefill and prefill against cache lengths
// (on every tuned kernel), GQA, causal per sequence.
// 9 caches of near 2048 keys: with 8 KV heads, 72 items of 32 tiles, whose one wave at 9 tiles a piece makes 288 pieces
// for an H100's 264 slots, so the balanced schedule's one-wave fit gives each item 3 pieces of at most 11 tiles.
const std::vector<int> kFitLengths = {2048, 2000, 2047, 1990, 2048, 2030, 2013, 2041, 1999};

std::vector<Case> sequence_cases() {
  using KvStore = Case::KvStore;
  using fctest::sequence_case;
  std::vector<Case> out;
  int n = 0;
  for (bool causal : {false, true})
    for (int d : {64, 128, 96, 192, 32}) {
      const DType dt = (n++ % 2) ? DType::BF16 : DType::F16;
      // decode: one query per sequence, cache lengths 0 .. 3000 in a cache of 3100
      out.push_back(sequence_case(8, 2, d, dt, causal, {}, {1, 0, 3000, 17, 640, 64, 1000}, KvStore::Batched, 0, 1, 100));
      // speculative decode: 4 and 13 queries per sequence (GQA 8:1: up to 104 packed rows)
      out.push_back(sequence_case(8, 1, d, dt, causal, {}, {5, 700, 2048}, KvStore::Batched, 0, 4));
      out.push_back(sequence_case(8, 1, d, dt, causal, {}, {13, 70, 1025}, KvStore::Batched, 0, 13, 0, Layout::Padded));
      // paged decode: every tuned page size, last pages partly filled, a length-1 cache
      for (int page : {16, 32, 64, 128, 256})
        out.push_back(sequence_case(4, 2, d, dt, causal, {}, {1, page + 3, 5 * page - 1, 777}, KvStore::Paged, page));
      // paged decode with every sequence at the bound (a block table, no length arrays: the decode
      // kernel's fixed grid), the last page partly filled; 1 and 3 queries per sequence
      for (int page : {16, 256}) {
        Case full = make_case(3, 8, 2, page == 16 ? 1 : 3, 5 * page + 7, d, dt, causal);
        full.kv = KvStore::Paged, full.page_size = page;
        out.push_back(full);
      }
      // varlen Q against a paged cache (chunked prefill) and against packed K/V
      out.push_back(sequence_case(4, 2, d, dt, causal, {3, 0, 64, 1}, {300, 9, 64, 1}, KvStore::Paged, 64));
      // paged prefill (the Hopper kernel; the reference elsewhere): pages smaller than, equal to and
      // larger than a K/V tile, caches ending inside a page, an empty sequence; varlen Q and a fixed
      // 100 queries per sequence; a page size that is not a power of two (48: the reference's)
      for (int page : {16, 64, 256})
        out.push_back(sequence_case(4, 2, d, dt, causal, {200, 1, 129, 0}, {700, 1000, 333, 7}, KvStore::Paged, page));
      out.push_back(sequence_case(4, 1, d, dt, causal, {}, {100, 1000, 333, 129}, KvStore::Paged, 32, 100, 0, Layout::Padded));
      out.push_back(sequence_case(4, 2, d, dt, causal, {70, 90}, {300, 90}, KvStore::Paged, 48));
      out.push_back(sequence_case(6, 2, d, dt, causal, {1, 37, 0, 64}, {1, 100, 5, 64}, KvStore::Packed, 0, 1, 0,
                                  Layout::BHSD));
      // varlen prefill: long sequences of mixed lengths (the 16-row and Hopper kernels: too few query rows for
      // the wide kernel, whose varlen cases are in LargeProblemsOnSampledRows)
      out.push_back(sequence_case(4, 2, d, dt, causal, {700, 1, 333, 0}, {700, 1000, 333, 7}, KvStore::Packed));
      out.push_back(sequence_case(2, 1, d, dt, causal, {129, 255, 1, 64, 1000}, {129, 255, 1, 64, 1000}, KvStore::Packed));
      // prefill against cache lengths (rows past a sequence's length are NaN): 200 queries each, and
      // varlen queries, caches ending inside a 64- and a 128-key tile
      out.push_back(sequence_case(4, 2, d, dt, causal, {}, {200, 1000, 333, 129}, KvStore::Batched, 0, 200, 50));
      out.push_back(sequence_case(4, 1, d, dt, causal, {100, 300, 0}, {500, 300, 1001}, KvStore::Batched, 0, 1, 7));
    }
  // More items than an H100 has SMs (the Hopper kernel's persistent blocks walk several each, sequences
  // of every length and empty ones among them): packed varlen K/V (a V tail zeroed per item), paged
  // prefill, prefill against cache lengths.
  for (bool causal : {false, true}) {
    out.push_back(sequence_case(8, 2, 128, DType::BF16, causal, {1200, 3, 900, 0, 1000, 700, 64, 257},
                                {1200, 1000, 900, 7, 1100, 700, 64, 300}, KvStore::Packed));
    out.push_back(sequence_case(8, 2, 64, DType::F16, causal, {1100, 1, 600, 0, 900, 129}, {1100, 1000, 700, 7, 1300, 130},
                                KvStore::Paged, 64));
    out.push_back(sequence_case(8, 4, 192, DType::BF16, causal, {}, {1200, 333, 1001, 129, 700}, KvStore::Batched, 0, 1000, 50));
  }
  // Paged prefill in pages of 16 rows, where the Hopper kernel gathers the V tiles with cp.async (zero-filled past a
  // sequence's keys and past head_dim): D = 256 and head dims between the compiled ones (40 on the 64 instance, 72
  // on the 96 one, 136 and 168 on the 192 one: 136's rows are 16 bytes off a 32-byte boundary, which the plan keeps
  // off the 160 instance; D = 160 itself in the variants' pages below), varlen Q with an empty sequence; a
  // sequence with queries and no keys.
  for (int d : {256, 40, 72, 136, 168})
    out.push_back(sequence_case(4, 2, d, d == 72 || d == 256 ? DType::BF16 : DType::F16, d != 40, {200, 1, 129, 0},
                                {700, 1000, 333, 7}, KvStore::Paged, 16));
  out.push_back(sequence_case(4, 2, 128, DType::F16, false, {100, 70}, {0, 300}, KvStore::Paged, 16));
  // The decode kernel's balanced schedule (decode/schedule.cuh): 16 caches of 1..8192 keys fill two
  // waves of blocks on an H100/H200 (a 13-way split of the longest, single pieces of the shortest),
  // contiguous and paged; 128 sequences (its largest batch, one per thread); 300: the fixed grid with
  // sequence arrays.
  const std::vector<int> mixed = {1, 7, 33, 100, 250, 511, 777, 1024, 1500, 2048, 3000, 4096, 5000, 6144, 7000, 8192};
  out.push_back(sequence_case(16, 4, 128, DType::F16, true, {}, mixed, KvStore::Batched, 0, 1, 5));
  out.push_back(sequence_case(16, 4, 128, DType::BF16, false, {}, mixed, KvStore::Paged, 64, 2));
  for (int batch : {128, 300}) {
    std::vector<int> lens(batch);
    for (int b = 0; b < batch; ++b) lens[b] = b % 41 == 5 ? 3000 : (b * 613) % 701;  // 0 .. 700, a few 3000
    out.push_back(sequence_case(8, 2, 128, batch == 128 ? DType::F16 : DType::BF16, batch == 128, {}, lens,
                                batch == 128 ? KvStore::Paged : KvStore::Batched, batch == 128 ? 16 : 0, 1, 3));
  }
  // The balanced schedule's one-wave fit (decode/schedule.cuh, kFitLengths), contiguous and in pages of 16 with 2
  // queries each (GPU runs 53b, 53c: 562 passed).
  out.push_back(sequence_case(32, 8, 128, DType::BF16, false, {}, kFitLengths, KvStore::Batched, 0, 1, 9));
  out.push_back(sequence_case(32, 8, 128, DType::F16, true, {}, kFitLengths, KvStore::Paged, 16, 2));
  // fp32 (the Kokkos tiers): paged decode with pages partly filled and a length-1 cache, varlen Q against a
  // paged cache, packed varlen prefill with an empty sequence
  for (bool causal : {false, true})
    for (int d : {64, 128, 256}) {
      out.push_back(sequence_case(4, 2, d, DType::F32, causal, {}, {1, 19, 79, 777}, KvStore::Paged, 16));
      out.push_back(sequence_case(4, 2, d, DType::F32, causal, {3, 0, 64, 1}, {300, 9, 64, 1}, KvStore::Paged, 64));
      out.push_back(sequence_case(4, 2, d, DType::F32, causal, {700, 1, 333, 0}, {700, 1000, 333, 7}, KvStore::Packed));
    }
  // With variants (promised by the reference; the tuned path may decline them).
  Case v = sequence_case(8, 2, 128, DType::F16, true, {}, {1, 900, 2000}, KvStore::Paged, 64, 2);
  v.window_left = 300, v.alibi = true, v.sinks = true, v.softcap = 20;
  out.push_back(v);
  for (int d : {128, 160, 256}) {  // paged prefill with every variant (pages of 128: TMA boxes; of 16: V gathered)
    for (int page : {128, 16}) {
      Case pv = sequence_case(8, 2, d, DType::BF16, true, {300, 77}, {900, 2000}, KvStore::Paged, page);
      pv.window_left = 300, pv.alibi = true, pv.sinks = true, pv.softcap = 20;
      out.push_back(pv);
    }
  }
  return out;
}


// fp8 (e4m3) inputs: head dims 64, 96, 128 (and 256 and an odd one for the Kokkos tiers), odd lengths,
// GQA and MQA, causal with Lq < Lk and Lq > Lk, descales other than 1 (stored values on e4m3's top
// binades and on its subnormals), both output dtypes, with and without the LSE; long rows (several key
// tiles, sampled by the oracle), decode rows, layouts; variants and sequence layouts (the tuned kernels
// may decline).
std::vector<Case> fp8_cases() {
  using fctest::fp8_case;
  std::vector<Case> out;
  const DType e4m3 = DType::E4M3;
  for (bool causal : {false, true}) {
    for (int d : {64, 96, 128}) {
      for (DType od : {DType::BF16, DType::F16}) {
        out.push_back(fp8_case(make_case(2, 6, 2, 113, 203, d, e4m3, causal), od, 0.37, 1.9, 0.6));
        out.push_back(fp8_case(make_case(1, 8, 1, 203, 113, d, e4m3, causal, Layout::BHSD), od, 1.0 / 64, 1.0 / 32, 8));
      }
      out.push_back(fp8_case(make_case(1, 8, 8, 1000, 1000, d, e4m3, causal), DType::BF16));
      out.push_back(fp8_case(make_case(2, 4, 4, 17, 17, d, e4m3, causal, Layout::Padded), DType::BF16, 0.5, 0.5, 0.5));
      out.push_back(fp8_case(make_case(2, 8, 2, 1, 333, d, e4m3, causal), DType::F16, 2, 0.5, 1));
      out.push_back(fp8_case(make_case(1, 4, 1, 4097, 4097, d, e4m3, causal), DType::BF16, 0.25, 0.25, 2));
      out.push_back(fp8_case(make_case(1, 16, 4, 2048, 2048, d, e4m3, causal), DType::F16, 3, 0.125, 0.75));
    }
    // Without an LSE output (the kernel's epilogue writes O only).
    for (Case c : {make_case(2, 6, 2, 113, 203, 128, e4m3, causal), make_case(1, 4, 1, 4097, 4097, 64, e4m3, causal)}) {
      c.lse = false;
      out.push_back(fp8_case(c, causal ? DType::F16 : DType::BF16, 0.37, 1.9, 0.6));
    }
    out.push_back(fp8_case(make_case(1, 4, 2, 77, 130, 256, e4m3, causal), DType::BF16, 0.5, 2, 0.25));
    out.push_back(fp8_case(make_case(1, 4, 2, 77, 130, 40, e4m3, causal), DType::F16, 0.5, 2, 0.25));
    Case var = fp8_case(make_case(1, 4, 2, 300, 300, 128, e4m3, causal), DType::BF16, 0.3, 0.7, 2);
    var.window_left = 50, var.softcap = 20, var.alibi = true, var.sinks = true;
    out.push_back(var);
    out.push_back(fp8_case(fctest::sequence_case(4, 2, 128, e4m3, causal, {200, 1, 129, 0}, {700, 1000, 333, 7},
                                                 Case::KvStore::Packed),
                           DType::BF16, 0.5, 2, 0.25));
    out.push_back(fp8_case(fctest::sequence_case(4, 2, 128, e4m3, causal, {}, {1, 900, 2000}, Case::KvStore::Paged, 64, 2),
                           DType::F16, 1.5, 0.75, 1));
  }
  return out;
}

class DeviceCases : public ::testing::TestWithParam<fcgpu::BackendCase> {};
TEST_P(DeviceCases, MatchesFp64Oracle) {
  REQUIRE_DEVICE();
  std::string declined;
  if (!check_on_device(GetParam().backend, GetParam().c, 7, 0, &declined))
    GTEST_SKIP() << GetParam().backend << " declines: " << declined;
}
INSTANTIATE_TEST_SUITE_P(Gpu, DeviceCases,
                         ::testing::ValuesIn(fcgpu::every_pair(device_backends(), gpu_cases())),
                         fcgpu::BackendCaseName());
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DeviceCases);

class VariantCases : public ::testing::TestWithParam<fcgpu::BackendCase> {};
TEST_P(VariantCases, MatchesFp64Oracle) {
  REQUIRE_DEVICE();
  std::string declined;
  if (!check_on_device(GetParam().backend, GetParam().c, 8, 0, &declined))
    GTEST_SKIP() << GetParam().backend << " declines: " << declined;
}
INSTANTIATE_TEST_SUITE_P(Gpu, VariantCases,
                         ::testing::ValuesIn(fcgpu::every_pair(device_backends(), variant_cases())),
                         fcgpu::BackendCaseName());
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(VariantCases);

class Fp8Cases : public ::testing::TestWithParam<fcgpu::BackendCase> {};
TEST_P(Fp8Cases, MatchesFp64Oracle) {
  REQUIRE_DEVICE();
  std::string declined;
  if (!check_on_device(GetParam().backend, GetParam().c, 10, 0, &declined))
    GTEST_SKIP() << GetParam().backend << " declines: " << declined;
}
INSTANTIATE_TEST_SUITE_P(Gpu, Fp8Cases, ::testing::ValuesIn(fcgpu::every_pair(device_backends(), fp8_cases())),
                         fcgpu::BackendCaseName());
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Fp8Cases);

class SequenceCases : public ::testing::TestWithParam<fcgpu::BackendCase> {};
TEST_P(SequenceCases, MatchesFp64Oracle) {
  REQUIRE_DEVICE();
  std::string declined;
  if (!check_on_device(GetParam().backend, GetParam().c, 9, 0, &declined))
    GTEST_SKIP() << GetParam().backend << " declines: " << declined;
}
INSTANTIATE_TEST_SUITE_P(Gpu, SequenceCases,
                         ::testing::ValuesIn(fcgpu::every_pair(device_backends(), sequence_cases())),
                         fcgpu::BackendCaseName());
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SequenceCases);

}  // namespace

TEST(Gpu, SequenceArraysInDeviceMemoryAreValidated) {
  // Device arrays are copied and checked before any work (Options::check_sequences, the default):
  // a bad offset, length or page is an Error naming the array, O untouched; with the check off, a
  // valid call gives the same bits as with it.
  REQUIRE_DEVICE();
  using KvStore = Case::KvStore;
  const Case c = fctest::sequence_case(4, 2, 64, DType::F16, false, {2, 1, 3}, {40, 1, 70}, KvStore::Paged, 16);
  for (const std::string& backend : device_backends()) {
    SCOPED_TRACE(backend);
    fctest::HostData h = fctest::make_data(c, fctest::run_seed() + 41);
    DeviceData d;
    upload(h, d);
    std::string why;
    if (!accepts(backend, h, d, &why)) continue;
    struct Bad {
      int* dst;
      int index, value;
      const char* field;
    } bads[] = {{d.cu_seqlens_q, 2, 0, "cu_seqlens_q"}, {d.seqlens_k, 1, 1000, "seqlens_k"},
                {d.block_table, 0, h.problem.num_pages, "block_table"}};
    for (const Bad& bad : bads) {
      int saved = 0;
      CUDA_OK(cudaMemcpy(&saved, bad.dst + bad.index, sizeof(int), cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(bad.dst + bad.index, &bad.value, sizeof(int), cudaMemcpyHostToDevice));
      flashcore::Options opts;
      opts.backend = backend;
      try {
        flashcore::run(h.problem, d.tensors(), opts);
        ADD_FAILURE() << "no error for a bad " << bad.field;
      } catch (const flashcore::Error& e) {
        EXPECT_EQ(e.field(), bad.field) << e.what();
      }
      CUDA_OK(cudaMemcpy(bad.dst + bad.index, &saved, sizeof(int), cudaMemcpyHostToDevice));
    }
    fctest::HostData untouched = h;
    download(d, untouched);
    EXPECT_EQ(untouched.o, h.o) << "O written by a rejected call";
    flashcore::Options checked, trusted;
    checked.backend = trusted.backend = backend;
    trusted.check_sequences = false;
    flashcore::run(h.problem, d.tensors(), checked);
    CUDA_OK(cudaDeviceSynchronize());
    fctest::HostData a = h, b = h;
    download(d, a);
    CUDA_OK(cudaMemcpy(d.o, h.o.data(), h.o.size(), cudaMemcpyHostToDevice));  // poisoned again
    flashcore::run(h.problem, d.tensors(), trusted);
    CUDA_OK(cudaDeviceSynchronize());
    download(d, b);
    EXPECT_EQ(a.o, b.o);
    EXPECT_EQ(a.lse, b.lse);
    const fctest::Errors e = fctest::compare_o(a, fctest::oracle(a), 0.05, 0.05);
    EXPECT_EQ(e.bad, 0) << e.first_bad;  // a coarse sanity bound: SequenceCases checks the real one
  }
}

TEST(Gpu, RandomShapesProperty) {
  REQUIRE_DEVICE();
  std::mt19937_64 rng(fctest::run_seed() + 21);
  int ran = 0;
  for (const auto& backend : device_backends()) {
    for (int n = 0; n < 25; ++n) {
      // Tuned kernels: fp16/bf16 only; head dims they do and do not promise.
      const Case c = fctest::random_case(rng, 300, {16, 40, 64, 64, 80, 96, 128, 128, 192, 256, 36},
                                         is_kokkos_tier(backend) ? DType::F32 : DType::F16);
      ran += check_on_device(backend, c, 200 + n) ? 1 : 0;
    }
  }
  std::printf("[gpu] random shapes: %d backend x case runs checked\n", ran);
  EXPECT_GT(ran, 0);
}

TEST(Gpu, RandomVariantsProperty) {
  // Random shapes with random variants on every device backend.
  REQUIRE_DEVICE();
  std::mt19937_64 rng(fctest::run_seed() + 27);
  int ran = 0;
  for (const auto& backend : device_backends())
    for (int n = 0; n < 25; ++n) {
      const Case c = fctest::with_random_variants(
          fctest::random_case(rng, 600, {16, 64, 64, 80, 128, 128, 192}, is_kokkos_tier(backend) ? DType::F32 : DType::F16),
          rng);
      ran += check_on_device(backend, c, 400 + n) ? 1 : 0;
    }
  std::printf("[gpu] random variants: %d backend x case runs checked\n", ran);
  EXPECT_GT(ran, 0);
}

TEST(Gpu, LargeProblemsOnSampledRows) {
  // Too slow for the full CPU oracle: every 61st row (and the last) against fp64.
  REQUIRE_DEVICE();
  for (const auto& backend : device_backends())
    for (bool causal : {false, true}) {
      check_on_device(backend, make_case(1, 4, 4, 4096, 4096, 128, DType::F16, causal), 300, 61);
      check_on_device(backend, make_case(1, 4, 2, 3000, 5000, 64, DType::BF16, causal), 301, 61);
      // More than 16384 query rows: the launch table's large-problem rows (the wide-warp kernel),
      // with odd lengths, GQA and non-contiguous layouts.
      check_on_device(backend, make_case(2, 12, 3, 1000, 1337, 64, DType::F16, causal, Layout::Padded), 302, 37);
      check_on_device(backend, make_case(2, 12, 4, 1337, 999, 128, DType::BF16, causal, Layout::BHSD), 303, 37);
      // head dims 96 (the wide-warp kernel on padded 128-element rows), 80 on it, and 256
      check_on_device(backend, make_case(2, 12, 3, 1500, 1500, 96, DType::F16, causal), 304, 37);
      check_on_device(backend, make_case(2, 12, 4, 1337, 999, 80, DType::BF16, causal, Layout::Padded), 305, 37);
      check_on_device(backend, make_case(1, 16, 4, 2048, 2048, 256, DType::F16, causal), 306, 41);
      // D = 32 and 24 with more 192-row items than SMs: cuda-flash takes the Hopper kernel's D = 32
      // instance there (smaller problems run on its D = 64 one; cuda-flash-hopper always on D = 32)
      check_on_device(backend, make_case(4, 16, 4, 1100, 1300, 32, DType::BF16, causal), 307, 37);
      check_on_device(backend, make_case(2, 24, 8, 2000, 1777, 24, DType::F16, causal, Layout::BHSD), 308, 37);
      // D = 64 and 48 with more 192-row items than SMs, non-causal, or causal from 2048 query rows: the
      // Hopper kernel's three-warpgroup D = 64 instance (sm90/plan_sm90.cu, hopper_instance), with odd lengths, GQA,
      // columns zero-filled past 48, packed sequences (one of a single query).
      check_on_device(backend, make_case(1, 36, 6, 4100, 4100, 64, DType::BF16, causal), 312, 61);
      check_on_device(backend, make_case(2, 12, 4, 1111, 1500, 48, DType::F16, causal, Layout::BHSD), 313, 37);
      // The Hopper schedule's tail split (common/tail_split.cuh; on 132 SMs, non-causal: the last items of the
      // work order, the last heads here, run as pieces of their key tiles): (4,16,2048,64) 44 items of 192 rows
      // in 3 pieces; (2,10,2000,128) GQA 56 in 2; (2,5,1900,256) MQA 18 in 7; (1,7,2600,96) 15 in 8.
      check_on_device(backend, make_case(4, 16, 16, 2048, 2048, 64, DType::F16, causal), 315, 37);
      check_on_device(backend, make_case(2, 10, 5, 2000, 1800, 128, DType::BF16, causal, Layout::BHSD), 316, 37);
      check_on_device(backend, make_case(2, 5, 1, 1900, 2100, 256, DType::F16, causal), 317, 37);
      check_on_device(backend, make_case(1, 7, 7, 2600, 3000, 96, DType::BF16, causal, Layout::Padded), 318, 37);
      check_on_device(backend,
                      fctest::sequence_case(16, 4, 64, DType::F16, causal, {4500, 37, 1}, {4600, 37, 900},
                                            Case::KvStore::Packed),
                      314, 37);
      // Sequences with more than 16384 query rows by their bounds (the wide-warp kernel where mma.sync runs):
      // packed sequences of their own lengths (one key, one query, lengths that are not whole tiles) at
      // D = 32 (two-tile steps) and 96, and packed queries against a cache of per-sequence key counts at 64.
      using KvStore = Case::KvStore;
      check_on_device(backend,
                      fctest::sequence_case(16, 4, 32, DType::F16, causal, {1100, 37, 700, 1}, {1300, 37, 1, 900},
                                            KvStore::Packed),
                      309, 37);
      check_on_device(backend,
                      fctest::sequence_case(16, 4, 64, DType::BF16, causal, {1000, 513, 64}, {1000, 700, 2000},
                                            KvStore::Batched, 0, 1, 16),
                      310, 37);
      check_on_device(backend,
                      fctest::sequence_case(12, 3, 96, DType::F16, causal, {1500, 200}, {1499, 300}, KvStore::Packed),
                      311, 37);
      // The wide kernel's K/V copies (sm80/tile_ops.cuh, KVTileCopy) where its last-tile row clamp reaches
      // below a thread's first row (fewer keys than 8 at D = 96 and 128, than 16 at D = 64; causal: most rows
      // see no key), head_dim 112 on the D = 128 kernel, and cache lengths with NaN past them at D = 128.
      check_on_device(backend, make_case(2, 12, 4, 1000, 5, 128, DType::BF16, causal), 319, 37);
      check_on_device(backend, make_case(2, 12, 3, 1100, 13, 64, DType::F16, causal, Layout::BHSD), 320, 37);
      check_on_device(backend, make_case(2, 12, 4, 1000, 7, 96, DType::F16, causal, Layout::Padded), 321, 37);
      check_on_device(backend, make_case(2, 12, 4, 1000, 999, 112, DType::BF16, causal), 322, 37);
      check_on_device(backend,
                      fctest::sequence_case(16, 4, 128, DType::BF16, causal, {1000, 513, 64}, {1000, 700, 2000},
                                            KvStore::Batched, 0, 1, 16),
                      323, 37);
    }
}

// Paged decode with pieces longer than the decode kernel's 16 block-table entry slots (decode/flash_decode.cuh:
// a piece's tile i takes its entries from slot i % 16, staged a ring ahead), so that every slot is refilled:
// one query row per sequence at D = 64 (pages of 32, two blocks per SM), 128 and 256 (pages of 16, one block
// per SM), 16 causal query rows x 4 heads at D = 128 (four row tiles); 30000 keys (469 key tiles) over
// 6 x 2 (b, kv head) pairs. The plan must cut them into pieces of more than 16 tiles, else the case no longer
// tests what it names (on 132 SMs: 22 pieces at D = 64, 11 above). cuda-flash only: the other device
// backends do not run paged decode on the tuned kernels (and the Kokkos reference takes minutes here).
TEST(Gpu, PagedDecodeLongPieces) {
  REQUIRE_DEVICE();
  const auto names = device_backends();
  if (std::find(names.begin(), names.end(), "cuda-flash") == names.end()) GTEST_SKIP() << "no cuda-flash backend";
  struct Shape {
    int seqlen_q, head_dim, page;
    DType dt;
    bool causal;
  };
  for (const Shape sh : {Shape{1, 64, 32, DType::F16, false}, Shape{1, 128, 16, DType::BF16, false},
                         Shape{1, 256, 16, DType::F16, false}, Shape{16, 128, 16, DType::F16, true}}) {
    Case c = make_case(6, 8, 2, sh.seqlen_q, 30000, sh.head_dim, sh.dt, sh.causal);
    c.kv = Case::KvStore::Paged, c.page_size = sh.page;
    SCOPED_TRACE(c.name());
    fctest::HostData h = fctest::make_data(c, fctest::run_seed() ^ (330u + sh.head_dim + sh.seqlen_q));
    const std::string plan = cuda_flash_plan(h);
    const size_t at = plan.find(" splits=");
    ASSERT_NE(plan.find("decode"), std::string::npos) << plan;
    ASSERT_NE(at, std::string::npos) << plan;
    const int splits = std::atoi(plan.c_str() + at + 8);
    const int tiles = (c.seqlen_k + 63) / 64;
    EXPECT_GT(tiles / std::max(1, splits), 16) << plan << ": pieces of 16 tiles or fewer";
    check_data_on_device("cuda-flash", std::move(h), c.name() + "/long", oracle_row_stride(c), nullptr);
  }
}

// One or two (b, kv head) pairs with long caches: the decode kernel cut into more pieces than it merges itself
// (64), the pieces merged by the combine kernel (decode/combine.cuh; the plan says " combine" on 132 SMs). D = 64
// (256 pieces), 128, 256; two KV heads of 16 query heads each; 16 query heads x 4 queries of one KV head (64-row
// blocks, causal); paged K/V; a 3000-key window with sinks and ALiBi, where the row block sees 47 of the tiles
// (the pieces past them write nothing), and a 30-key window (one piece: the decode kernel writes the row itself).
TEST(Gpu, DecodeManyPiecesCombined) {
  REQUIRE_DEVICE();
  const auto names = device_backends();
  if (std::find(names.begin(), names.end(), "cuda-flash") == names.end()) GTEST_SKIP() << "no cuda-flash backend";
  std::vector<Case> cases = {make_case(1, 8, 1, 1, 16384, 128, DType::F16, false),
                             make_case(1, 32, 2, 1, 9000, 128, DType::BF16, false),
                             make_case(1, 8, 1, 1, 20000, 64, DType::F16, false),
                             make_case(1, 4, 1, 1, 9000, 256, DType::BF16, false),
                             make_case(1, 16, 1, 4, 12000, 128, DType::F16, true)};
  Case paged = make_case(1, 8, 1, 1, 16384, 128, DType::BF16, false);
  paged.kv = Case::KvStore::Paged, paged.page_size = 16;
  cases.push_back(paged);
  Case window = make_case(1, 8, 1, 2, 16000, 128, DType::F16, true);
  window.window_left = 3000, window.sinks = true, window.alibi = true;
  cases.push_back(window);
  Case one_tile = make_case(1, 8, 1, 1, 16000, 128, DType::F16, true);
  one_tile.window_left = 30, one_tile.sinks = true;
  cases.push_back(one_tile);
  int device = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int seed = 350;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name());
    fctest::HostData h = fctest::make_data(c, fctest::run_seed() ^ static_cast<std::uint64_t>(seed++));
    const std::string plan = cuda_flash_plan(h);
    EXPECT_NE(plan.find("decode"), std::string::npos) << plan;
    if (sms >= 132) EXPECT_NE(plan.find(" combine"), std::string::npos) << plan;  // e.g. 132 / 2 = 66 pieces
    check_data_on_device("cuda-flash", std::move(h), c.name() + "/many", oracle_row_stride(c), nullptr);
  }
}

// Two pieces of a row block as one thread block cluster (compute capability 9.0, D = 128: the plan says
// "splits=2 cluster"; decode/merge.cuh, merge_cluster_pieces): piece 0 merges both partials from the two blocks'
// shared memory. 8 x 8 (b, kv head) pairs of 8192 keys on 132 SMs: single-query fp16, four causal queries bf16
// (16 packed rows), paged K/V, a 3000-key window with sinks and ALiBi (two causal queries), a 30-key window
// whose row block sees one tile (one piece writes the rows itself, the other has no keys and returns), and 8 query
// heads a KV head with 4 and 8 queries (32 and 64 packed rows: two and four row tiles). Against the fp64 oracle;
// on another GPU the plan may differ and the cases still run. (That the cluster gives the tickets' bits is checked by
// `perf/dev/decode_dev.cu check` against main's errors, perf/dev/NOTES.md, fifty-fifth session: the public API
// has no switch between the two.)
TEST(Gpu, DecodeTwoPiecesInACluster) {
  REQUIRE_DEVICE();
  const auto names = device_backends();
  if (std::find(names.begin(), names.end(), "cuda-flash") == names.end()) GTEST_SKIP() << "no cuda-flash backend";
  std::vector<Case> cases = {make_case(8, 32, 8, 1, 8192, 128, DType::F16, false),
                             make_case(8, 32, 8, 4, 8192, 128, DType::BF16, true)};
  Case paged = make_case(8, 32, 8, 1, 8192, 128, DType::F16, false);
  paged.kv = Case::KvStore::Paged, paged.page_size = 16;
  cases.push_back(paged);
  Case window = make_case(8, 32, 8, 2, 8192, 128, DType::BF16, true);
  window.window_left = 3000, window.sinks = true, window.alibi = true;
  cases.push_back(window);
  Case one_tile = make_case(8, 32, 8, 1, 8192, 128, DType::F16, true);
  one_tile.window_left = 30;
  cases.push_back(one_tile);
  cases.push_back(make_case(8, 64, 8, 4, 8192, 128, DType::F16, true));   // 32 packed rows a block: two row tiles
  cases.push_back(make_case(8, 64, 8, 8, 8192, 128, DType::BF16, true));  // 64: four row tiles
  int device = 0, sms = 0, major = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  int seed = 370;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name());
    fctest::HostData h = fctest::make_data(c, fctest::run_seed() ^ static_cast<std::uint64_t>(seed++));
    const std::string plan = cuda_flash_plan(h);
    EXPECT_NE(plan.find("decode"), std::string::npos) << plan;
    if (sms == 132 && major >= 9) EXPECT_NE(plan.find("splits=2 cluster"), std::string::npos) << plan;
    check_data_on_device("cuda-flash", std::move(h), c.name() + "/cluster", oracle_row_stride(c), nullptr);
  }
}

// Scores that grow from key tile to key tile, by less and by more than the Hopper kernel's lazy max
// lets pass without a rescale (sm90/config.h, kMaxSlack: 8 in the log2 domain): P then comes out above
// 1 (up to 2^5 here) in the tiles whose growth a row's held max absorbs, and O is rescaled in the
// others. Every device backend against the fp64 oracle. Q has +0.5 and K a ramp on their first 16 head
// dims (on top of a quarter of make_data's random values), so that, in the log2 domain, the scores of
// key tile t (128 keys) climb by 5 or 12 alternately across the tile. The second shape has more than
// 16384 query rows: the mma.sync backends run it on the wide-warp kernel, which holds a lazy max too at
// D = 96 and 128 (sm80/flash_fwd_wide.cuh, kWideSlack: 8; its 64-key tiles see climbs of 2.5 or 6, kept
// until they add up past 8), so it runs at both; its rows are sampled (every 7th). The fourth shape (D = 64,
// 576 query rows: 192 items of 192 rows) runs the Hopper kernel's three-warpgroup D = 64 instance where it
// is not causal, which holds a lazy max too (sm90/config.h, kMaxSlack).
TEST(Gpu, ScoresGrowingAcrossKeyTiles) {
  REQUIRE_DEVICE();
  struct Shape {
    int many_rows, head_dim, seqlen_q;
  };
  for (DType dt : {DType::F16, DType::BF16})
    for (bool causal : {false, true})
      for (const Shape sh : {Shape{0, 128, 300}, Shape{1, 128, 300}, Shape{1, 96, 300}, Shape{1, 64, 576}}) {
        const int many_rows = sh.many_rows;
        const Case c = many_rows ? make_case(2, 32, 8, sh.seqlen_q, 1600, sh.head_dim, dt, causal)
                                 : make_case(1, 4, 2, sh.seqlen_q, 1600, sh.head_dim, dt, causal);
        fctest::HostData h = fctest::make_data(c, fctest::run_seed() ^ 0x51ac5u);
        const flashcore::Problem& p = h.problem;
        // s·scale·log2e per unit of the ramp: 16 dims x 0.5 x scale x log2e (scale 0 stands for 1/sqrt(D))
        const double scale = p.scale > 0 ? p.scale : 1.0 / std::sqrt(double(p.head_dim));
        const double per_unit = 16 * 0.5 * scale * 1.4426950408889634;
        ASSERT_GT(per_unit, 0.0);
        for (int b = 0; b < p.batch; ++b) {
          for (int i = 0; i < p.seqlen_q; ++i)
            for (int hq = 0; hq < p.heads_q; ++hq)
              for (int dd = 0; dd < 16; ++dd) {
                const std::int64_t at = flashcore::element_offset(p.q, b, i, hq, dd);
                const double q = flashcore::verify::load_element(p.dtype, h.q.data(), at);
                flashcore::verify::store_element(p.dtype, h.q.data(), at, 0.5 + 0.25 * q);
              }
          double ramp = 0;  // log2-domain height of key j's score above the random part
          for (int j = 0; j < p.seqlen_k; ++j) {
            const int tile = j / 128;
            ramp += (tile % 2 == 0 ? 5.0 : 12.0) / 128;
            for (int hk = 0; hk < p.heads_kv; ++hk)
              for (int dd = 0; dd < 16; ++dd) {
                const std::int64_t at = flashcore::element_offset(p.k, b, j, hk, dd);
                const double k = flashcore::verify::load_element(p.dtype, h.k.data(), at);
                flashcore::verify::store_element(p.dtype, h.k.data(), at, ramp / per_unit + 0.25 * k);
              }
          }
        }
        // The scores reach ~75 (natural log): the Kokkos tiers' bound adds the fp32 logits' error
        // (tolerance::reference_logit_atol); V is uniform in [-1, 1].
        for (const auto& backend : device_backends())
          check_data_on_device(backend, h, c.name() + "/growing", many_rows ? 7 : 1, nullptr, 1.0);
      }
}

TEST(Gpu, TunedMatchesDeviceReferenceEverywhere) {
  // Large problem, every element: each tuned backend against the device reference, within the
  // kernel bound measured on sampled rows (twice the naive same-precision error, plus floor).
  REQUIRE_DEVICE();
  const auto names = device_backends();
  if (std::find(names.begin(), names.end(), "reference-cuda") == names.end())
    GTEST_SKIP() << "reference-cuda not built (Kokkos without CUDA)";
  for (DType dt : {DType::F16, DType::BF16})
    for (bool causal : {false, true}) {
      const Case c = make_case(2, 16, 16, 4096, 4096, 128, dt, causal);
      SCOPED_TRACE(c.name());
      fctest::HostData h = fctest::make_data(c, fctest::run_seed() + 400);
      DeviceData d;
      upload(h, d);
      flashcore::Options opts;
      opts.backend = "reference-cuda";
      flashcore::run(h.problem, d.tensors(), opts);
      CUDA_OK(cudaDeviceSynchronize());
      download(d, h);
      const std::vector<unsigned char> ref_o = h.o;
      const fctest::OracleOut sampled = fctest::oracle(h, 509);
      const double naive = fctest::naive_error(h, sampled, 509);
      // Both sides err against the exact result: the kernel within its bound (measured on sampled
      // rows) plus its own output rounding (half an ulp of |O|, which the sample may not reach:
      // early causal rows average few keys and have |O| near 1), the reference within the
      // reference bound (half an ulp of |O| plus atol). Two correct outputs may differ by one ulp.
      const double kernel_abs = flashcore::tolerance::kernel_bound(dt, naive).atol;
      const auto ref_bound = flashcore::tolerance::reference_bound(dt);
      for (const auto& backend : names) {
        if (is_reference(backend)) continue;
        h.poison_outputs();
        CUDA_OK(cudaMemcpy(d.o, h.o.data(), h.o.size(), cudaMemcpyHostToDevice));
        opts.backend = backend;
        flashcore::run(h.problem, d.tensors(), opts);
        CUDA_OK(cudaDeviceSynchronize());
        download(d, h);
        double worst = 0;
        long long bad = 0;
        const auto& p = h.problem;
        for (int b = 0; b < p.batch; ++b)
          for (int i = 0; i < p.seqlen_q; ++i)
            for (int hh = 0; hh < p.heads_q; ++hh)
              for (int x = 0; x < p.head_dim; ++x) {
                const double a = fctest::element(p, h.o, p.o, b, i, hh, x);
                const double r = fctest::element(p, ref_o, p.o, b, i, hh, x);
                const double err = std::fabs(a - r);
                const double bound = kernel_abs + ref_bound.atol + 2 * ref_bound.rtol * std::fabs(r);
                if (!(err <= bound)) ++bad;
                if (!(err <= worst)) worst = std::isnan(err) ? INFINITY : err;
              }
        std::printf("[gpu] %-22s vs reference-cuda %-36s max_abs %.3e bound %.3e + %.3e|ref|\n", backend.c_str(),
                    c.name().c_str(), worst, kernel_abs + ref_bound.atol, 2 * ref_bound.rtol);
        EXPECT_EQ(bad, 0) << backend << ": " << bad << " elements beyond the bound; max abs difference " << worst;
      }
    }
}

TEST(Gpu, TunedKernelsAreDeterministic) {
  REQUIRE_DEVICE();
  for (const auto& backend : device_backends()) {
    // The second: the Hopper schedule's tail split on 132 SMs (non-causal; its merge goes in piece order).
    // The last: decode pieces merged by the combine kernel (one KV head, 16384 keys: 132 pieces on 132 SMs).
    for (int n = 0; n < 5; ++n) {
      const bool causal = n % 2 == 1;
      const Case c = n < 2   ? make_case(1, 8, 2, 777, 1333, 128, DType::BF16, causal)
                     : n < 4 ? make_case(1, 75, 15, 250, 300, 128, DType::BF16, causal)
                             : make_case(1, 8, 1, 1, 16384, 128, DType::F16, false);
      fctest::HostData h = fctest::make_data(c, fctest::run_seed() + 500 + n);
      DeviceData d;
      upload(h, d);
      std::string why;
      if (!accepts(backend, h, d, &why)) continue;
      flashcore::Options opts;
      opts.backend = backend;
      std::vector<unsigned char> first;
      std::vector<float> first_lse;
      for (int rep = 0; rep < 3; ++rep) {
        h.poison_outputs();
        CUDA_OK(cudaMemcpy(d.o, h.o.data(), h.o.size(), cudaMemcpyHostToDevice));
        if (d.lse != nullptr) CUDA_OK(cudaMemcpy(d.lse, h.lse.data(), h.lse.size() * sizeof(float), cudaMemcpyHostToDevice));
        flashcore::run(h.problem, d.tensors(), opts);
        CUDA_OK(cudaDeviceSynchronize());
        download(d, h);
        if (rep == 0) {
          first = h.o;
          first_lse = h.lse;
        } else {
          EXPECT_EQ(std::memcmp(first.data(), h.o.data(), first.size()), 0) << backend << " O differs on run " << rep;
          EXPECT_EQ(std::memcmp(first_lse.data(), h.lse.data(), first_lse.size() * 4), 0)
              << backend << " LSE differs on run " << rep;
        }
      }
    }
  }
}

// CUDA graphs. Launches that draw tickets or keep split-KV partials (the persistent Hopper kernel with
// more work items than SMs; the decode kernel's splits and balanced schedule; the mma.sync split-KV)
// captured twice on one stream, once before any eager call on it and once after: each graph allocates
// its own scratch (a memory-allocation node, and a memset node for tickets; on compute capability 9.0 the
// plans are asserted to use tickets or splits and the nodes are counted), and replayed at once on two
// other streams while the capture stream runs the same call eagerly, round after round, every output is
// bitwise the eager one. Two launches take fewer nodes when captured, and the same bits are asserted:
// the Hopper kernel on equal items in few key tiles a block takes them in the static order (no scratch);
// decode splits on the fixed grid merge by the combine kernel instead of their last block (partials, no
// tickets); two pieces a thread block cluster merges take no scratch at all. (Graphs that shared the
// stream's buffer could race; the launches fill the GPU, so replays mostly run one after another and a
// race need not show here: the allocation nodes are the structural check.) Outputs are poisoned on their own stream before each launch, so an item a round skipped cannot
// pass on earlier values.
// Captured in cudaStreamCaptureModeGlobal, the strictest mode (torch.cuda.graph's default), after one
// eager call on another stream (kernel attributes are set once, outside the capture).
TEST(Gpu, GraphsCapturedOnOneStreamReplayAtOnce) {
  REQUIRE_DEVICE();
  struct GraphCase {
    Case c;
    std::string backend;  // "" = automatic
    const char* uses;     // what its plan says on compute capability 9.0 (tickets or splits)
    int allocs, memsets;  // the graph's allocation and memset nodes per capture there
  };
  std::vector<GraphCase> cases = {
      // Hopper: 1024 equal items: tickets when eager, the static order when captured (no nodes); causal groups
      // keep their tickets captured too
      {make_case(16, 16, 16, 512, 512, 64, DType::F16, false), "", " tickets", 0, 0},
      {make_case(4, 16, 16, 1024, 1024, 64, DType::BF16, true), "", " tickets", 1, 1},
      {make_case(4, 16, 16, 2048, 2048, 64, DType::F16, false), "", " tail=", 1, 1},  // Hopper: the tail split (132 SMs)
      {make_case(8, 32, 8, 1, 8192, 128, DType::F16, false), "", " cluster", 0, 0},   // decode: two pieces in a cluster
                                                                                    // (no scratch; 132 SMs)
      {fctest::sequence_case(32, 8, 128, DType::BF16, true, {}, {5000, 1, 8191, 2222, 0, 777}, Case::KvStore::Batched),
       "", " balanced", 1, 0},  // decode: balanced schedule (captured: the combine kernel, no tickets)
      {make_case(1, 4, 2, 64, 8192, 64, DType::F16, false), "cuda-flash-allwarps", " splits=", 1, 1},  // mma.sync split-KV
  };
  // Decode splits on the fixed grid of up to 16 packed rows a KV head: captured, the combine kernel merges the
  // pieces (no tickets, so no memset node); eager, the last block does. The comparison below asserts that they
  // give the same bits, with the variants that enter the merge (sinks, ALiBi, a window), D = 64 and 256, Lq > 1,
  // paged K/V; 24 rows keep the tickets captured.
  Case dec_variants = make_case(2, 32, 4, 2, 9000, 128, DType::F16, true);
  dec_variants.window_left = 4000, dec_variants.sinks = true, dec_variants.alibi = true;
  Case dec_paged = make_case(4, 32, 8, 1, 7000, 128, DType::BF16, false);
  dec_paged.kv = Case::KvStore::Paged, dec_paged.page_size = 16;
  cases.push_back({make_case(4, 32, 8, 1, 6000, 64, DType::F16, false), "", " splits=", 1, 0});
  cases.push_back({make_case(2, 16, 2, 2, 5000, 256, DType::BF16, true), "", " splits=", 1, 0});
  cases.push_back({make_case(2, 16, 2, 3, 5000, 256, DType::BF16, true), "", " splits=", 1, 1});  // 24 rows: tickets
  cases.push_back({dec_variants, "", " splits=", 1, 0});
  cases.push_back({dec_paged, "", " splits=", 1, 0});
  // The balanced schedule's one-wave fit (decode/schedule.cuh; 9 caches of ~2048 keys), paged: with one query a
  // sequence (288 packed rows, one wave of the combine kernel on 132 SMs) captured calls merge by the combine kernel,
  // which finds the pieces through the map their first blocks write; with two (576 rows) they keep the tickets.
  cases.push_back({fctest::sequence_case(32, 8, 128, DType::F16, true, {}, kFitLengths, Case::KvStore::Paged, 16, 1), "",
                   " balanced", 1, 0});
  cases.push_back({fctest::sequence_case(32, 8, 128, DType::BF16, true, {}, kFitLengths, Case::KvStore::Paged, 16, 2), "",
                   " balanced", 1, 1});
  // Every CUDA object of one case, released however the case ends (CUDA_OK throws).
  struct Resources {
    void* o[3] = {};
    float* lse[3] = {};
    cudaStream_t s[4] = {};  // s[0]: capture stream (and eager), s[1], s[2]: replays, s[3]: warm-up
    cudaGraph_t graph[2] = {};
    cudaGraphExec_t exec[2] = {};
    ~Resources() {
      for (auto& x : s)
        if (x) cudaStreamSynchronize(x);
      for (int i = 0; i < 2; ++i) {
        if (exec[i]) cudaGraphExecDestroy(exec[i]);
        if (graph[i]) cudaGraphDestroy(graph[i]);
      }
      for (auto& x : s)
        if (x) cudaStreamDestroy(x);
      for (int i = 0; i < 3; ++i) cudaFree(o[i]), cudaFree(lse[i]);
    }
  };
  const auto names = device_backends();
  for (const GraphCase& g : cases) {
    SCOPED_TRACE(g.c.name() + " " + g.backend);
    if (!g.backend.empty() && std::find(names.begin(), names.end(), g.backend) == names.end()) continue;
    fctest::HostData h = fctest::make_data(g.c, fctest::run_seed() + 600);
    DeviceData d;
    upload(h, d);
    flashcore::Options opts;
    opts.backend = g.backend;
    opts.check_sequences = false;  // a capture cannot wait for the host (the arrays are valid)
    const flashcore::Report plan = flashcore::explain(h.problem, d.tensors(), opts);
    if (plan.chosen.empty() || is_kokkos_tier(plan.chosen)) continue;  // the Kokkos tiers are not captured here
    std::printf("[gpu] graphs: %-40s %s: %s\n", g.c.name().c_str(), plan.chosen.c_str(), plan.plan.c_str());
    const bool uses_scratch = plan.plan.find(g.uses) != std::string::npos;
    if (device_is_hopper()) EXPECT_TRUE(uses_scratch) << plan.plan << " (expected" << g.uses << ")";
    // Three output buffers (eager, graph 1, graph 2), poisoned with 0xff bytes (NaN in fp16/bf16/fp32).
    const size_t o_bytes = h.o.size(), lse_bytes = h.lse.size() * sizeof(float);
    Resources res;
    void** o = res.o;
    float** lse = res.lse;
    cudaStream_t* s = res.s;
    cudaGraph_t* graph = res.graph;
    cudaGraphExec_t* exec = res.exec;
    for (int i = 0; i < 3; ++i) {
      CUDA_OK(cudaMalloc(&o[i], o_bytes));
      if (lse_bytes) CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&lse[i]), lse_bytes));
    }
    for (int i = 0; i < 4; ++i) CUDA_OK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    auto tensors = [&](int i) {
      flashcore::Tensors t = d.tensors();
      t.o = o[i];
      t.lse = lse[i];
      return t;
    };
    auto poison = [&](int i, cudaStream_t st) {
      CUDA_OK(cudaMemsetAsync(o[i], 0xff, o_bytes, st));
      if (lse_bytes) CUDA_OK(cudaMemsetAsync(lse[i], 0xff, lse_bytes, st));
    };
    auto run_on = [&](int i, cudaStream_t st) {
      flashcore::Options x = opts;
      x.stream = st;
      flashcore::run(h.problem, tensors(i), x);
    };
    run_on(0, s[3]);  // warm-up on another stream
    CUDA_OK(cudaStreamSynchronize(s[3]));
    for (int gi = 0; gi < 2; ++gi) {
      if (gi == 1) run_on(0, s[0]);  // the second capture comes after an eager call on s[0]
      CUDA_OK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeGlobal));
      try {
        if (gi == 0 && g.c.has_sequences()) {
          // Checking device sequence arrays needs the host: an Error naming the array, nothing enqueued.
          flashcore::Options checked = opts;
          checked.stream = s[0];
          checked.check_sequences = true;
          try {
            flashcore::run(h.problem, tensors(1), checked);
            ADD_FAILURE() << "check_sequences under capture did not throw";
          } catch (const flashcore::Error& e) {
            EXPECT_NE(std::string(e.what()).find("captured"), std::string::npos) << e.what();
          }
        }
        run_on(1 + gi, s[0]);
      } catch (...) {
        cudaGraph_t broken = nullptr;
        cudaStreamEndCapture(s[0], &broken);
        if (broken) cudaGraphDestroy(broken);
        throw;
      }
      CUDA_OK(cudaStreamEndCapture(s[0], &graph[gi]));
      // Its own scratch: an allocation node in the graph (tickets: and a memset node), none where it takes none.
      size_t n_nodes = 0;
      CUDA_OK(cudaGraphGetNodes(graph[gi], nullptr, &n_nodes));
      std::vector<cudaGraphNode_t> nodes(n_nodes);
      CUDA_OK(cudaGraphGetNodes(graph[gi], nodes.data(), &n_nodes));
      int allocs = 0, memsets = 0;
      for (cudaGraphNode_t node : nodes) {
        cudaGraphNodeType type;
        CUDA_OK(cudaGraphNodeGetType(node, &type));
        allocs += type == cudaGraphNodeTypeMemAlloc;
        memsets += type == cudaGraphNodeTypeMemset;
      }
      if (device_is_hopper()) {
        EXPECT_EQ(allocs, g.allocs) << "graph " << gi << ": allocation nodes";
        EXPECT_EQ(memsets, g.memsets) << "graph " << gi << ": memset nodes";
      }
      CUDA_OK(cudaGraphInstantiate(&exec[gi], graph[gi], 0));
    }
    std::vector<unsigned char> ref(o_bytes), got(o_bytes);
    std::vector<float> ref_lse(h.lse.size()), got_lse(h.lse.size());
    poison(0, s[0]);
    run_on(0, s[0]);
    CUDA_OK(cudaStreamSynchronize(s[0]));
    CUDA_OK(cudaMemcpy(ref.data(), o[0], o_bytes, cudaMemcpyDeviceToHost));
    if (lse_bytes) CUDA_OK(cudaMemcpy(ref_lse.data(), lse[0], lse_bytes, cudaMemcpyDeviceToHost));
    // The eager output is the one the other GPU tests check against the oracle; here: every row written.
    h.o = ref;
    const fctest::OracleOut& sampled = cached_oracle(h, g.c.name() + "/graphs", 97);
    const double naive = fctest::naive_error(h, sampled, 97);
    const auto bound = flashcore::tolerance::kernel_bound(h.problem.dtype, naive);
    if (!h.lse.empty()) h.lse = ref_lse;
    const fctest::Errors e = fctest::compare_o(h, sampled, bound.atol, bound.rtol, /*kernel_lse=*/true);
    EXPECT_EQ(e.bad, 0) << "eager output: max abs " << e.max_abs << "; first: " << e.first_bad;
    int mismatches = 0;
    const int rounds = 12;
    for (int r = 0; r < rounds; ++r) {
      for (int i = 0; i < 3; ++i) poison(i, s[i]);
      CUDA_OK(cudaGraphLaunch(exec[0], s[1]));
      CUDA_OK(cudaGraphLaunch(exec[1], s[2]));
      run_on(0, s[0]);
      for (int i = 0; i < 3; ++i) CUDA_OK(cudaStreamSynchronize(s[i]));
      for (int i = 0; i < 3; ++i) {
        CUDA_OK(cudaMemcpy(got.data(), o[i], o_bytes, cudaMemcpyDeviceToHost));
        if (lse_bytes) CUDA_OK(cudaMemcpy(got_lse.data(), lse[i], lse_bytes, cudaMemcpyDeviceToHost));
        const bool same = std::memcmp(got.data(), ref.data(), o_bytes) == 0 &&
                          (lse_bytes == 0 || std::memcmp(got_lse.data(), ref_lse.data(), lse_bytes) == 0);
        if (!same && mismatches++ < 3)
          ADD_FAILURE() << (i == 0 ? "eager call" : i == 1 ? "graph captured first" : "graph captured after an eager call")
                        << " differs from the eager output in round " << r;
      }
    }
    std::printf("[gpu] graphs: %d rounds of 2 graphs + 1 eager call at once, %d outputs differ\n", rounds, mismatches);
  }
}

TEST(Gpu, AutomaticChoiceForDeviceData) {
  REQUIRE_DEVICE();
  const Case c = make_case(1, 8, 8, 512, 512, 64, DType::F16, false);
  fctest::HostData h = fctest::make_data(c, 1);
  DeviceData d;
  upload(h, d);
  const flashcore::Report r = flashcore::explain(h.problem, d.tensors());
  std::printf("[gpu] automatic choice for the main job:\n%s\n", r.to_string().c_str());
  ASSERT_FALSE(r.chosen.empty());
  const auto names = device_backends();
  EXPECT_EQ(r.chosen, names.front()) << "the highest-priority device backend that can run it";
  // Host data goes to the portable tier on the host.
  EXPECT_EQ(flashcore::explain(h.problem, h.tensors()).chosen, "portable-host");
}

#if defined(FLASHCORE_HAVE_KOKKOS_CUDA)
// The Kokkos View entry point on CudaSpace Views: it runs on a device backend, and Views in
// different memory spaces are an Error naming the tensor, before any work.
TEST(Gpu, KokkosViewsInCudaSpace) {
  REQUIRE_DEVICE();
  using half = Kokkos::Experimental::half_t;
  using DV = Kokkos::View<half****, Kokkos::LayoutRight, Kokkos::CudaSpace>;
  const int B = 2, Lq = 77, Lk = 130, Hq = 4, Hkv = 2, D = 64;
  DV q("q", B, Lq, Hq, D), k("k", B, Lk, Hkv, D), v("v", B, Lk, Hkv, D), o("o", B, Lq, Hq, D);
  Kokkos::deep_copy(q, half(0.5f));
  Kokkos::deep_copy(k, half(0.25f));
  Kokkos::deep_copy(v, half(1.0f));
  // CudaSpace Views default to LayoutLeft: the LSE must say LayoutRight (checked below).
  Kokkos::View<float***, Kokkos::LayoutRight, Kokkos::CudaSpace> lse("lse", B, Hq, Lq);
  auto o_host = Kokkos::create_mirror_view(o);
  auto lse_host = Kokkos::create_mirror_view(lse);
  auto poison = [&] {
    Kokkos::deep_copy(o, half(NAN));
    Kokkos::deep_copy(lse, NAN);
  };
  auto all_o = [&](auto pred) {
    Kokkos::deep_copy(o_host, o);
    for (std::size_t i = 0; i < o_host.size(); ++i)
      if (!pred(static_cast<float>(o_host.data()[i]))) return false;
    return true;
  };

  // All on the device, causal with Lq < Lk: every row sees keys, V is all ones, so O = 1 and the
  // LSE is finite.
  poison();
  flashcore::ViewOptions opts;
  opts.causal = true;
  const flashcore::Report r = flashcore::run(q, k, v, o, lse, opts);
  const auto names = device_backends();
  EXPECT_NE(std::find(names.begin(), names.end(), r.chosen), names.end()) << r.to_string();
  Kokkos::fence();
  EXPECT_TRUE(all_o([](float x) { return std::fabs(x - 1.0f) <= 1e-3f; })) << r.chosen;
  Kokkos::deep_copy(lse_host, lse);
  for (std::size_t i = 0; i < lse_host.size(); ++i) ASSERT_TRUE(std::isfinite(lse_host.data()[i])) << i;

  // Mixed memory spaces: an Error naming the tensor; the output keeps its poison.
  poison();
  Kokkos::View<half****, Kokkos::LayoutRight, Kokkos::HostSpace> k_host("k_host", B, Lk, Hkv, D);
  try {
    flashcore::run(q, k_host, v, o);
    ADD_FAILURE() << "no error for K in host memory";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "k") << e.what();
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
  Kokkos::View<float***, Kokkos::HostSpace> lse_in_host("lse_host", B, Hq, Lq);
  try {
    flashcore::run(q, k, v, o, lse_in_host);
    ADD_FAILURE() << "no error for the LSE in host memory";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "lse") << e.what();
  }
  Kokkos::View<float***, Kokkos::CudaSpace> lse_default("lse_default", B, Hq, Lq);  // LayoutLeft
  try {
    flashcore::run(q, k, v, o, lse_default);
    ADD_FAILURE() << "no error for a LayoutLeft LSE";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "lse") << e.what();
    EXPECT_NE(std::string(e.what()).find("LayoutRight"), std::string::npos) << e.what();
  }
  DV o_short("o_short", B, Lq - 1, Hq, D);
  try {
    flashcore::run(q, k, v, o_short);
    ADD_FAILURE() << "no error for O one row short";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "o") << e.what();
  }
  EXPECT_TRUE(all_o([](float x) { return std::isnan(x); })) << "o written by a failed call";
}
#endif
