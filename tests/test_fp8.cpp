// FP8 (e4m3) inputs on the host: the conversions (every one of the 256 codes, ties, saturation, NaN),
// the checks of the fp8 fields (each named, nothing written), the reference and the portable tier
// against the fp64 oracle (which dequantizes exactly: src/verify), the descales' effect, the C API,
// the Kokkos View entry point, and the fp8 kernel check of src/verify (fp8.hpp) on outputs that
// must pass and must fail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/portable/portable_api.hpp"
#include "backends/reference/reference_api.hpp"
#include "core/numeric.hpp"
#include "flashcore/context_parallel.hpp"
#include "flashcore/flashcore.h"
#include "flashcore/kokkos.hpp"
#include "support/oracle_check.hpp"
#include "support/testing.hpp"
#include "verify/elements.hpp"
#include "verify/fp8.hpp"
#include "verify/tolerance.hpp"

using fctest::Case;
using fctest::Layout;
using flashcore::DType;
using flashcore::Problem;
namespace num = flashcore::numeric;
namespace verify = flashcore::verify;

namespace {

// ------------------------------------------------------------------ conversions ------------------

// The value of an e4m3 code by its definition (OCP FP8 e4m3fn): sign, exponent E (bias 7), mantissa M;
// E = 0: M/8 * 2^-6; S.1111.111: NaN; else (1 + M/8) 2^(E-7).
double e4m3_by_definition(unsigned code) {
  const unsigned e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? m / 8.0 * std::ldexp(1.0, -6) : (1 + m / 8.0) * std::ldexp(1.0, static_cast<int>(e) - 7);
  return (code & 0x80) ? -mag : mag;
}

// The e4m3 code nearest to x by a search over every finite code, ties to the even code (its last
// mantissa bit 0), |x| beyond 448 saturated (satfinite); the sign of zero kept.
std::uint8_t nearest_e4m3(float x) {
  if (std::isnan(x)) return 0x7f;
  const bool neg = std::signbit(x);
  const double a = std::fabs(static_cast<double>(x));
  unsigned best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (unsigned c = 0; c <= 0x7e; ++c) {
    const double err = std::fabs(e4m3_by_definition(c) - a);
    if (err < best_err || (err == best_err && (c & 1) == 0)) best = c, best_err = err;
  }
  return static_cast<std::uint8_t>(best | (neg ? 0x80 : 0));
}

}  // namespace

TEST(Fp8Numeric, EveryCodeDecodesByTheDefinitionAndRoundTrips) {
  int nans = 0;
  for (unsigned c = 0; c < 256; ++c) {
    const float f = num::e4m3_to_float(static_cast<std::uint8_t>(c));
    const double want = e4m3_by_definition(c);
    if (std::isnan(want)) {
      ++nans;
      EXPECT_TRUE(std::isnan(f)) << c;
      EXPECT_EQ(num::float_to_e4m3(f) & 0x7f, 0x7f) << "NaN stays NaN: " << c;
      continue;
    }
    EXPECT_EQ(static_cast<double>(f), want) << "code " << c;
    EXPECT_EQ(std::signbit(f), (c & 0x80) != 0) << "code " << c;
    EXPECT_EQ(num::float_to_e4m3(f), c) << "code " << c << " = " << f;
  }
  EXPECT_EQ(nans, 2);  // 0x7f and 0xff
}

