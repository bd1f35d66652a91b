// The portable tier on the host: its CPU kernel ("portable-host") and its team kernel (what
// portable-cuda runs, here on the host execution space) against the fp64 oracle on the case sets
// the reference passes (tests/support/cases.hpp), with the reference's bound: the portable tier
// accumulates in fp32 like the reference, only in another order. And the building blocks the CPU
// kernel's vectors rest on (simd.hpp), checked on every input where that is possible.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backends/portable/portable_api.hpp"
#include "backends/portable/simd.hpp"
#include "core/numeric.hpp"
#include "support/backward.hpp"
#include "support/cases.hpp"
#include "support/oracle_check.hpp"
#include "support/testing.hpp"

using fctest::Case;
using fctest::Layout;
using fctest::make_case;
using flashcore::DType;
namespace simd = flashcore::portable::simd;

namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// --- the CPU kernel's vector building blocks

TEST(PortableSimd, HalfToFloatMatchesTheScalarConversionOnEveryBitPattern) {
  for (std::uint32_t h0 = 0; h0 < 65536; h0 += simd::kLanes) {
    std::uint16_t in[simd::kLanes];
    for (int x = 0; x < simd::kLanes; ++x) in[x] = static_cast<std::uint16_t>(h0 + x);
    float out[simd::kLanes];
    simd::store(out, simd::half_to_float(simd::load_u16(in)));
    for (int x = 0; x < simd::kLanes; ++x)
      ASSERT_EQ(bits_of(out[x]), bits_of(flashcore::numeric::half_to_float(in[x]))) << "fp16 bits 0x" << std::hex << in[x];
  }
}

// The team kernel's fp16 load (numeric::half_to_float_branchless).
TEST(PortableTeamKernel, BranchlessHalfToFloatMatchesOnEveryBitPattern) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto u = static_cast<std::uint16_t>(h);
    ASSERT_EQ(bits_of(flashcore::numeric::half_to_float_branchless(u)), bits_of(flashcore::numeric::half_to_float(u)))
        << "fp16 bits 0x" << std::hex << h;
  }
}

TEST(PortableSimd, Bf16ToFloatMatchesTheScalarConversionOnEveryBitPattern) {
  for (std::uint32_t h0 = 0; h0 < 65536; h0 += simd::kLanes) {
    std::uint16_t in[simd::kLanes];
    for (int x = 0; x < simd::kLanes; ++x) in[x] = static_cast<std::uint16_t>(h0 + x);
    float out[simd::kLanes];
    simd::store(out, simd::bf16_to_float(simd::load_u16(in)));
    for (int x = 0; x < simd::kLanes; ++x)
      ASSERT_EQ(bits_of(out[x]), bits_of(flashcore::numeric::bf16_to_float(in[x]))) << "bf16 bits 0x" << std::hex << in[x];
  }
}

// exp on [-87, 88] within 5e-7 relative of the fp64 exp (the polynomial's truncation, 1.2e-7 at
// |r| = 0.347, plus a few fp32 roundings); exactly 0 below -87 and at -inf.
TEST(PortableSimd, ExpIsAccurateAndZeroBelowTheRange) {
  std::mt19937_64 rng(fctest::run_seed() + 61);
  std::uniform_real_distribution<float> any(-87.f, 88.f), near0(-1.f, 1.f);
  double worst = 0;
  for (int n = 0; n < 200000; n += simd::kLanes) {
    float in[simd::kLanes], out[simd::kLanes];
    for (int x = 0; x < simd::kLanes; ++x) in[x] = n % 3 == 0 ? near0(rng) : any(rng);
    if (n == 0) in[0] = 0.f, in[1] = -87.f, in[2] = 88.f, in[3] = -0.5f * 0.6931472f, in[4] = 0.5f * 0.6931472f;
    simd::store(out, simd::exp(simd::load(in)));
    for (int x = 0; x < simd::kLanes; ++x) {
      const double want = std::exp(static_cast<double>(in[x]));
      const double rel = std::fabs(out[x] - want) / want;
      worst = rel > worst ? rel : worst;
      ASSERT_LE(rel, 5e-7) << "exp(" << in[x] << ") = " << out[x] << ", want " << want;
    }
  }
  float in[simd::kLanes] = {-87.5f, -100.f, -1e30f, -INFINITY, -88.f, -87.01f, -1000.f, -3e38f}, out[simd::kLanes];
  simd::store(out, simd::exp(simd::load(in)));
  for (int x = 0; x < simd::kLanes; ++x) EXPECT_EQ(out[x], 0.f) << "exp(" << in[x] << ")";
  std::printf("portable simd::exp: worst relative error %.3g\n", worst);
}

