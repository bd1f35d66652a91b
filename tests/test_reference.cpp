// The Kokkos reference on the host (reference-host) against the independent fp64 oracle.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/reference/reference_api.hpp"
#include "support/cases.hpp"
#include "support/oracle_check.hpp"
#include "support/testing.hpp"

using fctest::Case;
using fctest::Layout;
using flashcore::DType;

namespace {

void check_case(const Case& c, std::uint64_t salt = 0) { fctest::expect_matches_oracle("reference-host", c, salt); }

class Acceptance : public ::testing::TestWithParam<Case> {};
TEST_P(Acceptance, MatchesOracle) { check_case(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Reference, Acceptance, ::testing::ValuesIn(fctest::acceptance_set()),
                         [](const auto& info) { return info.param.name(); });

using fctest::make_case;

class Corners : public ::testing::TestWithParam<Case> {};
TEST_P(Corners, MatchesOracle) { check_case(GetParam(), 1); }
INSTANTIATE_TEST_SUITE_P(Reference, Corners, ::testing::ValuesIn(fctest::corner_set()),
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
