// The attention variants (sliding window, soft-capping, ALiBi, attention sinks) on the host
// reference, against the fp64 oracle, and a few identities that hold between calls whatever the
// oracle says (so the two cannot share a misreading of the definitions in flashcore.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/numeric.hpp"
#include "support/cases.hpp"
#include "support/oracle_check.hpp"
#include "support/testing.hpp"

using fctest::Case;
using fctest::Layout;
using fctest::make_case;
using flashcore::DType;

namespace {

void check_case(const Case& c, std::uint64_t salt) { fctest::expect_matches_oracle("reference-host", c, salt); }

class Variants : public ::testing::TestWithParam<Case> {};
TEST_P(Variants, ReferenceMatchesOracle) { check_case(GetParam(), 7); }
INSTANTIATE_TEST_SUITE_P(Reference, Variants, ::testing::ValuesIn(fctest::variant_set()),
                         [](const auto& info) { return info.param.name(); });

// Runs a case's data as it is on the host reference (fp32 data: the identities below are exact up
// to fp32 rounding).
void run_reference(fctest::HostData& d) {
  flashcore::Options opts;
  opts.backend = "reference-host";
  d.poison_outputs();
  flashcore::run(d.problem, d.tensors(), opts);
}

}  // namespace

TEST(Variants, RandomProperty) {
  // Random shapes (as the reference's property test) with random variants on top.
  std::mt19937_64 rng(fctest::run_seed() + 21);
  for (int n = 0; n < 40; ++n) {
    const Case c = fctest::with_random_variants(fctest::random_case(rng, 150, {1, 8, 40, 64, 96, 128}), rng);
    check_case(c, 200 + n);
  }
}

TEST(Variants, CausalIsTheWindowWithNoKeyToTheRight) {
  // causal and window (-1, 0) are the same mask: bitwise the same output.
  for (int wl : {-1, 12}) {
    Case c = make_case(1, 2, 1, 50, 70, 32, DType::F32, true);
    c.window_left = wl;
    fctest::HostData a = fctest::make_data(c, fctest::run_seed() + 22);
    fctest::HostData b = a;
    b.problem.causal = false;
    b.problem.window_right = 0;
    run_reference(a);
    run_reference(b);
    EXPECT_EQ(a.o, b.o);
    EXPECT_EQ(a.lse, b.lse);
  }
}

TEST(Variants, SinkRescalesTheRowAndJoinsItsLse) {
  // With sink s, the row's denominator gains exp(s): O_sink = O * exp(lse - lse_sink) and
  // lse_sink = log(exp(lse) + exp(s)); a row that sees no key has O = 0 and lse = s.
  Case c = make_case(1, 3, 1, 30, 20, 16, DType::F32, true);  // rows 0..9 see no key
  fctest::HostData plain = fctest::make_data(c, fctest::run_seed() + 23);
  fctest::HostData sunk = plain;
  sunk.sinks = {-1.5f, 0.5f, 4.0f};
  run_reference(plain);
  run_reference(sunk);
  const flashcore::Problem& p = plain.problem;
  for (int h = 0; h < p.heads_q; ++h)
    for (int i = 0; i < p.seqlen_q; ++i) {
      const std::size_t r = static_cast<std::size_t>(h) * p.seqlen_q + i;
      const double s = sunk.sinks[h], lse = plain.lse[r];
      const double lse_sink = std::isinf(lse) ? s : std::max(lse, s) + std::log1p(std::exp(-std::fabs(lse - s)));
      EXPECT_NEAR(sunk.lse[r], lse_sink, 2e-6 * (1 + std::fabs(lse_sink))) << "h " << h << " i " << i;
      const double factor = std::isinf(lse) ? 0.0 : std::exp(lse - lse_sink);
      for (int d = 0; d < p.head_dim; ++d) {
        const double o = fctest::element(p, plain.o, p.o, 0, i, h, d);
        const double os = fctest::element(p, sunk.o, p.o, 0, i, h, d);
        ASSERT_NEAR(os, o * factor, 2e-6) << "h " << h << " i " << i << " d " << d;
        if (std::isinf(lse)) ASSERT_EQ(os, 0.0);
      }
    }
}