TEST(PortableSimd, MaxSelectAndMasks) {
  float a[8] = {1, -2, 3, -INFINITY, 0, 5, -7, 8}, b[8] = {0, 0, 4, -1, -0.5f, 5, -8, 9}, out[8];
  simd::store(out, simd::max(simd::load(a), simd::load(b)));
  for (int x = 0; x < 8; ++x) EXPECT_EQ(out[x], std::max(a[x], b[x])) << x;
  int lo[8] = {0, 1, 2, 3, 4, 5, 6, 7}, j = 4;
  simd::store(out, simd::select(simd::le(simd::load(lo), simd::splat(j)), simd::load(a), simd::splat(-1.f)));
  for (int x = 0; x < 8; ++x) EXPECT_EQ(out[x], lo[x] <= j ? a[x] : -1.f) << x;
}

// --- portable-host (the CPU kernel) against the oracle

void check_cpu(const Case& c, std::uint64_t salt) { fctest::expect_matches_oracle("portable-host", c, salt); }

class PortableAcceptance : public ::testing::TestWithParam<Case> {};
TEST_P(PortableAcceptance, MatchesOracle) { check_cpu(GetParam(), 0); }
INSTANTIATE_TEST_SUITE_P(PortableHost, PortableAcceptance, ::testing::ValuesIn(fctest::acceptance_set()),
                         [](const auto& info) { return info.param.name(); });

class PortableCorners : public ::testing::TestWithParam<Case> {};
TEST_P(PortableCorners, MatchesOracle) { check_cpu(GetParam(), 1); }
INSTANTIATE_TEST_SUITE_P(PortableHost, PortableCorners, ::testing::ValuesIn(fctest::corner_set()),
                         [](const auto& info) { return info.param.name(); });

class PortableVariants : public ::testing::TestWithParam<Case> {};
TEST_P(PortableVariants, MatchesOracle) { check_cpu(GetParam(), 7); }
INSTANTIATE_TEST_SUITE_P(PortableHost, PortableVariants, ::testing::ValuesIn(fctest::variant_set()),
                         [](const auto& info) { return info.param.name(); });

class PortableSequences : public ::testing::TestWithParam<Case> {};
TEST_P(PortableSequences, MatchesOracle) { check_cpu(GetParam(), 11); }
INSTANTIATE_TEST_SUITE_P(PortableHost, PortableSequences, ::testing::ValuesIn(fctest::sequence_set()),
                         [](const auto& info) { return info.param.name(); });

// Where the CPU kernel's tiles end: rows around 16 and 64 (its row tiles and blocks), keys around
// 4 and 64 (its key tiles), head dims around 8 and 16 (vector loads, the 16-wide P·V tile, the
// padding), causal blocks that start inside a tile.
std::vector<Case> tile_edges() {
  std::vector<Case> out;
  for (int lq : {1, 15, 16, 17, 63, 64, 65, 129})
    out.push_back(make_case(1, 2, 1, lq, 131, 64, DType::F16, lq % 2 == 1));
  for (int lk : {1, 3, 4, 5, 63, 64, 65, 128, 129})
    out.push_back(make_case(1, 2, 2, 70, lk, 64, DType::BF16, lk % 2 == 0));
  for (int d : {7, 8, 9, 15, 16, 17, 24, 40, 72, 200, 255})
    out.push_back(make_case(1, 2, 1, 40, 70, d, DType::F32, d % 2 == 1, Layout::Padded));
  return out;
}
class PortableTileEdges : public ::testing::TestWithParam<Case> {};
TEST_P(PortableTileEdges, MatchesOracle) { check_cpu(GetParam(), 13); }
INSTANTIATE_TEST_SUITE_P(PortableHost, PortableTileEdges, ::testing::ValuesIn(tile_edges()),
                         [](const auto& info) { return info.param.name(); });

}  // namespace

