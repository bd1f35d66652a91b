// Eight fp32 lanes for the portable tier's CPU kernel (cpu_tiles.hpp): one AVX2 register on x86-64
// (two SSE or NEON registers elsewhere). GCC and Clang (and the compilers built on them) get the
// vector types of their vector extensions, which they lower to the target's instructions; any
// other compiler gets a struct of eight floats whose loops it may vectorize itself. Only what the
// kernel needs: loads of the three storage types converted to fp32, FMA-able arithmetic,
// comparisons as lane masks, select, max, and an exponential.
#pragma once

#include <cstdint>
#include <cstring>

// Every function has internal linkage (FC_SIMD): the library's CPU kernel is compiled for AVX2
// (FLASHCORE_PORTABLE_HOST_FLAGS) and the tests are not; the two copies must not meet at link time
// (their vector arguments are passed differently, GCC's -Wpsabi note), so each file keeps its own.
#define FC_SIMD static inline
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace flashcore::portable::simd {

constexpr int kLanes = 8;

#if defined(__GNUC__) || defined(__clang__)
#define FLASHCORE_PORTABLE_VECTOR_EXTENSIONS 1
constexpr const char* kHow = "the compiler's vector extensions";
typedef float f8 __attribute__((vector_size(32)));
typedef std::int32_t i8 __attribute__((vector_size(32)));
typedef std::uint16_t u16x8 __attribute__((vector_size(16)));

FC_SIMD f8 load(const float* p) {
  f8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
FC_SIMD i8 load(const int* p) {
  i8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
FC_SIMD void store(float* p, f8 v) { std::memcpy(p, &v, sizeof v); }
// (Written out: `f8{} + x` would make the compiler add 0, which it must keep as -0 + 0 is +0.)
FC_SIMD f8 splat(float x) { return f8{x, x, x, x, x, x, x, x}; }
FC_SIMD i8 splat(int x) { return i8{x, x, x, x, x, x, x, x}; }
FC_SIMD i8 bits(f8 x) { return (i8)x; }  // a bit cast between vector types of one size
FC_SIMD f8 from_bits(i8 x) { return (f8)x; }
FC_SIMD i8 to_int(f8 x) { return __builtin_convertvector(x, i8); }
FC_SIMD i8 widen(u16x8 x) { return __builtin_convertvector(x, i8); }
FC_SIMD u16x8 load_u16(const std::uint16_t* p) {
  u16x8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
/// Lane masks: all ones where true (what vector comparisons give).
FC_SIMD i8 lt(f8 a, f8 b) { return a < b; }
FC_SIMD i8 eq(f8 a, f8 b) { return a == b; }
FC_SIMD i8 le(i8 a, i8 b) { return a <= b; }
FC_SIMD i8 lt(i8 a, i8 b) { return a < b; }
FC_SIMD i8 ge(i8 a, i8 b) { return a >= b; }
#else
constexpr const char* kHow = "plain loops (this compiler has no vector extensions)";
struct f8 {
  float x[8];
};
struct i8 {
  std::int32_t x[8];
};
#define FC_LANES(expr)                         \
  for (int lane = 0; lane < kLanes; ++lane) expr
FC_SIMD f8 operator+(f8 a, f8 b) { FC_LANES(a.x[lane] += b.x[lane]); return a; }
FC_SIMD f8 operator-(f8 a, f8 b) { FC_LANES(a.x[lane] -= b.x[lane]); return a; }
FC_SIMD f8 operator*(f8 a, f8 b) { FC_LANES(a.x[lane] *= b.x[lane]); return a; }
FC_SIMD f8& operator+=(f8& a, f8 b) { return a = a + b; }
FC_SIMD i8 operator&(i8 a, i8 b) { FC_LANES(a.x[lane] &= b.x[lane]); return a; }
FC_SIMD i8 operator|(i8 a, i8 b) { FC_LANES(a.x[lane] |= b.x[lane]); return a; }
FC_SIMD i8 operator~(i8 a) { FC_LANES(a.x[lane] = ~a.x[lane]); return a; }
FC_SIMD i8 operator+(i8 a, i8 b) { FC_LANES(a.x[lane] += b.x[lane]); return a; }
FC_SIMD i8 operator<<(i8 a, int s) { FC_LANES(a.x[lane] = static_cast<std::int32_t>(static_cast<std::uint32_t>(a.x[lane]) << s)); return a; }
FC_SIMD i8 operator*(i8 a, i8 b) { FC_LANES(a.x[lane] *= b.x[lane]); return a; }

FC_SIMD f8 load(const float* p) { f8 v; std::memcpy(&v, p, sizeof v); return v; }
FC_SIMD i8 load(const int* p) { i8 v; std::memcpy(&v, p, sizeof v); return v; }
FC_SIMD void store(float* p, f8 v) { std::memcpy(p, &v, sizeof v); }
FC_SIMD f8 splat(float x) { f8 v; FC_LANES(v.x[lane] = x); return v; }
FC_SIMD i8 splat(int x) { i8 v; FC_LANES(v.x[lane] = x); return v; }
FC_SIMD i8 bits(f8 x) { i8 v; std::memcpy(&v, &x, sizeof v); return v; }
FC_SIMD f8 from_bits(i8 x) { f8 v; std::memcpy(&v, &x, sizeof v); return v; }
FC_SIMD i8 to_int(f8 x) { i8 v; FC_LANES(v.x[lane] = static_cast<std::int32_t>(x.x[lane])); return v; }
struct u16x8 {
  std::uint16_t x[8];
};
FC_SIMD i8 widen(u16x8 x) { i8 v; FC_LANES(v.x[lane] = x.x[lane]); return v; }
FC_SIMD u16x8 load_u16(const std::uint16_t* p) { u16x8 v; std::memcpy(&v, p, sizeof v); return v; }
FC_SIMD i8 lt(f8 a, f8 b) { i8 v; FC_LANES(v.x[lane] = a.x[lane] < b.x[lane] ? -1 : 0); return v; }
FC_SIMD i8 eq(f8 a, f8 b) { i8 v; FC_LANES(v.x[lane] = a.x[lane] == b.x[lane] ? -1 : 0); return v; }
FC_SIMD i8 le(i8 a, i8 b) { i8 v; FC_LANES(v.x[lane] = a.x[lane] <= b.x[lane] ? -1 : 0); return v; }
FC_SIMD i8 lt(i8 a, i8 b) { i8 v; FC_LANES(v.x[lane] = a.x[lane] < b.x[lane] ? -1 : 0); return v; }
FC_SIMD i8 ge(i8 a, i8 b) { i8 v; FC_LANES(v.x[lane] = a.x[lane] >= b.x[lane] ? -1 : 0); return v; }
#undef FC_LANES
#endif

/// mask ? a : b, lane by lane (mask lanes all ones or all zeros).
FC_SIMD f8 select(i8 mask, f8 a, f8 b) { return from_bits((mask & bits(a)) | (~mask & bits(b))); }
FC_SIMD f8 max(f8 a, f8 b) { return select(lt(b, a), a, b); }
FC_SIMD f8 min(f8 a, f8 b) { return select(lt(a, b), a, b); }

/// Eight fp16 values (bits) to fp32 without branches: exponent and mantissa shifted into place and
/// scaled by 2^112 give normals and subnormals exactly; infinities and NaNs are patched. The same
/// value as numeric::half_to_float for every input (tests/test_portable.cpp).
FC_SIMD f8 half_to_float(u16x8 h) {
  const i8 x = widen(h);
  const i8 em = x & splat(0x7fff);
  const i8 sign = (x & splat(0x8000)) << 16;
  const f8 scaled = from_bits(em << 13) * splat(5.192296858534828e+33f);  // 2^112
  const i8 special = ge(em, splat(0x7c00));                               // inf, NaN
  const i8 out = (special & (splat(0x7f800000) | (em << 13))) | (~special & bits(scaled));
  return from_bits(out | sign);
}
FC_SIMD f8 bf16_to_float(u16x8 h) { return from_bits(widen(h) << 16); }

/// exp(x) on eight lanes: e^x = 2^n · e^r with n = round(x·log2 e) and r = x - n·ln 2 computed in
/// two steps (Cody and Waite: ln 2 = C1 + C2, C1 with few bits so that n·C1 is exact), |r| <= 0.347,
/// e^r by its degree-6 Taylor polynomial (truncation 1.2e-7 relative; with the fp32 roundings the
/// result is within 3e-7 of e^x, tests/test_portable.cpp); exactly 0 below -87 (-inf included), so
/// masked logits contribute nothing; clamped at 88 (the kernel's arguments are <= 0).
FC_SIMD f8 exp(f8 x) {
  const f8 xc = min(max(x, splat(-87.f)), splat(88.f));
  const f8 n = (xc * splat(1.4426950408889634f) + splat(12582912.f)) - splat(12582912.f);  // round: 1.5·2^23
  const f8 r = (xc - n * splat(0.693359375f)) - n * splat(-2.12194440e-4f);
  f8 p = splat(1.f / 720.f);
  p = p * r + splat(1.f / 120.f);
  p = p * r + splat(1.f / 24.f);
  p = p * r + splat(1.f / 6.f);
  p = p * r + splat(0.5f);
  p = p * r + splat(1.f);
  p = p * r + splat(1.f);
  const f8 scale = from_bits((to_int(n) + splat(127)) << 23);
  return select(lt(x, splat(-87.f)), splat(0.f), p * scale);
}

}  // namespace flashcore::portable::simd

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
