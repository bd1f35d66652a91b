// Test support: cases, host data, the oracle adapters and error measurement (see testing.hpp).
#include "testing.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <algorithm>
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
  if (dtype == DType::E4M3) {
    os << "_out" << flashcore::to_string(out_dtype);
    if (descale_q != 1 || descale_k != 1 || descale_v != 1) {
      std::ostringstream ds;  // 0.25 -> 0p25: test names take letters, digits and '_'
      ds << "_descale" << descale_q << "x" << descale_k << "x" << descale_v;
      std::string text = ds.str();
      std::replace(text.begin(), text.end(), '.', 'p');
      os << text;
    }
  }
  if (!lse) os << "_nolse";
  auto side = [](int w) { return w < 0 ? std::string("inf") : std::to_string(w); };
  if (window_left >= 0 || window_right >= 0) os << "_win" << side(window_left) << "_" << side(window_right);
  if (softcap > 0) os << "_cap" << static_cast<int>(softcap);
  if (alibi) os << "_alibi";
  if (sinks) os << "_sinks";
  auto list = [&](const char* tag, const std::vector<int>& v) {
    if (v.empty()) return;
    os << "_" << tag;
    if (v.size() > 16) {  // a large batch: its count and range, not every length
      os << v.size() << "seqs" << *std::min_element(v.begin(), v.end()) << "to" << *std::max_element(v.begin(), v.end());
      return;
    }
    for (std::size_t n = 0; n < v.size(); ++n) os << (n ? "x" : "") << v[n];
  };
  list("lensq", lens_q);
  list("lensk", lens_k);
  if (kv == KvStore::Packed) os << "_packedkv";
  if (kv == KvStore::Paged) os << "_page" << page_size;
  return os.str();
}

Case make_case(int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k, int head_dim, DType dtype, bool causal,
               Layout layout) {
  Case c;
  c.batch = batch, c.heads_q = heads_q, c.heads_kv = heads_kv, c.seqlen_q = seqlen_q, c.seqlen_k = seqlen_k;
  c.head_dim = head_dim, c.dtype = dtype, c.causal = causal, c.layout = layout;
  return c;
}

Case sequence_case(int heads_q, int heads_kv, int head_dim, DType dtype, bool causal, std::vector<int> lens_q,
                   std::vector<int> lens_k, Case::KvStore kv, int page_size, int fixed_q, int slack, Layout layout) {
  Case c;
  c.heads_q = heads_q, c.heads_kv = heads_kv, c.head_dim = head_dim, c.dtype = dtype, c.causal = causal;
  c.layout = layout;
  c.lens_q = std::move(lens_q);
  c.lens_k = std::move(lens_k);
  c.kv = kv;
  c.page_size = page_size;
  c.batch = static_cast<int>(!c.lens_q.empty() ? c.lens_q.size() : c.lens_k.size());
  auto bound = [&](const std::vector<int>& v, int none) {
    return v.empty() ? none : std::max(1, *std::max_element(v.begin(), v.end()) + slack);
  };
  c.seqlen_q = bound(c.lens_q, fixed_q);
  c.seqlen_k = bound(c.lens_k, 1);
  return c;
}

