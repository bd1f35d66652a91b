// The output check of tuned kernels on fp8 inputs (see fp8.hpp).
#include "verify/fp8.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <vector>

#include "verify/elements.hpp"

namespace flashcore::verify {

namespace {

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(3);
  os << v;
  return os.str();
}

}  // namespace

std::string Fp8Check::summary() const {
  std::ostringstream os;
  os << elements << " elements, " << bad << " beyond the per-element bound (worst " << fmt(worst_ratio)
     << " of it), max abs err " << fmt(max_abs) << ", rms err " << fmt(rms_err) << " vs " << fmt(tolerance::kFp8RmsRel)
     << " x rms ref " << fmt(rms_ref) << (rms_ok ? " (ok)" : " (too large)") << ", " << lse_bad
     << " LSE beyond their bound (worst " << fmt(lse_worst_ratio) << " of it; largest score error bound "
     << fmt(worst_score_err) << ")";
  return os.str();
}

Fp8Check check_fp8_kernel_output(const Problem& p, const void* q, const void* k, const void* v, const Result& ref,
                                 const void* o, const float* lse, const Sequences& seqs) {
  const tolerance::Fp8KernelBound bound = tolerance::fp8_kernel_bound(p.o_dtype());
  const double inf = std::numeric_limits<double>::infinity();
  const int D = p.head_dim, group = p.heads_q / p.heads_kv;
  const double scale = softmax_scale(p);  // the scores of the dequantized inputs: scale * q.k
  auto norm = [&](char which, const void* buf, long long row) {  // 2-norm of a dequantized row
    double s = 0;
    for (int d = 0; d < D; ++d) {
      const double x = load_input(p, which, buf, row + d);
      s += x * x;
    }
    return std::sqrt(s);
  };
  Fp8Check c;
  double err2 = 0, ref2 = 0;
  std::vector<double> v_max, k_norm;  // max_d |v_jd| and |k_j| of each key of one (b, kv head)
  for (int b = 0; b < p.batch; ++b) {
    const int len_q = seqs.len_q(p, b), len_k = seqs.len_k(p, b);
    for (int hk = 0; hk < p.heads_kv; ++hk) {
      v_max.assign(static_cast<std::size_t>(len_k), 0.0);
      k_norm.assign(static_cast<std::size_t>(len_k), 0.0);
      for (int j = 0; j < len_k; ++j) {
        const long long row = seqs.kv_offset(p, p.v, b, j, hk);
        double m = 0;
        for (int d = 0; d < D; ++d) m = std::max(m, std::fabs(load_input(p, 'v', v, row + d)));
        v_max[j] = m;
        k_norm[j] = norm('k', k, seqs.kv_offset(p, p.k, b, j, hk));
      }
      for (int h = hk * group; h < (hk + 1) * group; ++h)
        for (int i = 0; i < len_q; ++i) {
          if (std::isnan(ref.lse[lse_index(p, b, h, i)])) continue;  // a row the oracle did not compute
          long long n_keys = 0;  // the keys row i sees (sees(), the oracle's statement of the masks)
          double vmax = 0, kmax = 0;
          for (int j = 0; j < len_k; ++j)
            if (sees(p, len_q, len_k, i, j)) ++n_keys, vmax = std::max(vmax, v_max[j]), kmax = std::max(kmax, k_norm[j]);
          const double score_err =
              tolerance::kFp8ScoreRel * scale * norm('q', q, seqs.q_offset(p, p.q, b, i, h)) * kmax;
          c.worst_score_err = std::max(c.worst_score_err, score_err);
          const long long row = seqs.q_offset(p, p.o, b, i, h);
          for (int d = 0; d < D; ++d) {
            const double r = ref.o[o_index(p, b, i, h, d)];
            if (std::isnan(r)) continue;
            const double g = load_element(p.o_dtype(), o, row + d);
            const double err = std::isfinite(g) ? std::fabs(g - r) : inf;
            const double lim = bound.bound(r, n_keys, vmax, score_err);
            ++c.elements;
            err2 += err * err;
            ref2 += r * r;
            c.max_abs = std::max(c.max_abs, err);
            c.worst_ratio = std::max(c.worst_ratio, err / lim);
            if (!(err <= lim) && c.bad++ == 0) {
              std::ostringstream os;
              os << "O(b=" << b << ",i=" << i << ",h=" << h << ",d=" << d << ") = " << g << ", expected " << r
                 << " (bound " << fmt(lim) << ": " << n_keys << " keys, max |v| " << fmt(vmax) << ")";
              c.first_bad = os.str();
            }
          }
          if (lse != nullptr) {
            const std::size_t at = seqs.lse_offset(p, b, h, i);
            const double r = ref.lse[lse_index(p, b, h, i)], g = lse[at];
            if (!std::isinf(r)) {
              const double lim = score_err + tolerance::kKernelLseRel * std::max(1.0, std::fabs(r));
              const double ratio = std::isfinite(g) ? std::fabs(g - r) / lim : inf;
              c.lse_worst_ratio = std::max(c.lse_worst_ratio, ratio);
            }
            if (!tolerance::Fp8KernelBound::lse_ok(g, r, score_err) && c.lse_bad++ == 0 && c.first_bad.empty()) {
              std::ostringstream os;
              os << "LSE(b=" << b << ",h=" << h << ",i=" << i << ") = " << lse[at] << ", expected " << r;
              c.first_bad = os.str();
            }
          }
        }
    }
  }
  if (c.elements > 0) {
    c.rms_err = std::sqrt(err2 / static_cast<double>(c.elements));
    c.rms_ref = std::sqrt(ref2 / static_cast<double>(c.elements));
  }
  c.rms_ok = bound.rms_ok(c.rms_err, c.rms_ref);  // false when an element is NaN (rms_err inf or NaN)
  if (!c.rms_ok && c.first_bad.empty())
    c.first_bad = "rms err " + fmt(c.rms_err) + " exceeds " + fmt(tolerance::kFp8RmsRel) + " x rms ref " +
                  fmt(c.rms_ref) + " + " + fmt(bound.output.atol);
  return c;
}

}  // namespace flashcore::verify
