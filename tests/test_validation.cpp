// Invalid input is rejected before any work: a flashcore::Error naming the field and the value,
// and the outputs untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "flashcore/flashcore.h"
#include "support/testing.hpp"

using flashcore::DType;
using flashcore::Problem;

namespace {

struct BadCase {
  const char* what;
  std::function<void(Problem&, flashcore::Tensors&)> mutate;
  const char* field;    // expected Error::field()
  const char* message;  // expected substring of what()
};

std::vector<BadCase> bad_cases() {
  return {
      {"batch0", [](Problem& p, auto&) { p.batch = 0; }, "batch", "batch 0"},
      {"span_too_large", [](Problem& p, auto&) { p.q.batch = std::int64_t(1) << 40; p.batch = 1 << 29; }, "q.batch", "more than 2^60 elements"},
      {"batch_huge", [](Problem& p, auto&) { p.batch = 2000000000; }, "batch", "batch 2000000000"},
      {"heads_q_negative", [](Problem& p, auto&) { p.heads_q = -2; }, "heads_q", "heads_q -2"},
      {"heads_kv0", [](Problem& p, auto&) { p.heads_kv = 0; }, "heads_kv", "heads_kv 0"},
      {"heads_not_multiple", [](Problem& p, auto&) { p.heads_kv = 3; }, "heads_kv", "heads_q 4 is not a multiple of heads_kv 3"},
      {"seqlen_q0", [](Problem& p, auto&) { p.seqlen_q = 0; }, "seqlen_q", "seqlen_q 0"},
      {"seqlen_k_negative", [](Problem& p, auto&) { p.seqlen_k = -5; }, "seqlen_k", "seqlen_k -5"},
      {"head_dim0", [](Problem& p, auto&) { p.head_dim = 0; }, "head_dim", "head_dim 0"},
      {"head_dim257", [](Problem& p, auto&) { p.head_dim = 257; }, "head_dim", "head_dim 257"},
      {"dtype_bad", [](Problem& p, auto&) { p.dtype = static_cast<DType>(7); }, "dtype", "dtype value 7"},
      {"scale_nan", [](Problem& p, auto&) { p.scale = std::nanf(""); }, "scale", "scale nan"},
      {"scale_negative", [](Problem& p, auto&) { p.scale = -1.0f; }, "scale", "scale -1"},
      {"scale_inf", [](Problem& p, auto&) { p.scale = INFINITY; }, "scale", "scale inf"},
      {"q_stride_negative", [](Problem& p, auto&) { p.q.seq = -64; }, "q.seq", "stride -64 is negative"},
      {"k_strides_unset", [](Problem& p, auto&) { p.k = {}; }, "k.", "overlap"},
      {"v_head_overlap", [](Problem& p, auto&) { p.v.head = 10; }, "v.head", "stride 10"},
      {"o_seq_overlap", [](Problem& p, auto&) { p.o.seq = 0; }, "o.seq", "stride 0"},
      {"stride_huge", [](Problem& p, auto&) { p.q.batch = std::int64_t(1) << 50; }, "q.batch", "exceeds 2^40"},
      {"q_null", [](Problem&, flashcore::Tensors& t) { t.q = nullptr; }, "q", "q: pointer is null"},
      {"k_null", [](Problem&, flashcore::Tensors& t) { t.k = nullptr; }, "k", "k: pointer is null"},
      {"v_null", [](Problem&, flashcore::Tensors& t) { t.v = nullptr; }, "v", "v: pointer is null"},
      {"o_null", [](Problem&, flashcore::Tensors& t) { t.o = nullptr; }, "o", "o: pointer is null"},
      {"o_aliases_q", [](Problem&, flashcore::Tensors& t) { t.q = t.o; }, "o", "overlaps q"},
      {"lse_inside_o", [](Problem&, flashcore::Tensors& t) { t.lse = static_cast<float*>(t.o) + 4; }, "o", "overlaps lse"},
      {"window_left_minus2", [](Problem& p, auto&) { p.window_left = -2; }, "window_left", "window_left -2"},
      {"window_right_huge", [](Problem& p, auto&) { p.window_right = 2000000000; }, "window_right", "window_right 2000000000"},
      {"window_right_with_causal", [](Problem& p, auto&) { p.causal = true; p.window_right = 3; }, "window_right",
       "window_right 3 contradicts causal"},
      {"softcap_negative", [](Problem& p, auto&) { p.softcap = -1.0f; }, "softcap", "softcap -1"},
      {"softcap_nan", [](Problem& p, auto&) { p.softcap = std::nanf(""); }, "softcap", "softcap nan"},
      {"alibi_slope_nan", [](Problem&, flashcore::Tensors& t) { static float s[4] = {0.1f, 0.2f, NAN, 0.3f}; t.alibi_slopes = s; },
       "alibi_slopes", "value nan of head 2"},
      {"sink_inf", [](Problem&, flashcore::Tensors& t) { static float s[4] = {INFINITY, 0, 0, 0}; t.sinks = s; },
       "sinks", "value inf of head 0"},
      {"o_overlaps_sinks", [](Problem&, flashcore::Tensors& t) { t.sinks = static_cast<const float*>(t.o) + 2; }, "o",
       "overlaps sinks"},
  };
}

class BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInput, RejectedBeforeAnyWorkNamingTheField) {
  const BadCase& bc = GetParam();
  fctest::Case c;
  c.batch = 2, c.heads_q = 4, c.heads_kv = 2, c.seqlen_q = 16, c.seqlen_k = 24, c.head_dim = 64;
  c.dtype = DType::F32;
  fctest::HostData d = fctest::make_data(c, fctest::run_seed());
  // Outputs hold a recognisable pattern that must survive.
  std::memset(d.o.data(), 0x3c, d.o.size());
  std::fill(d.lse.begin(), d.lse.end(), 1234.5f);
  const auto o_before = d.o;
  const auto lse_before = d.lse;
  Problem p = d.problem;
  flashcore::Tensors t = d.tensors();
  bc.mutate(p, t);
  try {
    flashcore::run(p, t, {});
    FAIL() << "no error for " << bc.what;
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(std::string(e.field()).rfind(bc.field, 0), 0u) << "field '" << e.field() << "' for " << bc.what;
    EXPECT_NE(std::string(e.what()).find(bc.message), std::string::npos) << "message: " << e.what();
  }
  EXPECT_EQ(d.o, o_before) << "O was written";
  EXPECT_EQ(d.lse, lse_before) << "LSE was written";
}

