// The fp64 backward oracle (see backward.hpp): one (batch, kv head) group at a time per thread, its
// keys and values converted to double once, then one query row at a time in plain loops.
#include "verify/backward.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <sstream>
#include <thread>

#include "verify/elements.hpp"

namespace flashcore::verify {

namespace {

// Rows j < n of one head of K or V as doubles.
std::vector<double> load_rows(const Problem& p, const Sequences& sq, const void* buf, const Strides& s, int b, int hk,
                              int n) {
  std::vector<double> out(static_cast<std::size_t>(n) * p.head_dim);
  for (int j = 0; j < n; ++j) {
    const long long row = sq.kv_offset(p, s, b, j, hk);
    for (int d = 0; d < p.head_dim; ++d) out[static_cast<std::size_t>(j) * p.head_dim + d] = load_element(p.dtype, buf, row + d);
  }
  return out;
}


// The gradients of one (batch b, kv head hk) group: dQ of its query heads' rows, dK and dV of its keys,
// and each head's dsink share from this batch entry (dsink[h - first head]).
void one_group(const Problem& p, const Sequences& sq, const void* q, const void* k, const void* v, const void* o,
               const void* d_o, bool same, const HeadParams& hp, int b, int hk, Gradients& g, std::vector<double>& dsink) {
  const int D = p.head_dim, group = p.heads_q / p.heads_kv;
  const int len_q = sq.len_q(p, b), len_k = sq.len_k(p, b);
  const double scale = softmax_scale(p), inf = std::numeric_limits<double>::infinity();
  auto round = [&](double x) { return same ? round_to(p.dtype, x) : x; };
  const std::vector<double> kd = load_rows(p, sq, k, p.k, b, hk, len_k), vd = load_rows(p, sq, v, p.v, b, hk, len_k);
  std::vector<double> dk(kd.size(), 0.0), dv(vd.size(), 0.0);
  std::vector<double> qi(D), doi(D), oi(D), dqi(D), x(len_k), dxdot(len_k), prob(len_k);
  for (int h = hk * group; h < (hk + 1) * group; ++h) {
    for (int i = 0; i < len_q; ++i) {
      const long long qr = sq.q_offset(p, p.q, b, i, h), orow = sq.q_offset(p, p.o, b, i, h);
      for (int d = 0; d < D; ++d) qi[d] = load_element(p.dtype, q, qr + d), doi[d] = load_element(p.dtype, d_o, orow + d);
      // The row's softmax, exactly.
      const long long diag = static_cast<long long>(i) + len_k - len_q;
      double mx = hp.sinks != nullptr ? static_cast<double>(hp.sinks[h]) : -inf;
      for (int j = 0; j < len_k; ++j) {
        x[j] = -inf;
        if (!sees(p, len_q, len_k, i, j)) continue;
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += qi[d] * kd[static_cast<std::size_t>(j) * D + d];
        double s = dot * scale, ds = scale;
        if (p.softcap > 0.0f) {
          const double t = std::tanh(s / p.softcap);
          s = p.softcap * t;
          ds = scale * (1.0 - t * t);
        }
        if (hp.alibi_slopes != nullptr) s -= static_cast<double>(hp.alibi_slopes[h]) * std::fabs(double(j - diag));
        x[j] = s;
        dxdot[j] = ds;
        mx = std::max(mx, s);
      }
      std::fill(dqi.begin(), dqi.end(), 0.0);
      const long long dq_at = static_cast<long long>(o_index(p, b, i, h, 0));
      if (mx == -inf) {  // sees no key and no sink: O = 0, every gradient 0
        std::copy(dqi.begin(), dqi.end(), g.dq.begin() + dq_at);
        continue;
      }
      double sum = hp.sinks != nullptr ? std::exp(hp.sinks[h] - mx) : 0.0;
      for (int j = 0; j < len_k; ++j)
        if (x[j] != -inf) sum += std::exp(x[j] - mx);
      const double lse = mx + std::log(sum);
      std::fill(oi.begin(), oi.end(), 0.0);
      for (int j = 0; j < len_k; ++j) {
        prob[j] = x[j] == -inf ? 0.0 : std::exp(x[j] - lse);
        for (int d = 0; d < D; ++d) oi[d] += prob[j] * vd[static_cast<std::size_t>(j) * D + d];
      }
      if (o != nullptr)  // the forward's O as the backward is given it
        for (int d = 0; d < D; ++d) oi[d] = load_element(p.dtype, o, orow + d);
      double delta = 0;
      for (int d = 0; d < D; ++d) delta += doi[d] * oi[d];
      if (hp.sinks != nullptr) dsink[h - hk * group] -= std::exp(hp.sinks[h] - lse) * delta;
      for (int j = 0; j < len_k; ++j) {
        if (x[j] == -inf) continue;
        double dp = 0;
        for (int d = 0; d < D; ++d) dp += doi[d] * vd[static_cast<std::size_t>(j) * D + d];
        // dz = dx · d x/d(q·k); the same-precision computation rounds dS = dz / scale, as a kernel that
        // multiplies by the scale after its dS·K and dSᵀ·Q products does.
        double dz = prob[j] * (dp - delta) * dxdot[j];
        if (same) dz = scale * round(dz / scale);
        const double pj = round(prob[j]);
        for (int d = 0; d < D; ++d) {
          dqi[d] += dz * kd[static_cast<std::size_t>(j) * D + d];
          dk[static_cast<std::size_t>(j) * D + d] += dz * qi[d];
          dv[static_cast<std::size_t>(j) * D + d] += pj * doi[d];
        }
      }
      for (int d = 0; d < D; ++d) g.dq[dq_at + d] = round(dqi[d]);
    }
  }
  const int stored = p.total_k > 0 ? sq.cu_seqlens_k[b + 1] - sq.cu_seqlens_k[b] : p.seqlen_k;
  for (int j = 0; j < stored; ++j)
    for (int d = 0; d < D; ++d) {
      const bool used = j < len_k;
      g.dk[kv_index(p, b, j, hk, d)] = used ? round(dk[static_cast<std::size_t>(j) * D + d]) : 0.0;
      g.dv[kv_index(p, b, j, hk, d)] = used ? round(dv[static_cast<std::size_t>(j) * D + d]) : 0.0;
    }
}

}  // namespace

Gradients attention_backward(const Problem& p, const void* q, const void* k, const void* v, const void* o,
                             const void* d_o, Precision precision, int threads, const HeadParams& heads,
                             const Sequences& seqs) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Gradients g;
  g.dq.assign(static_cast<std::size_t>(p.batch) * p.seqlen_q * p.heads_q * p.head_dim, nan);
  g.dk.assign(static_cast<std::size_t>(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim, nan);
  g.dv = g.dk;
  const int group = p.heads_q / p.heads_kv;
  const int n_groups = p.batch * p.heads_kv;
  std::vector<std::vector<double>> dsink(n_groups, std::vector<double>(group, 0.0));  // per group, summed below
  std::atomic<int> next{0};
  auto work = [&] {
    for (int n; (n = next.fetch_add(1)) < n_groups;)
      one_group(p, seqs, q, k, v, o, d_o, precision == Precision::Same, heads, n / p.heads_kv, n % p.heads_kv, g, dsink[n]);
  };
  const int helpers = threads > 1 ? std::min(threads, n_groups) - 1 : 0;
  std::vector<std::thread> pool;
  for (int t = 0; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (heads.sinks != nullptr) {
    g.dsinks.assign(p.heads_q, 0.0);
    for (int b = 0; b < p.batch; ++b)  // a fixed order: the result does not depend on the threads
      for (int hk = 0; hk < p.heads_kv; ++hk)
        for (int r = 0; r < group; ++r) g.dsinks[hk * group + r] += dsink[b * p.heads_kv + hk][r];
  }
  return g;
}

std::array<double, 3> gradient_scales(const Gradients& g) {
  std::array<double, 3> s{};
  const std::vector<double>* t[] = {&g.dq, &g.dk, &g.dv};
  for (int n = 0; n < 3; ++n)
    for (double x : *t[n])
      if (!std::isnan(x)) s[n] = std::max(s[n], std::fabs(x));
  return s;
}

std::array<double, 3> gradient_differences(const Gradients& a, const Gradients& b) {
  return {max_abs_difference(a.dq, b.dq), max_abs_difference(a.dk, b.dk), max_abs_difference(a.dv, b.dv)};
}

GradientCheck check_gradients(const Problem& p, const Sequences& sq, const Gradients& ref, const void* dq,
                              const void* dk, const void* dv, const std::array<tolerance::Bound, 3>& bounds) {
  GradientCheck e;
  auto check = [&](int t, const char* name, const void* buf, long long offset, double r, int b, int row, int h, int dd) {
    if (std::isnan(r)) return;
    const double g = load_element(p.dtype, buf, offset);
    const double err = std::fabs(g - r);
    e.max_abs[t] = std::isfinite(err) ? std::max(e.max_abs[t], err) : std::numeric_limits<double>::infinity();
    e.max_ref[t] = std::max(e.max_ref[t], std::fabs(r));
    if (!bounds[t].ok(g, r) && e.bad++ == 0) {
      std::ostringstream os;
      os << name << "(b=" << b << ",row=" << row << ",h=" << h << ",d=" << dd << ") = " << g << ", expected " << r
         << " (bound " << bounds[t].atol << " + " << bounds[t].rtol << "|ref|)";
      e.first_bad = os.str();
    }
  };
  for (int b = 0; b < p.batch; ++b) {
    for (int i = 0; i < sq.len_q(p, b); ++i)
      for (int h = 0; h < p.heads_q; ++h)
        for (int dd = 0; dd < p.head_dim; ++dd)
          check(0, "dQ", dq, sq.q_offset(p, p.q, b, i, h) + dd, ref.dq[o_index(p, b, i, h, dd)], b, i, h, dd);
    const int stored = p.total_k > 0 ? sq.cu_seqlens_k[b + 1] - sq.cu_seqlens_k[b] : p.seqlen_k;
    for (int j = 0; j < stored; ++j)
      for (int hk = 0; hk < p.heads_kv; ++hk)
        for (int dd = 0; dd < p.head_dim; ++dd) {
          check(1, "dK", dk, sq.kv_offset(p, p.k, b, j, hk) + dd, ref.dk[kv_index(p, b, j, hk, dd)], b, j, hk, dd);
          check(2, "dV", dv, sq.kv_offset(p, p.v, b, j, hk) + dd, ref.dv[kv_index(p, b, j, hk, dd)], b, j, hk, dd);
        }
  }
  return e;
}

}  // namespace flashcore::verify
