// The dispatch interface (registry, forcing, explain), the C API and the Kokkos View entry point.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <thread>
#include <tuple>

#include "flashcore/flashcore.h"
#include "flashcore/kokkos.hpp"
#include "support/testing.hpp"

using flashcore::DType;

namespace {

struct EnvGuard {
  explicit EnvGuard(const char* value) {
    if (value) setenv("FLASHCORE_BACKEND", value, 1);
    else unsetenv("FLASHCORE_BACKEND");
  }
  ~EnvGuard() { unsetenv("FLASHCORE_BACKEND"); }
};

// A backend registered by the test: counts calls, declines problems with head_dim != 8.
struct CountingBackend : flashcore::Backend {
  static inline int calls = 0;
  std::string name() const override { return "test-counting"; }
  int priority() const override { return 1; }
  flashcore::MemoryLocation location() const override { return flashcore::MemoryLocation::Host; }
  std::string description() const override { return "test backend"; }
  flashcore::Support supports(const flashcore::Query& q) const override {
    return q.problem->head_dim == 8 ? flashcore::Support::yes() : flashcore::Support::no("head_dim must be 8");
  }
  void run(const flashcore::Query&, const flashcore::Options&) const override { ++calls; }
};

}  // namespace

TEST(Registry, HostBackendsAreRegisteredAndThePortableTierChosenForHostData) {
  EnvGuard env(nullptr);
  const auto names = flashcore::backend_names();
  ASSERT_NE(std::find(names.begin(), names.end(), "reference-host"), names.end());
  ASSERT_NE(std::find(names.begin(), names.end(), "portable-host"), names.end());
  fctest::Case c;
  fctest::HostData d = fctest::make_data(c, 1);
  const flashcore::Report r = flashcore::explain(d.problem, d.tensors());
  EXPECT_EQ(r.chosen, "portable-host");
  EXPECT_EQ(r.chosen_kind, flashcore::BackendKind::Portable);
  EXPECT_EQ(r.how, "automatic");
  EXPECT_EQ(r.mode, flashcore::SelectionMode::Automatic);
  EXPECT_EQ(r.decisions.size(), names.size());
  for (const auto& dec : r.decisions) {
    if (dec.backend == "portable-host") {
      EXPECT_EQ(dec.code, flashcore::DecisionCode::Chosen);
      EXPECT_EQ(dec.kind, flashcore::BackendKind::Portable);
    } else if (dec.backend == "reference-host") {
      EXPECT_EQ(dec.code, flashcore::DecisionCode::NotAsked) << "it comes after portable-host";
      EXPECT_EQ(dec.kind, flashcore::BackendKind::Reference);
    } else if (dec.backend != "test-counting") {
      EXPECT_FALSE(dec.ok);
      EXPECT_FALSE(dec.reason.empty());
      EXPECT_NE(dec.code, flashcore::DecisionCode::Chosen) << dec.backend;
    }
    // Host data: every device backend says so with a code, not only in words.
    for (const auto& b : flashcore::backends())
      if (b.name == dec.backend && b.location == flashcore::MemoryLocation::Device)
        EXPECT_TRUE(dec.code == flashcore::DecisionCode::OtherMemory ||
                    dec.code == flashcore::DecisionCode::OnlyWhenForced)
            << dec.backend << ": " << flashcore::to_string(dec.code);
  }
  // explain does no work
  for (float x : d.lse) ASSERT_TRUE(std::isnan(x));
}

TEST(Registry, CustomBackendForcedByOptionAndEnvironment) {
  static bool registered = false;
  if (!registered) {
    flashcore::register_backend(std::make_unique<CountingBackend>());
    registered = true;
  }
  EXPECT_THROW(flashcore::register_backend(std::make_unique<CountingBackend>()), flashcore::Error);
  fctest::Case c;
  c.head_dim = 8;
  fctest::HostData d = fctest::make_data(c, 2);
  {
    EnvGuard env(nullptr);
    // automatic: the portable tier has the highest priority on host data
    EXPECT_EQ(flashcore::run(d.problem, d.tensors()).chosen, "portable-host");
    flashcore::Options opts;
    opts.backend = "test-counting";
    const int before = CountingBackend::calls;
    const auto r = flashcore::run(d.problem, d.tensors(), opts);
    EXPECT_EQ(r.chosen, "test-counting");
    EXPECT_EQ(r.chosen_kind, flashcore::BackendKind::External);  // an application's backend
    EXPECT_EQ(r.how, "forced by Options::backend");
    EXPECT_EQ(r.mode, flashcore::SelectionMode::ForcedByOption);
    for (const auto& dec : r.decisions)
      EXPECT_EQ(dec.code, dec.backend == "test-counting" ? flashcore::DecisionCode::Chosen
                                                         : flashcore::DecisionCode::NotSelected)
          << dec.backend;
    EXPECT_EQ(CountingBackend::calls, before + 1);
  }
  {
    EnvGuard env("test-counting");
    const int before = CountingBackend::calls;
    const auto r = flashcore::run(d.problem, d.tensors());
    EXPECT_EQ(r.chosen, "test-counting");
    EXPECT_EQ(r.how, "forced by FLASHCORE_BACKEND");
    EXPECT_EQ(r.mode, flashcore::SelectionMode::ForcedByEnvironment);
    EXPECT_EQ(CountingBackend::calls, before + 1);
    // The option wins over the environment.
    flashcore::Options opts;
    opts.backend = "reference-host";
    EXPECT_EQ(flashcore::run(d.problem, d.tensors(), opts).chosen, "reference-host");
  }
  {
    // A forced backend that declines: an error carrying its reason.
    EnvGuard env("test-counting");
    fctest::Case c2;
    c2.head_dim = 16;
    fctest::HostData d2 = fctest::make_data(c2, 3);
    try {
      flashcore::run(d2.problem, d2.tensors());
      FAIL();
    } catch (const flashcore::Error& e) {
      EXPECT_NE(std::string(e.what()).find("head_dim must be 8"), std::string::npos) << e.what();
    }
  }
}

