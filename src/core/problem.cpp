// Problem descriptor: defaults, strides, FLOP count and validation.
#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>
#include <utility>

#include "core/internal.hpp"
#include "core/numeric.hpp"
#include "flashcore/flashcore.hpp"

namespace flashcore {

Error::Error(std::string field, const std::string& message)
    : std::runtime_error(message), field_(std::move(field)) {}

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::F32: return "fp32";
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::E4M3: return "fp8_e4m3";
  }
  return "invalid";
}

DType parse_dtype(const std::string& name) {
  if (name == "fp32" || name == "f32" || name == "float" || name == "float32") return DType::F32;
  if (name == "fp16" || name == "f16" || name == "half" || name == "float16") return DType::F16;
  if (name == "bf16" || name == "bfloat16") return DType::BF16;
  if (name == "fp8_e4m3" || name == "e4m3" || name == "fp8" || name == "float8_e4m3fn") return DType::E4M3;
  throw Error("dtype", "dtype '" + name + "' is not one of fp32, fp16, bf16, fp8_e4m3");
}

int dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::F16:
    case DType::BF16: return 2;
    case DType::E4M3: return 1;
  }
  return 0;
}

const char* to_string(MemoryLocation loc) {
  switch (loc) {
    case MemoryLocation::Auto: return "auto";
    case MemoryLocation::Host: return "host";
    case MemoryLocation::Device: return "device";
  }
  return "invalid";
}

