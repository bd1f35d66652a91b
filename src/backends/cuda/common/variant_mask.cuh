// The attention variants as one mask policy (the interface of common/mask.cuh): sliding window,
// logit soft-capping, ALiBi and attention sinks, each switched on by the problem (flashcore.hpp has
// the definitions). Kernels instantiated with it run every combination, and CausalMask problems too;
// CausalMask stays the policy of problems without variants (nothing of this in their inner loop).
//
// Units: the kernels' scores are raw q·k; the online softmax multiplies them by scale·log2(e). So the
// policy writes its logits back in raw units: x/scale.
//   soft-capping   s -> (cap/scale) · tanh(s · scale/cap)
//   ALiBi          s -> s − (slope_h/scale) · |key − (row + len_k − len_q)|
//   sink           log2-domain logit sink_h · log2(e), joined to the denominator by softmax_finish.
// tanh is computed as 1 − 2/(e^{2|y|} + 1) with ex2.approx (relative error 2^-22) and a fast divide:
// absolute error ~2e-7 on tanh, i.e. ~cap·2e-7 on a logit (tanh.approx.f32 would be ~cap·5e-4).
//
// Window tile ranges (bottom-right aligned, diag = len_k − len_q of the block's sequence): rows [r0, r1) see keys in
//   [r0 + diag − left, r1 − 1 + diag + right]  (each side only when bounded; causal: right = 0),
// and a tile is mask-free for all of them when it lies inside [r1 − 1 + diag − left, r0 + diag + right].
#pragma once

#include <climits>
#include <cmath>

#include "backends/cuda/common/mask.cuh"
#include "backends/cuda/common/ptx.cuh"

namespace flashcore::cuda::detail {

// tanh to ~2e-7 absolute (see the top of this file); saturates to ±1 for large |y|.
__device__ __forceinline__ float tanh_accurate(float y) {
  const float e = fast_exp2(fabsf(y) * 2.8853900817779268f);  // e^{2|y|}: 2·log2(e)
  return copysignf(1.f - __fdividef(2.f, e + 1.f), y);
}

// Logit soft-capping of a fragment of raw scores (q·k, before the scale, the units the kernels'
// softmax works in): scale·x -> softcap·tanh(scale·x / softcap), i.e. x -> (softcap/scale)·tanh(x·scale/softcap).
// When p.softcap is 0 nothing happens. Every kernel that soft-caps calls this.
template <int N>
__device__ __forceinline__ void softcap_scores(float (&s)[N][4], const FlashFwdParams& p) {
  if (p.softcap > 0.f) {
    const float c_out = p.softcap / p.scale, c_in = p.scale / p.softcap;
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[i][e] = c_out * tanh_accurate(s[i][e] * c_in);
  }
}

// The sink of query head h in the log2 domain of the softmax, −inf when there is none. Every kernel that
// reads sinks calls this (VariantMaskOf::sink_log2, the decode kernel and its merges).
__device__ __forceinline__ float sink_log2_of(const FlashFwdParams& p, int h) {
  return p.sinks != nullptr ? __ldg(p.sinks + h) * 1.4426950408889634f : -INFINITY;
}

template <class Lengths = HeldLengths>
struct VariantMaskOf {
  template <class L>
  using WithLengths = VariantMaskOf<L>;  // the same policy with the other kind of lengths (common/mask.cuh)
  static constexpr bool kTransformsScores = true;
  static constexpr bool kHasLeftBound = true;
  static constexpr bool kHasSinks = true;

  const FlashFwdParams& p;
  Lengths seq;     // the block's sequence (common/mask.cuh): len_k(), diag() = len_k − len_q
  int left;        // keys left of the diagonal a row sees; −1: unbounded
  int right;       // keys right of it; −1: unbounded (0 when causal)

