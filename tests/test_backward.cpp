// The backward pass (run_backward) on the host reference: the fp64 backward oracle against finite
// differences of the fp64 forward, the reference against the oracle on odd shapes, GQA, causal with
// Lq != Lk, the variants and the sequence layouts, bitwise determinism, and the validation of every
// backward field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/numeric.hpp"
#include "flashcore/flashcore.h"
#include "flashcore/kokkos.hpp"
#include "support/backward.hpp"
#include "verify/elements.hpp"

using fctest::BackwardData;
using fctest::Case;
using fctest::Layout;
using fctest::make_case;
using flashcore::DType;
namespace verify = flashcore::verify;
namespace tolerance = flashcore::tolerance;

namespace {

flashcore::Report run_reference_backward(BackwardData& d) {
  flashcore::Options opts;
  opts.backend = "reference-host";
  return flashcore::run_backward(d.fwd.problem, d.fwd.tensors(), d.gradients(), opts);
}

// Runs the case's backward on the host reference; every gradient against the oracle with the
// reference's bound of the dtype.
void check_case(const Case& c, std::uint64_t salt) {
  SCOPED_TRACE(c.name());
  BackwardData d = fctest::make_backward_data(c, fctest::run_seed() ^ (salt * 0x9e3779b97f4a7c15ull));
  run_reference_backward(d);
  const verify::Gradients ref = fctest::backward_oracle(d, verify::Precision::Exact, 2);
  const std::array<double, 3> scale = verify::gradient_scales(ref);
  std::array<tolerance::Bound, 3> bounds;
  for (int t = 0; t < 3; ++t) bounds[t] = tolerance::reference_gradient_bound(c.dtype, scale[t]);
  double sinks_scale = 0;
  for (double x : ref.dsinks) sinks_scale = std::max(sinks_scale, std::fabs(x));
  const fctest::GradientErrors e =
      fctest::compare_gradients(d, ref, bounds, tolerance::reference_sinks_bound(c.dtype, sinks_scale));
  EXPECT_EQ(e.bad, 0) << e.summary();
}

Case with(Case c, int wl, int wr, double cap = 0, bool alibi = false, bool sinks = false) {
  c.window_left = wl, c.window_right = wr, c.softcap = cap, c.alibi = alibi, c.sinks = sinks;
  return c;
}

std::vector<Case> backward_set() {
  std::vector<Case> out;
  for (bool causal : {false, true}) {
    out.push_back(make_case(2, 4, 2, 77, 77, 64, DType::F16, causal));    // GQA 2:1, odd length
    out.push_back(make_case(1, 4, 1, 203, 113, 32, DType::BF16, causal));  // Lq > Lk (rows that see nothing)
    out.push_back(make_case(1, 2, 2, 40, 300, 48, DType::F32, causal));    // Lq < Lk, several key chunks
    out.push_back(make_case(2, 3, 3, 31, 29, 80, DType::F16, causal, Layout::Padded));
    out.push_back(make_case(1, 2, 1, 33, 45, 1, DType::F32, causal, Layout::BHSD));
    out.push_back(make_case(1, 2, 1, 19, 23, 256, DType::BF16, causal));
    const Case base = make_case(1, 4, 2, 45, 61, 40, DType::F16, causal);
    out.push_back(with(base, 16, causal ? -1 : 7));                  // sliding window
    out.push_back(with(base, -1, -1, 5.0));                          // soft-capping
    out.push_back(with(base, -1, -1, 0, true));                      // ALiBi
    out.push_back(with(base, -1, -1, 0, false, true));               // sinks (and dsinks)
    out.push_back(with(base, 9, causal ? -1 : 2, 30.0, true, true));  // all of them
    // Sequences: varlen Q and K/V, a cache with lengths (rows past them get 0), varlen Q over a cache.
    out.push_back(fctest::sequence_case(4, 2, 64, DType::F16, causal, {37, 1, 90}, {50, 3, 90},
                                        Case::KvStore::Packed));
    out.push_back(fctest::sequence_case(2, 1, 32, DType::BF16, causal, {}, {20, 71, 0}, Case::KvStore::Batched,
                                        0, 24, 9));
    out.push_back(with(fctest::sequence_case(3, 3, 16, DType::F32, causal, {5, 40}, {60, 40}, Case::KvStore::Batched,
                                             0, 1, 4),
                       6, causal ? -1 : 3, 0, true, true));
  }
  return out;
}

class Backward : public ::testing::TestWithParam<Case> {};
TEST_P(Backward, ReferenceMatchesOracle) { check_case(GetParam(), 31); }
INSTANTIATE_TEST_SUITE_P(Reference, Backward, ::testing::ValuesIn(backward_set()),
                         [](const auto& info) { return info.param.name(); });

// L = sum over the stored rows of dO ⊙ O(inputs), by the fp64 forward oracle.
double loss(const fctest::HostData& f, const std::vector<double>& d_o_logical) {
  const verify::Result r = verify::attention(f.problem, f.q.data(), f.k.data(), f.v.data(), verify::Precision::Exact,
                                             1, 1, f.head_params(), f.sequences());
  double sum = 0;
  for (std::size_t n = 0; n < r.o.size(); ++n)
    if (!std::isnan(r.o[n])) sum += d_o_logical[n] * r.o[n];
  return sum;
}

}  // namespace

