// The Kokkos reference on the host (reference-host) against the independent fp64 oracle.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/reference/reference_api.hpp"
#include "support/testing.hpp"

using fctest::Case;
using fctest::Layout;
using flashcore::DType;

namespace {

// Runs one case on the host reference and checks O and LSE against the oracle, with the
// per-dtype bound of src/verify/tolerance.hpp.
void check_case(const Case& c, std::uint64_t salt = 0) {
  SCOPED_TRACE(c.name());
  fctest::HostData d = fctest::make_data(c, fctest::run_seed() ^ (salt * 0x9e3779b97f4a7c15ull));
  flashcore::Options opts;
  opts.backend = "reference-host";
  const flashcore::Report r = flashcore::run(d.problem, d.tensors(), opts);
  EXPECT_EQ(r.chosen, "reference-host");
  const fctest::OracleOut ref = fctest::oracle(d);
  const fctest::Errors e = fctest::compare(d, ref);
  EXPECT_EQ(e.bad, 0) << "max abs " << e.max_abs << ", worst/bound " << e.worst_ratio << "; first: " << e.first_bad;
  EXPECT_EQ(e.lse_bad, 0) << e.first_bad;
}

std::vector<Case> acceptance_set() {
  std::vector<Case> out;
  const int shapes[][4] = {{1, 8, 512, 64}, {1, 8, 128, 64}, {2, 4, 256, 64}, {1, 8, 1024, 64}, {4, 8, 64, 128}};
  for (auto& s : shapes)
    for (bool causal : {false, true}) {
      Case c;
      c.batch = s[0];
      c.heads_q = c.heads_kv = s[1];
      c.seqlen_q = c.seqlen_k = s[2];
      c.head_dim = s[3];
      c.dtype = DType::F16;
      c.causal = causal;
      out.push_back(c);
    }
  return out;
}

class Acceptance : public ::testing::TestWithParam<Case> {};
TEST_P(Acceptance, MatchesOracle) { check_case(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Reference, Acceptance, ::testing::ValuesIn(acceptance_set()),
                         [](const auto& info) { return info.param.name(); });

using fctest::make_case;

std::vector<Case> corner_set() {
  std::vector<Case> out;
  for (bool causal : {false, true}) {
    out.push_back(make_case(1, 2, 2, 1, 1, 64, DType::F16, causal));      // L = 1
    out.push_back(make_case(1, 2, 2, 1, 300, 64, DType::F16, causal));    // one query row, many keys
    out.push_back(make_case(1, 2, 2, 300, 1, 64, DType::F16, causal));    // one key: causal masks all but the last row
    out.push_back(make_case(2, 3, 3, 77, 77, 64, DType::F16, causal));    // odd length
    out.push_back(make_case(1, 2, 2, 113, 203, 64, DType::F16, causal));  // Lq < Lk
    out.push_back(make_case(1, 2, 2, 203, 113, 64, DType::F16, causal));  // Lq > Lk: fully masked rows
    out.push_back(make_case(1, 8, 1, 65, 97, 64, DType::F16, causal));    // MQA
    out.push_back(make_case(2, 8, 2, 64, 64, 64, DType::BF16, causal));   // GQA 4:1
    out.push_back(make_case(1, 16, 2, 50, 70, 64, DType::F16, causal));   // GQA 8:1
    for (int d : {1, 8, 32, 80, 96, 128, 256}) out.push_back(make_case(1, 2, 1, 33, 45, d, DType::F16, causal));
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
      out.push_back(make_case(2, 4, 2, 70, 70, 64, dt, causal, Layout::BSHD));
      out.push_back(make_case(2, 4, 2, 70, 90, 64, dt, causal, Layout::BHSD));
      out.push_back(make_case(2, 4, 4, 31, 29, 48, dt, causal, Layout::Padded));
    }
    out.push_back(make_case(1, 2, 2, 40, 300, 64, DType::F32, causal));  // more keys than one chunk
  }
  return out;
}

class Corners : public ::testing::TestWithParam<Case> {};
TEST_P(Corners, MatchesOracle) { check_case(GetParam(), 1); }
INSTANTIATE_TEST_SUITE_P(Reference, Corners, ::testing::ValuesIn(corner_set()),
                         [](const auto& info) { return info.param.name(); });

}  // namespace