  // The fixed-length problem (the plan), or sequence b's.
  __host__ __device__ explicit VariantMaskOf(const FlashFwdParams& params, int b = -1)
      : p(params), seq(params, b), left(params.window_left), right(params.causal ? 0 : params.window_right) {}

  // ---- tile ranges (host and device: the plan asks the same questions)
  __host__ __device__ int key_begin(int row_begin) const {
    if (left < 0) return 0;
    const int len_k = seq.len_k();
    const long long k = (long long)row_begin + seq.diag() - left;
    return k < 0 ? 0 : (k > len_k ? len_k : (int)k);
  }
  __host__ __device__ int key_end(int row_end) const {
    const int len_k = seq.len_k();
    if (right < 0) return len_k;
    const long long k = (long long)row_end + seq.diag() + right;  // last row's last key + 1
    return k < 0 ? 0 : (k > len_k ? len_k : (int)k);
  }
  // First tile any row from row_begin on visits; tiles [first_tile, tiles) are the block's range.
  __host__ __device__ int first_tile(int row_begin, int tile_n) const { return key_begin(row_begin) / tile_n; }
  __host__ __device__ int tiles(int row_end, int tile_n) const {
    const int n = key_end(row_end);
    return n > 0 ? (n + tile_n - 1) / tile_n : 0;
  }
  // Tiles [unmasked_first(row_end), unmasked_tiles(row_begin)) are visible in full to every row of
  // [row_begin, row_end): no mask work there.
  __host__ __device__ int unmasked_first(int row_end, int tile_n) const {
    if (left < 0) return 0;
    const long long k = (long long)row_end - 1 + seq.diag() - left;  // the last row's first key
    return k <= 0 ? 0 : (int)((k + tile_n - 1) / tile_n);
  }
  __host__ __device__ int unmasked_tiles(int row_begin, int tile_n) const {
    int t = seq.len_k() / tile_n;
    if (right >= 0) {
      const long long k = (long long)row_begin + seq.diag() + right + 1;  // the first row's keys end
      t = k <= 0 ? 0 : (k / tile_n < t ? (int)(k / tile_n) : t);
    }
    return t;
  }

  // ---- the backward's questions (common/mask.cuh): rows q see keys [q + diag − left, q + diag + right]
  __host__ __device__ int row_begin(int key_begin) const {
    if (right < 0) return 0;
    const long long r = (long long)key_begin - seq.diag() - right;  // the first row whose last key is key_begin
    return r < 0 ? 0 : (r > seq.len_q() ? seq.len_q() : (int)r);
  }
  __host__ __device__ int row_end(int key_end) const {
    const int len_q = seq.len_q();
    if (left < 0) return len_q;
    const long long r = (long long)key_end - 1 - seq.diag() + left + 1;  // past the last row whose first key is key_end − 1
    return r < 0 ? 0 : (r > len_q ? len_q : (int)r);
  }
  // common/mask.cuh: the keys of query row r, or (kKeysOnRows) the rows that see key r, as [x, y]
  // (nothing: x = INT_MAX; no bound: INT_MIN / INT_MAX).
  template <bool kKeysOnRows>
  __host__ __device__ int2 visible(int r) const {
    const long long len_k = seq.len_k(), diag = seq.diag();
    long long x, y;
    if constexpr (kKeysOnRows) {  // q + diag − left <= r <= q + diag + right
      if (r >= len_k) return make_int2(INT_MAX, INT_MAX);
      x = right >= 0 ? r - diag - right : INT_MIN;
      y = left >= 0 ? r - diag + left : INT_MAX;
    } else {
      x = left >= 0 ? r + diag - left : INT_MIN;
      y = right >= 0 ? r + diag + right : len_k - 1;
      if (y > len_k - 1) y = len_k - 1;
    }
    x = x < INT_MIN ? INT_MIN : (x > INT_MAX ? INT_MAX : x);
    y = y < INT_MIN ? INT_MIN : (y > INT_MAX ? INT_MAX : y);
    return make_int2((int)x, (int)y);
  }

