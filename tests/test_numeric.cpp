// fp16 / bf16 conversions: exhaustive over all 16-bit patterns, and rounding of floats checked
// against the definition (nearest representable value, ties to even).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/numeric.hpp"
#include "support/testing.hpp"

namespace num = flashcore::numeric;

TEST(Numeric, HalfRoundTripsEveryPattern) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = num::half_to_float(static_cast<std::uint16_t>(h));
    const bool nan = ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff) != 0;
    if (nan) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_TRUE(std::isnan(num::half_to_float(num::float_to_half(f)))) << h;
    } else {
      ASSERT_EQ(num::float_to_half(f), h) << "pattern " << h << " -> " << f;
    }
  }
}

TEST(Numeric, HalfKnownValues) {
  EXPECT_EQ(num::half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(num::half_to_float(0xc000), -2.0f);
  EXPECT_EQ(num::half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(num::half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(num::half_to_float(0x0400), std::ldexp(1.0f, -14));
  EXPECT_TRUE(std::isinf(num::half_to_float(0x7c00)));
  EXPECT_EQ(num::float_to_half(65519.0f), 0x7bff);  // below the midpoint to infinity
  EXPECT_EQ(num::float_to_half(65520.0f), 0x7c00);  // the midpoint rounds to even: infinity
  EXPECT_EQ(num::float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even (1.0)
  EXPECT_EQ(num::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(num::float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and min subnormal
  EXPECT_EQ(num::float_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(num::float_to_half(-0.0f), 0x8000);
}

// The nearest fp16 / bf16 value to f, ties to the even pattern, by search over neighbours.
static bool is_correctly_rounded(float f, std::uint16_t got, float (*to_float)(std::uint16_t)) {
  const double x = f;
  const double g = to_float(got);
  if (std::isinf(g)) return true;  // overflow handled by the known-value tests
  for (int delta : {-1, 1}) {
    const std::uint16_t nb = static_cast<std::uint16_t>(got + delta);
    const double n = to_float(nb);
    if (std::isnan(n) || std::isinf(n) || std::signbit(n) != std::signbit(g)) continue;
    const double dg = std::fabs(x - g), dn = std::fabs(x - n);
    if (dn < dg) return false;
    if (dn == dg && (got & 1)) return false;  // tie must go to the even pattern
  }
  return true;
}

TEST(Numeric, RandomFloatsRoundToNearestEven) {
  std::mt19937_64 rng(fctest::run_seed());
  std::uniform_int_distribution<std::uint32_t> bits;
  std::uniform_real_distribution<float> small(-70000.0f, 70000.0f);
  for (int n = 0; n < 2000000; ++n) {
    float f;
    if (n % 2) {
      const std::uint32_t u = bits(rng);
      std::memcpy(&f, &u, 4);
    } else {
      f = small(rng) * std::ldexp(1.0f, -static_cast<int>(bits(rng) % 30));
    }
    if (std::isnan(f)) continue;
    const std::uint16_t h = num::float_to_half(f);
    ASSERT_TRUE(is_correctly_rounded(f, h, num::half_to_float)) << f;
    const std::uint16_t b = num::float_to_bf16(f);
    ASSERT_TRUE(is_correctly_rounded(f, b, num::bf16_to_float)) << f;
  }
}

TEST(Numeric, Bf16RoundTripsEveryPattern) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float f = num::bf16_to_float(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(num::bf16_to_float(num::float_to_bf16(f))));
    } else {
      ASSERT_EQ(num::float_to_bf16(f), b) << b;
    }
  }
  EXPECT_EQ(num::float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(num::float_to_bf16(3.4e38f), 0x7f80);  // rounds to infinity
}