TEST(Fp8Numeric, KnownValuesTiesAndSaturation) {
  EXPECT_EQ(num::e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(num::e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(num::e4m3_to_float(0xfe), -448.0f);
  EXPECT_EQ(num::e4m3_to_float(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(num::e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  // Ties to even: 1.0625 between 1 (0x38) and 1.125 (0x39) -> 1; 1.1875 between 0x39 and 1.25 -> 0x3a.
  EXPECT_EQ(num::float_to_e4m3(1.0625f), 0x38);
  EXPECT_EQ(num::float_to_e4m3(std::nextafter(1.0625f, 2.0f)), 0x39);
  EXPECT_EQ(num::float_to_e4m3(1.1875f), 0x3a);
  EXPECT_EQ(num::float_to_e4m3(std::nextafter(1.1875f, 0.0f)), 0x39);
  // Subnormal ties: 2^-10 (0 or 2^-9) -> 0; 3 * 2^-10 -> 2 * 2^-9; 15 * 2^-10 -> the smallest normal.
  EXPECT_EQ(num::float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(num::float_to_e4m3(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);
  EXPECT_EQ(num::float_to_e4m3(std::ldexp(3.0f, -10)), 0x02);
  EXPECT_EQ(num::float_to_e4m3(std::ldexp(15.0f, -10)), 0x08);
  EXPECT_EQ(num::float_to_e4m3(-std::ldexp(1.0f, -10)), 0x80);  // -0
  // Saturation (satfinite): beyond 448, and the infinities, give +-448; the tie 464 as well.
  EXPECT_EQ(num::float_to_e4m3(449.0f), 0x7e);
  EXPECT_EQ(num::float_to_e4m3(464.0f), 0x7e);
  EXPECT_EQ(num::float_to_e4m3(1e30f), 0x7e);
  EXPECT_EQ(num::float_to_e4m3(-1e30f), 0xfe);
  EXPECT_EQ(num::float_to_e4m3(INFINITY), 0x7e);
  EXPECT_EQ(num::float_to_e4m3(-INFINITY), 0xfe);
  EXPECT_EQ(num::float_to_e4m3(std::nanf("")) & 0x7f, 0x7f);
  EXPECT_EQ(num::float_to_e4m3(-std::nanf("")) & 0x7f, 0x7f);
}

TEST(Fp8Numeric, RoundingIsNearestEvenByExhaustiveSearch) {
  // Every midpoint between neighbouring codes and its two float neighbours, and random floats over
  // e4m3's range and beyond, against a search over all codes.
  std::vector<float> xs;
  for (unsigned c = 0; c < 0x7e; ++c) {
    const float mid = static_cast<float>((e4m3_by_definition(c) + e4m3_by_definition(c + 1)) / 2);
    xs.insert(xs.end(), {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1000.0f)});
  }
  std::mt19937_64 rng(fctest::run_seed() + 8);
  std::uniform_real_distribution<double> exponent(-14, 10), mantissa(1, 2);
  for (int n = 0; n < 200000; ++n) xs.push_back(static_cast<float>(mantissa(rng) * std::exp2(exponent(rng))));
  for (float x : xs)
    for (float s : {x, -x}) ASSERT_EQ(num::float_to_e4m3(s), nearest_e4m3(s)) << "x = " << s;
}

// ------------------------------------------------------------------ validation ------------------

namespace {

struct BadFp8 {
  const char* what;
  std::function<void(Problem&)> mutate;
  const char* field;
  const char* message;
};

std::vector<BadFp8> bad_fp8_cases() {
  return {
      {"out_dtype_fp32", [](Problem& p) { p.out_dtype = DType::F32; }, "out_dtype", "out_dtype fp32 is not fp16 or bf16"},
      {"out_dtype_fp8", [](Problem& p) { p.out_dtype = DType::E4M3; }, "out_dtype", "out_dtype fp8_e4m3 is not"},
      {"out_dtype_value", [](Problem& p) { p.out_dtype = static_cast<DType>(9); }, "out_dtype", "out_dtype value 9"},
      {"descale_q_zero", [](Problem& p) { p.descale_q = 0; }, "descale_q", "descale_q 0 must be finite and > 0"},
      {"descale_k_negative", [](Problem& p) { p.descale_k = -2; }, "descale_k", "descale_k -2 must be"},
      {"descale_v_nan", [](Problem& p) { p.descale_v = std::nanf(""); }, "descale_v", "descale_v nan must be"},
      {"descale_q_inf", [](Problem& p) { p.descale_q = INFINITY; }, "descale_q", "descale_q inf must be"},
      {"descale_q_on_fp16", [](Problem& p) { p.dtype = DType::F16, p.descale_q = 2, p.descale_k = p.descale_v = 1; },
       "descale_q", "descale_q applies to fp8_e4m3 inputs only, got 2"},
      {"descale_v_on_fp32", [](Problem& p) { p.dtype = DType::F32, p.descale_q = p.descale_k = 1, p.descale_v = 0.5f; },
       "descale_v", "descale_v applies to fp8_e4m3 inputs only, got 0.5"},
  };
}

class BadFp8Input : public ::testing::TestWithParam<BadFp8> {};

TEST_P(BadFp8Input, RejectedBeforeAnyWorkNamingTheField) {
  const BadFp8& bc = GetParam();
  fctest::HostData d = fctest::make_data(fctest::fp8_case(fctest::make_case(2, 4, 2, 16, 24, 32, DType::E4M3, false),
                                                          DType::BF16, 0.5, 2, 0.25),
                                         fctest::run_seed());
  // Buffers large enough for any dtype the mutation picks (fp32 at most): O and LSE poisoned.
  for (auto* buf : {&d.q, &d.k, &d.v, &d.o}) buf->resize(buf->size() * 4, 0x11);
  std::memset(d.o.data(), 0x3c, d.o.size());
  std::fill(d.lse.begin(), d.lse.end(), 1234.5f);
  const auto o_before = d.o;
  const auto lse_before = d.lse;
  Problem p = d.problem;
  bc.mutate(p);
  for (const bool explain_only : {true, false}) {
    try {
      if (explain_only)
        flashcore::explain(p, d.tensors());
      else
        flashcore::run(p, d.tensors());
      ADD_FAILURE() << "no error for " << bc.what;
    } catch (const flashcore::Error& e) {
      EXPECT_EQ(e.field(), bc.field) << e.what();
      EXPECT_NE(std::string(e.what()).find(bc.message), std::string::npos) << "message: " << e.what();
    }
  }
  EXPECT_EQ(d.o, o_before) << "O was written";
  EXPECT_EQ(d.lse, lse_before) << "LSE was written";
}

INSTANTIATE_TEST_SUITE_P(Fp8Validation, BadFp8Input, ::testing::ValuesIn(bad_fp8_cases()),
                         [](const auto& info) { return std::string(info.param.what); });

}  // namespace

TEST(Fp8Validation, DtypeNamesAndSizes) {
  for (const char* name : {"fp8_e4m3", "e4m3", "fp8", "float8_e4m3fn"}) EXPECT_EQ(flashcore::parse_dtype(name), DType::E4M3);
  EXPECT_STREQ(flashcore::to_string(DType::E4M3), "fp8_e4m3");
  EXPECT_EQ(flashcore::dtype_size(DType::E4M3), 1);
  EXPECT_EQ(flashcore::dtype_size(DType::BF16), 2);
  try {
    flashcore::parse_dtype("fp8_e5m2");
    ADD_FAILURE();
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "dtype");
    EXPECT_NE(std::string(e.what()).find("fp8_e4m3"), std::string::npos) << e.what();  // the accepted names
  }
  Problem p = Problem::make(1, 2, 1, 4, 4, 16, DType::E4M3);
  EXPECT_EQ(p.o_dtype(), DType::BF16);  // the default out_dtype
  p.out_dtype = DType::F16;
  EXPECT_EQ(p.o_dtype(), DType::F16);
  p.dtype = DType::F32;
  EXPECT_EQ(p.o_dtype(), DType::F32);  // out_dtype is not read for other dtypes
  flashcore::validate(p);
}

TEST(Fp8Validation, OutputSpansAreOfTheOutputDtype) {
  // O is bf16 (2 bytes an element) while Q, K, V are 1 byte: an LSE in the second half of O's bytes
  // overlaps O (it would not if O's span were counted in input bytes).
  fctest::HostData d = fctest::make_data(
      fctest::fp8_case(fctest::make_case(1, 2, 1, 8, 8, 16, DType::E4M3, false), DType::BF16), fctest::run_seed());
  ASSERT_EQ(d.o.size(), 8u * 2 * 16 * 2);
  flashcore::Tensors t = d.tensors();
  t.lse = reinterpret_cast<float*>(d.o.data() + d.o.size() * 3 / 4);
  try {
    flashcore::run(d.problem, t);
    ADD_FAILURE() << "no error for an LSE inside O";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "o") << e.what();
    EXPECT_NE(std::string(e.what()).find("overlaps lse"), std::string::npos) << e.what();
  }
}

TEST(Fp8Validation, BackwardPassIsRejectedBeforeAnyWork) {
  fctest::HostData d = fctest::make_data(
      fctest::fp8_case(fctest::make_case(1, 2, 1, 8, 12, 16, DType::E4M3, true), DType::F16), fctest::run_seed());
  flashcore::run(d.problem, d.tensors());  // the forward gives O and LSE
  std::vector<unsigned char> d_o(d.o.size(), 0x3c), dq(d.q.size() * 2, 0x5a), dk(d.k.size() * 2, 0x5a),
      dv(d.v.size() * 2, 0x5a);
  const auto dq0 = dq, dk0 = dk, dv0 = dv;
  const flashcore::Gradients g{d_o.data(), dq.data(), dk.data(), dv.data()};
  for (const bool explain_only : {true, false}) {
    try {
      if (explain_only)
        flashcore::explain_backward(d.problem, d.tensors(), g);
      else
        flashcore::run_backward(d.problem, d.tensors(), g);
      ADD_FAILURE() << "no error for the backward pass of fp8 inputs";
    } catch (const flashcore::Error& e) {
      EXPECT_EQ(e.field(), "dtype") << e.what();
      EXPECT_NE(std::string(e.what()).find("fp8_e4m3 inputs have no backward pass"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(dq, dq0);
  EXPECT_EQ(dk, dk0);
  EXPECT_EQ(dv, dv0);
}

TEST(Fp8Validation, RingAttentionDeclinesNamingTheDtype) {
  const int L = 16;
  flashcore::ContextParallel cp;
  cp.local = Problem::make(1, 2, 1, L, L, 16, DType::E4M3, true);
  cp.seqlen = L;
  cp.sharding = flashcore::Sharding::Contiguous;
  std::vector<unsigned char> q(L * 2 * 16, 0x38), k(L * 16, 0x38), v(L * 16, 0x38), o(L * 2 * 16 * 2, 0x5a);
  const auto o0 = o;
  auto comms = flashcore::local_ring(1);
  try {
    flashcore::ring_attention(cp, flashcore::Tensors{q.data(), k.data(), v.data(), o.data()}, *comms[0]);
    ADD_FAILURE() << "no error for fp8 ring attention";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "dtype") << e.what();
    EXPECT_NE(std::string(e.what()).find("fp8_e4m3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(o, o0);
}

// ------------------------------------------------------------------ reference and portable tier --

namespace {

// fp8 cases: odd shapes, GQA and MQA, causal with Lq < Lk and Lq > Lk (rows that see no key), both
// output dtypes, descales of 1, of powers of two and of other values (the stored values then use
// e4m3's top binades, or its subnormals), layouts, variants and sequence layouts. LSE on.
std::vector<Case> fp8_set() {
  using fctest::fp8_case;
  using fctest::make_case;
  std::vector<Case> out;
  for (DType od : {DType::BF16, DType::F16}) {
    out.push_back(fp8_case(make_case(1, 2, 1, 37, 129, 72, DType::E4M3, false), od));
    out.push_back(fp8_case(make_case(2, 6, 2, 37, 129, 72, DType::E4M3, true), od, 0.37, 1.9, 0.6));
    out.push_back(fp8_case(make_case(1, 4, 1, 129, 37, 64, DType::E4M3, true, Layout::BHSD), od, 1.0 / 64, 1.0 / 32, 8));
    out.push_back(fp8_case(make_case(2, 3, 3, 1, 200, 128, DType::E4M3, false, Layout::Padded), od, 0.02, 0.05, 0.125));
    out.push_back(fp8_case(make_case(1, 2, 2, 65, 65, 96, DType::E4M3, true), od, 4, 0.25, 3));
    out.push_back(fp8_case(make_case(1, 2, 1, 17, 33, 256, DType::E4M3, false), od, 0.5, 0.5, 0.5));
    out.push_back(fp8_case(make_case(1, 1, 1, 5, 7, 1, DType::E4M3, false), od, 3, 3, 3));
  }
  // Variants and sequences with fp8 inputs.
  Case var = fp8_case(make_case(1, 4, 2, 50, 90, 64, DType::E4M3, true), DType::BF16, 0.3, 0.7, 2);
  var.window_left = 20, var.softcap = 15, var.alibi = true, var.sinks = true;
  out.push_back(var);
  out.push_back(fp8_case(fctest::sequence_case(4, 2, 64, DType::E4M3, true, {3, 0, 40, 1}, {70, 9, 64, 1},
                                               Case::KvStore::Paged, 16),
                         DType::F16, 0.5, 2, 0.25));
  out.push_back(fp8_case(fctest::sequence_case(4, 1, 32, DType::E4M3, false, {7, 1, 20}, {30, 0, 20},
                                               Case::KvStore::Packed),
                         DType::BF16, 1.5, 0.75, 1));
  return out;
}

class Fp8Cases : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(Fp8Cases, ReferenceMatchesOracle) { fctest::expect_matches_oracle("reference-host", GetParam(), 31); }
TEST_P(Fp8Cases, PortableHostMatchesOracle) { fctest::expect_matches_oracle("portable-host", GetParam(), 32); }
TEST_P(Fp8Cases, PortableTeamKernelMatchesOracle) {
  fctest::HostData d = fctest::make_data(GetParam(), fctest::run_seed() ^ 33);
  flashcore::portable::run_team_kernel_on_host(d.problem, d.tensors());
  const fctest::Errors e = fctest::compare(d, fctest::oracle(d));
  EXPECT_EQ(e.bad, 0) << "max abs " << e.max_abs << ", worst/bound " << e.worst_ratio << "; first: " << e.first_bad;
  EXPECT_EQ(e.lse_bad, 0) << e.first_bad;
}
INSTANTIATE_TEST_SUITE_P(Fp8, Fp8Cases, ::testing::ValuesIn(fp8_set()),
                         [](const auto& info) { return info.param.name(); });

TEST(Fp8, Fp64ModeOfTheReferenceMatchesTheOracle) {
  // The reference's fp64 oracle mode (what `flashcore run --validate` uses on dense layouts) folds
  // the descales as the kernels do; the plain-loop oracle dequantizes the inputs: the same attention
  // to ~1e-12, on every dense case of the set.
  int checked = 0;
  for (const Case& c : fp8_set()) {
    if (c.has_sequences()) continue;
    SCOPED_TRACE(c.name());
    fctest::HostData d = fctest::make_data(c, fctest::run_seed() ^ 34);
    Problem contiguous = d.problem;
    contiguous.o = {static_cast<std::int64_t>(contiguous.seqlen_q) * contiguous.heads_q * contiguous.head_dim,
                    static_cast<std::int64_t>(contiguous.heads_q) * contiguous.head_dim, contiguous.head_dim};
    const fctest::OracleOut ref = fctest::oracle(d);
    std::vector<double> o(ref.o.size()), lse(ref.lse.size());
    flashcore::Tensors t = d.tensors();
    t.o = nullptr, t.lse = nullptr;
    flashcore::reference::run_host_fp64(contiguous, t, o.data(), lse.data());
    double worst = 0;
    for (std::size_t i = 0; i < o.size(); ++i) worst = std::max(worst, std::fabs(o[i] - ref.o[i]));
    EXPECT_LE(worst, 1e-10);
    for (std::size_t i = 0; i < lse.size(); ++i)
      if (std::isinf(ref.lse[i]))
        EXPECT_EQ(lse[i], ref.lse[i]) << i;
      else
        EXPECT_NEAR(lse[i], ref.lse[i], 1e-10 * std::max(1.0, std::fabs(ref.lse[i]))) << i;
    ++checked;
  }
  EXPECT_EQ(checked, 15);
}

TEST(Fp8, DescalesChangeTheOutputAsStated) {
  // The same stored bytes under other descales, on both host backends:
  //   descale_v x 2           -> O exactly x 2, LSE the same (descale_v is O's factor only)
  //   descale_q x 2           -> the same bits as the softmax scale x 2 (folded into the logit scale)
  //   descale_q x 2, _k / 2   -> the same bits as no descale (their product is what counts)
  // and descale_q x 2 alone changes O (a test that cannot fail would not show the descale is read).
  for (const char* backend : {"reference-host", "portable-host"}) {
    SCOPED_TRACE(backend);
    fctest::HostData base = fctest::make_data(
        fctest::fp8_case(fctest::make_case(1, 4, 2, 33, 70, 64, DType::E4M3, true), DType::BF16), fctest::run_seed() + 5);
    flashcore::Options opts;
    opts.backend = backend;
    auto run = [&](const std::function<void(Problem&)>& change) {
      fctest::HostData d = base;
      change(d.problem);
      flashcore::run(d.problem, d.tensors(), opts);
      return d;
    };
    const fctest::HostData one = run([](Problem&) {});
    const fctest::HostData v2 = run([](Problem& p) { p.descale_v = 2; });
    const fctest::HostData q2 = run([](Problem& p) { p.descale_q = 2; });
    const fctest::HostData s2 = run([](Problem& p) { p.scale = 2 * p.effective_scale(); });
    const fctest::HostData qk = run([](Problem& p) { p.descale_q = 2, p.descale_k = 0.5f; });
    std::size_t changed = 0;
    for (std::size_t i = 0; i < one.o.size() / 2; ++i) {
      const double a = verify::load_element(DType::BF16, one.o.data(), static_cast<std::int64_t>(i));
      ASSERT_EQ(verify::load_element(DType::BF16, v2.o.data(), static_cast<std::int64_t>(i)), 2 * a) << i;
      changed += verify::load_element(DType::BF16, q2.o.data(), static_cast<std::int64_t>(i)) != a;
    }
    EXPECT_GT(changed, one.o.size() / 8) << "descale_q = 2 left O as it was";  // over a quarter of the elements
    EXPECT_EQ(v2.lse, one.lse);
    EXPECT_EQ(q2.o, s2.o);
    EXPECT_EQ(q2.lse, s2.lse);
    EXPECT_EQ(qk.o, one.o);
    EXPECT_EQ(qk.lse, one.lse);
    EXPECT_NE(q2.lse, one.lse);
  }
}

TEST(Fp8, HostDataGoesToThePortableTier) {
  fctest::HostData d = fctest::make_data(
      fctest::fp8_case(fctest::make_case(1, 2, 1, 20, 30, 32, DType::E4M3, false), DType::F16), fctest::run_seed());
  const flashcore::Report r = flashcore::explain(d.problem, d.tensors());
  EXPECT_EQ(r.chosen, "portable-host") << r.to_string();
}

// ------------------------------------------------------------------ the fp8 kernel check ---------

TEST(Fp8KernelCheck, PassesRoundedProbabilitiesAndCatchesWrongOutputs) {
  // An fp8 kernel's output modelled by the oracle's Precision::Same (P rounded as e4m3(256 p) / 256,
  // O rounded to the output dtype) passes check_fp8_kernel_output; outputs of a kernel that drops
  // descale_v, that pairs P with the wrong V rows, or that writes a NaN fail it.
  for (DType od : {DType::BF16, DType::F16}) {
    const Case c = fctest::fp8_case(fctest::make_case(2, 4, 2, 37, 300, 64, DType::E4M3, true), od, 0.5, 2, 0.7);
    SCOPED_TRACE(c.name());
    fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 77);
    const Problem& p = d.problem;
    const fctest::OracleOut ref = fctest::oracle(d);
    auto write = [&](const std::vector<double>& o) {
      for (int b = 0; b < p.batch; ++b)
        for (int i = 0; i < p.seqlen_q; ++i)
          for (int h = 0; h < p.heads_q; ++h)
            for (int x = 0; x < p.head_dim; ++x)
              verify::store_element(od, d.o.data(), d.o_offset(b, i, h) + x, o[verify::o_index(p, b, i, h, x)]);
      for (int b = 0; b < p.batch; ++b)
        for (int h = 0; h < p.heads_q; ++h)
          for (int i = 0; i < p.seqlen_q; ++i) d.lse[d.lse_at(b, h, i)] = static_cast<float>(ref.lse[verify::lse_index(p, b, h, i)]);
    };
    auto check = [&] {
      return verify::check_fp8_kernel_output(p, d.q.data(), d.k.data(), d.v.data(), ref, d.o.data(), d.lse.data(),
                                             d.sequences());
    };

    write(fctest::naive_same_precision(d).o);
    verify::Fp8Check ok = check();
    EXPECT_TRUE(ok.passed()) << ok.summary() << "; " << ok.first_bad;
    EXPECT_GT(ok.rms_err, 0.0);  // P's rounding shows
    EXPECT_LT(ok.rms_err, 0.05 * ok.rms_ref) << ok.summary();

    // descale_v dropped: O / 0.7.
    std::vector<double> scaled = ref.o;
    for (double& x : scaled) x /= 0.7;
    write(scaled);
    verify::Fp8Check bad = check();
    EXPECT_FALSE(bad.passed()) << bad.summary();
    EXPECT_FALSE(bad.rms_ok) << bad.summary();

    // P paired with the V rows of other keys: the exact attention of shuffled V rows.
    fctest::HostData shuffled = d;
    std::mt19937_64 rng(fctest::run_seed() + 78);
    const int row_bytes = p.head_dim;  // e4m3: one byte an element; V rows contiguous (BSHD)
    for (int b = 0; b < p.batch; ++b)
      for (int j = p.seqlen_k - 1; j > 0; --j) {
        const int other = std::uniform_int_distribution<int>(0, j)(rng);
        for (int hk = 0; hk < p.heads_kv; ++hk)
          std::swap_ranges(shuffled.v.begin() + flashcore::element_offset(p.v, b, j, hk, 0),
                           shuffled.v.begin() + flashcore::element_offset(p.v, b, j, hk, 0) + row_bytes,
                           shuffled.v.begin() + flashcore::element_offset(p.v, b, other, hk, 0));
      }
    write(fctest::naive_same_precision(shuffled).o);
    bad = check();
    EXPECT_FALSE(bad.passed()) << bad.summary();
    EXPECT_GT(bad.bad, 0) << bad.summary();

    // One NaN.
    write(ref.o);
    verify::store_element(od, d.o.data(), d.o_offset(1, 20, 3) + 5, std::nan(""));
    bad = check();
    EXPECT_EQ(bad.bad, 1) << bad.summary();
    EXPECT_FALSE(bad.passed());

    // One LSE off by 0.05 (its bound here: score_err, about 2^-11 * |q| |k| / 8 < 0.01, + 1e-4 max(1, |ref|)).
    write(ref.o);
    d.lse[d.lse_at(0, 1, 30)] += 0.05f;
    bad = check();
    EXPECT_EQ(bad.bad, 0) << bad.summary();
    EXPECT_EQ(bad.lse_bad, 1) << bad.summary();
    EXPECT_GT(bad.lse_worst_ratio, 1.0);
    EXPECT_LT(bad.worst_score_err, 0.01);
    EXPECT_FALSE(bad.passed());
  }
}

TEST(Fp8KernelCheck, BoundIsTheStatedFormula) {
  const auto b = flashcore::tolerance::fp8_kernel_bound(DType::BF16);
  const auto ref = flashcore::tolerance::reference_bound(DType::BF16);
  // (2^-4 + 1024 * 2^-18) * 2 + atol + rtol * |0.5|
  EXPECT_DOUBLE_EQ(b.bound(0.5, 1024, 2.0), (1.0 / 16 + 1024.0 / 262144) * 2 + ref.atol + ref.rtol * 0.5);
  EXPECT_TRUE(b.rms_ok(0.09, 1.0));
  EXPECT_FALSE(b.rms_ok(0.11, 1.0));
  // With a score error bound s the element bound gains 2 s max|v|, the LSE's is s + 1e-4 max(1, |ref|).
  EXPECT_DOUBLE_EQ(b.bound(0.5, 1024, 2.0, 0.01) - b.bound(0.5, 1024, 2.0), 2 * 0.01 * 2.0);
  EXPECT_TRUE(flashcore::tolerance::Fp8KernelBound::lse_ok(3.0 + 0.0101, 3.0, 0.01));  // 0.01 + 3e-4
  EXPECT_FALSE(flashcore::tolerance::Fp8KernelBound::lse_ok(3.0 + 0.0104, 3.0, 0.01));
  EXPECT_FALSE(flashcore::tolerance::Fp8KernelBound::lse_ok(-1e30, -INFINITY, 0.01));
  EXPECT_TRUE(flashcore::tolerance::Fp8KernelBound::lse_ok(-INFINITY, -INFINITY, 0.01));
  EXPECT_EQ(flashcore::tolerance::reference_bound(DType::E4M3).rtol, 0.0);  // never an output dtype
}

// ------------------------------------------------------------------ C API and Kokkos Views ------

TEST(Fp8CApi, ComputesTheBitsOfTheCppApi) {
  const Case c = fctest::fp8_case(fctest::make_case(2, 4, 2, 19, 45, 40, DType::E4M3, true), DType::F16, 0.5, 3, 0.25);
  fctest::HostData cpp = fctest::make_data(c, fctest::run_seed() + 90), cd = cpp;
  flashcore::run(cpp.problem, cpp.tensors());
  fc_problem p;
  fc_problem_init(&p, 2, 4, 2, 19, 45, 40, FC_E4M3, 1);
  EXPECT_EQ(p.descale_q, 1.0f);
  EXPECT_EQ(p.descale_k, 1.0f);
  EXPECT_EQ(p.descale_v, 1.0f);
  EXPECT_EQ(p.out_dtype, FC_BF16);
  p.descale_q = 0.5f, p.descale_k = 3, p.descale_v = 0.25f, p.out_dtype = FC_F16;
  ASSERT_EQ(fc_attention(&p, cd.q.data(), cd.k.data(), cd.v.data(), cd.o.data(), cd.lse.data(), FC_LOC_HOST, nullptr,
                         nullptr),
            FC_OK)
      << fc_last_error();
  EXPECT_EQ(cd.o, cpp.o);
  EXPECT_EQ(cd.lse, cpp.lse);
  const fctest::Errors e = fctest::compare(cd, fctest::oracle(cd));
  EXPECT_EQ(e.bad, 0) << e.first_bad;

  // The sized entry: 1-byte elements for Q, K, V, and O counted in its own (2-byte) elements.
  cd.poison_outputs();
  const std::int64_t nq = static_cast<std::int64_t>(cd.q.size()), nk = static_cast<std::int64_t>(cd.k.size()),
                     no = static_cast<std::int64_t>(cd.o.size() / 2), nl = static_cast<std::int64_t>(cd.lse.size());
  auto sized = [&](const fc_problem& pp, int bytes, std::int64_t o_elems) {
    return fc_attention_sized(&pp, bytes, cd.q.data(), nq, cd.k.data(), nk, cd.v.data(), nk, cd.o.data(), o_elems,
                              cd.lse.data(), nl, FC_LOC_HOST, nullptr, nullptr);
  };
  EXPECT_EQ(sized(p, 2, no), FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("fp8_e4m3 takes 1-byte elements"), std::string::npos) << fc_last_error();
  EXPECT_EQ(sized(p, 1, no - 1), FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("o: "), std::string::npos) << fc_last_error();
  ASSERT_EQ(sized(p, 1, no), FC_OK) << fc_last_error();
  EXPECT_EQ(cd.o, cpp.o);
}

TEST(Fp8CApi, BadFp8FieldsAreErrorsNamingTheField) {
  std::vector<unsigned char> q(8 * 2 * 16, 0x38), k(8 * 16, 0x30), v(8 * 16, 0x28), o(8 * 2 * 16 * 2, 0x5a);
  const auto o0 = o;
  fc_problem p;
  fc_problem_init(&p, 1, 2, 1, 8, 8, 16, FC_E4M3, 0);
  auto call = [&](const fc_problem& pp) {
    return fc_attention(&pp, q.data(), k.data(), v.data(), o.data(), nullptr, FC_LOC_HOST, nullptr, nullptr);
  };
  fc_problem bad = p;
  bad.out_dtype = static_cast<fc_dtype>(7);
  EXPECT_EQ(call(bad), FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("out_dtype: value 7"), std::string::npos) << fc_last_error();
  bad = p;
  bad.out_dtype = FC_F32;
  EXPECT_EQ(call(bad), FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("out_dtype fp32"), std::string::npos) << fc_last_error();
  bad = p;
  bad.descale_v = -1;
  EXPECT_EQ(call(bad), FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("descale_v -1"), std::string::npos) << fc_last_error();
  EXPECT_EQ(o, o0);
  // The descales are read for FC_E4M3 only: another dtype ignores them (whatever the tail holds).
  std::vector<float> qf(8 * 2 * 16, 0.5f), kf(8 * 16, 0.25f), vf(8 * 16, 1.0f), of(8 * 2 * 16, 0.0f);
  fc_problem f32 = p;
  f32.dtype = FC_F32;
  f32.descale_q = 5, f32.out_dtype = static_cast<fc_dtype>(7);
  EXPECT_EQ(fc_attention(&f32, qf.data(), kf.data(), vf.data(), of.data(), nullptr, FC_LOC_HOST, nullptr, nullptr), FC_OK)
      << fc_last_error();
  // The backward pass of fp8 inputs: FC_ERROR_INVALID naming the dtype.
  std::vector<float> lse(16, 0.0f);
  std::vector<unsigned char> d_o(o.size()), dq(q.size()), dk(k.size()), dv(v.size());
  EXPECT_EQ(fc_attention_backward(&p, q.data(), k.data(), v.data(), o.data(), lse.data(), d_o.data(), dq.data(),
                                  dk.data(), dv.data(), nullptr, FC_LOC_HOST, nullptr, nullptr),
            FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("no backward pass"), std::string::npos) << fc_last_error();
}

namespace {
template <class T>
using HostU = Kokkos::View<T, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
}  // namespace

TEST(Fp8KokkosViews, Uint8ViewsGiveTheBitsOfTheCppApi) {
  const int B = 2, Hq = 4, Hkv = 1, Lq = 13, Lk = 31, D = 24;
  const Case c = fctest::fp8_case(fctest::make_case(B, Hq, Hkv, Lq, Lk, D, DType::E4M3, true), DType::BF16, 2, 0.5, 1.5);
  fctest::HostData cpp = fctest::make_data(c, fctest::run_seed() + 91), vd = cpp;
  flashcore::run(cpp.problem, cpp.tensors());
  HostU<std::uint8_t****> q(vd.q.data(), B, Lq, Hq, D), k(vd.k.data(), B, Lk, Hkv, D), v(vd.v.data(), B, Lk, Hkv, D);
  HostU<std::uint16_t****> o(reinterpret_cast<std::uint16_t*>(vd.o.data()), B, Lq, Hq, D);
  HostU<float***> lse(vd.lse.data(), B, Hq, Lq);
  flashcore::ViewOptions opts;
  opts.causal = true;
  opts.dtype = static_cast<int>(DType::E4M3);
  opts.out_dtype = static_cast<int>(DType::BF16);
  opts.descale_q = 2, opts.descale_k = 0.5f, opts.descale_v = 1.5f;
  EXPECT_EQ(flashcore::run(q, k, v, o, lse, opts).chosen, "portable-host");
  EXPECT_EQ(vd.o, cpp.o);
  EXPECT_EQ(vd.lse, cpp.lse);

  // Errors naming the field, O untouched: no dtype option, no out_dtype for std::uint16_t O, an
  // out_dtype that contradicts a typed O View, an fp32 O, descales on an fp16 call.
  vd.poison_outputs();
  const auto o0 = vd.o;
  auto expect_error = [&](const std::function<void()>& f, const char* field, const char* text) {
    try {
      f();
      ADD_FAILURE() << "no error for " << field;
    } catch (const flashcore::Error& e) {
      EXPECT_EQ(e.field(), field) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
    EXPECT_EQ(vd.o, o0) << "O written by a failed call";
  };
  flashcore::ViewOptions no_dtype = opts;
  no_dtype.dtype = -1;
  expect_error([&] { flashcore::run(q, k, v, o, no_dtype); }, "dtype", "std::uint8_t Views need ViewOptions::dtype");
  flashcore::ViewOptions no_out = opts;
  no_out.out_dtype = -1;
  expect_error([&] { flashcore::run(q, k, v, o, no_out); }, "out_dtype", "needs ViewOptions::out_dtype");
  std::vector<float> of(vd.o.size() / 2);
  HostU<float****> o32(of.data(), B, Lq, Hq, D);
  flashcore::ViewOptions typed = opts;
  typed.out_dtype = -1;
  expect_error([&] { flashcore::run(q, k, v, o32, typed); }, "out_dtype", "out_dtype fp32");
  using half = Kokkos::Experimental::half_t;
  std::vector<half> oh(vd.o.size() / 2);
  HostU<half****> o16(oh.data(), B, Lq, Hq, D);
  expect_error([&] { flashcore::run(q, k, v, o16, opts); }, "out_dtype", "contradicts");
  HostU<float****> qf(of.data(), B, Lq, Hq, D);
  std::vector<float> kv(static_cast<std::size_t>(B) * Lk * Hkv * D, 0.5f), of2(of.size(), 0.0f);
  HostU<float****> kf(kv.data(), B, Lk, Hkv, D), of2v(of2.data(), B, Lq, Hq, D);
  flashcore::ViewOptions f32;
  f32.descale_k = 2;
  try {
    flashcore::run(qf, kf, kf, of2v, f32);
    ADD_FAILURE() << "no error for descale_k on fp32 Views";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "descale_k") << e.what();
  }
#if !defined(KOKKOS_HALF_T_IS_FLOAT) || !KOKKOS_HALF_T_IS_FLOAT
  // A half_t O says fp16 itself: the bits of the C++ API with out_dtype fp16.
  fctest::HostData cpp16 = cpp;
  cpp16.problem.out_dtype = DType::F16;
  cpp16.poison_outputs();
  flashcore::run(cpp16.problem, cpp16.tensors());
  flashcore::ViewOptions half_opts = opts;
  half_opts.out_dtype = -1;
  flashcore::run(q, k, v, o16, half_opts);
  EXPECT_EQ(std::memcmp(oh.data(), cpp16.o.data(), cpp16.o.size()), 0);
#endif
}