TEST(BackwardOracle, MatchesFiniteDifferencesOfTheForward) {
  // Central differences of L = sum(dO ⊙ O) with the fp64 forward oracle, on fp32 inputs (the step is
  // what the fp32 storage holds: (x+h) - (x-h) as stored), against the backward oracle's gradients.
  std::mt19937_64 rng(fctest::run_seed() + 41);
  std::vector<Case> cases = {
      with(make_case(1, 2, 1, 6, 9, 8, DType::F32, true), -1, -1, 0, false, false),
      with(make_case(2, 4, 2, 7, 5, 4, DType::F32, false), 3, 1, 4.0, true, true),
      with(make_case(1, 2, 2, 9, 9, 6, DType::F32, true), 4, -1, 0, true, true),
      fctest::sequence_case(2, 1, 8, DType::F32, true, {3, 6}, {7, 4}, Case::KvStore::Packed),
      with(fctest::sequence_case(2, 2, 4, DType::F32, false, {}, {5, 2}, Case::KvStore::Batched, 0, 3, 2), -1, -1, 0,
           false, true),
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name());
    BackwardData d = fctest::make_backward_data(c, fctest::run_seed() + 42);
    const flashcore::Problem& p = d.fwd.problem;
    const verify::Sequences sq = d.fwd.sequences();
    std::vector<double> d_o(static_cast<std::size_t>(p.batch) * p.seqlen_q * p.heads_q * p.head_dim, 0.0);
    for (int b = 0; b < p.batch; ++b)
      for (int i = 0; i < sq.len_q(p, b); ++i)
        for (int h = 0; h < p.heads_q; ++h)
          for (int dd = 0; dd < p.head_dim; ++dd)
            d_o[verify::o_index(p, b, i, h, dd)] =
                verify::load_element(p.dtype, d.d_o.data(), sq.q_offset(p, p.o, b, i, h) + dd);
    const verify::Gradients g = fctest::backward_oracle(d, verify::Precision::Exact, 1, /*exact_o=*/true);
    const double h = 1e-3;
    auto fd = [&](std::vector<unsigned char>& buf, long long at) {
      const double x = verify::load_element(p.dtype, buf.data(), at);
      verify::store_element(p.dtype, buf.data(), at, x + h);
      const double xp = verify::load_element(p.dtype, buf.data(), at);
      const double lp = loss(d.fwd, d_o);
      verify::store_element(p.dtype, buf.data(), at, x - h);
      const double xm = verify::load_element(p.dtype, buf.data(), at);
      const double lm = loss(d.fwd, d_o);
      verify::store_element(p.dtype, buf.data(), at, x);
      return (lp - lm) / (xp - xm);
    };
    auto expect_close = [&](double numeric, double analytic, const std::string& what) {
      EXPECT_NEAR(numeric, analytic, 1e-5 + 1e-4 * std::fabs(analytic)) << what;
    };
    auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
    int checked = 0;
    for (int n = 0; n < 12; ++n) {
      const int b = pick(p.batch), dd = pick(p.head_dim);
      if (sq.len_q(p, b) > 0) {
        const int i = pick(sq.len_q(p, b)), hq = pick(p.heads_q);
        expect_close(fd(d.fwd.q, sq.q_offset(p, p.q, b, i, hq) + dd), g.dq[verify::o_index(p, b, i, hq, dd)],
                     "dQ b " + std::to_string(b) + " i " + std::to_string(i));
        ++checked;
      }
      if (sq.len_k(p, b) > 0) {
        const int j = pick(sq.len_k(p, b)), hk = pick(p.heads_kv);
        expect_close(fd(d.fwd.k, sq.kv_offset(p, p.k, b, j, hk) + dd), g.dk[verify::kv_index(p, b, j, hk, dd)],
                     "dK b " + std::to_string(b) + " j " + std::to_string(j));
        expect_close(fd(d.fwd.v, sq.kv_offset(p, p.v, b, j, hk) + dd), g.dv[verify::kv_index(p, b, j, hk, dd)],
                     "dV b " + std::to_string(b) + " j " + std::to_string(j));
        checked += 2;
      }
    }
    EXPECT_GT(checked, 10);
    for (std::size_t hs = 0; hs < d.fwd.sinks.size(); ++hs) {
      const float s = d.fwd.sinks[hs];
      d.fwd.sinks[hs] = s + static_cast<float>(h);
      const double sp = d.fwd.sinks[hs], lp = loss(d.fwd, d_o);
      d.fwd.sinks[hs] = s - static_cast<float>(h);
      const double sm = d.fwd.sinks[hs], lm = loss(d.fwd, d_o);
      d.fwd.sinks[hs] = s;
      expect_close((lp - lm) / (sp - sm), g.dsinks[hs], "dsinks h " + std::to_string(hs));
    }
  }
}

