// Test support: cases, host data, the oracle adapters and error measurement (see testing.hpp).
#include "testing.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "verify/data.hpp"
#include "verify/elements.hpp"
#include "verify/oracle.hpp"
#include "verify/tolerance.hpp"

namespace fctest {

using flashcore::Strides;
namespace verify = flashcore::verify;

std::string Case::name() const {
  std::ostringstream os;
  os << "B" << batch << "_Hq" << heads_q << "_Hkv" << heads_kv << "_Lq" << seqlen_q << "_Lk" << seqlen_k << "_D"
     << head_dim << "_" << flashcore::to_string(dtype) << (causal ? "_causal" : "")
     << (layout == Layout::BHSD ? "_bhsd" : layout == Layout::Padded ? "_padded" : "");
  auto side = [](int w) { return w < 0 ? std::string("inf") : std::to_string(w); };
  if (window_left >= 0 || window_right >= 0) os << "_win" << side(window_left) << "_" << side(window_right);
  if (softcap > 0) os << "_cap" << static_cast<int>(softcap);
  if (alibi) os << "_alibi";
  if (sinks) os << "_sinks";
  return os.str();
}

Case make_case(int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k, int head_dim, DType dtype, bool causal,
               Layout layout) {
  Case c;
  c.batch = batch, c.heads_q = heads_q, c.heads_kv = heads_kv, c.seqlen_q = seqlen_q, c.seqlen_k = seqlen_k;
  c.head_dim = head_dim, c.dtype = dtype, c.causal = causal, c.layout = layout;
  return c;
}

Case with_random_variants(Case c, std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  if (pick(0, 1)) {
    const int span = c.seqlen_k + c.seqlen_q;
    c.window_left = pick(0, 3) == 0 ? -1 : pick(0, span);
    c.window_right = c.causal || pick(0, 3) == 0 ? -1 : pick(0, span);
    if (c.window_left < 0 && c.window_right < 0) c.window_left = pick(0, span);
  }
  if (pick(0, 1)) c.softcap = pick(0, 1) ? 5.0 : 30.0;
  c.alibi = pick(0, 1) == 1;
  c.sinks = pick(0, 1) == 1;
  return c;
}

Case random_case(std::mt19937_64& rng, int max_len, const std::vector<int>& dims, DType min_dtype) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Case c;
  c.batch = pick(1, 3);
  c.heads_kv = pick(1, 3);
  c.heads_q = c.heads_kv * pick(1, 4);
  c.seqlen_q = pick(1, max_len);
  c.seqlen_k = pick(1, max_len);
  c.head_dim = dims[pick(0, static_cast<int>(dims.size()) - 1)];
  c.dtype = static_cast<DType>(pick(static_cast<int>(min_dtype), static_cast<int>(DType::BF16)));
  c.causal = pick(0, 1) == 1;
  c.layout = static_cast<Layout>(pick(0, 2));
  c.q_gain = pick(0, 3) == 0 ? 4.0 : 1.0;
  return c;
}

void set_openmp_binding_defaults() {
  setenv("OMP_PROC_BIND", "spread", 0);
  setenv("OMP_PLACES", "threads", 0);
}

