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
// fp8 (e4m3) inputs: outputs are of Problem::o_dtype() (fp16 or bf16), and the bounds above are
// asked for that dtype. The reference (exact dequantized inputs, fp32 accumulation) keeps the
// reference bound of the output dtype; tuned kernels that round P to e4m3 have their own bound,
// fixed and stated (fp8_kernel_bound), not measured per case.
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

/// dt: the dtype of the output compared (Problem::o_dtype()). E4M3 is never an output: {0, 0}, so a
/// caller that passes the input dtype of an fp8 problem by mistake fails every element.
inline Bound reference_bound(DType dt) {
  switch (dt) {
    case DType::F32: return {2e-5, 1e-5};
    case DType::F16: return {2e-5, 1.0 / 2048};
    case DType::BF16: return {2e-5, 1.0 / 256};
    case DType::E4M3: break;
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
    case DType::E4M3: break;  // fp8 inputs have fp8_kernel_bound
  }
  return 0;
}
inline Bound kernel_bound(DType dt, double naive_max_abs_err) { return {2 * naive_max_abs_err + kernel_floor(dt), 0.0}; }


/// The reference's fp32 logits on inputs with very large scores. reference_bound assumes moderate logits:
/// the reference computes s = q·k in fp32, whose rounding error grows with the terms' magnitude (typically
/// 2^-24 · sqrt(D) · |s| for a D-term sum whose terms share a sign: a random walk of roundings, not a
/// worst case), and a logit error δ_j moves the output by Σ_j p_j δ_j (v_j - o), |v_j - o| <= 2 max|V|:
///   |o - ref| grows by up to  2 · sqrt(D) · 2^-24 · max|s · scale| · max|V|,
/// where only the logits that carry weight count (p_j = exp(s_j·scale - lse) is small unless s_j·scale is
/// within a few units of the row's LSE), so max|s · scale| may be taken as the largest |LSE| of a row.
/// Negligible on moderate scores; ScoresGrowingAcrossKeyTiles (tests/gpu), whose scores climb to ~75
/// (natural log), adds it to the Kokkos tiers' atol: there the Kokkos reference's error reached 1.008 times
/// reference_bound(fp16) on an output of 0.0047 (GPU run 58a, H100; perf/dev/NOTES.md, fifty-eighth session).
inline double reference_logit_atol(int head_dim, double max_abs_logit, double max_abs_v) {
  return 2.0 * std::sqrt(double(head_dim)) * std::ldexp(1.0, -24) * max_abs_logit * max_abs_v;
}

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

