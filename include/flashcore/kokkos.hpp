// FlashCore's Kokkos View entry point.
//
//   flashcore::run(q, k, v, o);            // rank-4 Views indexed (batch, seq, head, dim)
//   flashcore::run(q, k, v, o, lse, opts); // lse: rank-3 View (batch, heads_q, seqlen_q), contiguous
//                                          // (LayoutRight: CudaSpace Views default to LayoutLeft)
//   flashcore::run_backward(q, k, v, o, lse, d_o, dq, dk, dv, opts);  // training: the gradients, each
//                                          // View with the layout of its tensor (see run_backward)
//
// Views may have any layout whose dim index has stride 1 (LayoutRight, LayoutStride, subviews or
// LayoutStride views of a (B,H,S,D) allocation...; not LayoutLeft, whose first index is the
// contiguous one), and may live in any memory
// space FlashCore has a backend for (host spaces; CudaSpace when built with CUDA).
// Element types: float (fp32), Kokkos::Experimental::half_t (fp16), Kokkos::Experimental::bhalf_t
// (bf16, Kokkos >= 3.6), or std::uint16_t holding fp16/bf16 bits with ViewOptions::dtype set.
// FP8 inputs (flashcore.hpp, DType::E4M3; forward only): Q, K, V std::uint8_t Views of e4m3 bytes with
// ViewOptions::dtype = E4M3 and its descale_q/k/v; O a std::uint16_t View with ViewOptions::out_dtype
// fp16 or bf16 (or a half_t / bhalf_t View, whose type says which).
//
// Sequences of different lengths (flashcore.hpp, "Sequences") through ViewOptions::sequences, which
// takes Views of int in the memory space of q; the same run() then takes other ranks:
//
//   opts.sequences.cu_seqlens_q = cu_q;   // rank 1, batch+1 offsets: Q and O rank 3 (total_q, heads_q, dim),
//                                         //   LSE rank 2 (heads_q, total_q)
//   opts.sequences.cu_seqlens_k = cu_k;   // rank 1, batch+1 offsets: K and V rank 3 (total_k, heads_kv, dim)
//   opts.sequences.seqlens_k = lens;      // rank 1, batch cache lengths (K/V dense, packed or paged)
//   opts.sequences.block_table = table;   // rank 2 (batch, pages_per_seq): K and V rank-4 pools
//                                         //   (num_pages, page_size, heads_kv, dim)
//   flashcore::run(q, k, v, o, lse, opts);
//
// The batch is cu_q.extent(0) - 1 with packed Q, else q.extent(0). See ViewSequences for the bounds.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "flashcore/flashcore.hpp"

namespace flashcore {

namespace kokkos_detail {

template <class V>
MemoryLocation location_of() {
  using space = typename V::memory_space;
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, space>::accessible ? MemoryLocation::Host
                                                                           : MemoryLocation::Device;
}

}  // namespace kokkos_detail

/// A rank-1 or rank-2 View of int (int32) as ViewSequences holds it: its data pointer, shape and
/// memory, not the View (keep the View alive until the call has read it). Assign a View to it; a
/// default-constructed one means "not given".
struct IntViewRef {
  const int* data = nullptr;
  int rank = 0;  // 0: not given
  std::size_t extent[2] = {0, 0}, stride[2] = {0, 0};
  MemoryLocation location = MemoryLocation::Auto;

