// FlashCore's Kokkos View entry point.
//
//   flashcore::run(q, k, v, o);            // rank-4 Views indexed (batch, seq, head, dim)
//   flashcore::run(q, k, v, o, lse, opts); // lse: rank-3 View (batch, heads_q, seqlen_q), contiguous
//                                          // (LayoutRight: CudaSpace Views default to LayoutLeft)
//
// Views may have any layout whose dim index has stride 1 (LayoutRight, LayoutStride, subviews or
// LayoutStride views of a (B,H,S,D) allocation...; not LayoutLeft, whose first index is the
// contiguous one), and may live in any memory
// space FlashCore has a backend for (host spaces; CudaSpace when built with CUDA).
// Element types: float (fp32), Kokkos::Experimental::half_t (fp16), Kokkos::Experimental::bhalf_t
// (bf16, Kokkos >= 3.6), or std::uint16_t holding fp16/bf16 bits with ViewOptions::dtype set.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "flashcore/flashcore.hpp"

namespace flashcore {

/// Options of the View entry point: the call options plus what a View cannot say.
struct ViewOptions : Options {
  bool causal = false;
  float scale = 0.0f;    // 0: 1/sqrt(head_dim)
  int dtype = -1;        // required for std::uint16_t Views: static_cast<int>(DType::F16 or BF16)
  // Variants, as Problem and Tensors in flashcore.hpp: a sliding window (-1 = unbounded side),
  // soft-capping (0 = none), and per-head ALiBi slopes and sink logits: data() of a View of
  // heads_q floats in the memory space of q, or nullptr (none).
  int window_left = -1;
  int window_right = -1;
  float softcap = 0.0f;
  const float* alibi_slopes = nullptr;
  const float* sinks = nullptr;
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

template <class V>
Strides strides_of(const V& view, const char* name) {
  if (view.extent(3) > 1 && view.stride(3) != 1)
    throw Error(name, std::string(name) + ": the dim index (rank 3) must have stride 1, it has " +
                          std::to_string(view.stride(3)));
  return {static_cast<std::int64_t>(view.stride(0)), static_cast<std::int64_t>(view.stride(1)),
          static_cast<std::int64_t>(view.stride(2))};
}

template <class V>
MemoryLocation location_of() {
  using space = typename V::memory_space;
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, space>::accessible ? MemoryLocation::Host
                                                                           : MemoryLocation::Device;
}

template <class V>
void check_rank(const char* name, int want) {
  if (static_cast<int>(V::rank) != want)
    throw Error(name, std::string(name) + ": View has rank " + std::to_string(static_cast<int>(V::rank)) +
                          ", expected " + std::to_string(want));
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

template <class QV, class KV, class VV, class OV>
Report run_views(const QV& q, const KV& k, const VV& v, const OV& o, const LseArg& lse, const ViewOptions& opts) {
  using T = typename QV::non_const_value_type;
  static_assert(std::is_same<T, typename KV::non_const_value_type>::value &&
                    std::is_same<T, typename VV::non_const_value_type>::value &&
                    std::is_same<T, typename OV::value_type>::value,
                "Q, K, V and O must have the same element type (O non-const)");
  static_assert(dtype_of<T>() >= 0 || std::is_same<T, std::uint16_t>::value,
                "element type must be float, half_t, bhalf_t or std::uint16_t");
  check_rank<QV>("q", 4);
  check_rank<KV>("k", 4);
  check_rank<VV>("v", 4);
  check_rank<OV>("o", 4);

  Problem p;
  int dtype = dtype_of<T>();
  if (std::is_same<T, std::uint16_t>::value) {
    if (opts.dtype != static_cast<int>(DType::F16) && opts.dtype != static_cast<int>(DType::BF16))
      throw Error("dtype", "dtype: std::uint16_t Views need ViewOptions::dtype = fp16 or bf16, got " +
                               std::to_string(opts.dtype));
    dtype = opts.dtype;
  } else if (opts.dtype >= 0 && opts.dtype != dtype) {
    throw Error("dtype", "dtype: ViewOptions::dtype " + std::to_string(opts.dtype) +
                             " contradicts the View element type");
  }
  p.dtype = static_cast<DType>(dtype);
  p.batch = to_int("q", "0 (batch)", q.extent(0));
  p.seqlen_q = to_int("q", "1 (seq)", q.extent(1));
  p.heads_q = to_int("q", "2 (heads)", q.extent(2));
  p.head_dim = to_int("q", "3 (dim)", q.extent(3));
  p.seqlen_k = to_int("k", "1 (seq)", k.extent(1));
  p.heads_kv = to_int("k", "2 (heads)", k.extent(2));
  check_extent("k", "0 (batch)", k.extent(0), q.extent(0));
  check_extent("k", "3 (dim)", k.extent(3), q.extent(3));
  for (int r = 0; r < 4; ++r) check_extent("v", std::to_string(r).c_str(), v.extent(r), k.extent(r));
  for (int r = 0; r < 4; ++r) check_extent("o", std::to_string(r).c_str(), o.extent(r), q.extent(r));
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
  t.o = o.data();
  t.alibi_slopes = opts.alibi_slopes;
  t.sinks = opts.sinks;
  if (lse.data != nullptr) {
    if (lse.rank != 3)
      throw Error("lse", "lse: View has rank " + std::to_string(lse.rank) + ", expected 3");
    check_extent("lse", "0 (batch)", lse.extent[0], q.extent(0));
    check_extent("lse", "1 (heads_q)", lse.extent[1], q.extent(2));
    check_extent("lse", "2 (seqlen_q)", lse.extent[2], q.extent(1));
    const std::size_t s2 = lse.extent[2] > 1 ? lse.stride[2] : 1;
    const std::size_t s1 = lse.extent[1] > 1 ? lse.stride[1] : lse.extent[2];
    const std::size_t s0 = lse.extent[0] > 1 ? lse.stride[0] : lse.extent[1] * lse.extent[2];
    if (s2 != 1 || s1 != lse.extent[2] || s0 != lse.extent[1] * lse.extent[2])
      throw Error("lse", "lse: View must be contiguous (batch, heads_q, seqlen_q) (LayoutRight)");
    t.lse = lse.data;
  }

  Options call = opts;
  const MemoryLocation loc = location_of<QV>();
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
  return flashcore::run(p, t, call);
}

}  // namespace kokkos_detail

/// Runs attention on Kokkos Views. LseView is a rank-3 View of float; one whose data() is null
/// (e.g. an unmanaged View of nullptr) means no LSE, as the overload without it.
template <class QV, class KV, class VV, class OV, class LseView>
Report run(const QV& q, const KV& k, const VV& v, const OV& o, const LseView& lse, const ViewOptions& opts = {}) {
  return kokkos_detail::run_views(q, k, v, o, kokkos_detail::lse_arg(lse), opts);
}

/// Runs attention on Kokkos Views without LSE.
template <class QV, class KV, class VV, class OV>
Report run(const QV& q, const KV& k, const VV& v, const OV& o, const ViewOptions& opts = {}) {
  return kokkos_detail::run_views(q, k, v, o, kokkos_detail::LseArg{}, opts);
}

}  // namespace flashcore