TEST(CApi, ComputesAttention) {
  fc_problem p;
  fc_problem_init(&p, 2, 4, 2, 19, 23, 32, FC_BF16, 1);
  fctest::Case c;
  c.batch = 2, c.heads_q = 4, c.heads_kv = 2, c.seqlen_q = 19, c.seqlen_k = 23, c.head_dim = 32;
  c.dtype = DType::BF16, c.causal = true;
  fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 11);
  ASSERT_EQ(fc_attention(&p, d.q.data(), d.k.data(), d.v.data(), d.o.data(), d.lse.data(), FC_LOC_HOST, "", nullptr),
            FC_OK)
      << fc_last_error();
  EXPECT_STREQ(fc_last_backend(), "portable-host");
  const fctest::Errors e = fctest::compare(d, fctest::oracle(d));
  EXPECT_EQ(e.bad, 0) << e.first_bad;
  EXPECT_EQ(e.lse_bad, 0) << e.first_bad;
}

namespace {

// (B,S,H,D) LayoutRight Views over an fp32 case's host data, and its (B,Hq,Lq) LSE.
using HostV4u = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
using HostLse = Kokkos::View<float***, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
std::tuple<HostV4u, HostV4u, HostV4u, HostV4u, HostLse> host_views(fctest::HostData& d) {
  const flashcore::Problem& p = d.problem;
  auto view = [&](std::vector<unsigned char>& buf, int seq, int heads) {
    return HostV4u(reinterpret_cast<float*>(buf.data()), p.batch, seq, heads, p.head_dim);
  };
  return {view(d.q, p.seqlen_q, p.heads_q), view(d.k, p.seqlen_k, p.heads_kv), view(d.v, p.seqlen_k, p.heads_kv),
          view(d.o, p.seqlen_q, p.heads_q), HostLse(d.lse.data(), p.batch, p.heads_q, p.seqlen_q)};
}

}  // namespace

TEST(CApi, ComputesAttentionWithEveryVariant) {
  fctest::Case c = fctest::make_case(2, 4, 2, 37, 53, 32, DType::F16, true);
  c.window_left = 11, c.softcap = 20, c.alibi = true, c.sinks = true;
  fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 13);
  fc_problem p;
  fc_problem_init(&p, 2, 4, 2, 37, 53, 32, FC_F16, 1);
  p.window = 1, p.window_left = 11, p.window_right = -1;
  p.softcap = 20.0f;
  p.alibi_slopes = d.alibi_slopes.data();
  p.sinks = d.sinks.data();
  ASSERT_EQ(fc_attention(&p, d.q.data(), d.k.data(), d.v.data(), d.o.data(), d.lse.data(), FC_LOC_HOST, "", nullptr),
            FC_OK)
      << fc_last_error();
  const fctest::Errors e = fctest::compare(d, fctest::oracle(d));
  EXPECT_EQ(e.bad, 0) << e.first_bad;
  EXPECT_EQ(e.lse_bad, 0) << e.first_bad;
}

TEST(KokkosViews, VariantsPassThroughViewOptions) {
  const int B = 1, Hq = 4, Hkv = 1, Lq = 29, Lk = 41, D = 16;
  fctest::Case c = fctest::make_case(B, Hq, Hkv, Lq, Lk, D, DType::F32, false);
  c.window_left = 5, c.window_right = 3, c.softcap = 8, c.alibi = true, c.sinks = true;
  fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 14);
  auto [q, k, v, o, lse] = host_views(d);
  flashcore::ViewOptions opts;
  opts.window_left = 5, opts.window_right = 3, opts.softcap = 8;
  opts.alibi_slopes = d.alibi_slopes.data();
  opts.sinks = d.sinks.data();
  flashcore::run(q, k, v, o, lse, opts);
  const fctest::Errors e = fctest::compare(d, fctest::oracle(d));
  EXPECT_EQ(e.bad, 0) << e.first_bad;
  EXPECT_EQ(e.lse_bad, 0) << e.first_bad;
}

