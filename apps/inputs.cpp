// The flashcore tool: the problem and its inputs (.npy files or random values), and the .npy outputs.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "core/numeric.hpp"
#include "npy.hpp"

namespace fcapp {

// ---------------------------------------------------------------------------------------------
// Problem and inputs
// ---------------------------------------------------------------------------------------------

std::size_t tensor_bytes(const Problem& p, const Strides& s, Extents x, int heads, DType dt) {
  return static_cast<std::size_t>(flashcore::span_elements(s, x.outer, x.rows, heads, p.head_dim)) *
         flashcore::dtype_size(dt);
}

/// Shape of a tensor as stored, per layout: (B,S,H,D) / (B,H,S,D); packed (rows,H,D) / (H,rows,D);
/// paged pools (pages,page_size,H,D) / (pages,H,page_size,D).
std::vector<std::int64_t> stored_shape(const Problem& p, Layout l, Extents x, int heads, bool packed) {
  if (packed) {
    if (l == Layout::BSHD) return {x.rows, heads, p.head_dim};
    return {heads, x.rows, p.head_dim};
  }
  if (l == Layout::BSHD) return {x.outer, x.rows, heads, p.head_dim};
  return {x.outer, heads, x.rows, p.head_dim};
}

std::string npy_descr(DType dt) {
  switch (dt) {
    case DType::F32: return "<f4";
    case DType::F16: return "<f2";
    case DType::BF16: return "<u2";
    case DType::E4M3: return "|u1";  // e4m3 bytes
  }
  return "";
}

// Contiguous strides of a tensor of x.outer blocks of x.rows rows (batch entries, pages, or one
// block of packed rows): (outer, rows, heads, dim) for bshd, (outer, heads, rows, dim) for bhsd.
Strides contiguous(Layout l, Extents x, int heads, int head_dim) {
  const std::int64_t block = static_cast<std::int64_t>(x.rows) * heads * head_dim;
  if (l == Layout::BSHD) return {block, static_cast<std::int64_t>(heads) * head_dim, head_dim};
  return {block, head_dim, static_cast<std::int64_t>(x.rows) * head_dim};
}

// The strides of every tensor for the layout (Problem::set_contiguous_bshd / _bhsd for dense
// tensors; packed and paged ones contiguous in their extents).
void set_layout(Problem& p, Layout l) {
  p.q = p.o = contiguous(l, q_extents(p), p.heads_q, p.head_dim);
  p.k = p.v = contiguous(l, kv_extents(p), p.heads_kv, p.head_dim);
}

// The logical rows (b, j < seqlen_k) of a paged pool with strides s, reached through the block
// table, filled in (b, j, h, d) order as verify::fill_random fills a dense tensor.
template <class Draw>
void fill_paged(const Problem& p, const std::vector<int>& table, unsigned char* buf, const Strides& s, Draw&& draw) {
  using flashcore::verify::round_to;
  for (int b = 0; b < p.batch; ++b)
    for (int j = 0; j < p.seqlen_k; ++j) {
      const std::int64_t page = table[static_cast<std::size_t>(b) * p.pages_per_seq + j / p.page_size];
      const std::int64_t row = page * s.batch + static_cast<std::int64_t>(j % p.page_size) * s.seq;
      for (int h = 0; h < p.heads_kv; ++h)
        for (int x = 0; x < p.head_dim; ++x) {
          double v = draw();
          while (round_to(p.dtype, v) == 0.0) v = draw();
          flashcore::verify::store_element(p.dtype, buf, row + h * s.head + x, v);
        }
    }
}

// Whether a shape flag (e.g. "--seqlen-k") was given on the command line.
bool given(const RunArgs& a, std::initializer_list<const char*> flags) {
  for (const std::string& f : a.shape_flags_given)
    for (const char* g : flags)
      if (f == g) return true;
  return false;
}

// Offsets of packed rows: 0, l0, l0+l1, ...; the total must fit the descriptor (2^30 rows).
std::vector<int> offsets_of(const std::vector<int>& lengths, const char* flag) {
  std::vector<int> cu(1, 0);
  long long total = 0;
  for (int n : lengths) {
    total += n;
    if (total > (1 << 30)) throw UsageError(std::string(flag) + ": the lengths add up to more than 2^30 rows");
    cu.push_back(static_cast<int>(total));
  }
  if (total == 0)
    throw UsageError(std::string(flag) + ": the lengths add up to 0; packed tensors need at least one row");
  return cu;
}

// The sequence layout the flags ask for (--seqlens-q, --seqlens-k, --varlen-k, --page-size): the
// problem's fields and bounds, the arrays, and every sequence's lengths (d.lq, d.lk; also without
// sequences). Inconsistent flags are usage errors naming the flag.
void set_sequences(const RunArgs& a, HostData& d, std::mt19937_64& rng) {
  Problem& p = d.p;
  const std::vector<int>* list = !a.seqlens_q.empty() ? &a.seqlens_q : !a.seqlens_k.empty() ? &a.seqlens_k : nullptr;
  if (list != nullptr) {
    const char* flag = list == &a.seqlens_q ? "--seqlens-q" : "--seqlens-k";
    if (list->size() > (1u << 24)) throw UsageError(std::string(flag) + ": more than 2^24 sequences");
    const int batch = static_cast<int>(list->size());
    if (given(a, {"-b", "--batch"}) && a.batch != batch)
      throw UsageError("--batch (-b) " + std::to_string(a.batch) + " contradicts " + flag + " (" + std::to_string(batch) +
                       " lengths: one per sequence; leave --batch out)");
    p.batch = batch;
  }
  if (p.batch < 1 || p.seqlen_q < 1 || p.seqlen_k < 1) return;  // invalid: validate() names the field
  // Queries: packed by --seqlens-q, else seqlen_q each.
  if (!a.seqlens_q.empty()) {
    const int longest = *std::max_element(a.seqlens_q.begin(), a.seqlens_q.end());
    if (given(a, {"-l", "--seqlen", "--seqlen-q"})) {
      if (longest > p.seqlen_q)
        throw UsageError("--seqlens-q: length " + std::to_string(longest) + " exceeds the bound --seqlen-q " +
                         std::to_string(p.seqlen_q));
    } else {
      p.seqlen_q = std::max(1, longest);
    }
    d.seqs.cu_seqlens_q = offsets_of(a.seqlens_q, "--seqlens-q");
    p.total_q = d.seqs.cu_seqlens_q.back();
    d.lq = a.seqlens_q;
  } else {
    d.lq.assign(p.batch, p.seqlen_q);
  }
  // Keys: --seqlens-k, else seqlen_k each.
  if (!a.seqlens_k.empty()) {
    const int longest = *std::max_element(a.seqlens_k.begin(), a.seqlens_k.end());
    if (given(a, {"-l", "--seqlen", "--seqlen-k"})) {
      if (longest > p.seqlen_k)
        throw UsageError("--seqlens-k: length " + std::to_string(longest) + " exceeds --seqlen-k " +
                         std::to_string(p.seqlen_k) + " (the bound, and the rows of each sequence's cache)");
    } else {
      p.seqlen_k = std::max(1, longest);
    }
    d.lk = a.seqlens_k;
  } else {
    d.lk.assign(p.batch, p.seqlen_k);
  }
  if (a.varlen_k) {
    d.seqs.cu_seqlens_k = offsets_of(d.lk, "--seqlens-k");
    p.total_k = d.seqs.cu_seqlens_k.back();
  } else {
    if (!a.seqlens_k.empty()) d.seqs.seqlens_k = a.seqlens_k;
    if (a.page_size > 0) {
      // Pools of page_size-row pages, every sequence's pages_per_seq entries of the block table a
      // distinct page: a random permutation of the pool, so that no sequence's pages are in order.
      p.page_size = a.page_size;
      p.pages_per_seq = (p.seqlen_k + a.page_size - 1) / a.page_size;
      const long long pages = static_cast<long long>(p.batch) * p.pages_per_seq;
      if (pages > (1 << 30)) throw UsageError("--page-size: batch x pages per sequence exceeds 2^30 pages");
      p.num_pages = static_cast<int>(pages);
      d.seqs.block_table.resize(static_cast<std::size_t>(pages));
      for (int i = 0; i < p.num_pages; ++i) d.seqs.block_table[i] = i;
      std::shuffle(d.seqs.block_table.begin(), d.seqs.block_table.end(), rng);
    }
  }
}

// The descriptors accepted for a dtype, with '=' / '|' read as little-endian.
bool descr_matches(const std::string& descr, DType dt) {
  std::string d = descr;
  if (!d.empty() && (d[0] == '=' || d[0] == '|')) d[0] = '<';
  switch (dt) {
    case DType::F32: return d == "<f4";
    case DType::F16: return d == "<f2";
    case DType::BF16: return d == "<u2" || d == "<i2";
    case DType::E4M3: return d == "<u1" || d == "<i1";
  }
  return false;
}

std::string accepted_descrs(DType dt) {
  if (dt == DType::BF16) return "'<u2' or '<i2' holding bf16 bits";
  if (dt == DType::E4M3) return "'|u1' or '|i1' holding e4m3 bytes";
  return "'" + npy_descr(dt) + "'";
}

// Reads Q, K, V from .npy files; the shapes determine the problem.
void load_inputs(const RunArgs& a, HostData& d) {
  struct Input {
    const char* flag;
    const std::string* path;
    NpyArray arr;
  };
  Input in[3] = {{"--q", &a.q_file, {}}, {"--k", &a.k_file, {}}, {"--v", &a.v_file, {}}};
  for (Input& x : in) {
    try {
      x.arr = read_npy(*x.path);
    } catch (const NpyError& e) {
      throw RunError(std::string(x.flag) + " " + e.what());
    }
  }
  auto where = [](const Input& x) { return std::string(x.flag) + " " + *x.path; };
  const char* dims = a.layout == Layout::BSHD ? "(B,S,H,D)" : "(B,H,S,D)";
  for (const Input& x : in) {
    if (x.arr.fortran_order)
      throw RunError(where(x) + ": Fortran-order arrays are not supported (save a C-order array, e.g. with "
                     "np.ascontiguousarray)");
    if (x.arr.shape.size() != 4)
      throw RunError(where(x) + ": expected a 4-D array " + dims + " for layout " + to_string(a.layout) +
                     ", got shape " + shape_string(x.arr.shape));
    for (std::int64_t s : x.arr.shape)
      if (s > INT_MAX) throw RunError(where(x) + ": shape " + shape_string(x.arr.shape) + " has a dimension beyond 2^31-1");
  }
  // dtype: --dtype, or the one of the Q file.
  DType dt = a.dtype;
  if (!a.dtype_set) {
    const std::string& qd = in[0].arr.descr;
    if (descr_matches(qd, DType::F32)) dt = DType::F32;
    else if (descr_matches(qd, DType::F16)) dt = DType::F16;
    else if (descr_matches(qd, DType::BF16))
      throw RunError(where(in[0]) + ": dtype '" + qd + "' holds 16-bit integers; pass --dtype bf16 if they are bf16 bits");
    else if (descr_matches(qd, DType::E4M3))
      throw RunError(where(in[0]) + ": dtype '" + qd +
                     "' holds bytes; pass --dtype fp8_e4m3 if they are fp8 e4m3 values");
    else
      throw RunError(where(in[0]) + ": unsupported dtype '" + qd +
                     "' (expected '<f4', '<f2', '<u2'/'<i2' with --dtype bf16, or '|u1'/'|i1' with --dtype "
                     "fp8_e4m3)");
  }
  for (const Input& x : in)
    if (!descr_matches(x.arr.descr, dt))
      throw RunError(where(x) + ": dtype '" + x.arr.descr + "' does not match " +
                     (a.dtype_set ? "--dtype " : "the dtype of --q, ") + flashcore::to_string(dt) + " (expected " +
                     accepted_descrs(dt) + ")");
  // Shapes: index 1/2 are S/H for bshd, H/S for bhsd.
  const int si = a.layout == Layout::BSHD ? 1 : 2, hi = a.layout == Layout::BSHD ? 2 : 1;
  const auto& qs = in[0].arr.shape;
  const auto& ks = in[1].arr.shape;
  const auto& vs = in[2].arr.shape;
  if (vs != ks)
    throw RunError(where(in[2]) + ": shape " + shape_string(vs) + " differs from the shape " + shape_string(ks) +
                   " of " + where(in[1]));
  if (ks[0] != qs[0])
    throw RunError(where(in[1]) + ": batch " + std::to_string(ks[0]) + " (shape " + shape_string(ks) +
                   ") differs from the batch " + std::to_string(qs[0]) + " of " + where(in[0]) + " (shape " +
                   shape_string(qs) + ")");
  if (ks[3] != qs[3])
    throw RunError(where(in[1]) + ": head_dim " + std::to_string(ks[3]) + " (shape " + shape_string(ks) +
                   ") differs from the head_dim " + std::to_string(qs[3]) + " of " + where(in[0]) + " (shape " +
                   shape_string(qs) + ")");
  Problem& p = d.p;
  p.batch = static_cast<int>(qs[0]);
  p.seqlen_q = static_cast<int>(qs[si]);
  p.heads_q = static_cast<int>(qs[hi]);
  p.head_dim = static_cast<int>(qs[3]);
  p.seqlen_k = static_cast<int>(ks[si]);
  p.heads_kv = static_cast<int>(ks[hi]);
  p.dtype = dt;
  // Explicit shape flags must agree with the files.
  for (const std::string& f : a.shape_flags_given) {
    auto clash = [&](const char* what, long long flag_v, long long file_v) {
      if (flag_v != file_v)
        throw UsageError(f + " " + std::to_string(flag_v) + " contradicts the input files (" + what + " " +
                         std::to_string(file_v) + " from shapes " + shape_string(qs) + " and " + shape_string(ks) + ")");
    };
    if (f == "-b" || f == "--batch") clash("batch", a.batch, p.batch);
    if (f == "--hq" || f == "--heads") clash("heads_q", a.heads_q, p.heads_q);
    if (f == "--hkv" || f == "--heads-kv") clash("heads_kv", a.heads_kv, p.heads_kv);
    if (f == "-l" || f == "--seqlen") {
      clash("seqlen_q", a.seqlen_q, p.seqlen_q);
      clash("seqlen_k", a.seqlen_k, p.seqlen_k);
    }
    if (f == "--seqlen-q") clash("seqlen_q", a.seqlen_q, p.seqlen_q);
    if (f == "--seqlen-k") clash("seqlen_k", a.seqlen_k, p.seqlen_k);
    if (f == "-d" || f == "--head-dim") clash("head_dim", a.head_dim, p.head_dim);
  }
  d.q = std::move(in[0].arr.data);
  d.k = std::move(in[1].arr.data);
  d.v = std::move(in[2].arr.data);
  d.from_files = true;
}

HostData make_data(const RunArgs& a) {
  HostData d;
  d.layout = a.layout;
  Problem& p = d.p;
  if (!a.q_file.empty()) {
    load_inputs(a, d);
  } else {
    p.batch = a.batch;
    p.heads_q = a.heads_q;
    p.heads_kv = a.heads_kv;
    p.seqlen_q = a.seqlen_q;
    p.seqlen_k = a.seqlen_k;
    p.head_dim = a.head_dim;
    p.dtype = a.dtype;
  }
  if (a.out_dtype_set && p.dtype != DType::E4M3)
    throw UsageError(std::string("--out-dtype applies to fp8_e4m3 inputs only (O has the inputs' dtype, here ") +
                     flashcore::to_string(p.dtype) + ")");
  if (p.dtype == DType::E4M3) p.out_dtype = a.out_dtype;
  // The descales as given: validate() below names one that is not 1 with another dtype, or not
  // finite and > 0 (in fp32) with fp8 inputs.
  p.descale_q = static_cast<float>(a.descale_q);
  p.descale_k = static_cast<float>(a.descale_k);
  p.descale_v = static_cast<float>(a.descale_v);
  p.causal = a.causal;
  p.scale = static_cast<float>(a.scale);
  p.window_left = a.window_left;
  p.window_right = a.window_right;
  p.softcap = static_cast<float>(a.softcap);
  if (std::isfinite(a.softcap) && std::fabs(a.softcap) > std::numeric_limits<float>::max())
    throw UsageError("--softcap: " + std::to_string(a.softcap) + " is beyond the fp32 range");
  if (std::isfinite(a.scale) && a.scale != 0 && p.scale == 0.0f)
    throw UsageError("--scale: " + std::to_string(a.scale) + " underflows to 0 in fp32");
  if (std::isfinite(a.scale) && std::fabs(a.scale) > std::numeric_limits<float>::max())
    throw UsageError("--scale: " + std::to_string(a.scale) + " is beyond the fp32 range");
  // The block table's permutation draws from its own generator, so that a seed gives the same
  // Q, K and V with and without --page-size.
  std::mt19937_64 table_rng(a.seed ^ 0x9e3779b97f4a7c15ull);
  set_sequences(a, d, table_rng);
  set_layout(p, a.layout);
  try {
    flashcore::validate(p);
  } catch (const flashcore::Error& e) {
    throw UsageError(e.what());
  }
  if (a.alibi) {
    d.alibi_slopes.resize(p.heads_q);
    for (int h = 0; h < p.heads_q; ++h)
      d.alibi_slopes[h] = static_cast<float>(std::exp2(-8.0 * (h + 1) / p.heads_q));
  }
  if (a.sinks) d.sinks.assign(p.heads_q, static_cast<float>(a.sink_value));
  const Extents qx = q_extents(p), kx = kv_extents(p);
  if (!d.from_files) {
    d.q.assign(tensor_bytes(p, p.q, qx, p.heads_q, p.dtype), 0);
    d.k.assign(tensor_bytes(p, p.k, kx, p.heads_kv, p.dtype), 0);
    d.v.assign(tensor_bytes(p, p.v, kx, p.heads_kv, p.dtype), 0);
    std::mt19937_64 rng(a.seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    // In logical (b, s, h, d) order, so that a seed gives the same values in both layouts;
    // rounded to the dtype (fp8: to e4m3, the descales then apply on top) and never zero. Packed
    // rows are in that order already.
    using flashcore::verify::fill_random;
    fill_random(p.dtype, d.q.data(), p.q, qx.outer, qx.rows, p.heads_q, p.head_dim, [&] { return normal(rng); });
    if (p.page_size > 0) {
      // Paged pools: the rows of each sequence's keys (b, j < seqlen_k) through the block table, in
      // that logical order, so that a seed gives the keys and values of the dense cache; the pool's
      // other rows (unused pages, a last page's tail) from a generator of their own.
      std::mt19937_64 pad_rng(a.seed + 1);
      fill_random(p.dtype, d.k.data(), p.k, kx.outer, kx.rows, p.heads_kv, p.head_dim, [&] { return normal(pad_rng); });
      fill_random(p.dtype, d.v.data(), p.v, kx.outer, kx.rows, p.heads_kv, p.head_dim, [&] { return normal(pad_rng); });
      fill_paged(p, d.seqs.block_table, d.k.data(), p.k, [&] { return normal(rng); });
      fill_paged(p, d.seqs.block_table, d.v.data(), p.v, [&] { return uniform(rng); });
    } else {
      fill_random(p.dtype, d.k.data(), p.k, kx.outer, kx.rows, p.heads_kv, p.head_dim, [&] { return normal(rng); });
      fill_random(p.dtype, d.v.data(), p.v, kx.outer, kx.rows, p.heads_kv, p.head_dim, [&] { return uniform(rng); });
    }
  }
  d.o.assign(tensor_bytes(p, p.o, qx, p.heads_q, p.o_dtype()), 0);
  if (a.lse) d.lse.assign(static_cast<std::size_t>(qx.outer) * p.heads_q * qx.rows, 0.0f);
  return d;
}

Work work_of(const HostData& d) {
  const Problem& p = d.p;
  const double es = flashcore::dtype_size(p.dtype), es_o = flashcore::dtype_size(p.o_dtype());
  Work w;
  for (std::size_t b = 0; b < d.lq.size(); ++b) {
    const int lq = d.lq[b], lk = d.lk[b];
    w.bytes += static_cast<double>(lq) * p.heads_q * p.head_dim * (es + es_o);  // Q read, O written
    if (lq == 0 || lk == 0) continue;
    Problem one = p;  // this sequence alone, for its FLOPs by the library's convention
    one.batch = 1, one.seqlen_q = lq, one.seqlen_k = lk;
    one.total_q = one.total_k = one.page_size = one.num_pages = one.pages_per_seq = 0;
    w.flops += one.flops();
    // The keys some query row sees: one contiguous range (each row's range moves by one key per row).
    int lo = lk, hi = 0;
    for (int i = 0; i < lq; ++i) {
      const auto r = flashcore::numeric::visible_keys(i, lq, lk, p.causal, p.window_left, p.window_right);
      if (r.end > r.begin) lo = std::min(lo, r.begin), hi = std::max(hi, r.end);
    }
    if (hi > lo) w.bytes += 2.0 * (hi - lo) * p.heads_kv * p.head_dim * es;  // K and V read
  }
  return w;
}

void write_outputs(const RunArgs& a, const HostData& d) {
  const Problem& p = d.p;
  auto write = [&](const std::string& path, const std::string& descr, const std::vector<std::int64_t>& shape,
                   const void* data, std::size_t bytes) {
    if (path.empty()) return;
    try {
      write_npy(path, descr, shape, data, bytes);
    } catch (const NpyError& e) {
      throw RunError(e.what());
    }
  };
  const std::string descr = npy_descr(p.dtype), o_descr = npy_descr(p.o_dtype());
  const Extents qx = q_extents(p), kx = kv_extents(p);
  const bool packed_q = p.total_q > 0, packed_k = p.total_k > 0;
  write(a.out_q, descr, stored_shape(p, d.layout, qx, p.heads_q, packed_q), d.q.data(), d.q.size());
  write(a.out_k, descr, stored_shape(p, d.layout, kx, p.heads_kv, packed_k), d.k.data(), d.k.size());
  write(a.out_v, descr, stored_shape(p, d.layout, kx, p.heads_kv, packed_k), d.v.data(), d.v.size());
  write(a.out_o, o_descr, stored_shape(p, d.layout, qx, p.heads_q, packed_q), d.o.data(), d.o.size());
  const std::vector<std::int64_t> lse_shape =
      packed_q ? std::vector<std::int64_t>{p.heads_q, p.total_q} : std::vector<std::int64_t>{p.batch, p.heads_q, p.seqlen_q};
  write(a.out_lse, "<f4", lse_shape, d.lse.data(), d.lse.size() * sizeof(float));
}

}  // namespace fcapp
