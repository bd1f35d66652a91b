// Validation of one result of the flashcore tool against the library's fp64 oracle
// (reference::run_host_fp64), with the bounds of src/verify/tolerance.hpp.
#pragma once

#include <string>
#include <vector>

#include "flashcore/flashcore.hpp"
#include "verify/elements.hpp"
#include "verify/oracle.hpp"

namespace fcapp {

using flashcore::verify::load_element;

/// The sequence arrays of a call (flashcore.hpp, "Sequences") in host memory; an empty one is off.
struct SequenceArrays {
  std::vector<int> cu_seqlens_q, cu_seqlens_k, seqlens_k, block_table;
  /// The tensors' sequence fields pointing at these arrays (null for the empty ones).
  void set(flashcore::Tensors& t) const {
    auto ptr = [](const std::vector<int>& a) { return a.empty() ? nullptr : a.data(); };
    t.cu_seqlens_q = ptr(cu_seqlens_q);
    t.cu_seqlens_k = ptr(cu_seqlens_k);
    t.seqlens_k = ptr(seqlens_k);
    t.block_table = ptr(block_table);
  }
};

/// The exact answer for one problem and its inputs, computed once per invocation, in logical order
/// whatever the tensors' layout (rows past a sequence's length NaN).
struct Oracle {
  std::vector<double> o;    // (B, Lq, Hq, D): flashcore::verify::o_index
  std::vector<double> lse;  // (B, Hq, Lq): flashcore::verify::lse_index
  double naive_err = 0;     // max abs error of the naive same-precision computation vs o
  std::string source;       // what computed it, for the reports
};

/// Runs the fp64 oracle; when naive is true also the naive same-precision computation
/// (P rounded to the input dtype before P·V, output rounded: verify::attention with
/// Precision::Same), for the kernel bound. Problems without sequence arrays use the Kokkos
/// reference's fp64 mode (reference::run_host_fp64, OpenMP); with them, the independent plain-loop
/// oracle of src/verify (verify::attention on every core), which states the layouts on its own.
Oracle compute_oracle(const flashcore::Problem& p, const void* q, const void* k, const void* v,
                      const flashcore::verify::HeadParams& heads, const SequenceArrays& seqs, bool naive);

struct Validation {
  bool done = false;
  std::string oracle;       // what computed the exact answer (Oracle::source)
  std::string bound;        // "reference", "kernel" or "fp8-kernel"
  std::string bound_text;   // readable description of the bound, with its numbers
  double max_abs_err = 0;   // over O; +inf when an element is NaN/inf
  double rel_l2_err = 0;    // ||O - ref|| / ||ref||
  double lse_max_abs_err = 0;
  double naive_err = -1;    // kernel bound only
  double threshold = -1;    // kernel bound only: 2 * naive_err + floor
  long long o_bad = 0;      // elements beyond the bound (reference bound) or non-finite
  long long o_nonfinite = 0;
  long long lse_bad = 0;
  bool have_lse = false;
  bool passed = false;
  std::string first_bad;   // description of the first failing element, if any
};

/// Compares O (problem's o strides and o_dtype(); packed by cu_seqlens_q when the problem says so) and
/// LSE (may be null; (B, Hq, Lq), or (Hq, total_q) packed) with the oracle, over every sequence's rows.
/// The reference backends (BackendKind::Reference) get tolerance::reference_bound; others the kernel
/// bound max_abs_err <= 2 * naive_err + floor (tolerance::kernel_bound: floor 1e-4 fp16, 1e-3 bf16,
/// 1e-5 fp32) and tolerance::kernel_lse_ok for LSE. fp8 (e4m3) inputs: tuned backends
/// (BackendKind::Tuned) the fp8 kernel bound (tolerance::fp8_kernel_bound through
/// verify::check_fp8_kernel_output, which reads Q, K and V), the others the reference bound of the
/// output dtype. q, k, v: the problem's inputs (host).
Validation compare(const flashcore::Problem& p, const SequenceArrays& seqs, const Oracle& ref, const void* q,
                   const void* k, const void* v, const unsigned char* o, const float* lse,
                   flashcore::BackendKind backend);

/// Worst of two validations of the same problem (e.g. the first and the last call).
Validation worst(const Validation& a, const Validation& b);

}  // namespace fcapp
