// The flashcore tool: the problem and its inputs (.npy files or random values), and the .npy outputs.
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "npy.hpp"

namespace fcapp {

// ---------------------------------------------------------------------------------------------
// Problem and inputs
// ---------------------------------------------------------------------------------------------

std::size_t tensor_bytes(const Problem& p, const Strides& s, int seq, int heads) {
  return static_cast<std::size_t>(flashcore::span_elements(s, p.batch, seq, heads, p.head_dim)) *
         flashcore::dtype_size(p.dtype);
}

/// Shape of a tensor as stored, per layout.
std::vector<std::int64_t> stored_shape(const Problem& p, Layout l, int seq, int heads) {
  if (l == Layout::BSHD) return {p.batch, seq, heads, p.head_dim};
  return {p.batch, heads, seq, p.head_dim};
}

std::string npy_descr(DType dt) {
  switch (dt) {
    case DType::F32: return "<f4";
    case DType::F16: return "<f2";
    case DType::BF16: return "<u2";
  }
  return "";
}

void set_layout(Problem& p, Layout l) {
  if (l == Layout::BSHD) p.set_contiguous_bshd();
  else p.set_contiguous_bhsd();
}

// The descriptors accepted for a dtype, with '=' / '|' read as little-endian.
bool descr_matches(const std::string& descr, DType dt) {
  std::string d = descr;
  if (!d.empty() && (d[0] == '=' || d[0] == '|')) d[0] = '<';
  switch (dt) {
    case DType::F32: return d == "<f4";
    case DType::F16: return d == "<f2";
    case DType::BF16: return d == "<u2" || d == "<i2";
  }
  return false;
}

std::string accepted_descrs(DType dt) {
  return dt == DType::BF16 ? "'<u2' or '<i2' holding bf16 bits" : "'" + npy_descr(dt) + "'";
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
    else
      throw RunError(where(in[0]) + ": unsupported dtype '" + qd +
                     "' (expected '<f4', '<f2', or '<u2'/'<i2' with --dtype bf16)");
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
  if (!d.from_files) {
    d.q.assign(tensor_bytes(p, p.q, p.seqlen_q, p.heads_q), 0);
    d.k.assign(tensor_bytes(p, p.k, p.seqlen_k, p.heads_kv), 0);
    d.v.assign(tensor_bytes(p, p.v, p.seqlen_k, p.heads_kv), 0);
    std::mt19937_64 rng(a.seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    // In logical (b, s, h, d) order, so that a seed gives the same values in both layouts;
    // rounded to the dtype and never zero.
    using flashcore::verify::fill_random;
    fill_random(p.dtype, d.q.data(), p.q, p.batch, p.seqlen_q, p.heads_q, p.head_dim, [&] { return normal(rng); });
    fill_random(p.dtype, d.k.data(), p.k, p.batch, p.seqlen_k, p.heads_kv, p.head_dim, [&] { return normal(rng); });
    fill_random(p.dtype, d.v.data(), p.v, p.batch, p.seqlen_k, p.heads_kv, p.head_dim, [&] { return uniform(rng); });
  }
  d.o.assign(tensor_bytes(p, p.o, p.seqlen_q, p.heads_q), 0);
  if (a.lse) d.lse.assign(static_cast<std::size_t>(p.batch) * p.heads_q * p.seqlen_q, 0.0f);
  return d;
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
  const std::string descr = npy_descr(p.dtype);
  write(a.out_q, descr, stored_shape(p, d.layout, p.seqlen_q, p.heads_q), d.q.data(), d.q.size());
  write(a.out_k, descr, stored_shape(p, d.layout, p.seqlen_k, p.heads_kv), d.k.data(), d.k.size());
  write(a.out_v, descr, stored_shape(p, d.layout, p.seqlen_k, p.heads_kv), d.v.data(), d.v.size());
  write(a.out_o, descr, stored_shape(p, d.layout, p.seqlen_q, p.heads_q), d.o.data(), d.o.size());
  write(a.out_lse, "<f4", {p.batch, p.heads_q, p.seqlen_q}, d.lse.data(), d.lse.size() * sizeof(float));
}

}  // namespace fcapp