TEST(Variants, ZeroSlopesAndAHugeCapChangeNothing) {
  // ALiBi with slope 0 adds 0 to every logit (bitwise no change); softcap 1e30 is tanh(x/c)*c = x
  // to fp32 rounding.
  Case c = make_case(1, 2, 2, 41, 57, 32, DType::F32, false);
  fctest::HostData plain = fctest::make_data(c, fctest::run_seed() + 24);
  fctest::HostData zero = plain, capped = plain;
  zero.alibi_slopes = {0.0f, 0.0f};
  capped.problem.softcap = 1e30f;
  run_reference(plain);
  run_reference(zero);
  run_reference(capped);
  EXPECT_EQ(zero.o, plain.o);
  EXPECT_EQ(zero.lse, plain.lse);
  const flashcore::Problem& p = plain.problem;
  for (int i = 0; i < p.seqlen_q; ++i)
    for (int d = 0; d < p.head_dim; ++d)
      ASSERT_NEAR(fctest::element(p, capped.o, p.o, 0, i, 1, d), fctest::element(p, plain.o, p.o, 0, i, 1, d), 1e-6);
}

TEST(Variants, AlibiIsABiasOnTheDistanceToTheDiagonal) {
  // With one key the row's softmax has a single term whatever the bias: O = v and lse = the logit,
  // so lse(slope) - lse(0) = -slope * |j - (i + Lk - Lq)|, here with j = 0, Lk = 1.
  Case c = make_case(1, 2, 1, 7, 1, 8, DType::F32, false);
  fctest::HostData plain = fctest::make_data(c, fctest::run_seed() + 25);
  fctest::HostData biased = plain;
  biased.alibi_slopes = {0.25f, 1.5f};
  run_reference(plain);
  run_reference(biased);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 7; ++i) {
      const double dist = std::fabs(0.0 - (i + 1 - 7));
      EXPECT_NEAR(biased.lse[h * 7 + i] - plain.lse[h * 7 + i], -biased.alibi_slopes[h] * dist, 1e-5);
    }
}

TEST(Variants, WindowKeyRangesFollowTheDefinition) {
  // numeric::visible_keys (the reference's key range) against a key-by-key statement of the mask.
  std::mt19937_64 rng(fctest::run_seed() + 26);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int n = 0; n < 2000; ++n) {
    const int lq = pick(1, 40), lk = pick(1, 40);
    const bool causal = pick(0, 1);
    const int wl = pick(-1, 45), wr = causal ? pick(-1, 0) : pick(-1, 45);
    for (int i = 0; i < lq; ++i) {
      const flashcore::numeric::KeyRange r = flashcore::numeric::visible_keys(i, lq, lk, causal, wl, wr);
      const long long diag = static_cast<long long>(i) + lk - lq;
      for (int j = 0; j < lk; ++j) {
        const bool sees = !(causal && j > diag) && !(wl >= 0 && j < diag - wl) && !(wr >= 0 && j > diag + wr);
        ASSERT_EQ(sees, j >= r.begin && j < r.end)
            << "lq " << lq << " lk " << lk << " causal " << causal << " window " << wl << "," << wr << " i " << i
            << " j " << j;
      }
    }
  }
}

TEST(Variants, FlopsCountTheWindowsPairs) {
  flashcore::Problem p = flashcore::Problem::make(2, 3, 3, 10, 12, 16, DType::F16, false);
  p.window_left = 2, p.window_right = 1;
  long long pairs = 0;
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 12; ++j) pairs += (j >= i + 2 - 2 && j <= i + 2 + 1);
  EXPECT_DOUBLE_EQ(p.flops(), 4.0 * 2 * 3 * 16 * pairs);
}
