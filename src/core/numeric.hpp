// fp16 / bf16 / fp8 e4m3 <-> fp32 conversions on raw bits, usable on host and device.
//
// FlashCore stores fp16 and bf16 tensors as 16-bit patterns and converts them itself, so the
// same code works with every Kokkos version (Kokkos 3.4 has no bhalf_t) and with no CUDA header.
// Conversions to 16 bits round to nearest, ties to even, as the hardware conversions do; values
// beyond the range become infinity, NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define FC_HOST_DEVICE __host__ __device__
#else
#define FC_HOST_DEVICE
#endif

namespace flashcore::numeric {

FC_HOST_DEVICE inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

FC_HOST_DEVICE inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

FC_HOST_DEVICE inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    // zero or subnormal: man * 2^-24, exact in fp32
    const float f = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (man << 13));  // inf / NaN
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

/// The same value as half_to_float for every input, without a branch: exponent and mantissa
/// shifted into place and scaled by 2^112 give normals and subnormals exactly (with subnormal fp32
/// arithmetic, the C++ and CUDA default); infinities and NaNs are patched by a select.
FC_HOST_DEVICE inline float half_to_float_branchless(std::uint16_t h) {
  const std::uint32_t em = h & 0x7fffu, sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const float scaled = bits_float(em << 13) * 5.192296858534828e+33f;  // 2^112
  const std::uint32_t out = em >= 0x7c00u ? 0x7f800000u | (em << 13) : float_bits(scaled);
  return bits_float(out | sign);
}

