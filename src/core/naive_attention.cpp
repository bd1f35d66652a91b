#include "core/naive_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/elements.hpp"

namespace flashcore::naive {

Result attention(const Problem& p, const void* q, const void* k, const void* v, bool same_precision,
                 int row_stride) {
  const double scale = p.effective_scale();
  const int group = p.heads_q / p.heads_kv;
  const int D = p.head_dim;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Result out;
  out.o.assign(static_cast<std::size_t>(p.batch) * p.seqlen_q * p.heads_q * D, 0.0);
  out.lse.assign(static_cast<std::size_t>(p.batch) * p.heads_q * p.seqlen_q, 0.0);
  // Inputs converted once to contiguous (b, h, s, d) doubles.
  auto to_double = [&](const void* buf, const Strides& st, int seq, int heads) {
    std::vector<double> x(static_cast<std::size_t>(p.batch) * heads * seq * D);
    for (int b = 0; b < p.batch; ++b)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < seq; ++i)
          for (int d = 0; d < D; ++d)
            x[((static_cast<std::size_t>(b) * heads + h) * seq + i) * D + d] =
                numeric::load_element(p.dtype, buf, element_offset(st, b, i, h, d));
    return x;
  };
  const std::vector<double> qd = to_double(q, p.q, p.seqlen_q, p.heads_q);
  const std::vector<double> kd = to_double(k, p.k, p.seqlen_k, p.heads_kv);
  const std::vector<double> vd = to_double(v, p.v, p.seqlen_k, p.heads_kv);
  auto round = [&](double x) { return same_precision ? numeric::round_to(p.dtype, x) : x; };

  std::vector<double> s(p.seqlen_k), acc(D);
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads_q; ++h)
      for (int i = 0; i < p.seqlen_q; ++i) {
        double& lse = out.lse[(static_cast<std::size_t>(b) * p.heads_q + h) * p.seqlen_q + i];
        double* o = &out.o[((static_cast<std::size_t>(b) * p.seqlen_q + i) * p.heads_q + h) * D];
        if (row_stride > 1 && i % row_stride != 0 && i != p.seqlen_q - 1) {
          lse = nan;
          std::fill(o, o + D, nan);
          continue;
        }
        const long long visible = numeric::visible_keys(i, p.seqlen_q, p.seqlen_k, p.causal);
        if (visible == 0) {
          lse = -std::numeric_limits<double>::infinity();
          continue;  // O stays 0
        }
        const int hk = h / group;
        const double* qrow = &qd[((static_cast<std::size_t>(b) * p.heads_q + h) * p.seqlen_q + i) * D];
        const double* kbase = &kd[(static_cast<std::size_t>(b) * p.heads_kv + hk) * p.seqlen_k * D];
        const double* vbase = &vd[(static_cast<std::size_t>(b) * p.heads_kv + hk) * p.seqlen_k * D];
        double mx = -std::numeric_limits<double>::infinity();
        for (long long j = 0; j < visible; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += qrow[d] * kbase[j * D + d];
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (long long j = 0; j < visible; ++j) {
          const double e = std::exp(s[j] - mx);
          sum += e;
          const double pj = round(e);
          for (int d = 0; d < D; ++d) acc[d] += pj * vbase[j * D + d];
        }
        for (int d = 0; d < D; ++d) o[d] = round(acc[d] / sum);
        lse = mx + std::log(sum);
      }
  return out;
}

}  // namespace flashcore::naive