TEST(Backward, RandomProperty) {
  std::mt19937_64 rng(fctest::run_seed() + 43);
  for (int n = 0; n < 30; ++n) {
    Case c = fctest::random_case(rng, 100, {1, 8, 40, 64, 96, 128});
    if (n % 2) c = fctest::with_random_variants(c, rng);
    check_case(c, 300 + n);
  }
}

TEST(Backward, VisibleQueriesInvertVisibleKeys) {
  // numeric::visible_queries (the rows the reference's dK/dV kernel visits for key j) against
  // numeric::visible_keys, pair by pair.
  std::mt19937_64 rng(fctest::run_seed() + 44);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int n = 0; n < 2000; ++n) {
    const int lq = pick(1, 40), lk = pick(0, 40);
    const bool causal = pick(0, 1);
    const int wl = pick(-1, 45), wr = causal ? pick(-1, 0) : pick(-1, 45);
    for (int j = -1; j <= lk; ++j) {
      const flashcore::numeric::KeyRange rows = flashcore::numeric::visible_queries(j, lq, lk, causal, wl, wr);
      for (int i = 0; i < lq; ++i) {
        const flashcore::numeric::KeyRange keys = flashcore::numeric::visible_keys(i, lq, lk, causal, wl, wr);
        ASSERT_EQ(j >= keys.begin && j < keys.end, i >= rows.begin && i < rows.end)
            << "lq " << lq << " lk " << lk << " causal " << causal << " window " << wl << "," << wr << " i " << i
            << " j " << j;
      }
    }
  }
}

TEST(Backward, BitwiseTheSameEveryRun) {
  Case c = with(make_case(2, 4, 2, 150, 170, 64, DType::BF16, true), 50, -1, 0, true, true);
  BackwardData a = fctest::make_backward_data(c, fctest::run_seed() + 45);
  BackwardData b = a;
  run_reference_backward(a);
  run_reference_backward(b);
  EXPECT_EQ(a.dq, b.dq);
  EXPECT_EQ(a.dk, b.dk);
  EXPECT_EQ(a.dv, b.dv);
  EXPECT_EQ(std::memcmp(a.dsinks.data(), b.dsinks.data(), a.dsinks.size() * sizeof(float)), 0);
}

TEST(Backward, ReportNamesTheBackend) {
  BackwardData d = fctest::make_backward_data(make_case(1, 2, 1, 10, 12, 16, DType::F16, false), fctest::run_seed() + 46);
  const flashcore::Report r = flashcore::explain_backward(d.fwd.problem, d.fwd.tensors(), d.gradients());
  EXPECT_EQ(r.chosen, "reference-host") << r.to_string();
  const flashcore::Report ran = run_reference_backward(d);
  EXPECT_EQ(ran.chosen, "reference-host");
}