/// Tuned kernels on fp8 (e4m3) inputs that round the softmax probabilities P to e4m3 before P·V (the
/// fp8 tensor-core product; the CUDA fp8 kernel scales P by 256 first, so that P >= 2^-14 stays in
/// e4m3's normal range, 256 * 2^-14 = 2^-6), against the exact attention of the dequantized inputs.
/// Per output element of a row that sees n_keys keys, with max_abs_v the largest |v| (dequantized,
/// over the head dims) of the keys it sees:
///   |o - ref| <= (2^-4 + n_keys * 2^-18) * max_abs_v + atol + rtol * |ref|
/// (atol, rtol: reference_bound(out dtype): fp32 accumulation and the output's rounding). Why: o =
/// sum_j p~_j v_j / l with p_j = exp(s_j - m) <= 1 (m a running max <= the row's max; its rescaling
/// factors are <= 1) and l >= 1 (the max's own term is 1). RNE to 3 mantissa bits errs by at most
/// half an ulp, 2^-4 relative, in the normal range; below it (256 p < 2^-6) by at most half the
/// subnormal step, 2^-10 in units of 256 p, i.e. 2^-18 absolute in p. So sum_j |p~_j - p_j| |v_j| / l
/// <= (2^-4 sum_j p_j + n_keys 2^-18) max|v| / l <= (2^-4 + n_keys 2^-18) max|v|.
/// That bound is reached only when every rounding errs the same way; random inputs err by about
/// 2^-4 / sqrt(3) ~ 0.036 relative (an RMS over many roundings), so a tensor also passes only with
///   rms(o - ref) <= 0.1 * rms(ref) + atol
/// over its compared elements: a wrong pairing of P and V (a permutation) errs by ~1.4 (sqrt 2: two
/// unrelated outputs of the same scale), a wrong descale by its factor.
/// The scores: fp8 tensor cores do not keep fp32's 24 bits while they add the exact e4m3 products
/// (Hopper's keep about 14, as the DeepSeek-V3 report measured on H800s; on an H100 here the LSE of
/// the fp8 kernel erred by up to 3e-4 on rows whose scale * |q_i| |k_j| is about 8 to 11, three times
/// kernel_lse_ok's 1e-4). With at most 4 truncating additions per score (k-steps of 32 up to
/// D = 128), each off by at most 2^-13 of a partial sum's magnitude, and every partial sum at most
/// sum_d |q_d k_d| <= |q_i| |k_j| (Cauchy-Schwarz, 2-norms of the dequantized rows), a score errs by
/// at most
///   score_err = 2^-11 * scale * descale_q * descale_k * |q_i| * max_j |k_j|   (j: the keys row i sees)
/// The LSE, a smooth maximum of the scores (its gradient is the softmax, summing to <= 1), errs by
/// at most score_err more than kernel_lse_ok allows: |lse - ref| <= score_err + 1e-4 max(1, |ref|).
/// O's weights move by at most 2 score_err in total (|d softmax|_1 <= 2 max |ds|), so the element
/// bound above gains 2 score_err max|v|. verify::check_fp8_kernel_output (src/verify/fp8.hpp) applies
/// all of it to a whole output. Measured on an H100 (tests/gpu Fp8Cases, cuda-flash and
/// cuda-flash-hopper, 48 cases each, two seeds): elements up to 0.32 of their bound, LSE up to 0.093
/// of theirs, rms(o - ref) up to 0.026 rms(ref).
constexpr double kFp8ProbabilityRel = 1.0 / 16;      // 2^-4: half an ulp of 3 mantissa bits, relative
constexpr double kFp8ProbabilityAbs = 1.0 / 262144;  // 2^-18: half the e4m3 subnormal step 2^-9, / 256
constexpr double kFp8RmsRel = 0.1;
constexpr double kFp8ScoreRel = 1.0 / 2048;          // 2^-11: 4 additions at 2^-13 of the magnitude each
struct Fp8KernelBound {
  Bound output;  // reference_bound of the output dtype
  /// The absolute part of an element's bound: (2^-4 + n_keys 2^-18 + 2 score_err) max_abs_v + atol.
  double atol(long long n_keys, double max_abs_v, double score_err = 0) const {
    return (kFp8ProbabilityRel + static_cast<double>(n_keys) * kFp8ProbabilityAbs + 2 * score_err) * max_abs_v +
           output.atol;
  }
  double bound(double ref, long long n_keys, double max_abs_v, double score_err = 0) const {
    return atol(n_keys, max_abs_v, score_err) + output.rtol * std::fabs(ref);
  }
  bool ok(double got, double ref, long long n_keys, double max_abs_v, double score_err = 0) const {
    return std::fabs(got - ref) <= bound(ref, n_keys, max_abs_v, score_err);  // false for NaN
  }
  /// The tensor's criterion: rms(o - ref) <= 0.1 rms(ref) + atol (the atol: all-zero outputs, rows
  /// that see no key).
  bool rms_ok(double rms_err, double rms_ref) const { return rms_err <= kFp8RmsRel * rms_ref + output.atol; }
  /// The LSE of a row whose scores err by at most score_err: -inf exactly where ref is -inf.
  static bool lse_ok(double got, double ref, double score_err) {
    if (std::isinf(ref) && ref < 0) return std::isinf(got) && got < 0;
    return std::fabs(got - ref) <= score_err + kKernelLseRel * std::max(1.0, std::fabs(ref));
  }
};
/// out_dtype: the output's dtype (Problem::o_dtype(): fp16 or bf16).
inline Fp8KernelBound fp8_kernel_bound(DType out_dtype) { return {reference_bound(out_dtype)}; }

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
    case DType::E4M3: break;  // never an output dtype
  }
  return {0, 0};
}

}  // namespace flashcore::tolerance