Case fp8_case(Case c, DType out_dtype, double descale_q, double descale_k, double descale_v) {
  c.dtype = DType::E4M3;
  c.out_dtype = out_dtype;
  c.descale_q = descale_q, c.descale_k = descale_k, c.descale_v = descale_v;
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

namespace {

int sum(const std::vector<int>& v) {
  int s = 0;
  for (int x : v) s += x;
  return s;
}

struct Extents {
  int outer, rows;  // blocks (batch entries or pages) of rows
};

// Pages sequence b's keys need.
int pages_for(int keys, int page_size) { return (keys + page_size - 1) / page_size; }

}  // namespace

Problem make_problem(const Case& c) {
  const int batch = c.lens_q.empty() ? (c.lens_k.empty() ? c.batch : static_cast<int>(c.lens_k.size()))
                                     : static_cast<int>(c.lens_q.size());
  Problem p = Problem::make(batch, c.heads_q, c.heads_kv, c.seqlen_q, c.seqlen_k, c.head_dim, c.dtype, c.causal);
  p.window_left = c.window_left;
  p.window_right = c.window_right;
  p.softcap = static_cast<float>(c.softcap);
  if (c.dtype == DType::E4M3) {
    p.out_dtype = c.out_dtype;
    p.descale_q = static_cast<float>(c.descale_q);
    p.descale_k = static_cast<float>(c.descale_k);
    p.descale_v = static_cast<float>(c.descale_v);
  }
  if (!c.lens_q.empty()) p.total_q = sum(c.lens_q);
  if (c.kv == Case::KvStore::Packed) p.total_k = sum(c.lens_k);
  if (c.kv == Case::KvStore::Paged) {
    p.page_size = c.page_size;
    p.pages_per_seq = pages_for(c.seqlen_k, c.page_size);
    int used = 0;
    for (int b = 0; b < batch; ++b) used += pages_for(c.lens_k.empty() ? c.seqlen_k : c.lens_k[b], c.page_size);
    p.num_pages = used + 3;  // three pages no sequence uses
  }
  // Each tensor as `outer` blocks (batch entries or pages) of `rows` rows, in the case's layout.
  // Padded: rows padded by 8 elements, heads by 16, blocks by 40 (non-contiguous strides).
  auto strides = [&](int outer_rows, int heads, bool packed) {
    const std::int64_t D = c.head_dim;
    Strides s;
    if (c.layout == Layout::BHSD) {
      s = {heads * outer_rows * D, D, outer_rows * D};
    } else if (c.layout == Layout::Padded) {
      const std::int64_t head = D + 8, row = head * heads + 16;
      s = {row * outer_rows + 40, row, head};
    } else {
      s = {outer_rows * heads * D, heads * D, D};
    }
    if (packed) s.batch = 0;  // unused: one block of total rows
    return s;
  };
  p.q = p.o = strides(p.total_q > 0 ? p.total_q : c.seqlen_q, c.heads_q, p.total_q > 0);
  const int kv_rows = p.page_size > 0 ? p.page_size : p.total_k > 0 ? p.total_k : c.seqlen_k;
  p.k = p.v = strides(kv_rows, c.heads_kv, p.total_k > 0);
  return p;
}

namespace {

// Both oracles are flashcore::verify::attention (plain loops, no Kokkos).
OracleOut attention(const HostData& data, verify::Precision precision, int row_stride) {
  return verify::attention(data.problem, data.q.data(), data.k.data(), data.v.data(), precision, row_stride, 1,
                           data.head_params(), data.sequences());
}

}  // namespace

double element(const Problem& p, const std::vector<unsigned char>& buf, const Strides& s, int b, int i, int h, int d) {
  return verify::load_element(p.dtype, buf.data(), flashcore::element_offset(s, b, i, h, d));
}

void HostData::poison_outputs() {
  const Problem& p = problem;
  if (p.total_q > 0)
    verify::poison(p.o_dtype(), o.data(), p.o, 1, p.total_q, p.heads_q, p.head_dim);
  else
    verify::poison(p.o_dtype(), o.data(), p.o, p.batch, p.seqlen_q, p.heads_q, p.head_dim);
  std::fill(lse.begin(), lse.end(), std::numeric_limits<float>::quiet_NaN());
}

flashcore::verify::HeadParams HostData::head_params() const {
  return verify::HeadParams::of(alibi_slopes, sinks);
}

flashcore::verify::Sequences HostData::sequences() const {
  auto ptr = [](const std::vector<int>& v) { return v.empty() ? nullptr : v.data(); };
  return {ptr(cu_seqlens_q), ptr(cu_seqlens_k), ptr(seqlens_k), ptr(block_table)};
}

std::size_t HostData::lse_at(int b, int h, int i) const { return sequences().lse_offset(problem, b, h, i); }

flashcore::Tensors HostData::tensors() {
  const verify::HeadParams hp = head_params();
  const verify::Sequences sq = sequences();
  flashcore::Tensors t{q.data(), k.data(), v.data(), o.data(), lse.empty() ? nullptr : lse.data(), hp.alibi_slopes,
                       hp.sinks};
  t.cu_seqlens_q = sq.cu_seqlens_q;
  t.cu_seqlens_k = sq.cu_seqlens_k;
  t.seqlens_k = sq.seqlens_k;
  t.block_table = sq.block_table;
  return t;
}

HostData make_data(const Case& c, std::uint64_t seed) {
  HostData d;
  d.problem = make_problem(c);
  const Problem& p = d.problem;
  std::mt19937_64 rng(seed);
  // The sequence arrays first (they say where rows are), from their own stream.
  std::mt19937_64 seq_rng(seed ^ 0x5e9u);
  auto offsets = [&](const std::vector<int>& lens) {
    std::vector<int> cu(1, 0);
    for (int len : lens) cu.push_back(cu.back() + len);
    return cu;
  };
  if (p.total_q > 0) d.cu_seqlens_q = offsets(c.lens_q);
  if (p.total_k > 0) d.cu_seqlens_k = offsets(c.lens_k);
  if (!c.lens_k.empty() && c.kv != Case::KvStore::Packed) d.seqlens_k = c.lens_k;
  if (p.page_size > 0) {  // every used page a distinct random one of the pool; unused entries -1
    std::vector<int> pages(static_cast<std::size_t>(p.num_pages));
    for (int n = 0; n < p.num_pages; ++n) pages[n] = n;
    std::shuffle(pages.begin(), pages.end(), seq_rng);
    d.block_table.assign(static_cast<std::size_t>(p.batch) * p.pages_per_seq, -1);
    std::size_t next = 0;
    for (int b = 0; b < p.batch; ++b)
      for (int n = 0; n < pages_for(c.lens_k.empty() ? p.seqlen_k : c.lens_k[b], p.page_size); ++n)
        d.block_table[static_cast<std::size_t>(b) * p.pages_per_seq + n] = pages[next++];
  }
  const verify::Sequences sq = d.sequences();
  const Extents qx = {p.total_q > 0 ? 1 : p.batch, p.total_q > 0 ? p.total_q : p.seqlen_q};
  const Extents kx = {p.page_size > 0 ? p.num_pages : p.total_k > 0 ? 1 : p.batch,
                                        p.page_size > 0 ? p.page_size : p.total_k > 0 ? p.total_k : p.seqlen_k};
  auto bytes = [&](const Strides& s, Extents x, int heads, DType dt) {
    return static_cast<std::size_t>(flashcore::span_elements(s, x.outer, x.rows, heads, p.head_dim)) *
           flashcore::dtype_size(dt);
  };
  // Gaps of padded layouts hold garbage, not zeros; K/V rows no sequence uses hold NaN.
  d.q.assign(bytes(p.q, qx, p.heads_q, p.dtype), 0x5a);
  d.k.assign(bytes(p.k, kx, p.heads_kv, p.dtype), 0x5a);
  d.v.assign(bytes(p.v, kx, p.heads_kv, p.dtype), 0x5a);
  d.o.assign(bytes(p.o, qx, p.heads_q, p.o_dtype()), 0x5a);
  verify::poison(p.dtype, d.k.data(), p.k, kx.outer, kx.rows, p.heads_kv, p.head_dim);
  verify::poison(p.dtype, d.v.data(), p.v, kx.outer, kx.rows, p.heads_kv, p.head_dim);
  // Values in logical order (b, row, h, d) over each sequence's rows, never zero (verify::fill_random's
  // rule), so that a seed gives the same values in every layout and storage. fp8: x / descale is
  // stored (rounded to e4m3), standing for about x.
  auto fill = [&](std::vector<unsigned char>& buf, int heads, char which, auto rows_of, auto offset_of, auto draw) {
    const double descale = verify::input_descale(p, which);
    for (int b = 0; b < p.batch; ++b)
      for (int i = 0; i < rows_of(b); ++i)
        for (int h = 0; h < heads; ++h) {
          const long long row = offset_of(b, i, h);
          for (int dd = 0; dd < p.head_dim; ++dd) {
            double x = draw() / descale;
            while (verify::round_to(p.dtype, x) == 0.0) x = draw() / descale;
            verify::store_element(p.dtype, buf.data(), row + dd, x);
          }
        }
  };
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  auto len_q = [&](int b) { return sq.len_q(p, b); };
  auto len_k = [&](int b) { return sq.len_k(p, b); };
  fill(d.q, p.heads_q, 'q', len_q, [&](int b, int i, int h) { return sq.q_offset(p, p.q, b, i, h); },
       [&] { return normal(rng) * c.q_gain; });
  fill(d.k, p.heads_kv, 'k', len_k, [&](int b, int j, int h) { return sq.kv_offset(p, p.k, b, j, h); },
       [&] { return normal(rng); });
  fill(d.v, p.heads_kv, 'v', len_k, [&](int b, int j, int h) { return sq.kv_offset(p, p.v, b, j, h); },
       [&] { return uniform(rng); });
  if (c.lse) d.lse.assign(static_cast<std::size_t>(qx.outer) * p.heads_q * qx.rows, 0.0f);
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
    for (int i = 0; i < d.len_q(b); ++i)
      for (int h = 0; h < p.heads_q; ++h)
        for (int dd = 0; dd < p.head_dim; ++dd) {
          const double r = ref.o[verify::o_index(p, b, i, h, dd)];
          if (std::isnan(r)) continue;  // row not computed by a sampled oracle
          const double g = verify::load_element(p.o_dtype(), d.o.data(), d.o_offset(b, i, h) + dd);
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
    for (int b = 0; b < p.batch; ++b)
      for (int h = 0; h < p.heads_q; ++h)
        for (int i = 0; i < d.len_q(b); ++i) {
          const double r = ref.lse[verify::lse_index(p, b, h, i)];
          if (std::isnan(r)) continue;
          const float g = d.lse[d.lse_at(b, h, i)];
          const bool ok = kernel_lse ? flashcore::tolerance::kernel_lse_ok(g, r) : flashcore::tolerance::lse_ok(g, r);
          if (!ok && e.lse_bad++ == 0 && e.first_bad.empty()) {
            std::ostringstream os;
            os << "LSE(b=" << b << ",h=" << h << ",i=" << i << ") = " << g << ", expected " << r;
            e.first_bad = os.str();
          }
        }
  return e;
}

Errors compare(const HostData& d, const OracleOut& ref, double extra_atol) {
  const auto bound = flashcore::tolerance::reference_bound(d.problem.o_dtype());
  return compare_o(d, ref, bound.atol + extra_atol, bound.rtol);
}

double naive_error(const HostData& d, const OracleOut& ref, int row_stride) {
  return verify::max_abs_difference(naive_same_precision(d, row_stride).o, ref.o);
}

}  // namespace fctest