  // ---- per element
  // Soft-capping and ALiBi of one fragment (every visited tile, before apply). Rows row0, row0 + 8 of
  // query head h; n8 column tile i starts at key key0 + 8i.
  template <int N>
  __device__ __forceinline__ void transform(float (&s)[N][4], int row0, int key0, int lane, int h) const {
    softcap_scores(s, p);
    if (p.alibi_slopes != nullptr) {
      const float neg_slope = alibi_neg_slope(h);
      // key − diagonal key of row0 at the lane's column 0, as a float: column 8i + e is base + 8i + e
      // (row0 + 8: 8 less), exact below 2^24, so one conversion a fragment, not one a score (an I2F runs
      // at the MUFU's rate; the backward steps it the same way, bwd_tile_ops.cuh).
      const float base = (float)(key0 + 2 * (lane & 3) - row0 - seq.diag());
#pragma unroll
      for (int i = 0; i < N; ++i)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float d = base + (float)(8 * i + e);
          s[i][e] = fmaf(neg_slope, fabsf(d), s[i][e]);
          s[i][2 + e] = fmaf(neg_slope, fabsf(d - 8.f), s[i][2 + e]);  // row0 + 8
        }
    }
  }

  // One logit in any fragment layout (the backward: keys on rows or on columns): the raw score x of a
  // row and a key at distance `dist` = |key − (row + len_k − len_q)| (a float: the caller steps it along
  // the fragment with additions, sparing a conversion per element) transformed as `transform` does it
  // (soft-capping, then ALiBi; neg_slope = alibi_neg_slope(h)), and in dx its derivative d(logit)/dx:
  // soft-capping's 1 − tanh², else 1.
  __device__ __forceinline__ float alibi_neg_slope(int h) const {
    return p.alibi_slopes != nullptr ? -__ldg(p.alibi_slopes + h) / p.scale : 0.f;
  }
  __device__ __forceinline__ float transform_one(float x, float dist, float neg_slope, float& dx) const {
    dx = 1.f;
    if (p.softcap > 0.f) {
      const float t = tanh_accurate(x * (p.scale / p.softcap));
      x = (p.softcap / p.scale) * t;
      dx = fmaf(-t, t, 1.f);
    }
    if (p.alibi_slopes != nullptr) x = fmaf(neg_slope, dist, x);
    return x;
  }

  // −inf for the keys rows row0, row0 + 8 do not see (key tail and window).
  template <int N>
  __device__ __forceinline__ void apply(float (&s)[N][4], int row0, int key0, int lane) const {
    const int t = lane & 3;
    const int len_k = seq.len_k(), diag = seq.diag();
    int hi[2], lo[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const long long row = row0 + 8 * r;
      long long h = len_k - 1;
      if (right >= 0 && row + diag + right < h) h = row + diag + right;
      long long l = left >= 0 ? row + diag - left : 0;
      hi[r] = h < -1 ? -1 : (int)h;
      lo[r] = l < 0 ? 0 : (l > len_k ? len_k : (int)l);
    }
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = key0 + 8 * i + 2 * t + e;
        if (col > hi[0] || col < lo[0]) s[i][e] = -INFINITY;
        if (col > hi[1] || col < lo[1]) s[i][2 + e] = -INFINITY;
      }
  }

  // The sink of query head h in the log2 domain of the softmax, −inf when there is none.
  __device__ __forceinline__ float sink_log2(int h) const { return sink_log2_of(p, h); }
};
using VariantMask = VariantMaskOf<>;

// Whether a problem needs VariantMask (else CausalMask runs it).
__host__ __device__ inline bool has_variants(const FlashFwdParams& p) {
  return p.window_left >= 0 || p.window_right >= 0 || p.softcap > 0.f || p.alibi_slopes != nullptr ||
         p.sinks != nullptr;
}

}  // namespace flashcore::cuda::detail
