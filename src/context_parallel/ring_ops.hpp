// The ring's element operations, written once for the host loops (ring_ops_host.cpp) and the CUDA
// kernels (ring_ops.cu): pack a K or V shard into the contiguous buffer that travels, merge a
// partial attention into the fp32 accumulator through the log-sum-exps, write the result.
// No Kokkos, no CUDA header (core/numeric.hpp converts fp16/bf16 on both sides).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/numeric.hpp"
#include "flashcore/flashcore.hpp"

namespace flashcore::ring {

/// A rank-4 tensor (batch, rows, heads, dim) with FlashCore's element strides (dim stride 1).
struct View4 {
  std::int64_t batch = 0, seq = 0, head = 0;
  FC_HOST_DEVICE std::int64_t at(int b, int i, int h, int d) const { return b * batch + i * seq + h * head + d; }
};

/// What a merge or finalize pass works on: rows [row0, row0 + rows) of the shard, for every batch
/// entry and query head. The accumulator is contiguous (batch, local rows, heads, dim) fp32; its
/// LSE (batch, heads, local rows) fp32.
struct Rows {
  int batch = 1, heads = 1, head_dim = 1, local_rows = 0, row0 = 0, rows = 0;
  FC_HOST_DEVICE std::int64_t count() const { return static_cast<std::int64_t>(batch) * rows * heads * head_dim; }
  /// Element n of the pass as (b, i (shard row), h, d).
  FC_HOST_DEVICE void split(std::int64_t n, int& b, int& i, int& h, int& d) const {
    d = static_cast<int>(n % head_dim);
    n /= head_dim;
    h = static_cast<int>(n % heads);
    n /= heads;
    i = row0 + static_cast<int>(n % rows);
    b = static_cast<int>(n / rows);
  }
  FC_HOST_DEVICE std::int64_t acc_at(int b, int i, int h, int d) const {
    return ((static_cast<std::int64_t>(b) * local_rows + i) * heads + h) * head_dim + d;
  }
  FC_HOST_DEVICE std::int64_t lse_at(int b, int h, int i) const {
    return (static_cast<std::int64_t>(b) * heads + h) * local_rows + i;
  }
};

FC_HOST_DEVICE inline float load(DType dt, const void* p, std::int64_t i) {
  if (dt == DType::F32) return static_cast<const float*>(p)[i];
  const std::uint16_t u = static_cast<const std::uint16_t*>(p)[i];
  return dt == DType::F16 ? numeric::half_to_float(u) : numeric::bf16_to_float(u);
}

FC_HOST_DEVICE inline void store(DType dt, void* p, std::int64_t i, float v) {
  if (dt == DType::F32) {
    static_cast<float*>(p)[i] = v;
  } else {
    static_cast<std::uint16_t*>(p)[i] = dt == DType::F16 ? numeric::float_to_half(v) : numeric::float_to_bf16(v);
  }
}

/// Pack: element n of a (batch, rows, heads, dim) tensor copied from `src` (strides s) to the
/// contiguous `dst`. Elements are moved as raw 16- or 32-bit patterns.
FC_HOST_DEVICE inline void pack_element(int esize, const void* src, const View4& s, void* dst, int batch, int rows,
                                        int heads, int head_dim, std::int64_t n) {
  (void)batch;
  const int d = static_cast<int>(n % head_dim);
  const int h = static_cast<int>(n / head_dim % heads);
  const int i = static_cast<int>(n / head_dim / heads % rows);
  const int b = static_cast<int>(n / head_dim / heads / rows);
  const std::int64_t from = s.at(b, i, h, d);
  if (esize == 4) {
    static_cast<float*>(dst)[n] = static_cast<const float*>(src)[from];
  } else {
    static_cast<std::uint16_t*>(dst)[n] = static_cast<const std::uint16_t*>(src)[from];
  }
}

/// The weights of merging an accumulated (lse_a) and a new (lse_b) partial result:
/// lse = log(e^lse_a + e^lse_b), o = wa * o_a + wb * o_b. A side that saw no key (-inf) weighs 0.
struct MergeWeights {
  float wa, wb, lse;
  FC_HOST_DEVICE static MergeWeights of(float lse_a, float lse_b) {
    const float inf = INFINITY;
    if (lse_b == -inf) return {1.f, 0.f, lse_a};
    if (lse_a == -inf) return {0.f, 1.f, lse_b};
    const float m = lse_a > lse_b ? lse_a : lse_b;
    const float ea = expf(lse_a - m), eb = expf(lse_b - m);
    const float s = ea + eb;
    return {ea / s, eb / s, m + logf(s)};
  }
};

/// Merge: element n of `r`: acc = wa * acc + wb * part, with part the partial O (dtype dt,
/// contiguous (batch, r.rows, heads, dim)) and lse_part its LSE (batch, heads, r.rows). The
/// accumulator's LSE is updated by merge_lse afterwards (it is read here).
FC_HOST_DEVICE inline void merge_element(const Rows& r, DType dt, const void* part, const float* lse_part, float* acc,
                                         const float* lse_acc, std::int64_t n) {
  int b, i, h, d;
  r.split(n, b, i, h, d);
  const int li = i - r.row0;
  const MergeWeights w = MergeWeights::of(lse_acc[r.lse_at(b, h, i)], lse_part[(static_cast<std::int64_t>(b) * r.heads + h) * r.rows + li]);
  const std::int64_t a = r.acc_at(b, i, h, d);
  const float o = load(dt, part, ((static_cast<std::int64_t>(b) * r.rows + li) * r.heads + h) * r.head_dim + d);
  acc[a] = (w.wa == 0.f ? 0.f : w.wa * acc[a]) + (w.wb == 0.f ? 0.f : w.wb * o);
}

/// Merge, second half: the accumulator's LSE of row m of `r` (m over batch x heads x rows).
FC_HOST_DEVICE inline void merge_lse(const Rows& r, const float* lse_part, float* lse_acc, std::int64_t m) {
  const int li = static_cast<int>(m % r.rows);
  const int h = static_cast<int>(m / r.rows % r.heads);
  const int b = static_cast<int>(m / r.rows / r.heads);
  float& la = lse_acc[r.lse_at(b, h, r.row0 + li)];
  la = MergeWeights::of(la, lse_part[m]).lse;
}

/// Finalize: element n of `r` written to O (dtype dt, strides so).
FC_HOST_DEVICE inline void finalize_element(const Rows& r, DType dt, const float* acc, void* o, const View4& so,
                                            std::int64_t n) {
  int b, i, h, d;
  r.split(n, b, i, h, d);
  store(dt, o, so.at(b, i, h, d), acc[r.acc_at(b, i, h, d)]);
}

}  // namespace flashcore::ring