TEST(KokkosViews, LayoutRightAndSubviewOfBHSD) {
  using Kokkos::ALL;
  const int B = 2, Hq = 4, Hkv = 2, Lq = 21, Lk = 34, D = 16;
  fctest::Case c;
  c.batch = B, c.heads_q = Hq, c.heads_kv = Hkv, c.seqlen_q = Lq, c.seqlen_k = Lk, c.head_dim = D;
  c.dtype = DType::F32, c.causal = true;
  fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 12);
  const fctest::OracleOut ref = fctest::oracle(d);

  // (B,S,H,D) LayoutRight Views over the test data.
  auto [q, k, v, o, lse] = host_views(d);
  flashcore::ViewOptions opts;
  opts.causal = true;
  EXPECT_EQ(flashcore::run(q, k, v, o, lse, opts).chosen, "portable-host");
  fctest::Errors e = fctest::compare(d, ref);
  EXPECT_EQ(e.bad, 0) << e.first_bad;
  EXPECT_EQ(e.lse_bad, 0) << e.first_bad;

  // The same data as (B,H,S,D) allocations, viewed (B,S,H,D) through LayoutStride.
  Kokkos::View<float****, Kokkos::HostSpace> qh("q", B, Hq, Lq, D), kh("k", B, Hkv, Lk, D), vh("v", B, Hkv, Lk, D),
      oh("o", B, Hq, Lq, D);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < Hq; ++h)
      for (int i = 0; i < Lq; ++i)
        for (int x = 0; x < D; ++x) qh(b, h, i, x) = q(b, i, h, x), oh(b, h, i, x) = std::nanf("");
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < Hkv; ++h)
      for (int j = 0; j < Lk; ++j)
        for (int x = 0; x < D; ++x) kh(b, h, j, x) = k(b, j, h, x), vh(b, h, j, x) = v(b, j, h, x);
  auto transposed = [](const auto& a) {
    Kokkos::LayoutStride layout(a.extent(0), a.stride(0), a.extent(2), a.stride(2), a.extent(1), a.stride(1),
                                a.extent(3), a.stride(3));
    return Kokkos::View<float****, Kokkos::LayoutStride, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(a.data(), layout);
  };
  flashcore::run(transposed(qh), transposed(kh), transposed(vh), transposed(oh), opts);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < Hq; ++h)
      for (int i = 0; i < Lq; ++i)
        for (int x = 0; x < D; ++x) ASSERT_EQ(oh(b, h, i, x), o(b, i, h, x)) << b << h << i << x;
}

TEST(KokkosViews, MismatchedExtentsNameTheTensor) {
  Kokkos::View<float****, Kokkos::HostSpace> q("q", 1, 8, 2, 16), k("k", 1, 8, 2, 16), v("v", 1, 9, 2, 16),
      o("o", 1, 8, 2, 16);
  try {
    flashcore::run(q, k, v, o);
    FAIL();
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "v");
    EXPECT_NE(std::string(e.what()).find("extent 1 is 9"), std::string::npos) << e.what();
  }
}