FC_HOST_DEVICE inline std::uint16_t float_to_half(float f) {
  const std::uint32_t x = float_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;  // NaN (quiet)
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to infinity
  if (ax >= 0x38800000u) {
    // normal: rebias the exponent (127 -> 15) and round 23 mantissa bits to 10
    const std::uint32_t r = ax - (112u << 23);
    return sign | static_cast<std::uint16_t>((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
  }
  if (ax < 0x33000000u) return sign;  // below 2^-25: rounds to zero (2^-25 itself ties to 0)
  // subnormal result: round (1.m * 2^(e-127)) / 2^-24 = M * 2^(e-126), M the 24-bit mantissa
  const std::uint32_t e = ax >> 23;
  const std::uint32_t m = (ax & 0x7fffffu) | 0x800000u;
  const std::uint32_t s = 126u - e;  // 14 .. 24
  std::uint32_t q = m >> s;
  const std::uint32_t rem = m & ((1u << s) - 1u);
  const std::uint32_t half = 1u << (s - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;  // may carry into the smallest normal
  return sign | static_cast<std::uint16_t>(q);
}

FC_HOST_DEVICE inline float bf16_to_float(std::uint16_t b) {
  return bits_float(static_cast<std::uint32_t>(b) << 16);
}

FC_HOST_DEVICE inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // NaN
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// OCP FP8 e4m3 ("e4m3fn"): sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities, S.1111.111
/// is NaN; largest finite 448, smallest normal 2^-6, smallest subnormal 2^-9. Every value is exact in fp32.
FC_HOST_DEVICE inline float e4m3_to_float(std::uint8_t x) {
  const std::uint32_t sign = static_cast<std::uint32_t>(x & 0x80u) << 24;
  const std::uint32_t exp = (x >> 3) & 0xfu, man = x & 0x7u;
  if (exp == 0xfu && man == 0x7u) return bits_float(sign | 0x7fc00000u);  // NaN
  if (exp == 0) {  // zero or subnormal: man * 2^-9
    const float f = static_cast<float>(man) * 0.001953125f;
    return sign ? -f : f;
  }
  return bits_float(sign | ((exp + 120u) << 23) | (man << 20));
}

/// fp32 -> e4m3, round to nearest, ties to even, saturating: finite values beyond 448 (and infinities)
/// become +-448 (the "satfinite" conversion of the hardware, cvt.rn.satfinite.e4m3x2.f32); NaN stays NaN.
FC_HOST_DEVICE inline std::uint8_t float_to_e4m3(float f) {
  const std::uint32_t x = float_bits(f);
  const std::uint8_t sign = static_cast<std::uint8_t>((x >> 24) & 0x80u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7fu;     // NaN
  if (ax >= 0x43e80000u) return sign | 0x7eu;    // >= 464 (448 + half a step) and inf: saturate to 448
  if (ax >= 0x3c800000u) {                       // >= 2^-6: normal, rebias (127 -> 7), 23 -> 3 mantissa bits
    const std::uint32_t r = ax - (120u << 23);
    const std::uint32_t q = (r + 0x7ffffu + ((r >> 20) & 1u)) >> 20;
    return sign | static_cast<std::uint8_t>(q > 0x7eu ? 0x7eu : q);  // 448 < |f| < 464 rounds down to 448
  }
  if (ax < 0x3a800000u) return sign;  // below 2^-10 (half the smallest subnormal; 2^-10 itself ties to 0)
  // subnormal result: round |f| / 2^-9 to an integer 0..8 (8 = the smallest normal, 0x08)
  const std::uint32_t e = ax >> 23;
  const std::uint32_t m = (ax & 0x7fffffu) | 0x800000u;
  const std::uint32_t s = 141u - e;  // |f| / 2^-9 = m * 2^(e - 127 - 23 + 9): shift right by 141 - e (18 .. 21)
  std::uint32_t q = m >> s;
  const std::uint32_t rem = m & ((1u << s) - 1u), half = 1u << (s - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return sign | static_cast<std::uint8_t>(q);
}

/// Keys [begin, end) query row i sees: j < seqlen_k, and with a bound on a side (window_left /
/// window_right >= 0; causal means window_right 0) i + diag - window_left <= j <= i + diag +
/// window_right, diag = seqlen_k - seqlen_q (bottom-right alignment). begin == end when none.
struct KeyRange {
  int begin, end;
};
FC_HOST_DEVICE inline KeyRange visible_keys(int i, int seqlen_q, int seqlen_k, bool causal, int window_left = -1,
                                            int window_right = -1) {
  const long long diag_key = static_cast<long long>(i) + seqlen_k - seqlen_q;
  long long lo = 0, hi = seqlen_k;  // [lo, hi)
  if (window_left >= 0 && diag_key - window_left > lo) lo = diag_key - window_left;
  const long long right = causal ? 0 : window_right;
  if (right >= 0 && diag_key + right + 1 < hi) hi = diag_key + right + 1;
  if (hi <= lo) return {0, 0};
  return {static_cast<int>(lo), static_cast<int>(hi)};
}

/// Query rows [begin, end) that see key j: the inverse of visible_keys (row i sees key j iff
/// visible_keys(i, ...) contains j), for a sequence of seqlen_q queries and seqlen_k keys. From
/// j <= i + diag + right (right = 0 when causal, else window_right) and j >= i + diag - window_left.
FC_HOST_DEVICE inline KeyRange visible_queries(int j, int seqlen_q, int seqlen_k, bool causal, int window_left = -1,
                                               int window_right = -1) {
  if (j < 0 || j >= seqlen_k) return {0, 0};
  const long long diag = static_cast<long long>(seqlen_k) - seqlen_q;  // row i's diagonal key is i + diag
  long long lo = 0, hi = seqlen_q;                                     // [lo, hi)
  const long long right = causal ? 0 : window_right;
  if (right >= 0 && j - diag - right > lo) lo = j - diag - right;
  if (window_left >= 0 && j - diag + window_left + 1 < hi) hi = j - diag + window_left + 1;
  if (hi <= lo) return {0, 0};
  return {static_cast<int>(lo), static_cast<int>(hi)};
}

// Element access by storage type. The reference kernel is templated on these tags.
struct F32Elem {
  using storage = float;
  FC_HOST_DEVICE static float load(const storage* p, std::int64_t i) { return p[i]; }
  FC_HOST_DEVICE static void store(storage* p, std::int64_t i, double v) { p[i] = static_cast<float>(v); }
};
struct F16Elem {
  using storage = std::uint16_t;
  FC_HOST_DEVICE static float load(const storage* p, std::int64_t i) { return half_to_float(p[i]); }
  FC_HOST_DEVICE static void store(storage* p, std::int64_t i, double v) {
    p[i] = float_to_half(static_cast<float>(v));
  }
};
struct BF16Elem {
  using storage = std::uint16_t;
  FC_HOST_DEVICE static float load(const storage* p, std::int64_t i) { return bf16_to_float(p[i]); }
  FC_HOST_DEVICE static void store(storage* p, std::int64_t i, double v) {
    p[i] = float_to_bf16(static_cast<float>(v));
  }
};
// FP8 e4m3 inputs (flashcore.hpp, DType::E4M3): the stored value; the per-tensor descale factors
// are applied by the kernels (into the softmax scale and O's normalisation), not here.
struct E4M3Elem {
  using storage = std::uint8_t;
  FC_HOST_DEVICE static float load(const storage* p, std::int64_t i) { return e4m3_to_float(p[i]); }
  FC_HOST_DEVICE static void store(storage* p, std::int64_t i, double v) { p[i] = float_to_e4m3(static_cast<float>(v)); }
};
// Output element of the fp64 oracle mode: results kept in double, unrounded.
struct F64Elem {
  using storage = double;
  FC_HOST_DEVICE static double load(const storage* p, std::int64_t i) { return p[i]; }
  FC_HOST_DEVICE static void store(storage* p, std::int64_t i, double v) { p[i] = v; }
};

}  // namespace flashcore::numeric
