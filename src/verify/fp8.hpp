// The output check of tuned kernels on fp8 (e4m3) inputs (part of the verification library,
// src/verify): O and LSE against the fp64 oracle (oracle.hpp, on the exactly dequantized inputs)
// with tolerance::fp8_kernel_bound, per element and as an RMS over the tensor. For the GPU tests,
// the tests on the host and `flashcore run --validate`.
//
// Like the rest of src/verify it uses no symbol of libflashcore: the keys a row sees are stated here
// again (oracle.cpp states them too), not taken from the library.
#pragma once

#include <string>

#include "verify/oracle.hpp"
#include "verify/tolerance.hpp"

namespace flashcore::verify {

/// What check_fp8_kernel_output found.
struct Fp8Check {
  long long elements = 0;    // O elements compared (rows the oracle computed)
  long long bad = 0;         // elements beyond their bound (NaN and inf included)
  double max_abs = 0;        // max |o - ref|; +inf when an element is NaN or inf
  double worst_ratio = 0;    // max |o - ref| / its bound: <= 1 passes
  double rms_err = 0;        // rms(o - ref) over the compared elements
  double rms_ref = 0;        // rms(ref) over them
  bool rms_ok = false;       // rms_err <= 0.1 rms_ref + atol (Fp8KernelBound::rms_ok)
  long long lse_bad = 0;     // LSE values beyond Fp8KernelBound::lse_ok
  double lse_worst_ratio = 0;  // max |lse - ref| / its bound: <= 1 passes
  double worst_score_err = 0;  // the largest score_err of a compared row (tolerance.hpp)
  std::string first_bad;     // the first failing element (or the RMS), in words
  bool passed() const { return bad == 0 && rms_ok && lse_bad == 0; }
  /// One line: the counts, the worst ratio and the RMS against its limit.
  std::string summary() const;
};

/// Checks the output of a tuned kernel on an fp8 problem (p.dtype E4M3): o is a host buffer of
/// p.o_dtype() with p.o's strides (packed by seqs.cu_seqlens_q when p.total_q > 0), lse null or the
/// kernel's LSE in the layout of Tensors::lse; q, k, v are the problem's inputs (host, e4m3 bytes,
/// their strides), read for each row's score error bound (|q_i|, the largest |k_j| of its keys) and
/// the largest |v| of its keys; ref is the fp64 oracle's result (verify::attention with
/// Precision::Exact; rows it did not compute, NaN, are skipped). Every element must be within
/// tolerance::fp8_kernel_bound(p.o_dtype()) for its row's key count, largest |v| and score error,
/// every LSE within Fp8KernelBound::lse_ok, and the tensor within its RMS criterion.
Fp8Check check_fp8_kernel_output(const Problem& p, const void* q, const void* k, const void* v, const Result& ref,
                                 const void* o, const float* lse, const Sequences& seqs = {});

}  // namespace flashcore::verify