  IntViewRef() = default;
  template <class V, class = std::enable_if_t<Kokkos::is_view<V>::value>>
  IntViewRef(const V& view) {  // NOLINT(google-explicit-constructor): assigned from a View
    static_assert(std::is_same<typename V::non_const_value_type, int>::value,
                  "sequence arrays are Views of int (int32)");
    data = view.data();
    rank = static_cast<int>(V::rank);
    for (int r = 0; r < 2 && r < rank; ++r) extent[r] = view.extent(r), stride[r] = view.stride(r);
    location = kokkos_detail::location_of<V>();
  }
  bool given() const { return rank > 0; }
};

/// Per-sequence lengths for the View entry point (flashcore.hpp, "Sequences"): Views of int in the
/// memory space of q; each one left unset is off.
struct ViewSequences {
  IntViewRef cu_seqlens_q;  // rank 1, batch+1 offsets: Q and O are packed rank-3 Views (total_q, heads_q, dim)
  IntViewRef cu_seqlens_k;  // rank 1, batch+1 offsets: K and V are packed rank-3 Views (total_k, heads_kv, dim)
  IntViewRef seqlens_k;     // rank 1, batch cache lengths: sequence b uses its first seqlens_k(b) keys
  IntViewRef block_table;   // rank 2 (batch, pages_per_seq), LayoutRight, page indices: K and V are pools,
                            // rank-4 Views (num_pages, page_size, heads_kv, dim); page_size a multiple of 16
  /// Problem::seqlen_q with packed Q: the bound of every sequence's queries. 0: the largest length in
  /// cu_seqlens_q when it is in host memory, else total_q (valid, but a device launch is then sized
  /// for total_q rows per sequence: give the bound in a device decode loop). Dense Q: its extent 1.
  int max_seqlen_q = 0;
  /// Problem::seqlen_k: the bound of every sequence's keys. 0: with host arrays the largest length
  /// (seqlens_k, else the cu_seqlens_k counts); otherwise the rows K holds per sequence (dense: its
  /// extent 1; packed: total_k; paged: pages_per_seq x page_size). Paged K/V without seqlens_k give
  /// every sequence this many keys. Dense K without seqlens_k: its extent 1 (0 or that value).
  int max_seqlen_k = 0;
};

/// Options of the View entry point: the call options plus what a View cannot say.
struct ViewOptions : Options {
  bool causal = false;
  float scale = 0.0f;    // 0: 1/sqrt(head_dim)
  int dtype = -1;        // required for std::uint16_t Views: static_cast<int>(DType::F16 or BF16);
                         // for std::uint8_t Views (fp8 inputs): static_cast<int>(DType::E4M3)
  // FP8 inputs (dtype E4M3), as Problem in flashcore.hpp: the per-tensor descales of Q, K, V (other
  // dtypes leave them at 1), and O's dtype, static_cast<int>(DType::F16 or BF16): required when O is
  // a std::uint16_t View; -1 with a half_t or bhalf_t O, whose type says it. Read for fp8 inputs only.
  float descale_q = 1.0f;
  float descale_k = 1.0f;
  float descale_v = 1.0f;
  int out_dtype = -1;
  // Variants, as Problem and Tensors in flashcore.hpp: a sliding window (-1 = unbounded side),
  // soft-capping (0 = none), and per-head ALiBi slopes and sink logits: data() of a View of
  // heads_q floats in the memory space of q, or nullptr (none).
  int window_left = -1;
  int window_right = -1;
  float softcap = 0.0f;
  const float* alibi_slopes = nullptr;
  const float* sinks = nullptr;
  /// Sequences of different lengths: varlen Q, varlen K/V, cache lengths, paged K/V (see above).
  ViewSequences sequences;
};

namespace kokkos_detail {

// DType of a View element type, -1 if none. Where Kokkos has no native half type, half_t is
// float (KOKKOS_HALF_T_IS_FLOAT): such Views are fp32.
template <class T>
constexpr int dtype_of() {
  if constexpr (std::is_same<T, float>::value) {
    return static_cast<int>(DType::F32);
  } else if constexpr (std::is_same<T, Kokkos::Experimental::half_t>::value) {
    return static_cast<int>(DType::F16);
#if KOKKOS_VERSION >= 30600
  } else if constexpr (std::is_same<T, Kokkos::Experimental::bhalf_t>::value) {
    return static_cast<int>(DType::BF16);
#endif
  } else {
    return -1;
  }
}

// Extent and stride r of a View, 1 and 0 past its rank (never asked of the View there).
template <class V>
std::size_t extent_at(const V& view, int r) {
  return r < static_cast<int>(V::rank) ? static_cast<std::size_t>(view.extent(r)) : 1;
}
template <class V>
std::int64_t stride_at(const V& view, int r) {
  return r < static_cast<int>(V::rank) ? static_cast<std::int64_t>(view.stride(r)) : 0;
}

// The element strides of a rank-4 View (batch or page, seq, head, dim), or of a rank-3 packed View
// (row, head, dim) whose batch stride is unused (0).
template <class V>
Strides strides_of(const V& view, const char* name) {
  const int dim = static_cast<int>(V::rank) - 1;
  if (extent_at(view, dim) > 1 && stride_at(view, dim) != 1)
    throw Error(name, std::string(name) + ": the dim index (rank " + std::to_string(dim) +
                          ") must have stride 1, it has " + std::to_string(stride_at(view, dim)));
  if (dim == 2) return {0, stride_at(view, 0), stride_at(view, 1)};
  return {stride_at(view, 0), stride_at(view, 1), stride_at(view, 2)};
}

template <class V>
void check_rank(const char* name, int want, const char* why = "") {
  if (static_cast<int>(V::rank) != want)
    throw Error(name, std::string(name) + ": View has rank " + std::to_string(static_cast<int>(V::rank)) +
                          ", expected " + std::to_string(want) + why);
}

inline void check_extent(const char* name, const char* what, std::size_t got, std::size_t want) {
  if (got != want)
    throw Error(name, std::string(name) + ": extent " + what + " is " + std::to_string(got) + ", expected " +
                          std::to_string(want));
}

inline int to_int(const char* name, const char* what, std::size_t v) {
  if (v > 2147483647u) throw Error(name, std::string(name) + ": extent " + what + " is too large");
  return static_cast<int>(v);
}

// The LSE output as the entry point needs it: a pointer and the View's shape, or nothing. (No
// View is default-constructed for "no LSE": GCC 12.2-12.4 miscompiles the default constructor of
// Kokkos 4.6.99's mdspan-based View, whose destructor then dereferences a null allocation record;
// kokkos/kokkos issue 8187.)
struct LseArg {
  float* data = nullptr;
  int rank = 0;
  std::size_t extent[3] = {0, 0, 0}, stride[3] = {0, 0, 0};
  MemoryLocation location = MemoryLocation::Auto;
};

template <class LseView>
LseArg lse_arg(const LseView& lse) {
  static_assert(std::is_same<typename LseView::value_type, float>::value, "lse must be a View of float");
  LseArg a;
  a.data = lse.data();
  a.rank = static_cast<int>(LseView::rank);
  for (int r = 0; r < 3 && r < a.rank; ++r) a.extent[r] = lse.extent(r), a.stride[r] = lse.stride(r);
  a.location = location_of<LseView>();
  return a;
}

// One sequence array of ViewOptions::sequences checked against the call: rank, extents, int32
// elements in one contiguous block, in the memory of q. Returns its data pointer (null: not given).
inline const int* sequence_array(const char* name, const IntViewRef& a, int rank, std::size_t extent0,
                                 const char* what0, MemoryLocation q_location) {
  if (!a.given()) return nullptr;
  if (a.rank != rank)
    throw Error(name, std::string(name) + ": View has rank " + std::to_string(a.rank) + ", expected " +
                          std::to_string(rank));
  if (a.extent[0] != extent0)
    throw Error(name, std::string(name) + ": extent 0 is " + std::to_string(a.extent[0]) + ", expected " +
                          std::to_string(extent0) + " (" + what0 + ")");
  const bool contiguous = rank == 1 ? (a.extent[0] <= 1 || a.stride[0] == 1)
                                    : (a.extent[1] <= 1 || a.stride[1] == 1) &&
                                          (a.extent[0] <= 1 || a.stride[0] == a.extent[1]);
  if (!contiguous)
    throw Error(name, std::string(name) + ": View must be contiguous" +
                          (rank == 2 ? " (LayoutRight: rows of pages_per_seq entries)" : " (stride 1)"));
  if (a.location != q_location)
    throw Error(name, std::string(name) + ": the View is in " + to_string(a.location) + " memory, q in " +
                          to_string(q_location) + " memory; the sequence arrays must live in the memory of Q");
  return a.data;
}

// The largest count of an offsets array (host memory, batch+1 entries), at least 1; lengths of an
// invalid array (decreasing) are what the validation then reports, not this.
inline int max_count(const int* cu, int batch) {
  long long m = 1;
  for (int b = 0; b < batch; ++b) m = std::max(m, static_cast<long long>(cu[b + 1]) - cu[b]);
  return static_cast<int>(std::min<long long>(m, INT_MAX));
}
inline int max_value(const int* x, int n) {
  long long m = 1;
  for (int b = 0; b < n; ++b) m = std::max<long long>(m, x[b]);
  return static_cast<int>(m);
}

// A call made from Views: the problem, the tensors and the options, checked.
struct ViewCall {
  Problem p;
  Tensors t;
  Options opts;
};

template <class QV, class KV, class VV, class OV>
ViewCall view_call(const QV& q, const KV& k, const VV& v, const OV& o, const LseArg& lse, const ViewOptions& opts) {
  using T = typename QV::non_const_value_type;
  using OT = typename OV::non_const_value_type;
  constexpr bool fp8 = std::is_same<T, std::uint8_t>::value;  // e4m3 bytes: O has its own type
  static_assert(std::is_same<T, typename KV::non_const_value_type>::value &&
                    std::is_same<T, typename VV::non_const_value_type>::value,
                "Q, K and V must have the same element type");
  static_assert(fp8 ? (dtype_of<OT>() >= 0 || std::is_same<OT, std::uint16_t>::value) : std::is_same<T, OT>::value,
                "O must have the element type of Q, K and V (with std::uint8_t fp8 inputs: std::uint16_t, half_t "
                "or bhalf_t)");
  static_assert(dtype_of<T>() >= 0 || std::is_same<T, std::uint16_t>::value || fp8,
                "element type must be float, half_t, bhalf_t, std::uint16_t or std::uint8_t (fp8 e4m3)");
  const ViewSequences& seq = opts.sequences;
  // The layouts the sequence arrays choose: packed Q (rank 3), packed or paged K/V.
  const bool packed_q = seq.cu_seqlens_q.given(), packed_k = seq.cu_seqlens_k.given(),
             paged = seq.block_table.given();
  if (packed_k && paged)
    throw Error("cu_seqlens_k", "cu_seqlens_k: packed K/V and a block table (paged K/V) exclude each other; the "
                                "lengths of paged sequences are seqlens_k");
  const char* q_why = packed_q ? ": with sequences.cu_seqlens_q, Q is packed (total_q, heads_q, head_dim)"
                               : " (a rank-3 packed Q needs ViewOptions::sequences.cu_seqlens_q)";
  const char* o_why = packed_q ? ": with sequences.cu_seqlens_q, O is packed (total_q, heads_q, head_dim)" : "";
  const char* kv_why = paged      ? ": with sequences.block_table, K and V are pools (num_pages, page_size, heads_kv, "
                                    "head_dim)"
                       : packed_k ? ": with sequences.cu_seqlens_k, K and V are packed (total_k, heads_kv, head_dim)"
                                  : (static_cast<int>(KV::rank) == 3 ? " (rank-3 packed K/V need "
                                                                       "ViewOptions::sequences.cu_seqlens_k)"
                                                                     : "");
  const int q_rank = packed_q ? 3 : 4, kv_rank = packed_k ? 3 : 4;
  check_rank<QV>("q", q_rank, q_why);
  check_rank<KV>("k", kv_rank, kv_why);
  check_rank<VV>("v", kv_rank, kv_why);
  check_rank<OV>("o", q_rank, o_why);

  Problem p;
  int dtype = dtype_of<T>();
  if (std::is_same<T, std::uint16_t>::value) {
    if (opts.dtype != static_cast<int>(DType::F16) && opts.dtype != static_cast<int>(DType::BF16))
      throw Error("dtype", "dtype: std::uint16_t Views need ViewOptions::dtype = fp16 or bf16, got " +
                               std::to_string(opts.dtype));
    dtype = opts.dtype;
  } else if (fp8) {
    if (opts.dtype != static_cast<int>(DType::E4M3))
      throw Error("dtype", "dtype: std::uint8_t Views need ViewOptions::dtype = fp8_e4m3 (" +
                               std::to_string(static_cast<int>(DType::E4M3)) + "), got " + std::to_string(opts.dtype));
    dtype = opts.dtype;
  } else if (opts.dtype >= 0 && opts.dtype != dtype) {
    throw Error("dtype", "dtype: ViewOptions::dtype " + std::to_string(opts.dtype) +
                             " contradicts the View element type");
  }
  p.dtype = static_cast<DType>(dtype);
  p.descale_q = opts.descale_q;  // validate() rejects descales other than 1 without fp8 inputs
  p.descale_k = opts.descale_k;
  p.descale_v = opts.descale_v;
  if (fp8) {
    // O's dtype: its View's type, or ViewOptions::out_dtype for std::uint16_t bits.
    const int typed = dtype_of<OT>();
    if (typed < 0 && opts.out_dtype != static_cast<int>(DType::F16) && opts.out_dtype != static_cast<int>(DType::BF16))
      throw Error("out_dtype", "out_dtype: a std::uint16_t O View needs ViewOptions::out_dtype = fp16 or bf16, got " +
                                   std::to_string(opts.out_dtype));
    if (typed >= 0 && opts.out_dtype >= 0 && opts.out_dtype != typed)
      throw Error("out_dtype", "out_dtype: ViewOptions::out_dtype " + std::to_string(opts.out_dtype) +
                                   " contradicts the element type of the O View");
    p.out_dtype = static_cast<DType>(typed >= 0 ? typed : opts.out_dtype);  // fp32: validate() names it
  }
  // Q: (batch, seqlen_q, heads_q, dim), or packed (total_q, heads_q, dim) with the batch from cu_seqlens_q.
  const int qh = packed_q ? 1 : 2;  // index of the heads in Q's View
  if (packed_q) {
    if (seq.cu_seqlens_q.rank != 1)
      throw Error("cu_seqlens_q", "cu_seqlens_q: View has rank " + std::to_string(seq.cu_seqlens_q.rank) +
                                      ", expected 1");
    if (seq.cu_seqlens_q.extent[0] < 2)
      throw Error("cu_seqlens_q", "cu_seqlens_q: extent 0 is " + std::to_string(seq.cu_seqlens_q.extent[0]) +
                                      ", expected batch+1 >= 2");
    p.batch = to_int("cu_seqlens_q", "0 (batch+1)", seq.cu_seqlens_q.extent[0] - 1);
    p.total_q = to_int("q", "0 (total_q)", q.extent(0));
    if (p.total_q == 0) throw Error("q", "q: extent 0 (total_q) is 0; packed Q needs at least one row");
  } else {
    p.batch = to_int("q", "0 (batch)", q.extent(0));
    p.seqlen_q = to_int("q", "1 (seq)", extent_at(q, 1));
  }
  p.heads_q = to_int("q", packed_q ? "1 (heads)" : "2 (heads)", extent_at(q, qh));
  p.head_dim = to_int("q", packed_q ? "2 (dim)" : "3 (dim)", extent_at(q, qh + 1));
  for (int r = 0; r < q_rank; ++r) check_extent("o", std::to_string(r).c_str(), extent_at(o, r), extent_at(q, r));
  // K and V: (batch, seqlen_k, heads_kv, dim), packed (total_k, heads_kv, dim) or paged pools
  // (num_pages, page_size, heads_kv, dim).
  const int kh = packed_k ? 1 : 2;
  if (paged) {
    p.num_pages = to_int("k", "0 (num_pages)", k.extent(0));
    p.page_size = to_int("k", "1 (page_size)", extent_at(k, 1));
  } else if (packed_k) {
    p.total_k = to_int("k", "0 (total_k)", k.extent(0));
    if (p.total_k == 0) throw Error("k", "k: extent 0 (total_k) is 0; packed K/V need at least one row");
  } else {
    check_extent("k", "0 (batch)", k.extent(0), static_cast<std::size_t>(p.batch));
    p.seqlen_k = to_int("k", "1 (seq)", extent_at(k, 1));
  }
  p.heads_kv = to_int("k", packed_k ? "1 (heads)" : "2 (heads)", extent_at(k, kh));
  check_extent("k", packed_k ? "2 (dim)" : "3 (dim)", extent_at(k, kh + 1), static_cast<std::size_t>(p.head_dim));
  for (int r = 0; r < kv_rank; ++r) check_extent("v", std::to_string(r).c_str(), extent_at(v, r), extent_at(k, r));
  p.causal = opts.causal;
  p.scale = opts.scale;
  p.window_left = opts.window_left;
  p.window_right = opts.window_right;
  p.softcap = opts.softcap;
  p.q = strides_of(q, "q");
  p.k = strides_of(k, "k");
  p.v = strides_of(v, "v");
  p.o = strides_of(o, "o");

  Tensors t;
  t.q = q.data();
  t.k = k.data();
  t.v = v.data();
  t.o = const_cast<OT*>(o.data());  // the backward pass only reads it
  t.alibi_slopes = opts.alibi_slopes;
  t.sinks = opts.sinks;

  const MemoryLocation loc = location_of<QV>();
  const std::size_t batch = static_cast<std::size_t>(p.batch);
  t.cu_seqlens_q = sequence_array("cu_seqlens_q", seq.cu_seqlens_q, 1, batch + 1, "batch+1", loc);
  t.cu_seqlens_k = sequence_array("cu_seqlens_k", seq.cu_seqlens_k, 1, batch + 1, "batch+1", loc);
  t.seqlens_k = sequence_array("seqlens_k", seq.seqlens_k, 1, batch, "batch", loc);
  t.block_table = sequence_array("block_table", seq.block_table, 2, batch, "batch", loc);
  if (paged) {
    p.pages_per_seq = to_int("block_table", "1 (pages_per_seq)", seq.block_table.extent[1]);
    if (p.pages_per_seq == 0) throw Error("block_table", "block_table: extent 1 (pages_per_seq) is 0");
  }
  // The bounds seqlen_q and seqlen_k (see ViewSequences): given, or the tightest one known without
  // reading device memory.
  const bool host = loc == MemoryLocation::Host;
  if (seq.max_seqlen_q < 0)
    throw Error("max_seqlen_q", "max_seqlen_q: " + std::to_string(seq.max_seqlen_q) + " must be >= 0 (0: derived)");
  if (seq.max_seqlen_k < 0)
    throw Error("max_seqlen_k", "max_seqlen_k: " + std::to_string(seq.max_seqlen_k) + " must be >= 0 (0: derived)");
  if (packed_q) {
    p.seqlen_q = seq.max_seqlen_q > 0 ? seq.max_seqlen_q
                 : host               ? std::min(max_count(t.cu_seqlens_q, p.batch), p.total_q)
                                      : p.total_q;
  } else if (seq.max_seqlen_q != 0 && seq.max_seqlen_q != p.seqlen_q) {
    throw Error("max_seqlen_q", "max_seqlen_q: " + std::to_string(seq.max_seqlen_q) + " differs from the " +
                                    std::to_string(p.seqlen_q) +
                                    " query rows of every sequence of a dense Q (q extent 1): leave it at 0");
  }
  if (paged) {
    const long long capacity = static_cast<long long>(p.pages_per_seq) * p.page_size;
    const int all = static_cast<int>(std::min<long long>(capacity, INT_MAX));
    p.seqlen_k = seq.max_seqlen_k > 0                   ? seq.max_seqlen_k
                 : host && t.seqlens_k != nullptr       ? std::min(max_value(t.seqlens_k, p.batch), all)
                                                        : all;
  } else if (packed_k) {
    p.seqlen_k = seq.max_seqlen_k > 0 ? seq.max_seqlen_k
                 : host               ? std::min(max_count(t.cu_seqlens_k, p.batch), p.total_k)
                                      : p.total_k;
  } else if (seq.max_seqlen_k != 0) {
    // Dense K: a tighter bound than its rows only where cache lengths say which keys are used.
    if (t.seqlens_k == nullptr && seq.max_seqlen_k != p.seqlen_k)
      throw Error("max_seqlen_k", "max_seqlen_k: " + std::to_string(seq.max_seqlen_k) + " differs from the " +
                                      std::to_string(p.seqlen_k) +
                                      " keys of every sequence of a dense K without seqlens_k (k extent 1): leave it "
                                      "at 0");
    if (seq.max_seqlen_k > p.seqlen_k)
      throw Error("max_seqlen_k", "max_seqlen_k: " + std::to_string(seq.max_seqlen_k) + " exceeds the " +
                                      std::to_string(p.seqlen_k) + " rows of K (k extent 1)");
    p.seqlen_k = seq.max_seqlen_k;
  } else if (host && t.seqlens_k != nullptr) {
    p.seqlen_k = std::min(max_value(t.seqlens_k, p.batch), p.seqlen_k);
  }

  if (lse.data != nullptr) {
    // Contiguous (batch, heads_q, seqlen_q), or (heads_q, total_q) with packed Q.
    const int want = packed_q ? 2 : 3;
    if (lse.rank != want)
      throw Error("lse", "lse: View has rank " + std::to_string(lse.rank) + ", expected " + std::to_string(want) +
                             (packed_q ? " (heads_q, total_q) with packed Q" : ""));
    if (packed_q) {
      check_extent("lse", "0 (heads_q)", lse.extent[0], static_cast<std::size_t>(p.heads_q));
      check_extent("lse", "1 (total_q)", lse.extent[1], static_cast<std::size_t>(p.total_q));
      const std::size_t s1 = lse.extent[1] > 1 ? lse.stride[1] : 1;
      const std::size_t s0 = lse.extent[0] > 1 ? lse.stride[0] : lse.extent[1];
      if (s1 != 1 || s0 != lse.extent[1])
        throw Error("lse", "lse: View must be contiguous (heads_q, total_q) (LayoutRight)");
    } else {
      check_extent("lse", "0 (batch)", lse.extent[0], q.extent(0));
      check_extent("lse", "1 (heads_q)", lse.extent[1], extent_at(q, 2));
      check_extent("lse", "2 (seqlen_q)", lse.extent[2], extent_at(q, 1));
      const std::size_t s2 = lse.extent[2] > 1 ? lse.stride[2] : 1;
      const std::size_t s1 = lse.extent[1] > 1 ? lse.stride[1] : lse.extent[2];
      const std::size_t s0 = lse.extent[0] > 1 ? lse.stride[0] : lse.extent[1] * lse.extent[2];
      if (s2 != 1 || s1 != lse.extent[2] || s0 != lse.extent[1] * lse.extent[2])
        throw Error("lse", "lse: View must be contiguous (batch, heads_q, seqlen_q) (LayoutRight)");
    }
    t.lse = lse.data;
  }

  Options call = opts;
  const std::pair<const char*, MemoryLocation> others[] = {
      {"k", location_of<KV>()}, {"v", location_of<VV>()}, {"o", location_of<OV>()}};
  for (const auto& [name, where] : others)
    if (where != loc)
      throw Error(name, std::string(name) + ": the View is in " + to_string(where) + " memory, q in " +
                            to_string(loc) + " memory; Q, K, V and O must live in the same kind of memory");
  if (lse.data != nullptr && lse.location != loc)
    throw Error("lse", std::string("lse: the View is in ") + to_string(lse.location) + " memory, q in " +
                           to_string(loc) + " memory; the LSE View must live in the same kind of memory as Q");
  if (call.location == MemoryLocation::Auto) call.location = loc;
  return {p, t, call};
}

template <class QV, class KV, class VV, class OV>
Report run_views(const QV& q, const KV& k, const VV& v, const OV& o, const LseArg& lse, const ViewOptions& opts) {
  static_assert(!std::is_const<typename OV::value_type>::value, "O must be a View of non-const elements");
  const ViewCall c = view_call(q, k, v, o, lse, opts);
  return flashcore::run(c.p, c.t, c.opts);
}

// A gradient View of the backward pass: the extents and strides of the tensor whose layout it shares.
template <class GV, class XV>
void check_same_layout(const char* name, const GV& g, const char* of, const XV& x) {
  static_assert(std::is_same<typename GV::non_const_value_type, typename XV::non_const_value_type>::value,
                "gradient Views have the element type of Q, K, V and O");
  static_assert(static_cast<int>(GV::rank) == static_cast<int>(XV::rank), "a gradient View has its tensor's rank");
  for (int r = 0; r < static_cast<int>(XV::rank); ++r) {
    check_extent(name, std::to_string(r).c_str(), extent_at(g, r), extent_at(x, r));
    if (extent_at(x, r) > 1 && stride_at(g, r) != stride_at(x, r))
      throw Error(name, std::string(name) + ": stride " + std::to_string(r) + " is " + std::to_string(stride_at(g, r)) +
                            ", " + of + "'s is " + std::to_string(stride_at(x, r)) + "; the backward pass writes " +
                            name + " with " + of + "'s layout");
  }
  if (location_of<GV>() != location_of<XV>())
    throw Error(name, std::string(name) + ": the View is in " + to_string(location_of<GV>()) + " memory, " + of +
                          " in " + to_string(location_of<XV>()) + " memory");
}

}  // namespace kokkos_detail

/// Runs attention on Kokkos Views. LseView is a rank-3 View of float (rank 2 (heads_q, total_q) with
/// packed Q); one whose data() is null (e.g. an unmanaged View of nullptr) means no LSE, as the
/// overload without it. With ViewOptions::sequences, Q/O and K/V take the ranks their layout has.
template <class QV, class KV, class VV, class OV, class LseView>
Report run(const QV& q, const KV& k, const VV& v, const OV& o, const LseView& lse, const ViewOptions& opts = {}) {
  return kokkos_detail::run_views(q, k, v, o, kokkos_detail::lse_arg(lse), opts);
}

/// Runs attention on Kokkos Views without LSE.
template <class QV, class KV, class VV, class OV>
Report run(const QV& q, const KV& k, const VV& v, const OV& o, const ViewOptions& opts = {}) {
  return kokkos_detail::run_views(q, k, v, o, kokkos_detail::LseArg{}, opts);
}

/// The backward pass on Kokkos Views (flashcore.hpp, run_backward): q, k, v, o and lse as the forward
/// call had them (with the same ViewOptions), d_o = dL/dO, and the gradients dq, dk, dv, each with the
/// extents and strides of q, k, v (d_o: of o). dsinks: null, or heads_q floats in the memory of q for
/// the sinks' gradient (needs ViewOptions::sinks).
template <class QV, class KV, class VV, class OV, class LseView, class DOV, class DQV, class DKV, class DVV>
Report run_backward(const QV& q, const KV& k, const VV& v, const OV& o, const LseView& lse, const DOV& d_o,
                    const DQV& dq, const DKV& dk, const DVV& dv, const ViewOptions& opts = {},
                    float* dsinks = nullptr) {
  static_assert(!std::is_const<typename DQV::value_type>::value && !std::is_const<typename DKV::value_type>::value &&
                    !std::is_const<typename DVV::value_type>::value,
                "dq, dk and dv must be Views of non-const elements");
  const kokkos_detail::ViewCall c = kokkos_detail::view_call(q, k, v, o, kokkos_detail::lse_arg(lse), opts);
  kokkos_detail::check_same_layout("d_o", d_o, "o", o);
  kokkos_detail::check_same_layout("dq", dq, "q", q);
  kokkos_detail::check_same_layout("dk", dk, "k", k);
  kokkos_detail::check_same_layout("dv", dv, "v", v);
  return flashcore::run_backward(c.p, c.t, Gradients{d_o.data(), dq.data(), dk.data(), dv.data(), dsinks}, c.opts);
}

}  // namespace flashcore