TEST(Reference, FullyMaskedRowsAreZeroWithMinusInfLse) {
  // Lq > Lk with causal: rows i < Lq - Lk see no key.
  Case c = make_case(1, 2, 1, 9, 4, 16, DType::F32, true);
  fctest::HostData d = fctest::make_data(c, fctest::run_seed());
  flashcore::run(d.problem, d.tensors(), {});
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 9; ++i) {
      const float lse = d.lse[h * 9 + i];
      for (int dd = 0; dd < 16; ++dd) {
        const double o = fctest::element(d.problem, d.o, d.problem.o, 0, i, h, dd);
        ASSERT_FALSE(std::isnan(o));
        if (i < 5) ASSERT_EQ(o, 0.0) << "row " << i;
      }
      if (i < 5) {
        EXPECT_TRUE(std::isinf(lse) && lse < 0) << "row " << i << " lse " << lse;
      } else {
        EXPECT_TRUE(std::isfinite(lse)) << "row " << i;
      }
    }
}

TEST(Reference, LargeScoresStayStable) {
  // Scores of magnitude ~100: a softmax without the max subtraction would overflow.
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    Case c = make_case(1, 2, 2, 37, 129, 64, dt, false);
    c.q_gain = 12.0;
    check_case(c, 2);
  }
}

TEST(Reference, ExplicitScale) {
  Case c = make_case(1, 2, 2, 20, 30, 32, DType::F32, true);
  fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 3);
  d.problem.scale = 0.37f;
  flashcore::run(d.problem, d.tensors(), {});
  const fctest::Errors e = fctest::compare(d, fctest::oracle(d));
  EXPECT_EQ(e.bad, 0) << e.first_bad;
  EXPECT_EQ(e.lse_bad, 0) << e.first_bad;
}

TEST(Reference, WithoutLse) {
  Case c = make_case(1, 2, 2, 20, 30, 32, DType::F16, false);
  c.lse = false;
  check_case(c, 4);
}

TEST(Reference, Fp64ModeMatchesOracleClosely) {
  // The fp64 oracle mode of the Kokkos reference (used by `flashcore run --validate`) agrees with
  // the independent oracle to rounding of double arithmetic.
  for (bool causal : {false, true}) {
    Case c = make_case(2, 4, 2, 45, 61, 40, DType::BF16, causal, Layout::BHSD);
    fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 5);
    const flashcore::Problem& p = d.problem;
    std::vector<double> o(flashcore::span_elements(p.o, p.batch, p.seqlen_q, p.heads_q, p.head_dim),
                          std::nan(""));
    std::vector<double> lse(static_cast<std::size_t>(p.batch) * p.heads_q * p.seqlen_q, std::nan(""));
    flashcore::reference::run_host_fp64(p, d.q.data(), d.k.data(), d.v.data(), o.data(), lse.data());
    const fctest::OracleOut ref = fctest::oracle(d);
    for (int b = 0; b < p.batch; ++b)
      for (int i = 0; i < p.seqlen_q; ++i)
        for (int h = 0; h < p.heads_q; ++h)
          for (int dd = 0; dd < p.head_dim; ++dd) {
            const double got = o[b * p.o.batch + i * p.o.seq + h * p.o.head + dd];
            const double want = ref.o[((static_cast<std::size_t>(b) * p.seqlen_q + i) * p.heads_q + h) * p.head_dim + dd];
            ASSERT_NEAR(got, want, 1e-12) << b << " " << i << " " << h << " " << dd;
          }
    for (std::size_t i = 0; i < lse.size(); ++i) {
      if (std::isinf(ref.lse[i]))
        EXPECT_EQ(lse[i], ref.lse[i]);
      else
        EXPECT_NEAR(lse[i], ref.lse[i], 1e-12);
    }
  }
}

TEST(Reference, RandomShapesProperty) {
  // Seeded random problems over the whole descriptor space: shapes, GQA groups, dtypes, layouts,
  // causal, head dims. Each is checked against the oracle with the dtype's bound.
  std::mt19937_64 rng(fctest::run_seed() + 6);
  for (int n = 0; n < 40; ++n) {
    const Case c = fctest::random_case(rng, 150, {1, 3, 16, 24, 64, 72, 128, 160, 256});
    check_case(c, 100 + n);
  }
}