TEST(PortableHost, RandomShapesVariantsAndSequences) {
  std::mt19937_64 rng(fctest::run_seed() + 62);
  for (int n = 0; n < 30; ++n) {
    check_cpu(fctest::random_case(rng, 150, {1, 3, 16, 24, 64, 72, 128, 160, 256}), 400 + n);
    check_cpu(fctest::with_random_variants(fctest::random_case(rng, 150, {8, 32, 64, 96, 128}), rng), 500 + n);
    check_cpu(fctest::random_sequences(rng, 150), 600 + n);
  }
}

TEST(PortableHost, LargeScoresStayStable) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    Case c = make_case(1, 2, 2, 37, 129, 64, dt, false);
    c.q_gain = 12.0;
    check_cpu(c, 2);
  }
}

TEST(PortableHost, IsWhatHostDataGetsAndDeclinesTheBackwardPass) {
  fctest::BackwardData d =
      fctest::make_backward_data(make_case(1, 2, 1, 20, 30, 32, DType::F16, true), fctest::run_seed() + 63);
  const flashcore::Report fwd = flashcore::explain(d.fwd.problem, d.fwd.tensors());
  EXPECT_EQ(fwd.chosen, "portable-host");
  // The plan names the kernel and its tiles: 20 queries in a block of 32 rows, head dim 32 as is.
  EXPECT_EQ(fwd.plan, "portable-cpu bm=32 bn=64 dp=32 threads=1") << fwd.to_string();
  const flashcore::Report r = flashcore::explain_backward(d.fwd.problem, d.fwd.tensors(), d.gradients());
  EXPECT_EQ(r.chosen, "reference-host") << r.to_string();
  EXPECT_NE(r.to_string().find("portable-host: no - has no backward pass"), std::string::npos) << r.to_string();
}

// --- the team kernel (portable-cuda's) on the host execution space

void check_team(const Case& c, std::uint64_t salt) {
  SCOPED_TRACE(c.name() + " on the team kernel");
  fctest::HostData d = fctest::make_data(c, fctest::run_seed() ^ (salt * 0x9e3779b97f4a7c15ull));
  const std::string tiles = flashcore::portable::run_team_kernel_on_host(d.problem, d.tensors());
  SCOPED_TRACE(tiles);
  const fctest::Errors e = fctest::compare(d, fctest::oracle(d));
  EXPECT_EQ(e.bad, 0) << "max abs " << e.max_abs << ", worst/bound " << e.worst_ratio << "; first: " << e.first_bad;
  EXPECT_EQ(e.lse_bad, 0) << e.first_bad;
}

TEST(PortableTeamKernel, CornersVariantsAndSequences) {
  const std::uint64_t salts[] = {21, 22, 23};
  int set = 0;
  for (const auto& cases : {fctest::corner_set(), fctest::variant_set(), fctest::sequence_set()}) {
    for (const Case& c : cases) check_team(c, salts[set]);
    ++set;
  }
}

// Its tiles end at 64 rows and 64 keys, its slices at 32 head dims, its padding at 64/128/256.
TEST(PortableTeamKernel, TileEdges) {
  for (const Case& c : tile_edges()) check_team(c, 24);
  for (int d : {63, 64, 65, 127, 128, 129, 256})
    check_team(make_case(2, 3, 1, 130, 200, d, d % 2 == 0 ? DType::BF16 : DType::F32, d % 3 == 0), 25);
}

TEST(PortableTeamKernel, RandomShapes) {
  std::mt19937_64 rng(fctest::run_seed() + 64);
  for (int n = 0; n < 20; ++n) {
    check_team(fctest::random_case(rng, 130, {1, 8, 40, 64, 128, 256}), 700 + n);
    check_team(fctest::random_sequences(rng, 130), 800 + n);
  }
}