// Every View the entry point cannot take is a flashcore::Error naming the tensor, thrown before any
// work: the output keeps its poison.
namespace {
using HostV4 = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace>;

void expect_view_error(const std::function<void()>& call, const std::string& field, const std::string& text,
                       const HostV4& o) {
  try {
    call();
    ADD_FAILURE() << "no error for " << field << " (" << text << ")";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
  for (std::size_t i = 0; i < o.size(); ++i) ASSERT_TRUE(std::isnan(o.data()[i])) << "o written at " << i;
}
}  // namespace

TEST(KokkosViews, UnsupportedViewsAreErrorsNamingTheTensor) {
  const int B = 1, L = 9, H = 2, D = 16;
  HostV4 q("q", B, L, H, D), k("k", B, L, H, D), v("v", B, L, H, D), o("o", B, L, H, D);
  Kokkos::deep_copy(q, 0.5f), Kokkos::deep_copy(k, 0.25f), Kokkos::deep_copy(v, 1.0f);
  Kokkos::deep_copy(o, std::nanf(""));

  // LayoutLeft: the first index is the contiguous one, not dim.
  Kokkos::View<float****, Kokkos::LayoutLeft, Kokkos::HostSpace> k_left("k_left", B, L, H, D);
  expect_view_error([&] { flashcore::run(q, k_left, v, o); }, "k", "dim index (rank 3) must have stride 1", o);
  // A LayoutStride View whose dim index has stride 2 (every other element of a wider allocation).
  Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace> wide("wide", B, L, H, 2 * D);
  Kokkos::View<float****, Kokkos::LayoutStride, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> v_strided(
      wide.data(), Kokkos::LayoutStride(B, wide.stride(0), L, wide.stride(1), H, wide.stride(2), D, 2));
  expect_view_error([&] { flashcore::run(q, k, v_strided, o); }, "v", "it has 2", o);
  // Wrong rank.
  Kokkos::View<float***, Kokkos::HostSpace> q3("q3", B, L, H * D);
  expect_view_error([&] { flashcore::run(q3, k, v, o); }, "q", "rank 3, expected 4", o);
  // Wrong extents.
  HostV4 k_short("k_short", B, L, H, D / 2);
  expect_view_error([&] { flashcore::run(q, k_short, v, o); }, "k", "extent 3 (dim) is 8, expected 16", o);
  HostV4 o_long("o_long", B, L + 1, H, D);
  Kokkos::deep_copy(o_long, std::nanf(""));
  expect_view_error([&] { flashcore::run(q, k, v, o_long); }, "o", "extent 1 is 10, expected 9", o_long);
  // LSE: wrong rank, wrong extents, not contiguous.
  Kokkos::View<float**, Kokkos::HostSpace> lse2("lse2", B * H, L);
  expect_view_error([&] { flashcore::run(q, k, v, o, lse2); }, "lse", "rank 2, expected 3", o);
  Kokkos::View<float***, Kokkos::HostSpace> lse_bad("lse_bad", B, L, H);  // (batch, seq, heads): swapped
  expect_view_error([&] { flashcore::run(q, k, v, o, lse_bad); }, "lse", "extent 1 (heads_q) is 9, expected 2", o);
  Kokkos::View<float***, Kokkos::LayoutLeft, Kokkos::HostSpace> lse_left("lse_left", B, H, L);
  expect_view_error([&] { flashcore::run(q, k, v, o, lse_left); }, "lse", "must be contiguous", o);
  // Every accepted View still works after the errors (and writes o).
  Kokkos::View<float***, Kokkos::HostSpace> lse("lse", B, H, L);
  EXPECT_EQ(flashcore::run(q, k, v, o, lse).chosen, "portable-host");
  for (std::size_t i = 0; i < o.size(); ++i) ASSERT_NEAR(o.data()[i], 1.0f, 1e-6f) << i;
}

TEST(KokkosViews, NullLseViewMeansNoLse) {
  // A View whose data pointer is null as the LSE argument is "no LSE", as the five-argument overload.
  HostV4 q("q", 1, 5, 1, 8), k("k", 1, 7, 1, 8), v("v", 1, 7, 1, 8), o("o", 1, 5, 1, 8);
  Kokkos::deep_copy(v, 2.0f);
  Kokkos::deep_copy(o, std::nanf(""));
  Kokkos::View<float***, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> no_lse(nullptr, 0, 0, 0);
  EXPECT_EQ(flashcore::run(q, k, v, o, no_lse).chosen, "portable-host");
  for (std::size_t i = 0; i < o.size(); ++i) ASSERT_NEAR(o.data()[i], 2.0f, 1e-6f) << i;
}

TEST(Registry, ConcurrentHostCallsAreCorrect) {
  // Kokkos' host backend takes launches from one thread at a time; FlashCore serializes them.
  fctest::Case c = fctest::make_case(1, 4, 2, 33, 47, 32, DType::F32, true);
  std::vector<fctest::HostData> data;
  for (int t = 0; t < 4; ++t) data.push_back(fctest::make_data(c, fctest::run_seed() + 30 + t));
  std::vector<std::thread> threads;
  std::vector<std::string> errors(data.size());
  for (std::size_t t = 0; t < data.size(); ++t)
    threads.emplace_back([&, t] {
      try {
        for (int rep = 0; rep < 20; ++rep) flashcore::run(data[t].problem, data[t].tensors());
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (std::size_t t = 0; t < data.size(); ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    const fctest::Errors e = fctest::compare(data[t], fctest::oracle(data[t]));
    EXPECT_EQ(e.bad, 0) << e.first_bad;
  }
}

namespace {
// A backend that asks the registry from inside supports(): must not deadlock.
struct ReentrantBackend : flashcore::Backend {
  std::string name() const override { return "test-reentrant"; }
  int priority() const override { return 0; }
  flashcore::MemoryLocation location() const override { return flashcore::MemoryLocation::Host; }
  std::string description() const override { return "test backend calling the registry"; }
  flashcore::Support supports(const flashcore::Query&) const override {
    return flashcore::Support::no("registry has " + std::to_string(flashcore::backends().size()) + " backends");
  }
  void run(const flashcore::Query&, const flashcore::Options&) const override {}
};
}  // namespace

TEST(Registry, SupportsMayCallTheRegistry) {
  static bool registered = false;
  if (!registered) {
    flashcore::register_backend(std::make_unique<ReentrantBackend>());
    registered = true;
  }
  fctest::Case c;
  fctest::HostData d = fctest::make_data(c, 5);
  flashcore::Options opts;
  opts.backend = "test-reentrant";
  const flashcore::Report r = flashcore::explain(d.problem, d.tensors(), opts);
  EXPECT_EQ(r.chosen, "");
  bool found = false;
  for (const auto& dec : r.decisions)
    if (dec.backend == "test-reentrant") {
      found = dec.reason.find("registry has") != std::string::npos;
      EXPECT_EQ(dec.code, flashcore::DecisionCode::Unsupported);
    }
  EXPECT_TRUE(found);
}

// ---------------------------------------------------------------------------------------------
// Sequences of different lengths (flashcore.hpp, "Sequences") through the C API and the Views:
// the same data as a C++ call gives the same bits; invalid input is an error naming the field.
// ---------------------------------------------------------------------------------------------
namespace {

enum class KvLayout { Dense, Packed, Paged };

// fp32 host data of a batch of sequences: Q packed by cu_seqlens_q (or dense with dense_q rows per
// sequence), K/V dense with cache lengths, packed by cu_seqlens_k, or in pools of 16-row pages
// reached through a shuffled block table with cache lengths.
struct SeqData {
  flashcore::Problem p;
  std::vector<float> q, k, v, o, lse;
  std::vector<int> cu_q, cu_k, lens_k, table;

  flashcore::Tensors tensors() {
    flashcore::Tensors t{q.data(), k.data(), v.data(), o.data(), lse.data()};
    if (!cu_q.empty()) t.cu_seqlens_q = cu_q.data();
    if (!cu_k.empty()) t.cu_seqlens_k = cu_k.data();
    if (!lens_k.empty()) t.seqlens_k = lens_k.data();
    if (!table.empty()) t.block_table = table.data();
    return t;
  }
  void poison() {
    std::fill(o.begin(), o.end(), std::nanf(""));
    std::fill(lse.begin(), lse.end(), std::nanf(""));
  }
  bool untouched() const {
    for (float x : o)
      if (!std::isnan(x)) return false;
    for (float x : lse)
      if (!std::isnan(x)) return false;
    return true;
  }
};

SeqData make_seq_data(const std::vector<int>& lq, const std::vector<int>& lk, KvLayout kv, int dense_q, bool causal,
                      std::uint64_t seed) {
  const int B = static_cast<int>(lk.size()), Hq = 4, Hkv = 2, D = 16, page = 16;
  SeqData d;
  flashcore::Problem& p = d.p;
  p = flashcore::Problem::make(B, Hq, Hkv, 1, 1, D, DType::F32, causal);
  const int max_k = std::max(1, *std::max_element(lk.begin(), lk.end()));
  int q_rows = B * dense_q;
  if (!lq.empty()) {
    d.cu_q.assign(1, 0);
    for (int n : lq) d.cu_q.push_back(d.cu_q.back() + n);
    p.total_q = q_rows = d.cu_q.back();
    p.seqlen_q = std::max(1, *std::max_element(lq.begin(), lq.end()));
    p.q = p.o = {0, Hq * D, D};  // packed (total_q, Hq, D); the batch stride is unused
  } else {
    p.seqlen_q = dense_q;
    p.q = p.o = {static_cast<std::int64_t>(dense_q) * Hq * D, Hq * D, D};
  }
  int k_rows = 0;
  if (kv == KvLayout::Packed) {
    d.cu_k.assign(1, 0);
    for (int n : lk) d.cu_k.push_back(d.cu_k.back() + n);
    p.total_k = k_rows = d.cu_k.back();
    p.seqlen_k = max_k;
    p.k = p.v = {0, Hkv * D, D};
  } else if (kv == KvLayout::Paged) {
    d.lens_k = lk;
    p.page_size = page;
    p.pages_per_seq = (max_k + page - 1) / page;
    p.num_pages = B * p.pages_per_seq + 1;  // one spare page
    d.table.resize(static_cast<std::size_t>(B) * p.pages_per_seq);
    std::iota(d.table.begin(), d.table.end(), 1);
    std::shuffle(d.table.begin(), d.table.end(), std::mt19937_64(seed));
    k_rows = p.num_pages * page;
    p.seqlen_k = max_k;
    p.k = p.v = {static_cast<std::int64_t>(page) * Hkv * D, Hkv * D, D};
  } else {
    d.lens_k = lk;
    p.seqlen_k = max_k + 3;  // cache rows beyond the longest sequence
    k_rows = B * p.seqlen_k;
    p.k = p.v = {static_cast<std::int64_t>(p.seqlen_k) * Hkv * D, Hkv * D, D};
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto fill = [&](std::vector<float>& x, std::size_t n) {
    x.resize(n);
    for (float& e : x) e = normal(rng);
  };
  fill(d.q, static_cast<std::size_t>(q_rows) * Hq * D);
  fill(d.k, static_cast<std::size_t>(k_rows) * Hkv * D);
  fill(d.v, static_cast<std::size_t>(k_rows) * Hkv * D);
  d.o.resize(d.q.size());
  d.lse.resize(static_cast<std::size_t>(q_rows) * Hq);
  d.poison();
  return d;
}

// The C descriptor of a SeqData's problem and arrays.
fc_problem c_problem(SeqData& d) {
  const flashcore::Problem& p = d.p;
  fc_problem c;
  fc_problem_init(&c, p.batch, p.heads_q, p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim, FC_F32, p.causal ? 1 : 0);
  auto strides = [](const flashcore::Strides& s) { return fc_strides{s.batch, s.seq, s.head}; };
  c.q = strides(p.q), c.k = strides(p.k), c.v = strides(p.v), c.o = strides(p.o);
  c.total_q = p.total_q, c.total_k = p.total_k;
  c.page_size = p.page_size, c.num_pages = p.num_pages, c.pages_per_seq = p.pages_per_seq;
  const flashcore::Tensors t = d.tensors();
  c.cu_seqlens_q = t.cu_seqlens_q, c.cu_seqlens_k = t.cu_seqlens_k, c.seqlens_k = t.seqlens_k;
  c.block_table = t.block_table;
  return c;
}

// Bitwise equality of the outputs of two calls on the same data (-inf == -inf; no NaN expected).
void expect_same_outputs(const SeqData& a, const SeqData& b) {
  ASSERT_EQ(a.o.size(), b.o.size());
  for (std::size_t i = 0; i < a.o.size(); ++i) ASSERT_EQ(a.o[i], b.o[i]) << "o at " << i;
  ASSERT_EQ(a.lse.size(), b.lse.size());
  for (std::size_t i = 0; i < a.lse.size(); ++i) ASSERT_EQ(a.lse[i], b.lse[i]) << "lse at " << i;
}

// Every output element written (no NaN left of the poison), and the rows that see no key are 0 / -inf.
void expect_written(const SeqData& d) {
  for (std::size_t i = 0; i < d.o.size(); ++i) ASSERT_FALSE(std::isnan(d.o[i])) << "o not written at " << i;
  for (std::size_t i = 0; i < d.lse.size(); ++i) ASSERT_FALSE(std::isnan(d.lse[i])) << "lse not written at " << i;
}

void expect_c_error(fc_status status, const std::string& text, const SeqData& d) {
  EXPECT_EQ(status, FC_ERROR_INVALID) << text;
  EXPECT_NE(std::string(fc_last_error()).find(text), std::string::npos) << fc_last_error();
  EXPECT_TRUE(d.untouched()) << "outputs written by a failed call (" << text << ")";
}

// Unmanaged host Views over a SeqData.
template <class DataType, class Layout = Kokkos::LayoutRight>
using HostU = Kokkos::View<DataType, Layout, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;

}  // namespace

TEST(CApi, ProblemInitTurnsTheSequenceLayoutsOff) {
  fc_problem c;
  std::memset(&c, 0xff, sizeof c);
  fc_problem_init(&c, 2, 4, 2, 9, 11, 16, FC_F16, 1);
  EXPECT_EQ(c.total_q, 0);
  EXPECT_EQ(c.total_k, 0);
  EXPECT_EQ(c.page_size, 0);
  EXPECT_EQ(c.num_pages, 0);
  EXPECT_EQ(c.pages_per_seq, 0);
  EXPECT_EQ(c.trust_sequences, 0);
  EXPECT_EQ(c.deterministic, 0);
  EXPECT_EQ(c.cu_seqlens_q, nullptr);
  EXPECT_EQ(c.cu_seqlens_k, nullptr);
  EXPECT_EQ(c.seqlens_k, nullptr);
  EXPECT_EQ(c.block_table, nullptr);
  EXPECT_EQ(c.descale_q, 1.0f);
  EXPECT_EQ(c.descale_k, 1.0f);
  EXPECT_EQ(c.descale_v, 1.0f);
  EXPECT_EQ(c.out_dtype, FC_BF16);
  // The new fields are the tail of the struct, after every field of the earlier ABI: the sequence
  // layouts, deterministic, then the fp8 fields (descale_q/k/v, out_dtype) last.
  EXPECT_GT(offsetof(fc_problem, total_q), offsetof(fc_problem, sinks));
  EXPECT_GT(offsetof(fc_problem, deterministic), offsetof(fc_problem, block_table));
  EXPECT_GT(offsetof(fc_problem, descale_q), offsetof(fc_problem, deterministic));
  EXPECT_GT(offsetof(fc_problem, out_dtype), offsetof(fc_problem, descale_v));
  EXPECT_LE(offsetof(fc_problem, out_dtype) + sizeof(c.out_dtype), sizeof(fc_problem));
  EXPECT_GT(offsetof(fc_problem, out_dtype) + sizeof(c.out_dtype) + alignof(fc_problem), sizeof(fc_problem));
}

TEST(CApi, SequenceLayoutsGiveTheBitsOfTheCppApi) {
  struct Shape {
    const char* name;
    std::vector<int> lq, lk;
    KvLayout kv;
    int dense_q;
    bool causal;
  };
  const Shape shapes[] = {
      {"varlen Q, paged K/V with cache lengths", {3, 0, 5, 2}, {20, 7, 33, 0}, KvLayout::Paged, 0, true},
      {"varlen Q and K/V", {4, 1, 6}, {9, 1, 17}, KvLayout::Packed, 0, true},
      {"decode: dense Q, dense K/V with cache lengths", {}, {5, 0, 12}, KvLayout::Dense, 1, false},
  };
  for (const Shape& s : shapes) {
    SCOPED_TRACE(s.name);
    SeqData cpp = make_seq_data(s.lq, s.lk, s.kv, s.dense_q, s.causal, fctest::run_seed() + 40);
    SeqData c = make_seq_data(s.lq, s.lk, s.kv, s.dense_q, s.causal, fctest::run_seed() + 40);
    ASSERT_EQ(flashcore::run(cpp.p, cpp.tensors()).chosen, "portable-host");
    expect_written(cpp);
    const fc_problem cp = c_problem(c);
    ASSERT_EQ(fc_attention(&cp, c.q.data(), c.k.data(), c.v.data(), c.o.data(), c.lse.data(), FC_LOC_HOST, nullptr,
                           nullptr),
              FC_OK)
        << fc_last_error();
    expect_same_outputs(cpp, c);
    // The sized form, with the buffers' lengths: the same.
    c.poison();
    ASSERT_EQ(fc_attention_sized(&cp, 4, c.q.data(), c.q.size(), c.k.data(), c.k.size(), c.v.data(), c.v.size(),
                                 c.o.data(), c.o.size(), c.lse.data(), c.lse.size(), FC_LOC_HOST, nullptr, nullptr),
              FC_OK)
        << fc_last_error();
    expect_same_outputs(cpp, c);
  }
}

TEST(CApi, BadSequenceFieldsAreErrorsNamingTheField) {
  SeqData d = make_seq_data({3, 0, 5, 2}, {20, 7, 33, 0}, KvLayout::Paged, 0, true, fctest::run_seed() + 41);
  const fc_problem good = c_problem(d);
  auto sized = [&](const fc_problem& c, std::int64_t q_elems, std::int64_t k_elems, std::int64_t o_elems,
                   std::int64_t lse_elems) {
    return fc_attention_sized(&c, 4, d.q.data(), q_elems, d.k.data(), k_elems, d.v.data(), d.v.size(), d.o.data(),
                              o_elems, d.lse.data(), lse_elems, FC_LOC_HOST, nullptr, nullptr);
  };
  const std::int64_t nq = d.q.size(), nk = d.k.size(), no = d.o.size(), nl = d.lse.size();
  // Buffer lengths against the packed and paged spans: each one element short.
  expect_c_error(sized(good, nq - 1, nk, no, nl), "q: the problem's layout (packed: total_q 10 rows)", d);
  expect_c_error(sized(good, nq, nk - 1, no, nl), "k: the problem's layout (paged: num_pages 13 x page_size 16 rows)",
                 d);
  expect_c_error(sized(good, nq, nk, no - 1, nl), "o: the problem's layout", d);
  expect_c_error(sized(good, nq, nk, no, nl - 1), "lse: the problem's layout (packed: total_q 10 rows) reaches element 40",
                 d);
  // Fields.
  fc_problem c = good;
  c.trust_sequences = 2;
  expect_c_error(sized(c, nq, nk, no, nl), "trust_sequences: value 2 is not 0 or 1", d);
  c = good;
  c.deterministic = -1;
  expect_c_error(sized(c, nq, nk, no, nl), "deterministic: value -1 is not 0 or 1", d);
  c = good;
  c.page_size = 24;
  expect_c_error(sized(c, nq, nk, no, nl), "page_size", d);
  c = good;
  c.block_table = nullptr;
  expect_c_error(fc_attention(&c, d.q.data(), d.k.data(), d.v.data(), d.o.data(), d.lse.data(), FC_LOC_HOST, nullptr,
                              nullptr),
                 "block_table", d);
  // Arrays (host arrays are checked even when trusted).
  std::vector<int> cu = d.cu_q;
  cu[2] = 2;  // decreasing: 3 -> 2
  c = good;
  c.cu_seqlens_q = cu.data();
  c.trust_sequences = 1;
  expect_c_error(sized(c, nq, nk, no, nl), "cu_seqlens_q", d);
  std::vector<int> lens = d.lens_k;
  lens[1] = -1;
  c = good;
  c.seqlens_k = lens.data();
  expect_c_error(sized(c, nq, nk, no, nl), "seqlens_k", d);
  std::vector<int> table = d.table;
  table[0] = good.num_pages;
  c = good;
  c.block_table = table.data();
  expect_c_error(sized(c, nq, nk, no, nl), "block_table", d);
  // The good call still works afterwards.
  ASSERT_EQ(sized(good, nq, nk, no, nl), FC_OK) << fc_last_error();
  expect_written(d);
}

TEST(KokkosViews, SequenceLayoutsGiveTheBitsOfTheCppApi) {
  const int Hq = 4, Hkv = 2, D = 16;
  {
    SCOPED_TRACE("varlen Q (rank 3), paged K/V (rank-4 pools), cache lengths");
    SeqData cpp = make_seq_data({3, 0, 5, 2}, {20, 7, 33, 0}, KvLayout::Paged, 0, true, fctest::run_seed() + 42);
    SeqData vd = make_seq_data({3, 0, 5, 2}, {20, 7, 33, 0}, KvLayout::Paged, 0, true, fctest::run_seed() + 42);
    flashcore::run(cpp.p, cpp.tensors());
    const flashcore::Problem& p = vd.p;
    HostU<float***> q(vd.q.data(), p.total_q, Hq, D), o(vd.o.data(), p.total_q, Hq, D);
    HostU<float****> k(vd.k.data(), p.num_pages, p.page_size, Hkv, D), v(vd.v.data(), p.num_pages, p.page_size, Hkv, D);
    HostU<float**> lse(vd.lse.data(), Hq, p.total_q);
    flashcore::ViewOptions opts;
    opts.causal = true;
    opts.sequences.cu_seqlens_q = HostU<int*>(vd.cu_q.data(), vd.cu_q.size());
    opts.sequences.seqlens_k = HostU<int*>(vd.lens_k.data(), vd.lens_k.size());
    opts.sequences.block_table = HostU<int**>(vd.table.data(), p.batch, p.pages_per_seq);
    EXPECT_EQ(flashcore::run(q, k, v, o, lse, opts).chosen, "portable-host");
    expect_same_outputs(cpp, vd);
  }
  {
    SCOPED_TRACE("varlen Q and K/V (rank 3), const int Views, no LSE");
    SeqData cpp = make_seq_data({4, 1, 6}, {9, 1, 17}, KvLayout::Packed, 0, false, fctest::run_seed() + 43);
    SeqData vd = make_seq_data({4, 1, 6}, {9, 1, 17}, KvLayout::Packed, 0, false, fctest::run_seed() + 43);
    cpp.lse.clear(), vd.lse.clear();
    flashcore::Tensors t = cpp.tensors();
    t.lse = nullptr;
    flashcore::run(cpp.p, t);
    const flashcore::Problem& p = vd.p;
    HostU<const float***> q(vd.q.data(), p.total_q, Hq, D), k(vd.k.data(), p.total_k, Hkv, D),
        v(vd.v.data(), p.total_k, Hkv, D);
    HostU<float***> o(vd.o.data(), p.total_q, Hq, D);
    flashcore::ViewOptions opts;
    opts.sequences.cu_seqlens_q = HostU<const int*>(vd.cu_q.data(), vd.cu_q.size());
    opts.sequences.cu_seqlens_k = HostU<const int*>(vd.cu_k.data(), vd.cu_k.size());
    flashcore::run(q, k, v, o, opts);
    expect_same_outputs(cpp, vd);
  }
  {
    SCOPED_TRACE("decode: dense Q (B, 1, Hq, D), dense K/V cache with seqlens_k and a given bound");
    SeqData cpp = make_seq_data({}, {5, 0, 12}, KvLayout::Dense, 1, false, fctest::run_seed() + 44);
    SeqData vd = make_seq_data({}, {5, 0, 12}, KvLayout::Dense, 1, false, fctest::run_seed() + 44);
    flashcore::run(cpp.p, cpp.tensors());
    const flashcore::Problem& p = vd.p;
    HostU<float****> q(vd.q.data(), p.batch, 1, Hq, D), o(vd.o.data(), p.batch, 1, Hq, D);
    HostU<float****> k(vd.k.data(), p.batch, p.seqlen_k, Hkv, D), v(vd.v.data(), p.batch, p.seqlen_k, Hkv, D);
    HostU<float***> lse(vd.lse.data(), p.batch, Hq, 1);
    flashcore::ViewOptions opts;
    opts.sequences.seqlens_k = HostU<int*>(vd.lens_k.data(), vd.lens_k.size());
    opts.sequences.max_seqlen_k = 12;
    flashcore::run(q, k, v, o, lse, opts);
    expect_same_outputs(cpp, vd);
  }
}

TEST(KokkosViews, BadSequenceViewsAreErrorsNamingTheField) {
  const int Hq = 4, Hkv = 2, D = 16;
  SeqData d = make_seq_data({3, 0, 5, 2}, {20, 7, 33, 0}, KvLayout::Paged, 0, true, fctest::run_seed() + 45);
  const flashcore::Problem& p = d.p;
  const int B = p.batch;
  HostU<float***> q(d.q.data(), p.total_q, Hq, D), o(d.o.data(), p.total_q, Hq, D);
  HostU<float****> k(d.k.data(), p.num_pages, p.page_size, Hkv, D), v(d.v.data(), p.num_pages, p.page_size, Hkv, D);
  HostU<float**> lse(d.lse.data(), Hq, p.total_q);
  HostU<int*> cu_q(d.cu_q.data(), B + 1), lens(d.lens_k.data(), B);
  HostU<int**> table(d.table.data(), B, p.pages_per_seq);
  flashcore::ViewOptions good;
  good.causal = true;
  good.sequences.cu_seqlens_q = cu_q;
  good.sequences.seqlens_k = lens;
  good.sequences.block_table = table;

  auto expect_error = [&](const std::function<void()>& call, const std::string& field, const std::string& text) {
    try {
      call();
      ADD_FAILURE() << "no error for " << field << " (" << text << ")";
    } catch (const flashcore::Error& e) {
      EXPECT_EQ(e.field(), field) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
    EXPECT_TRUE(d.untouched()) << "outputs written by a failed call (" << text << ")";
  };
  // Ranks the layout does not have.
  HostU<float****> q4(d.q.data(), 1, p.total_q, Hq, D);
  expect_error([&] { flashcore::run(q4, k, v, o, lse, good); }, "q", "rank 4, expected 3: with sequences.cu_seqlens_q");
  HostU<float***> k3(d.k.data(), p.num_pages * p.page_size, Hkv, D);
  expect_error([&] { flashcore::run(q, k3, k3, o, lse, good); }, "k", "rank 3, expected 4: with sequences.block_table");
  flashcore::ViewOptions no_cu = good;
  no_cu.sequences.cu_seqlens_q = {};
  expect_error([&] { flashcore::run(q, k, v, o, lse, no_cu); }, "q",
               "rank 3, expected 4 (a rank-3 packed Q needs ViewOptions::sequences.cu_seqlens_q)");
  HostU<float***> lse3(d.lse.data(), 1, Hq, p.total_q);
  expect_error([&] { flashcore::run(q, k, v, o, lse3, good); }, "lse", "rank 3, expected 2 (heads_q, total_q)");
  // Sequence arrays: rank, extents, layout.
  flashcore::ViewOptions bad = good;
  bad.sequences.block_table = lens;
  expect_error([&] { flashcore::run(q, k, v, o, lse, bad); }, "block_table", "rank 1, expected 2");
  bad = good;
  bad.sequences.seqlens_k = HostU<int*>(d.lens_k.data(), B - 1);
  expect_error([&] { flashcore::run(q, k, v, o, lse, bad); }, "seqlens_k", "extent 0 is 3, expected 4 (batch)");
  bad = good;
  bad.sequences.block_table = HostU<int**>(d.table.data(), B - 1, p.pages_per_seq);
  expect_error([&] { flashcore::run(q, k, v, o, lse, bad); }, "block_table", "extent 0 is 3, expected 4 (batch)");
  bad = good;
  bad.sequences.block_table = HostU<int**, Kokkos::LayoutLeft>(d.table.data(), B, p.pages_per_seq);
  expect_error([&] { flashcore::run(q, k, v, o, lse, bad); }, "block_table", "must be contiguous");
  bad = good;
  bad.sequences.cu_seqlens_k = cu_q;
  expect_error([&] { flashcore::run(q, k, v, o, lse, bad); }, "cu_seqlens_k", "exclude each other");
  bad = good;
  bad.sequences.max_seqlen_q = -1;
  expect_error([&] { flashcore::run(q, k, v, o, lse, bad); }, "max_seqlen_q", "must be >= 0");
  // Extents of the tensors.
  HostU<float***> o_short(d.o.data(), p.total_q - 1, Hq, D);
  expect_error([&] { flashcore::run(q, k, v, o_short, lse, good); }, "o", "extent 0 is 9, expected 10");
  HostU<float****> v_short(d.v.data(), p.num_pages - 1, p.page_size, Hkv, D);
  expect_error([&] { flashcore::run(q, k, v_short, o, lse, good); }, "v", "extent 0 is 12, expected 13");
  HostU<float**> lse_t(d.lse.data(), p.total_q, Hq);
  expect_error([&] { flashcore::run(q, k, v, o, lse_t, good); }, "lse", "extent 0 (heads_q) is 10, expected 4");
  // The arrays' values: checked by the core, named the same way.
  std::vector<int> bad_table = d.table;
  bad_table[0] = -1;
  bad = good;
  bad.sequences.block_table = HostU<int**>(bad_table.data(), B, p.pages_per_seq);
  expect_error([&] { flashcore::run(q, k, v, o, lse, bad); }, "block_table", "block_table[0] = -1");
  // A dense Q or K with a bound that is not its extent.
  HostU<float****> qd(d.q.data(), 2, 5, Hq, D), od(d.o.data(), 2, 5, Hq, D), kd(d.k.data(), 2, 5, Hkv, D);
  flashcore::ViewOptions dense;
  dense.sequences.max_seqlen_q = 4;
  expect_error([&] { flashcore::run(qd, kd, kd, od, dense); }, "max_seqlen_q", "differs from the 5 query rows");
  dense = {};
  dense.sequences.max_seqlen_k = 6;
  expect_error([&] { flashcore::run(qd, kd, kd, od, dense); }, "max_seqlen_k", "differs from the 5 keys");
  // The good call works afterwards.
  EXPECT_EQ(flashcore::run(q, k, v, o, lse, good).chosen, "portable-host");
  expect_written(d);
}
