// The verification library itself (src/verify): its scale rule agrees with the library's, explicit
// rows, strided rows and threads give the same numbers as the full oracle, and small cases by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "verify/data.hpp"
#include "verify/elements.hpp"
#include "verify/oracle.hpp"

namespace {

namespace verify = flashcore::verify;
using flashcore::DType;
using flashcore::Problem;

TEST(Verify, SoftmaxScaleIsTheLibrarysRule) {
  for (int d : {1, 3, 64, 80, 128, 256}) {
    Problem p = Problem::make(1, 1, 1, 1, 1, d, DType::F16);
    EXPECT_EQ(verify::softmax_scale(p), static_cast<double>(p.effective_scale())) << d;
    p.scale = 0.3f;
    EXPECT_EQ(verify::softmax_scale(p), static_cast<double>(p.effective_scale())) << d;
  }
}

// Every row of a causal GQA case with Lq > Lk (some rows see no key), padded layout.
fctest::HostData gqa_case(DType dt) {
  fctest::Case c = fctest::make_case(2, 6, 2, 37, 29, 24, dt, /*causal=*/true, fctest::Layout::Padded);
  return fctest::make_data(c, 77);
}

TEST(Verify, ExplicitRowsMatchTheFullOracle) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (verify::Precision prec : {verify::Precision::Exact, verify::Precision::Same}) {
      const fctest::HostData d = gqa_case(dt);
      const Problem& p = d.problem;
      const verify::Result full = verify::attention(p, d.q.data(), d.k.data(), d.v.data(), prec);
      // Rows out of order, repeated, across batches and kv heads.
      const std::vector<verify::Row> rows = {{1, 5, 36}, {0, 0, 0}, {1, 2, 10}, {0, 3, 20}, {1, 5, 36}, {0, 1, 7}};
      for (int threads : {1, 3}) {
        const verify::RowsResult r =
            verify::attention_rows(p, d.q.data(), d.k.data(), d.v.data(), rows, prec, threads);
        ASSERT_EQ(r.rows.size(), rows.size());
        for (std::size_t n = 0; n < rows.size(); ++n) {
          const verify::Row& x = rows[n];
          EXPECT_EQ(r.lse[n], full.lse[verify::lse_index(p, x.b, x.h, x.i)]) << n;
          for (int dd = 0; dd < p.head_dim; ++dd)
            ASSERT_EQ(r.o[n * p.head_dim + dd], full.o[verify::o_index(p, x.b, x.i, x.h, dd)]) << n << " " << dd;
        }
      }
    }
}

TEST(Verify, RowsOutsideTheProblemAreRefused) {
  const fctest::HostData d = gqa_case(DType::F16);
  const Problem& p = d.problem;
  for (const verify::Row& bad : std::vector<verify::Row>{{2, 0, 0}, {0, 6, 0}, {0, 0, 37}, {-1, 0, 0}, {0, 0, -1}}) {
    try {
      verify::attention_rows(p, d.q.data(), d.k.data(), d.v.data(), {{0, 0, 0}, bad}, verify::Precision::Exact);
      ADD_FAILURE() << "row (" << bad.b << ", " << bad.h << ", " << bad.i << ") accepted";
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("b " + std::to_string(bad.b) + ", h " + std::to_string(bad.h) + ", i " +
                                           std::to_string(bad.i)),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Verify, StridedRowsAndThreads) {
  const fctest::HostData d = gqa_case(DType::F16);
  const Problem& p = d.problem;
  const verify::Result full = verify::attention(p, d.q.data(), d.k.data(), d.v.data(), verify::Precision::Exact);
  const verify::Result threaded =
      verify::attention(p, d.q.data(), d.k.data(), d.v.data(), verify::Precision::Exact, 1, 4);
  EXPECT_EQ(threaded.o, full.o);
  EXPECT_EQ(threaded.lse, full.lse);
  const verify::Result sampled = verify::attention(p, d.q.data(), d.k.data(), d.v.data(), verify::Precision::Exact, 5);
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads_q; ++h)
      for (int i = 0; i < p.seqlen_q; ++i) {
        const bool computed = i % 5 == 0 || i == p.seqlen_q - 1;
        const std::size_t l = verify::lse_index(p, b, h, i);
        if (computed) {
          EXPECT_EQ(sampled.lse[l], full.lse[l]);
          EXPECT_EQ(sampled.o[verify::o_index(p, b, i, h, 3)], full.o[verify::o_index(p, b, i, h, 3)]);
        } else {
          EXPECT_TRUE(std::isnan(sampled.lse[l]));
          EXPECT_TRUE(std::isnan(sampled.o[verify::o_index(p, b, i, h, 3)]));
        }
      }
  EXPECT_EQ(verify::strided_rows(p, 5).size(), static_cast<std::size_t>(p.batch * p.heads_q * 9));  // 0,5,..,35 and 36
  EXPECT_EQ(verify::max_abs_difference(sampled.o, full.o), 0.0);
}

// Two keys, one query, D = 1, fp32: O = softmax(scores) · V and LSE by hand.
TEST(Verify, ByHand) {
  Problem p = Problem::make(1, 1, 1, 1, 2, 1, DType::F32);
  p.scale = 1.0f;
  const float q[] = {1.0f}, k[] = {0.0f, std::log(3.0f)}, v[] = {1.0f, -1.0f};
  const verify::Result r = verify::attention(p, q, k, v, verify::Precision::Exact);
  // Scores 0 and log 3 (in fp32): weights 1/4 and 3/4.
  const double s1 = static_cast<double>(std::log(3.0f));
  const double w1 = std::exp(s1) / (1 + std::exp(s1));
  EXPECT_DOUBLE_EQ(r.o[0], (1 - w1) - w1);
  EXPECT_DOUBLE_EQ(r.lse[0], std::log(1 + std::exp(s1)));
  // Causal with Lq = 2 > Lk = 1: row 0 sees no key (O = 0, LSE = -inf), row 1 sees key 0.
  Problem c = Problem::make(1, 1, 1, 2, 1, 1, DType::F32, /*causal=*/true);
  const float q2[] = {1.0f, 2.0f}, k2[] = {5.0f}, v2[] = {0.25f};
  const verify::Result rc = verify::attention(c, q2, k2, v2, verify::Precision::Same);
  EXPECT_EQ(rc.o[0], 0.0);
  EXPECT_EQ(rc.lse[0], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(rc.o[1], 0.25);
  EXPECT_DOUBLE_EQ(rc.lse[1], 10.0);
}

TEST(Verify, FillIsNeverZeroAndPoisonIsNaN) {
  Problem p = Problem::make(1, 2, 2, 3, 3, 4, DType::F16);
  std::vector<unsigned char> buf(static_cast<std::size_t>(2) * 3 * 2 * 4, 0);
  // Every other draw is below fp16's smallest subnormal: it is replaced by the next one.
  int n = 0;
  verify::fill_random(p.dtype, buf.data(), p.q, 1, 3, 2, 4, [&] { return (n++ % 2 == 0) ? 1e-9 : 0.5; });
  for (int i = 0; i < 24; ++i) EXPECT_EQ(verify::load_element(p.dtype, buf.data(), i), 0.5);
  verify::poison(p.dtype, buf.data(), p.q, 1, 3, 2, 4);
  for (int i = 0; i < 24; ++i) EXPECT_TRUE(std::isnan(verify::load_element(p.dtype, buf.data(), i)));
}

}  // namespace