TEST(Backward, InvalidCallsNameTheFieldAndWriteNothing) {
  Case c = make_case(1, 2, 1, 20, 24, 16, DType::F16, true);
  c.sinks = true;
  BackwardData good = fctest::make_backward_data(c, fctest::run_seed() + 47);
  auto expect_error = [&](const char* field, auto&& edit) {
    BackwardData d = good;
    flashcore::Tensors t = d.fwd.tensors();
    flashcore::Gradients g = d.gradients();
    flashcore::Problem p = d.fwd.problem;
    edit(p, t, g, d);
    const std::vector<unsigned char> dq = d.dq, dk = d.dk, dv = d.dv;
    try {
      flashcore::run_backward(p, t, g);
      ADD_FAILURE() << "no error for " << field;
    } catch (const flashcore::Error& e) {
      EXPECT_EQ(e.field(), field) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
    EXPECT_EQ(d.dq, dq) << field;  // nothing written
    EXPECT_EQ(d.dk, dk) << field;
    EXPECT_EQ(d.dv, dv) << field;
  };
  using P = flashcore::Problem;
  using T = flashcore::Tensors;
  using G = flashcore::Gradients;
  expect_error("lse", [](P&, T& t, G&, BackwardData&) { t.lse = nullptr; });
  expect_error("d_o", [](P&, T&, G& g, BackwardData&) { g.d_o = nullptr; });
  expect_error("dq", [](P&, T&, G& g, BackwardData&) { g.dq = nullptr; });
  expect_error("dk", [](P&, T&, G& g, BackwardData&) { g.dk = nullptr; });
  expect_error("dv", [](P&, T&, G& g, BackwardData&) { g.dv = nullptr; });
  expect_error("dsinks", [](P&, T& t, G&, BackwardData&) { t.sinks = nullptr; });
  expect_error("dq", [](P&, T&, G& g, BackwardData& d) { g.dq = d.d_o.data(); });   // dQ over dO
  expect_error("dk", [](P&, T&, G& g, BackwardData& d) { g.dv = d.dk.data(); });    // dV over dK: the first output named
  expect_error("dk", [](P&, T& t, G& g, BackwardData&) { g.dk = const_cast<void*>(t.k); });  // in place
  expect_error("head_dim", [](P& p, T&, G&, BackwardData&) { p.head_dim = 300; });
  expect_error("page_size", [](P& p, T&, G&, BackwardData&) {
    p.page_size = 16, p.num_pages = 2, p.pages_per_seq = 2;
  });
}

// fc_attention_backward_sized (the Fortran module's entry): with every buffer's length, the C++
// gradients bit for bit; each buffer one element short is FC_ERROR_INVALID naming it, with no
// gradient written.
TEST(Backward, CApiSizedChecksEveryBufferBeforeAnyWork) {
  const int B = 2, Hq = 4, Hkv = 2, Lq = 19, Lk = 33, D = 24;
  Case c = make_case(B, Hq, Hkv, Lq, Lk, D, DType::F32, true);
  c.sinks = true;
  const BackwardData base = fctest::make_backward_data(c, fctest::run_seed() + 49);
  BackwardData cpp = base, capi = base;
  run_reference_backward(cpp);

  fc_problem p;
  fc_problem_init(&p, B, Hq, Hkv, Lq, Lk, D, FC_F32, 1);
  p.sinks = capi.fwd.sinks.data();
  auto n4 = [](const std::vector<unsigned char>& b) { return static_cast<int64_t>(b.size() / 4); };
  // Lengths in the order q, k, v, o, lse, d_o, dq, dk, dv, dsinks; `shorten` takes one off one of them.
  const char* names[] = {"q", "k", "v", "o", "lse", "d_o", "dq", "dk", "dv", "dsinks"};
  auto call = [&](BackwardData& d, int shorten) {
    int64_t n[10] = {n4(d.fwd.q), n4(d.fwd.k), n4(d.fwd.v), n4(d.fwd.o), static_cast<int64_t>(d.fwd.lse.size()),
                     n4(d.d_o), n4(d.dq), n4(d.dk), n4(d.dv), static_cast<int64_t>(d.dsinks.size())};
    if (shorten >= 0) n[shorten] -= 1;
    return fc_attention_backward_sized(&p, 4, d.fwd.q.data(), n[0], d.fwd.k.data(), n[1], d.fwd.v.data(), n[2],
                                       d.fwd.o.data(), n[3], d.fwd.lse.data(), n[4], d.d_o.data(), n[5], d.dq.data(),
                                       n[6], d.dk.data(), n[7], d.dv.data(), n[8], d.dsinks.data(), n[9], FC_LOC_HOST,
                                       "reference-host", nullptr);
  };
  ASSERT_EQ(call(capi, -1), FC_OK) << fc_last_error();
  EXPECT_EQ(capi.dq, cpp.dq);
  EXPECT_EQ(capi.dk, cpp.dk);
  EXPECT_EQ(capi.dv, cpp.dv);
  EXPECT_EQ(capi.dsinks, cpp.dsinks);
  for (int i = 0; i < 10; ++i) {
    BackwardData d = base;  // the gradients as make_backward_data poisoned them
    EXPECT_EQ(call(d, i), FC_ERROR_INVALID) << names[i];
    const std::string msg = fc_last_error();
    EXPECT_EQ(msg.rfind(std::string(names[i]) + ":", 0), 0u) << names[i] << ": " << msg;
    EXPECT_EQ(d.dq, base.dq) << names[i];
    EXPECT_EQ(d.dk, base.dk) << names[i];
    EXPECT_EQ(d.dv, base.dv) << names[i];
    EXPECT_EQ(std::memcmp(d.dsinks.data(), base.dsinks.data(), d.dsinks.size() * sizeof(float)), 0) << names[i];
  }
  BackwardData d = base;  // 2-byte elements for an fp32 problem
  EXPECT_EQ(fc_attention_backward_sized(&p, 2, d.fwd.q.data(), 1 << 20, d.fwd.k.data(), 1 << 20, d.fwd.v.data(),
                                        1 << 20, d.fwd.o.data(), 1 << 20, d.fwd.lse.data(), 1 << 20, d.d_o.data(),
                                        1 << 20, d.dq.data(), 1 << 20, d.dk.data(), 1 << 20, d.dv.data(), 1 << 20,
                                        nullptr, 0, FC_LOC_HOST, nullptr, nullptr),
            FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("dtype"), std::string::npos) << fc_last_error();
  EXPECT_EQ(d.dq, base.dq);
}

TEST(Backward, CApiAndKokkosViewsGiveTheCppGradients) {
  const int B = 1, Hq = 4, Hkv = 2, Lq = 29, Lk = 41, D = 16;
  Case c = make_case(B, Hq, Hkv, Lq, Lk, D, DType::F32, true);
  c.sinks = true;
  const BackwardData base = fctest::make_backward_data(c, fctest::run_seed() + 48);
  BackwardData cpp = base, capi = base, views = base;
  run_reference_backward(cpp);

  fc_problem p;
  fc_problem_init(&p, B, Hq, Hkv, Lq, Lk, D, FC_F32, 1);
  p.sinks = capi.fwd.sinks.data();
  ASSERT_EQ(fc_attention_backward(&p, capi.fwd.q.data(), capi.fwd.k.data(), capi.fwd.v.data(), capi.fwd.o.data(),
                                  capi.fwd.lse.data(), capi.d_o.data(), capi.dq.data(), capi.dk.data(), capi.dv.data(),
                                  capi.dsinks.data(), FC_LOC_HOST, "reference-host", nullptr),
            FC_OK)
      << fc_last_error();
  EXPECT_STREQ(fc_last_backend(), "reference-host");
  EXPECT_EQ(capi.dq, cpp.dq);
  EXPECT_EQ(capi.dk, cpp.dk);
  EXPECT_EQ(capi.dv, cpp.dv);
  EXPECT_EQ(capi.dsinks, cpp.dsinks);
  p.page_size = 16, p.num_pages = 3, p.pages_per_seq = 3;
  EXPECT_EQ(fc_attention_backward(&p, capi.fwd.q.data(), capi.fwd.k.data(), capi.fwd.v.data(), capi.fwd.o.data(),
                                  capi.fwd.lse.data(), capi.d_o.data(), capi.dq.data(), capi.dk.data(), capi.dv.data(),
                                  nullptr, FC_LOC_HOST, nullptr, nullptr),
            FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("page_size"), std::string::npos) << fc_last_error();

  using V4 = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  using L3 = Kokkos::View<float***, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  auto f = [](std::vector<unsigned char>& b) { return reinterpret_cast<float*>(b.data()); };
  V4 q(f(views.fwd.q), B, Lq, Hq, D), k(f(views.fwd.k), B, Lk, Hkv, D), v(f(views.fwd.v), B, Lk, Hkv, D);
  V4 o(f(views.fwd.o), B, Lq, Hq, D), d_o(f(views.d_o), B, Lq, Hq, D), dq(f(views.dq), B, Lq, Hq, D);
  V4 dk(f(views.dk), B, Lk, Hkv, D), dv(f(views.dv), B, Lk, Hkv, D);
  L3 lse(views.fwd.lse.data(), B, Hq, Lq);
  flashcore::ViewOptions opts;
  opts.causal = true;
  opts.sinks = views.fwd.sinks.data();
  opts.backend = "reference-host";
  EXPECT_EQ(flashcore::run_backward(q, k, v, o, lse, d_o, dq, dk, dv, opts, views.dsinks.data()).chosen,
            "reference-host");
  EXPECT_EQ(views.dq, cpp.dq);
  EXPECT_EQ(views.dk, cpp.dk);
  EXPECT_EQ(views.dv, cpp.dv);
  EXPECT_EQ(views.dsinks, cpp.dsinks);
  // A gradient View whose layout is not its tensor's.
  V4 dk_short(f(views.dk), B, Lk - 1, Hkv, D);
  try {
    flashcore::run_backward(q, k, v, o, lse, d_o, dq, dk_short, dv, opts);
    ADD_FAILURE() << "no error for a dk View of another shape";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "dk") << e.what();
  }
}
