// The fp64 attention oracle (see oracle.hpp): rows grouped by (batch, kv head), whose keys and
// values are converted to double once per group, then one row at a time in plain loops.
#include "verify/oracle.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include "verify/elements.hpp"

namespace flashcore::verify {

namespace {

// Rows [b, hk] of input tensor `which` ('k' or 'v': Lk_b x head_dim) as doubles, dequantized (fp8:
// times its descale).
void load_head(const Problem& p, const Sequences& sq, char which, const void* buf, const Strides& s, int b, int hk,
               std::vector<double>& out) {
  const int D = p.head_dim, len_k = sq.len_k(p, b);
  out.resize(static_cast<std::size_t>(len_k) * D);
  for (int j = 0; j < len_k; ++j) {
    const long long row = sq.kv_offset(p, s, b, j, hk);
    for (int d = 0; d < D; ++d) out[static_cast<std::size_t>(j) * D + d] = load_input(p, which, buf, row + d);
  }
}

// Precision::Same's rounding of a probability p in [0, 1] before P·V: to the input dtype; with fp8
// inputs as an fp8 kernel does, e4m3(256 p) / 256 (scaled so that p >= 2^-14 stays in e4m3's normal
// range; tolerance.hpp, fp8_kernel_bound).
double round_probability(const Problem& p, double x) {
  if (p.dtype == DType::E4M3) return round_to(DType::E4M3, 256.0 * x) / 256.0;
  return round_to(p.dtype, x);
}

// Scratch of one thread: scores, accumulator and the query row.
struct Scratch {
  std::vector<double> s, acc, q;
};

// One query row against the keys and values of its kv head (kd, vd: Lk_b x head_dim
// doubles). Writes head_dim outputs to o and returns the LSE.
double one_row(const Problem& p, const Sequences& sq, const void* q, const Row& r, double scale, bool same,
               const HeadParams& hp, const double* kd, const double* vd, Scratch& w, double* o) {
  const int D = p.head_dim, len_q = sq.len_q(p, r.b), len_k = sq.len_k(p, r.b);
  const double inf = std::numeric_limits<double>::infinity();
  const long long diag = static_cast<long long>(r.i) + len_k - len_q;
  auto round_p = [&](double x) { return same ? round_probability(p, x) : x; };
  auto round_o = [&](double x) { return same ? round_to(p.o_dtype(), x) : x; };
  w.q.resize(D);
  w.acc.assign(D, 0.0);
  w.s.resize(static_cast<std::size_t>(len_k));
  const long long q_row = sq.q_offset(p, p.q, r.b, r.i, r.h);
  for (int d = 0; d < D; ++d) w.q[d] = load_input(p, 'q', q, q_row + d);
  double mx = hp.sinks != nullptr ? static_cast<double>(hp.sinks[r.h]) : -inf;
  for (long long j = 0; j < len_k; ++j) {
    if (!sees(p, len_q, len_k, r.i, j)) {
      w.s[j] = -inf;
      continue;
    }
    double dot = 0;
    for (int d = 0; d < D; ++d) dot += w.q[d] * kd[j * D + d];
    double x = dot * scale;
    if (p.softcap > 0.0f) x = p.softcap * std::tanh(x / p.softcap);
    if (hp.alibi_slopes != nullptr) x -= static_cast<double>(hp.alibi_slopes[r.h]) * std::fabs(double(j - diag));
    w.s[j] = x;
    mx = std::max(mx, x);
  }
  if (mx == -inf) {  // no visible key and no sink
    std::fill(o, o + D, 0.0);
    return -inf;
  }
  double sum = hp.sinks != nullptr ? std::exp(hp.sinks[r.h] - mx) : 0.0;
  for (long long j = 0; j < len_k; ++j) {
    if (w.s[j] == -inf) continue;
    const double e = std::exp(w.s[j] - mx);
    sum += e;
    const double pj = round_p(e);
    for (int d = 0; d < D; ++d) w.acc[d] += pj * vd[j * D + d];
  }
  for (int d = 0; d < D; ++d) o[d] = round_o(w.acc[d] / sum);
  return mx + std::log(sum);
}

// Computes rows[n] for every n, writing its output through dst(n) -> {double* o, double* lse}.
template <class Dst>
void compute(const Problem& p, const void* q, const void* k, const void* v, const std::vector<Row>& rows,
             Precision precision, int threads, const HeadParams& hp, const Sequences& sq, Dst dst) {
  const double scale = softmax_scale(p);
  const bool same = precision == Precision::Same;
  const int q_per_kv = p.heads_q / p.heads_kv;
  // Row indices ordered by (b, kv head), so that each head's keys and values are converted once.
  std::vector<std::size_t> order(rows.size());
  for (std::size_t n = 0; n < order.size(); ++n) order[n] = n;
  auto group = [&](std::size_t n) { return static_cast<long long>(rows[n].b) * p.heads_kv + rows[n].h / q_per_kv; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return group(a) < group(b); });

  std::vector<double> kd, vd;
  for (std::size_t begin = 0; begin < order.size();) {
    std::size_t end = begin;
    while (end < order.size() && group(order[end]) == group(order[begin])) ++end;
    const Row& first = rows[order[begin]];
    load_head(p, sq, 'k', k, p.k, first.b, first.h / q_per_kv, kd);
    load_head(p, sq, 'v', v, p.v, first.b, first.h / q_per_kv, vd);
    std::atomic<std::size_t> next{begin};
    auto work = [&] {
      Scratch w;
      for (std::size_t x; (x = next.fetch_add(1)) < end;) {
        const std::size_t n = order[x];
        auto out = dst(n);
        *out.second = one_row(p, sq, q, rows[n], scale, same, hp, kd.data(), vd.data(), w, out.first);
      }
    };
    const std::size_t helpers = threads > 1 ? std::min<std::size_t>(threads, end - begin) - 1 : 0;
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    begin = end;
  }
}

}  // namespace