float Problem::effective_scale() const {
  return scale > 0.0f ? scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

double Problem::flops() const {
  if (has_window()) {
    double pairs = 0;  // (row, key) pairs the window shows, counted row by row
    for (int i = 0; i < seqlen_q; ++i) {
      const numeric::KeyRange r = numeric::visible_keys(i, seqlen_q, seqlen_k, causal, window_left, window_right);
      pairs += r.end - r.begin;
    }
    return 4.0 * batch * heads_q * pairs * head_dim;
  }
  const double f = 4.0 * batch * heads_q * static_cast<double>(seqlen_q) * seqlen_k * head_dim;
  return causal ? f / 2 : f;
}

void Problem::set_contiguous_bshd() {
  q = {static_cast<std::int64_t>(seqlen_q) * heads_q * head_dim, static_cast<std::int64_t>(heads_q) * head_dim,
       head_dim};
  o = q;
  k = {static_cast<std::int64_t>(seqlen_k) * heads_kv * head_dim, static_cast<std::int64_t>(heads_kv) * head_dim,
       head_dim};
  v = k;
}

void Problem::set_contiguous_bhsd() {
  q = {static_cast<std::int64_t>(heads_q) * seqlen_q * head_dim, head_dim,
       static_cast<std::int64_t>(seqlen_q) * head_dim};
  o = q;
  k = {static_cast<std::int64_t>(heads_kv) * seqlen_k * head_dim, head_dim,
       static_cast<std::int64_t>(seqlen_k) * head_dim};
  v = k;
}

Problem Problem::make(int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k, int head_dim,
                      DType dtype, bool causal) {
  Problem p;
  p.batch = batch;
  p.heads_q = heads_q;
  p.heads_kv = heads_kv;
  p.seqlen_q = seqlen_q;
  p.seqlen_k = seqlen_k;
  p.head_dim = head_dim;
  p.dtype = dtype;
  p.causal = causal;
  p.set_contiguous_bshd();
  return p;
}

std::int64_t span_elements(const Strides& s, int batch, int seq, int heads, int head_dim) {
  return static_cast<std::int64_t>(batch - 1) * s.batch + static_cast<std::int64_t>(seq - 1) * s.seq +
         static_cast<std::int64_t>(heads - 1) * s.head + head_dim;
}

namespace {

[[noreturn]] void fail(const std::string& field, const std::string& msg) { throw Error(field, field + ": " + msg); }

template <class T>
std::string str(T v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Strides of one tensor: non-negative, small enough that offsets fit in 64 bits, and describing
// a layout in which no two elements share an address (the head dimension is contiguous).
void validate_strides(const char* name, const Strides& s, int batch, int seq, int heads, int head_dim) {
  struct Dim {
    const char* what;
    std::int64_t stride;
    int extent;
  };
  std::array<Dim, 3> dims{{{"batch", s.batch, batch}, {"seq", s.seq, seq}, {"head", s.head, heads}}};
  const std::int64_t kMaxStride = std::int64_t(1) << 40;
  for (const Dim& d : dims) {
    const std::string field = std::string(name) + "." + d.what;
    if (d.stride < 0) fail(field, "stride " + str(d.stride) + " is negative");
    if (d.stride > kMaxStride) fail(field, "stride " + str(d.stride) + " exceeds 2^40 elements");
  }
  // Non-overlap: order the dimensions that have more than one element by stride; each stride
  // must step over everything the smaller dimensions span. Spans are computed in 128 bits and
  // must stay below 2^60 elements, so every byte offset fits in 64 bits.
  std::sort(dims.begin(), dims.end(), [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
  const __int128 kMaxSpan = static_cast<__int128>(1) << 60;
  __int128 spanned = head_dim;  // elements covered by the dimensions so far
  for (const Dim& d : dims) {
    if (d.extent <= 1) continue;
    if (d.stride < spanned) {
      fail(std::string(name) + "." + d.what,
           "stride " + str(d.stride) + " makes elements of " + name + " overlap (needs >= " +
               str(static_cast<long long>(spanned)) +
               " for this shape; strides left at 0 mean they were never set: use set_contiguous_bshd())");
    }
    spanned += static_cast<__int128>(d.stride) * (d.extent - 1);
    if (spanned > kMaxSpan)
      fail(std::string(name) + "." + d.what, "stride " + str(d.stride) + " with extent " + str(d.extent) + " makes " +
                                                 name + " span more than 2^60 elements");
  }
}

// The sequence-layout fields of a problem (flashcore.hpp, "Sequences"); the arrays themselves
// are checked in registry.cpp (validate_sequences), where their memory is known.
void validate_sequence_layout(const Problem& p) {
  const int kMaxLen = 1 << 30;
  if (p.total_q < 0 || p.total_q > kMaxLen)
    fail("total_q", "total_q " + str(p.total_q) + " must be 0 (Q not packed) or in [1, 2^30]");
  if (p.total_k < 0 || p.total_k > kMaxLen)
    fail("total_k", "total_k " + str(p.total_k) + " must be 0 (K/V not packed) or in [1, 2^30]");
  if (p.page_size == 0) {
    if (p.num_pages != 0) fail("num_pages", "num_pages " + str(p.num_pages) + " is set but page_size is 0 (K/V not paged)");
    if (p.pages_per_seq != 0)
      fail("pages_per_seq", "pages_per_seq " + str(p.pages_per_seq) + " is set but page_size is 0 (K/V not paged)");
    return;
  }
  if (p.page_size < 16 || p.page_size > (1 << 16) || p.page_size % 16 != 0)
    fail("page_size", "page_size " + str(p.page_size) + " must be 0 (not paged) or a multiple of 16 in [16, 65536]");
  if (p.total_k > 0)
    fail("total_k", "total_k " + str(p.total_k) +
                        " with paged K/V (page_size " + str(p.page_size) +
                        "): paged sequences take their lengths from seqlens_k, not from cu_seqlens_k");
  if (p.num_pages < 1 || p.num_pages > kMaxLen)
    fail("num_pages", "num_pages " + str(p.num_pages) + " must be in [1, 2^30] with paged K/V");
  if (p.pages_per_seq < 1 || p.pages_per_seq > kMaxLen)
    fail("pages_per_seq", "pages_per_seq " + str(p.pages_per_seq) + " must be in [1, 2^30] with paged K/V");
  const long long capacity = static_cast<long long>(p.pages_per_seq) * p.page_size;
  if (p.seqlen_k > capacity)
    fail("seqlen_k", "seqlen_k " + str(p.seqlen_k) + " exceeds what a block-table row holds: pages_per_seq " +
                         str(p.pages_per_seq) + " x page_size " + str(p.page_size) + " = " + str(capacity) + " keys");
  const __int128 table = static_cast<__int128>(p.batch) * p.pages_per_seq;
  if (table > (static_cast<__int128>(1) << 40))
    fail("pages_per_seq", "batch x pages_per_seq = " + str(static_cast<long long>(table)) + " block-table entries exceed 2^40");
}

// The fields of FP8 inputs (Problem::descale_q/k/v, out_dtype): with E4M3 the descales finite and
// > 0 and O of fp16 or bf16; with any other dtype the descales at 1 (out_dtype is not read then).
void validate_fp8(const Problem& p) {
  const std::pair<const char*, float> descales[] = {
      {"descale_q", p.descale_q}, {"descale_k", p.descale_k}, {"descale_v", p.descale_v}};
  if (p.dtype != DType::E4M3) {
    for (const auto& [field, value] : descales)
      if (value != 1.0f)
        fail(field, std::string(field) + " applies to fp8_e4m3 inputs only, got " + str(value) + " with dtype " +
                        to_string(p.dtype) + " (leave it at 1)");
    return;
  }
  if (p.out_dtype != DType::F16 && p.out_dtype != DType::BF16) {
    const std::string name = p.out_dtype == DType::F32 || p.out_dtype == DType::E4M3
                                 ? std::string(to_string(p.out_dtype))
                                 : "value " + str(static_cast<int>(p.out_dtype));
    fail("out_dtype", "out_dtype " + name + " is not fp16 or bf16 (the output of fp8_e4m3 inputs)");
  }
  for (const auto& [field, value] : descales)
    if (!std::isfinite(value) || !(value > 0.0f))
      fail(field, std::string(field) + " " + str(value) + " must be finite and > 0 (fp8_e4m3 inputs)");
}

}  // namespace

void validate(const Problem& p) {
  const int kMaxLen = 1 << 30;
  if (p.batch < 1 || p.batch > kMaxLen) fail("batch", "batch " + str(p.batch) + " must be in [1, 2^30]");
  if (p.heads_q < 1 || p.heads_q > kMaxLen) fail("heads_q", "heads_q " + str(p.heads_q) + " must be in [1, 2^30]");
  if (p.heads_kv < 1 || p.heads_kv > kMaxLen)
    fail("heads_kv", "heads_kv " + str(p.heads_kv) + " must be in [1, 2^30]");
  if (p.heads_q % p.heads_kv != 0)
    fail("heads_kv", "heads_q " + str(p.heads_q) + " is not a multiple of heads_kv " + str(p.heads_kv));
  if (p.seqlen_q < 1 || p.seqlen_q > kMaxLen)
    fail("seqlen_q", "seqlen_q " + str(p.seqlen_q) + " must be in [1, 2^30]");
  if (p.seqlen_k < 1 || p.seqlen_k > kMaxLen)
    fail("seqlen_k", "seqlen_k " + str(p.seqlen_k) + " must be in [1, 2^30]");
  if (p.head_dim < 1 || p.head_dim > 256) fail("head_dim", "head_dim " + str(p.head_dim) + " must be in [1, 256]");
  if (p.dtype != DType::F32 && p.dtype != DType::F16 && p.dtype != DType::BF16 && p.dtype != DType::E4M3)
    fail("dtype", "dtype value " + str(static_cast<int>(p.dtype)) + " is not fp32, fp16, bf16 or fp8_e4m3");
  validate_fp8(p);
  if (!std::isfinite(p.scale) || p.scale < 0.0f)
    fail("scale", "scale " + str(p.scale) + " must be finite and >= 0 (0 selects 1/sqrt(head_dim))");
  const int kMaxWindow = 1 << 30;
  if (p.window_left < -1 || p.window_left > kMaxWindow)
    fail("window_left", "window_left " + str(p.window_left) + " must be -1 (unbounded) or in [0, 2^30]");
  if (p.window_right < -1 || p.window_right > kMaxWindow)
    fail("window_right", "window_right " + str(p.window_right) + " must be -1 (unbounded) or in [0, 2^30]");
  if (p.causal && p.window_right > 0)
    fail("window_right", "window_right " + str(p.window_right) +
                             " contradicts causal (causal is window_right 0: leave it at -1 or 0)");
  if (!std::isfinite(p.softcap) || p.softcap < 0.0f)
    fail("softcap", "softcap " + str(p.softcap) + " must be finite and >= 0 (0 = no soft-capping)");
  validate_sequence_layout(p);
  // Each tensor's extents in its layout: packed Q/O (total_q rows), packed or paged K/V.
  const detail::TensorExtents qx = detail::q_extents(p), kx = detail::kv_extents(p);
  validate_strides("q", p.q, qx.outer, qx.rows, p.heads_q, p.head_dim);
  validate_strides("k", p.k, kx.outer, kx.rows, p.heads_kv, p.head_dim);
  validate_strides("v", p.v, kx.outer, kx.rows, p.heads_kv, p.head_dim);
  validate_strides("o", p.o, qx.outer, qx.rows, p.heads_q, p.head_dim);
  const __int128 lse_elems = static_cast<__int128>(qx.outer) * p.heads_q * qx.rows;
  if (lse_elems > (static_cast<__int128>(1) << 60))
    fail("seqlen_q", "batch*heads_q*seqlen_q = " + str(static_cast<long long>(lse_elems)) + " rows exceed 2^60");
}

namespace detail {

TensorExtents q_extents(const Problem& p) {
  return p.total_q > 0 ? TensorExtents{1, p.total_q} : TensorExtents{p.batch, p.seqlen_q};
}

TensorExtents kv_extents(const Problem& p) {
  if (p.page_size > 0) return {p.num_pages, p.page_size};
  return p.total_k > 0 ? TensorExtents{1, p.total_k} : TensorExtents{p.batch, p.seqlen_k};
}

}  // namespace detail

}  // namespace flashcore