INSTANTIATE_TEST_SUITE_P(Validation, BadInput, ::testing::ValuesIn(bad_cases()),
                         [](const auto& info) { return std::string(info.param.what); });

}  // namespace

TEST(Validation, UnknownBackendNamesTheRegisteredOnes) {
  fctest::Case c;
  fctest::HostData d = fctest::make_data(c, 1);
  flashcore::Options opts;
  opts.backend = "no-such-backend";
  try {
    flashcore::run(d.problem, d.tensors(), opts);
    FAIL();
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "backend");
    EXPECT_NE(std::string(e.what()).find("'no-such-backend'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("reference-host"), std::string::npos) << e.what();
  }
}

TEST(Validation, ForcedBackendThatDeclinesIsAnErrorWithItsReason) {
  // Host data forced onto a device backend (or, in builds without one, onto nothing): declined.
  fctest::Case c;
  fctest::HostData d = fctest::make_data(c, 1);
  const auto names = flashcore::backend_names();
  for (const auto& name : names) {
    if (name == "reference-host" || name == "portable-host") continue;  // the host backends
    flashcore::Options opts;
    opts.backend = name;
    opts.location = flashcore::MemoryLocation::Host;
    try {
      flashcore::run(d.problem, d.tensors(), opts);
      FAIL() << name << " accepted host data";
    } catch (const flashcore::Error& e) {
      EXPECT_EQ(e.field(), "backend");
      EXPECT_NE(std::string(e.what()).find("device memory"), std::string::npos) << e.what();
    }
  }
}

TEST(Validation, CApiReportsFieldAndLeavesOutputs) {
  fc_problem p;
  fc_problem_init(&p, 1, 4, 2, 8, 8, 32, FC_F32, 0);
  std::vector<float> q(1 * 8 * 4 * 32, 0.5f), k(1 * 8 * 2 * 32, 0.25f), v(k.size(), 1.0f), o(q.size(), 7.0f);
  p.head_dim = 300;  // strides still fit; head_dim is the first invalid field
  EXPECT_EQ(fc_attention(&p, q.data(), k.data(), v.data(), o.data(), nullptr, FC_LOC_AUTO, nullptr, nullptr),
            FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("head_dim 300"), std::string::npos) << fc_last_error();
  for (float x : o) ASSERT_EQ(x, 7.0f);
  fc_problem_init(&p, 1, 4, 2, 8, 8, 32, FC_F32, 2);
  EXPECT_EQ(fc_attention(&p, q.data(), k.data(), v.data(), o.data(), nullptr, FC_LOC_AUTO, nullptr, nullptr),
            FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("causal: value 2"), std::string::npos) << fc_last_error();
  for (float x : o) ASSERT_EQ(x, 7.0f);
  EXPECT_EQ(fc_attention(nullptr, q.data(), k.data(), v.data(), o.data(), nullptr, FC_LOC_AUTO, nullptr, nullptr),
            FC_ERROR_INVALID);
  // The variants' fields.
  fc_problem_init(&p, 1, 4, 2, 8, 8, 32, FC_F32, 0);
  p.window = 2;
  EXPECT_EQ(fc_attention(&p, q.data(), k.data(), v.data(), o.data(), nullptr, FC_LOC_AUTO, nullptr, nullptr),
            FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("window: value 2"), std::string::npos) << fc_last_error();
  p.window = 1;
  p.window_left = -7;
  EXPECT_EQ(fc_attention(&p, q.data(), k.data(), v.data(), o.data(), nullptr, FC_LOC_AUTO, nullptr, nullptr),
            FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("window_left -7"), std::string::npos) << fc_last_error();
  fc_problem_init(&p, 1, 4, 2, 8, 8, 32, FC_F32, 0);
  const float slopes[4] = {0.5f, 0.25f, -INFINITY, 0.125f};
  p.alibi_slopes = slopes;
  EXPECT_EQ(fc_attention(&p, q.data(), k.data(), v.data(), o.data(), nullptr, FC_LOC_AUTO, nullptr, nullptr),
            FC_ERROR_INVALID);
  EXPECT_NE(std::string(fc_last_error()).find("alibi_slopes: value -inf of head 2"), std::string::npos)
      << fc_last_error();
  for (float x : o) ASSERT_EQ(x, 7.0f);
}