std::uint64_t run_seed() {
  static const std::uint64_t seed = [] {
    std::uint64_t s;
    if (const char* env = std::getenv("FLASHCORE_TEST_SEED"); env != nullptr && *env)
      s = std::strtoull(env, nullptr, 0);
    else
      s = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    std::printf("[flashcore tests] random seed %llu (set FLASHCORE_TEST_SEED to replay)\n",
                static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

Problem make_problem(const Case& c) {
  Problem p = Problem::make(c.batch, c.heads_q, c.heads_kv, c.seqlen_q, c.seqlen_k, c.head_dim, c.dtype, c.causal);
  if (c.layout == Layout::BHSD) p.set_contiguous_bhsd();
  p.window_left = c.window_left;
  p.window_right = c.window_right;
  p.softcap = static_cast<float>(c.softcap);
  if (c.layout == Layout::Padded) {
    // rows padded by 8 elements, heads by 16, batches by 40: exercises non-contiguous strides
    auto padded = [&](int seq, int heads) {
      const std::int64_t head = c.head_dim + 8;
      const std::int64_t row = head * heads + 16;
      return Strides{row * seq + 40, row, head};
    };
    p.q = p.o = padded(c.seqlen_q, c.heads_q);
    p.k = p.v = padded(c.seqlen_k, c.heads_kv);
  }
  return p;
}

namespace {

// Both oracles are flashcore::verify::attention (plain loops, no Kokkos).
OracleOut attention(const HostData& data, verify::Precision precision, int row_stride) {
  return verify::attention(data.problem, data.q.data(), data.k.data(), data.v.data(), precision, row_stride, 1,
                           data.head_params());
}

}  // namespace

double element(const Problem& p, const std::vector<unsigned char>& buf, const Strides& s, int b, int i, int h, int d) {
  return verify::load_element(p.dtype, buf.data(), flashcore::element_offset(s, b, i, h, d));
}

void HostData::poison_outputs() {
  const Problem& p = problem;
  verify::poison(p.dtype, o.data(), p.o, p.batch, p.seqlen_q, p.heads_q, p.head_dim);
  std::fill(lse.begin(), lse.end(), std::numeric_limits<float>::quiet_NaN());
}

flashcore::verify::HeadParams HostData::head_params() const {
  return verify::HeadParams::of(alibi_slopes, sinks);
}

flashcore::Tensors HostData::tensors() {
  const verify::HeadParams hp = head_params();
  return {q.data(), k.data(), v.data(), o.data(), lse.empty() ? nullptr : lse.data(), hp.alibi_slopes, hp.sinks};
}

HostData make_data(const Case& c, std::uint64_t seed) {
  HostData d;
  d.problem = make_problem(c);
  const Problem& p = d.problem;
  const int es = flashcore::dtype_size(p.dtype);
  auto bytes = [&](const Strides& s, int seq, int heads) {
    return static_cast<std::size_t>(flashcore::span_elements(s, p.batch, seq, heads, p.head_dim)) * es;
  };
  // Gaps of padded layouts hold garbage, not zeros.
  d.q.assign(bytes(p.q, p.seqlen_q, p.heads_q), 0x5a);
  d.k.assign(bytes(p.k, p.seqlen_k, p.heads_kv), 0x5a);
  d.v.assign(bytes(p.v, p.seqlen_k, p.heads_kv), 0x5a);
  d.o.assign(bytes(p.o, p.seqlen_q, p.heads_q), 0x5a);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  verify::fill_random(p.dtype, d.q.data(), p.q, p.batch, p.seqlen_q, p.heads_q, p.head_dim,
                      [&] { return normal(rng) * c.q_gain; });
  verify::fill_random(p.dtype, d.k.data(), p.k, p.batch, p.seqlen_k, p.heads_kv, p.head_dim, [&] { return normal(rng); });
  verify::fill_random(p.dtype, d.v.data(), p.v, p.batch, p.seqlen_k, p.heads_kv, p.head_dim, [&] { return uniform(rng); });
  if (c.lse) d.lse.assign(static_cast<std::size_t>(p.batch) * p.heads_q * p.seqlen_q, 0.0f);
  // Per-head parameters from their own stream, so that Q, K, V do not depend on the variants.
  std::mt19937_64 heads_rng(seed ^ 0x5eed5eedull);
  if (c.alibi)
    for (int h = 0; h < p.heads_q; ++h)
      d.alibi_slopes.push_back(static_cast<float>(std::uniform_real_distribution<double>(0.02, 0.6)(heads_rng)));
  if (c.sinks)
    for (int h = 0; h < p.heads_q; ++h)
      d.sinks.push_back(static_cast<float>(std::uniform_real_distribution<double>(-2.0, 3.0)(heads_rng)));
  d.poison_outputs();
  return d;
}

OracleOut oracle(const HostData& d, int row_stride) { return attention(d, verify::Precision::Exact, row_stride); }
OracleOut naive_same_precision(const HostData& d, int row_stride) {
  return attention(d, verify::Precision::Same, row_stride);
}

Errors compare_o(const HostData& d, const OracleOut& ref, double atol, double rtol, bool kernel_lse) {
  const Problem& p = d.problem;
  const flashcore::tolerance::Bound bound{atol, rtol};
  Errors e;
  double num2 = 0, den2 = 0;
  for (int b = 0; b < p.batch; ++b)
    for (int i = 0; i < p.seqlen_q; ++i)
      for (int h = 0; h < p.heads_q; ++h)
        for (int dd = 0; dd < p.head_dim; ++dd) {
          const double r = ref.o[verify::o_index(p, b, i, h, dd)];
          if (std::isnan(r)) continue;  // row not computed by a sampled oracle
          const double g = element(p, d.o, p.o, b, i, h, dd);
          const double err = std::fabs(g - r);
          if (!(err <= e.max_abs)) e.max_abs = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
          num2 += std::isnan(err) ? std::numeric_limits<double>::infinity() : err * err;
          den2 += r * r;
          const double ratio = err / (atol + rtol * std::fabs(r));
          if (!(ratio <= e.worst_ratio)) e.worst_ratio = std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio;
          if (!bound.ok(g, r)) {
            if (e.bad++ == 0) {
              std::ostringstream os;
              os << "O(b=" << b << ",i=" << i << ",h=" << h << ",d=" << dd << ") = " << g << ", expected " << r;
              e.first_bad = os.str();
            }
          }
        }
  e.rel_l2 = den2 > 0 ? std::sqrt(num2 / den2) : std::sqrt(num2);
  if (!d.lse.empty())
    for (std::size_t idx = 0; idx < d.lse.size(); ++idx) {
      if (std::isnan(ref.lse[idx])) continue;
      const bool ok = kernel_lse ? flashcore::tolerance::kernel_lse_ok(d.lse[idx], ref.lse[idx])
                                 : flashcore::tolerance::lse_ok(d.lse[idx], ref.lse[idx]);
      if (!ok) {
        if (e.lse_bad++ == 0 && e.first_bad.empty()) {
          std::ostringstream os;
          os << "LSE[" << idx << "] = " << d.lse[idx] << ", expected " << ref.lse[idx];
          e.first_bad = os.str();
        }
      }
    }
  return e;
}

Errors compare(const HostData& d, const OracleOut& ref) {
  const auto bound = flashcore::tolerance::reference_bound(d.problem.dtype);
  return compare_o(d, ref, bound.atol, bound.rtol);
}

double naive_error(const HostData& d, const OracleOut& ref, int row_stride) {
  return verify::max_abs_difference(naive_same_precision(d, row_stride).o, ref.o);
}

}  // namespace fctest
