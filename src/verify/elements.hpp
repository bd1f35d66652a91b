// Host-side access to single elements of a tensor of any FlashCore dtype, as double, and rounding
// of a value to a dtype (part of the verification library, src/verify). For the oracle, tools and
// tests (validation, input generation), not for kernels.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/numeric.hpp"
#include "flashcore/flashcore.hpp"

namespace flashcore::verify {

/// Element idx (in elements) of a buffer of dtype dt. E4M3: the stored e4m3 value, without the
/// problem's descale (load_input applies it).
inline double load_element(DType dt, const void* buf, std::int64_t idx) {
  const unsigned char* b = static_cast<const unsigned char*>(buf);
  if (dt == DType::E4M3) return numeric::e4m3_to_float(b[idx]);
  if (dt == DType::F32) {
    float f;
    std::memcpy(&f, b + idx * 4, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, b + idx * 2, 2);
  return dt == DType::F16 ? numeric::half_to_float(h) : numeric::bf16_to_float(h);
}

/// Stores v, rounded to nearest even in dt, as element idx.
inline void store_element(DType dt, void* buf, std::int64_t idx, double v) {
  unsigned char* b = static_cast<unsigned char*>(buf);
  const float f = static_cast<float>(v);
  if (dt == DType::E4M3) {
    b[idx] = numeric::float_to_e4m3(f);  // satfinite: beyond +-448 stays +-448
    return;
  }
  if (dt == DType::F32) {
    std::memcpy(b + idx * 4, &f, 4);
    return;
  }
  const std::uint16_t h = dt == DType::F16 ? numeric::float_to_half(f) : numeric::float_to_bf16(f);
  std::memcpy(b + idx * 2, &h, 2);
}

/// v rounded to dt (through fp32, as a kernel writing dt from an fp32 accumulator does).
inline double round_to(DType dt, double v) {
  const float f = static_cast<float>(v);
  switch (dt) {
    case DType::F32: return f;
    case DType::F16: return numeric::half_to_float(numeric::float_to_half(f));
    case DType::BF16: return numeric::bf16_to_float(numeric::float_to_bf16(f));
    case DType::E4M3: return numeric::e4m3_to_float(numeric::float_to_e4m3(f));
  }
  return v;
}

/// The factor an input tensor's stored values stand for: Problem::descale_q/k/v with fp8 inputs
/// (E4M3 element x means descale * x), 1 for every other dtype. which: 'q', 'k' or 'v'.
inline double input_descale(const Problem& p, char which) {
  if (p.dtype != DType::E4M3) return 1.0;
  return which == 'q' ? p.descale_q : which == 'k' ? p.descale_k : p.descale_v;
}

/// Element idx of input tensor `which` ('q', 'k', 'v') of a problem, dequantized: the stored value
/// times input_descale (exact in double: an e4m3 value has 4 significant bits, a float 24).
inline double load_input(const Problem& p, char which, const void* buf, std::int64_t idx) {
  return load_element(p.dtype, buf, idx) * input_descale(p, which);
}

}  // namespace flashcore::verify