int Sequences::len_q(const Problem& p, int b) const {
  return p.total_q > 0 ? cu_seqlens_q[b + 1] - cu_seqlens_q[b] : p.seqlen_q;
}

int Sequences::len_k(const Problem& p, int b) const {
  if (seqlens_k != nullptr) return seqlens_k[b];
  return p.total_k > 0 ? cu_seqlens_k[b + 1] - cu_seqlens_k[b] : p.seqlen_k;
}

long long Sequences::q_offset(const Problem& p, const Strides& s, int b, int i, int h) const {
  if (p.total_q > 0) return (static_cast<long long>(cu_seqlens_q[b]) + i) * s.seq + h * s.head;
  return element_offset(s, b, i, h, 0);
}

std::size_t Sequences::lse_offset(const Problem& p, int b, int h, int i) const {
  if (p.total_q > 0) return static_cast<std::size_t>(h) * p.total_q + cu_seqlens_q[b] + i;
  return lse_index(p, b, h, i);
}

bool sees(const Problem& p, int len_q, int len_k, int i, long long j) {
  const long long diag = static_cast<long long>(i) + len_k - len_q;  // row i's diagonal key
  if (p.causal && j > diag) return false;
  if (p.window_left >= 0 && j < diag - p.window_left) return false;
  if (p.window_right >= 0 && j > diag + p.window_right) return false;
  return true;
}

long long Sequences::kv_offset(const Problem& p, const Strides& s, int b, int j, int h) const {
  if (p.page_size > 0) {
    const long long page = block_table[static_cast<long long>(b) * p.pages_per_seq + j / p.page_size];
    return page * s.batch + static_cast<long long>(j % p.page_size) * s.seq + h * s.head;
  }
  if (p.total_k > 0) return (static_cast<long long>(cu_seqlens_k[b]) + j) * s.seq + h * s.head;
  return element_offset(s, b, j, h, 0);
}

double softmax_scale(const Problem& p) {
  return p.scale > 0.0f ? p.scale : 1.0f / std::sqrt(static_cast<float>(p.head_dim));
}

RowsResult attention_rows(const Problem& p, const void* q, const void* k, const void* v, const std::vector<Row>& rows,
                          Precision precision, int threads, const HeadParams& heads, const Sequences& seqs) {
  for (const Row& x : rows)
    if (x.b < 0 || x.b >= p.batch || x.h < 0 || x.h >= p.heads_q || x.i < 0 || x.i >= p.seqlen_q ||
        x.i >= seqs.len_q(p, x.b))
      throw std::out_of_range("verify::attention_rows: row (b " + std::to_string(x.b) + ", h " + std::to_string(x.h) +
                              ", i " + std::to_string(x.i) + ") is outside the problem (batch " + std::to_string(p.batch) +
                              ", heads_q " + std::to_string(p.heads_q) + ", seqlen_q " + std::to_string(p.seqlen_q) + ")");
  RowsResult r;
  r.rows = rows;
  r.o.assign(rows.size() * static_cast<std::size_t>(p.head_dim), 0.0);
  r.lse.assign(rows.size(), 0.0);
  compute(p, q, k, v, rows, precision, threads, heads, seqs, [&](std::size_t n) {
    return std::make_pair(&r.o[n * static_cast<std::size_t>(p.head_dim)], &r.lse[n]);
  });
  return r;
}

std::vector<Row> strided_rows(const Problem& p, int row_stride, const Sequences& seqs) {
  std::vector<Row> rows;
  for (int b = 0; b < p.batch; ++b) {
    const int len_q = seqs.len_q(p, b);
    for (int h = 0; h < p.heads_q; ++h)
      for (int i = 0; i < len_q; ++i)
        if (row_stride <= 1 || i % row_stride == 0 || i == len_q - 1) rows.push_back({b, h, i});
  }
  return rows;
}

Result attention(const Problem& p, const void* q, const void* k, const void* v, Precision precision, int row_stride,
                 int threads, const HeadParams& heads, const Sequences& seqs) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Result out;
  out.o.assign(static_cast<std::size_t>(p.batch) * p.seqlen_q * p.heads_q * p.head_dim, nan);
  out.lse.assign(static_cast<std::size_t>(p.batch) * p.heads_q * p.seqlen_q, nan);
  const std::vector<Row> rows = strided_rows(p, row_stride, seqs);
  compute(p, q, k, v, rows, precision, threads, heads, seqs, [&](std::size_t n) {
    const Row& r = rows[n];
    return std::make_pair(&out.o[o_index(p, r.b, r.i, r.h, 0)], &out.lse[lse_index(p, r.b, r.h, r.i)]);
  });
  return out;
}

double max_abs_difference(const std::vector<double>& a, const std::vector<double>& ref) {
  double mx = 0;
  const std::size_t n = std::min(a.size(), ref.size());
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isnan(ref[i])) mx = std::max(mx, std::fabs(a[i] - ref[i]));
  return mx;
}

}  // namespace flashcore::verify
