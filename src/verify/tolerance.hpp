// Error bounds FlashCore promises against the exact (fp64) attention of the same rounded inputs
// (part of the verification library, src/verify). Used by the tests, by `flashcore run --validate`
// and by flashcore_bench's output check; see README "Accuracy".
//
// An element o passes when |o - ref| <= atol + rtol * |ref|.
//   fp32: rtol 1e-5, atol 2e-5. fp32 accumulation over up to ~10^5 keys with the online softmax
//         keeps the error at a few fp32 ulps times sqrt(keys); 1e-5 is ~80 ulps.
//   fp16: rtol 2^-11 is half an fp16 ulp relative to the value, the error of a correctly rounded
//         result; the reference adds fp32 accumulation error (< 1e-6 absolute for |V| <= 1,
//         covered by atol 2e-5, which also covers the subnormal range below 2^-14).
//   bf16: rtol 2^-8, half a bf16 ulp; atol 2e-5 as for fp16.
// Tuned kernels round P to the input precision before P·V, as every fast implementation does;
// their bound ("kernel") is twice the error of a naive same-precision computation plus a floor,
// measured per case (verify::attention with Precision::Same, src/verify/oracle.hpp), not a fixed
// number.
// LSE (fp32 always): |lse - ref| <= 2e-5 * max(1, |ref|); -inf must be exactly -inf.
#pragma once

#include <algorithm>
#include <cmath>

#include "flashcore/flashcore.hpp"

namespace flashcore::tolerance {

struct Bound {
  double atol;
  double rtol;
  bool ok(double got, double ref) const {
    const double err = std::fabs(got - ref);
    return err <= atol + rtol * std::fabs(ref);  // false for NaN
  }
};

inline Bound reference_bound(DType dt) {
  switch (dt) {
    case DType::F32: return {2e-5, 1e-5};
    case DType::F16: return {2e-5, 1.0 / 2048};
    case DType::BF16: return {2e-5, 1.0 / 256};
  }
  return {0, 0};
}

/// Bound of a tuned kernel: twice the max abs error of a naive same-precision computation of
/// the same case (P rounded to the input type before P·V, output rounded) plus a floor for
/// cases where that error is tiny: fp16 1e-4, bf16 1e-3 (about a quarter of an ulp at 1),
/// fp32 1e-5. Applied as an absolute bound to every element.
inline double kernel_floor(DType dt) {
  switch (dt) {
    case DType::F32: return 1e-5;
    case DType::F16: return 1e-4;
    case DType::BF16: return 1e-3;
  }
  return 0;
}
inline Bound kernel_bound(DType dt, double naive_max_abs_err) { return {2 * naive_max_abs_err + kernel_floor(dt), 0.0}; }

/// Ring attention (context_parallel.hpp) against the same oracle: the bound of the backend that
/// computed the partial attentions, plus one rounding of each partial output to the dtype before
/// the fp32 merge. A partial output is a convex combination of V rows, so that rounding is at most
/// rtol(dtype) * max|V| per element, and the merge weights sum to 1:
///   |o - ref| <= partial.atol + rtol(dtype) * max|V| + partial.rtol * |ref|
inline Bound ring_bound(DType dt, Bound partial, double max_abs_v) {
  return {partial.atol + reference_bound(dt).rtol * max_abs_v, partial.rtol};
}

/// Gradients (run_backward) of the reference against the exact (fp64) gradients of the same inputs,
/// per tensor (dQ, dK, dV) with scale = max |ref| over the tensor:
///   |g - ref| <= atol + rtol * |ref| + rtol * scale     (atol, rtol: reference_bound(dtype))
/// The exact gradients take delta_i = dO_i·O_i from the O the backward is given (the forward's output
/// rounded to the dtype), as every backward does. rtol * |ref| is the output's rounding. The absolute
/// term covers fp32 sums whose terms cancel (dx_ij = P_ij (dO_i·v_j - delta_i) subtracts nearly equal
/// numbers), so an element's error follows the tensor's scale, not its own value. Measured over 12
/// seeds of tests/test_backward.cpp (every dtype, variant and layout): below 0.25 * rtol * scale
/// beyond the rounding term, so 1 * rtol * scale leaves a margin of 4.
inline Bound reference_gradient_bound(DType dt, double scale) {
  const Bound b = reference_bound(dt);
  return {b.atol + b.rtol * scale, b.rtol};
}
/// dsinks (fp32 values summed over every row) of the reference: the same form, with the scale the
/// largest |dsink|.
inline Bound reference_sinks_bound(DType dt, double scale) { return reference_gradient_bound(dt, scale); }
/// Gradients of a tuned kernel, per tensor: twice the max abs error of the naive same-precision
/// backward (verify::attention_backward with Precision::Same: P and dS rounded to the dtype before
/// their products, O rounded before delta, outputs rounded) plus kernel_floor(dtype) * scale.
inline Bound kernel_gradient_bound(DType dt, double naive_max_abs_err, double scale) {
  return {2 * naive_max_abs_err + kernel_floor(dt) * scale, 0.0};
}

/// LSE bound of the reference: |lse - ref| <= rel * max(1, |ref|); -inf only where ref is -inf.
constexpr double kReferenceLseRel = 2e-5;
/// LSE of a tuned kernel: scores in fp32 from the same inputs, exp2-based softmax.
constexpr double kKernelLseRel = 1e-4;

inline bool lse_ok(double got, double ref, double rel = kReferenceLseRel) {
  if (std::isinf(ref) && ref < 0) return std::isinf(got) && got < 0;
  return std::fabs(got - ref) <= rel * std::max(1.0, std::fabs(ref));
}
inline bool kernel_lse_ok(double got, double ref) { return lse_ok(got, ref, kKernelLseRel); }

/// Bound of flashcore_bench's output check (perf/bench_support.cpp, sampled rows of every
/// benchmarked case): it catches broken kernels, not 1-ulp drifts (the tests check accuracy). A
/// correct kernel that rounds P to the input precision before P·V and rounds O stays within (half
/// an ulp of P) * max|V| + (half an ulp of O) * |O|, with |V| <= 1; twice that as margin. fp32
/// leaves room for TF32-style tuned kernels.
inline Bound bench_check_bound(DType dt) {
  switch (dt) {
    case DType::F32: return {2e-4, 1e-3};
    case DType::F16: return {1e-3, 4e-3};
    case DType::BF16: return {8e-3, 1.6e-2};
  }
  return {0, 0};
}

}  // namespace flashcore::tolerance
