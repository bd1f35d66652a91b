// Validation of one result of the flashcore tool (see check.hpp).
#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>

#include "backends/reference/reference_api.hpp"
#include "verify/fp8.hpp"
#include "verify/oracle.hpp"
#include "verify/tolerance.hpp"

namespace fcapp {

using flashcore::DType;
using flashcore::Problem;
using flashcore::Strides;
namespace verify = flashcore::verify;

namespace {

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

Oracle compute_oracle(const Problem& p, const void* q, const void* k, const void* v,
                      const verify::HeadParams& heads, const SequenceArrays& seqs, bool naive) {
  Oracle r;
  flashcore::Tensors t{q, k, v, nullptr, nullptr, heads.alibi_slopes, heads.sinks};
  seqs.set(t);
  const verify::Sequences vs = verify::Sequences::of(t);
  const bool sequences = t.cu_seqlens_q || t.cu_seqlens_k || t.seqlens_k || t.block_table;
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (sequences) {
    r.source = "the fp64 oracle of src/verify (verify::attention: plain loops)";
    verify::Result exact = verify::attention(p, q, k, v, verify::Precision::Exact, 1, threads, heads, vs);
    r.o = std::move(exact.o);
    r.lse = std::move(exact.lse);
  } else {
    r.source = "the fp64 reference (reference::run_host_fp64)";
    // The exact answer written contiguously (B, Lq, Hq, D), the layout of verify::o_index.
    Problem contiguous_o = p;
    contiguous_o.o = {static_cast<std::int64_t>(p.seqlen_q) * p.heads_q * p.head_dim,
                      static_cast<std::int64_t>(p.heads_q) * p.head_dim, p.head_dim};
    r.o.assign(static_cast<std::size_t>(p.batch) * p.seqlen_q * p.heads_q * p.head_dim, 0.0);
    r.lse.assign(static_cast<std::size_t>(p.batch) * p.heads_q * p.seqlen_q, 0.0);
    flashcore::reference::run_host_fp64(contiguous_o, t, r.o.data(), r.lse.data());
  }
  if (naive) {
    // A naive computation in the input precision: scores and softmax in fp64, the probabilities
    // rounded to the dtype before P·V, the output rounded to the dtype (plain loops independent
    // of the library's kernels).
    r.naive_err = verify::max_abs_difference(
        verify::attention(p, q, k, v, verify::Precision::Same, 1, sequences ? threads : 1, heads, vs).o, r.o);
  }
  return r;
}

Validation compare(const Problem& p, const SequenceArrays& seqs, const Oracle& ref, const void* q, const void* k,
                   const void* v, const unsigned char* o, const float* lse, flashcore::BackendKind backend) {
  Validation val;
  val.done = true;
  val.oracle = ref.source;
  // fp8 inputs: the fp8 kernel bound on tuned kernels (P rounded to e4m3), the output dtype's
  // reference bound on the Kokkos tiers (exact dequantized inputs, fp32 accumulation) and others.
  const bool fp8 = p.dtype == DType::E4M3;
  const bool fp8_kernel = fp8 && backend == flashcore::BackendKind::Tuned;
  const bool reference = backend == flashcore::BackendKind::Reference || (fp8 && !fp8_kernel);
  const flashcore::tolerance::Bound bound = flashcore::tolerance::reference_bound(p.o_dtype());
  val.bound = fp8_kernel ? "fp8-kernel" : reference ? "reference" : "kernel";
  const double inf = std::numeric_limits<double>::infinity();
  flashcore::Tensors t;
  seqs.set(t);
  const verify::Sequences vs = verify::Sequences::of(t);
  double num2 = 0, den2 = 0;
  for (int b = 0; b < p.batch; ++b)
    for (int i = 0; i < vs.len_q(p, b); ++i)
      for (int h = 0; h < p.heads_q; ++h) {
        const long long row = vs.q_offset(p, p.o, b, i, h);
        for (int d = 0; d < p.head_dim; ++d) {
          const double r = ref.o[verify::o_index(p, b, i, h, d)];
          const double g = load_element(p.o_dtype(), o, row + d);
          double err = std::fabs(g - r);
          if (!std::isfinite(g)) {
            err = inf;
            ++val.o_nonfinite;
          }
          val.max_abs_err = std::max(val.max_abs_err, err);
          num2 += err * err;
          den2 += r * r;
          const bool ok = reference ? bound.ok(g, r) : std::isfinite(g);
          if (!ok && !fp8_kernel && val.o_bad++ == 0) {
            std::ostringstream os;
            os << "O(b=" << b << ", s=" << i << ", h=" << h << ", d=" << d << ") = " << g << ", expected " << r;
            val.first_bad = os.str();
          }
        }
      }
  val.rel_l2_err = den2 > 0 ? std::sqrt(num2 / den2) : std::sqrt(num2);
  if (lse != nullptr) {
    val.have_lse = true;
    for (int b = 0; b < p.batch; ++b)
      for (int h = 0; h < p.heads_q; ++h)
        for (int i = 0; i < vs.len_q(p, b); ++i) {
          // The LSE's layout: (B, Hq, Lq), or (Hq, total_q) with packed Q.
          const std::size_t at = p.total_q > 0 ? static_cast<std::size_t>(h) * p.total_q + t.cu_seqlens_q[b] + i
                                               : verify::lse_index(p, b, h, i);
          const double r = ref.lse[verify::lse_index(p, b, h, i)], g = lse[at];
          double err;
          if (std::isinf(r) && r < 0)
            err = (std::isinf(g) && g < 0) ? 0.0 : inf;
          else
            err = std::isfinite(g) ? std::fabs(g - r) : inf;
          val.lse_max_abs_err = std::max(val.lse_max_abs_err, err);
          const bool ok = reference ? flashcore::tolerance::lse_ok(g, r) : flashcore::tolerance::kernel_lse_ok(g, r);
          if (!ok && !fp8_kernel && val.lse_bad++ == 0 && val.first_bad.empty()) {
            std::ostringstream os;
            os << "LSE(b=" << b << ", h=" << h << ", s=" << i << ") = " << g << ", expected " << r;
            val.first_bad = os.str();
          }
        }
  }
  const std::string lse_text =
      !val.have_lse ? ""
                    : "; LSE |err| <= " +
                          fmt(reference ? flashcore::tolerance::kReferenceLseRel : flashcore::tolerance::kKernelLseRel) +
                          " * max(1, |ref|)";
  if (fp8_kernel) {
    // Per element (2^-4 + keys * 2^-18 + 2 score_err) * max|v| + the output's rounding, the RMS over
    // O, and the LSE within score_err + 1e-4 max(1, |ref|).
    verify::Result exact;
    exact.o = ref.o;
    exact.lse = ref.lse;
    const verify::Fp8Check c = verify::check_fp8_kernel_output(p, q, k, v, exact, o, lse, verify::Sequences::of(t));
    val.o_bad = c.bad;
    val.lse_bad = c.lse_bad;
    val.first_bad = c.first_bad;
    val.bound_text = "fp8 kernel bound of src/verify/tolerance.hpp (fp8_kernel_bound: P rounded to e4m3, scores "
                     "from fp8 tensor cores): |err| <= (2^-4 + keys * 2^-18 + 2 score_err) * max|v| + " +
                     fmt(bound.atol) + " + " + fmt(bound.rtol) + " * |ref| per element, rms err <= " +
                     fmt(flashcore::tolerance::kFp8RmsRel) + " * rms ref, LSE |err| <= score_err + " +
                     fmt(flashcore::tolerance::kKernelLseRel) + " * max(1, |ref|): " + c.summary();
    val.passed = c.passed() && val.o_nonfinite == 0;
  } else if (reference) {
    val.bound_text = "reference bound of src/verify/tolerance.hpp" +
                     std::string(fp8 ? " (of the fp8 inputs' output dtype)" : "") + ": |err| <= " + fmt(bound.atol) +
                     " + " + fmt(bound.rtol) + " * |ref| per element" + lse_text;
    val.passed = val.o_bad == 0 && val.lse_bad == 0;
  } else {
    const double floor = flashcore::tolerance::kernel_floor(p.dtype);
    val.naive_err = ref.naive_err;
    val.threshold = flashcore::tolerance::kernel_bound(p.dtype, ref.naive_err).atol;  // 2 * naive + floor
    val.bound_text = "kernel bound of src/verify/tolerance.hpp: max abs err <= 2 * " + fmt(ref.naive_err) +
                     " (naive same-precision error: P rounded to " + flashcore::to_string(p.dtype) +
                     " before P.V, output rounded) + floor " + fmt(floor) + " = " + fmt(val.threshold) + lse_text;
    val.passed = val.o_nonfinite == 0 && val.max_abs_err <= val.threshold && val.lse_bad == 0;
    if (!val.passed && val.first_bad.empty() && !(val.max_abs_err <= val.threshold))
      val.first_bad = "max abs err " + fmt(val.max_abs_err) + " exceeds " + fmt(val.threshold);
  }
  return val;
}

Validation worst(const Validation& a, const Validation& b) {
  if (!a.done) return b;
  if (!b.done) return a;
  Validation w = a;
  w.max_abs_err = std::max(a.max_abs_err, b.max_abs_err);
  w.rel_l2_err = std::max(a.rel_l2_err, b.rel_l2_err);
  w.lse_max_abs_err = std::max(a.lse_max_abs_err, b.lse_max_abs_err);
  w.o_bad = std::max(a.o_bad, b.o_bad);
  w.o_nonfinite = std::max(a.o_nonfinite, b.o_nonfinite);
  w.lse_bad = std::max(a.lse_bad, b.lse_bad);
  w.passed = a.passed && b.passed;
  if (w.first_bad.empty()) w.first_bad = b.first_bad;
  return w;
}

}  // namespace fcapp
