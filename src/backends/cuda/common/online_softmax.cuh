// The online softmax, written once for every kernel. For each K/V tile of scores S (fp32, in the
// accumulator fragment layout of common/mask.cuh):
//   m' = max(m, rowmax(S));   P = exp2(S·scale·log2e − m'·scale·log2e)
//   l  = l·α + rowsum(P);     α = exp2((m − m')·scale·log2e), the factor the caller applies to O
// and at the end O /= l, LSE = (m·scale·log2e + log2 l)·ln 2. A row's columns live in the 4 threads
// of a quad: the max is quad-reduced every tile, the sum only at the end.
#pragma once

#include <cmath>

#include "backends/cuda/common/ptx.cuh"

namespace flashcore::cuda::detail {

constexpr float kLn2 = 0.6931471805599453f;

// op over a thread's 2N values of one row (elements e and e+1 of each n8 tile) as a pairwise tree:
// a dependency chain log2(2N) deep instead of 2N (a fixed order: results stay deterministic).
template <int N, class Op>
__device__ __forceinline__ float row_tree(const float (&s)[N][4], int e, Op op) {
  float v[N];
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = op(s[i][e], s[i][e + 1]);
#pragma unroll
  for (int w = 1; w < N; w *= 2)
#pragma unroll
    for (int i = 0; i + w < N; i += 2 * w) v[i] = op(v[i], v[i + w]);
  return v[0];
}

// One tile of the online softmax for the two rows (row0 = lane/4 and row0 + 8) of a 16-row accumulator
// tile a thread holds: scores -> unnormalised probabilities in place, running max (quad-uniform) and
// this thread's running sum updated, alpha = the factor the O rows must be scaled by.
// kPLog2: P comes out scaled by 2^kPLog2 (and so does the sum, so O / l is unchanged; the caller takes
// kPLog2 off the LSE): the FP8 kernel's P, rounded to e4m3, then stays in its normal range (sm90/fp8.cuh).
// slack > 0: a lazy reference max (FlashAttention-4's conditional rescale). A row keeps the max it has
// unless the tile's scores exceed it by more than slack (log2 domain, after scale_log2), so P may come
// out up to 2^slack (times 2^kPLog2: the caller picks slack so that P's type holds it) and alpha is 1
// for every row that kept its max, whose O then needs no rescale (the caller may skip it where a whole
// warp's alphas are 1). Nothing else changes: l and the LSE are taken against the max a row holds. The
// constant 0 (the default) is the plain online softmax.
// kTree: the row max and row sum by row_tree instead of one value after another. The wide-warp mma.sync
// kernel, whose two warps a scheduler wait on fixed-latency chains (Nsight Compute, run 35d), takes it:
// 1-4 % faster on the forced mma.sync rows (H200, run 35e); the Hopper kernel measured 1-2 % slower with
// it, the decode kernel the same (perf/dev/NOTES.md, thirty-fifth session): they keep the chains.
template <int N, int kPLog2 = 0, bool kTree = false>
__device__ __forceinline__ void softmax_update(float (&s)[N][4], float (&row_max)[2], float (&row_sum)[2],
                                               float scale_log2, float (&alpha)[2], float slack = 0.f) {
  const auto fmax = [](float x, float y) { return fmaxf(x, y); };
  const auto add = [](float x, float y) { return x + y; };
  float mx[2] = {row_max[0], row_max[1]};
  if constexpr (kTree) {
    mx[0] = fmaxf(mx[0], row_tree(s, 0, fmax));
    mx[1] = fmaxf(mx[1], row_tree(s, 2, fmax));
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      mx[0] = fmaxf(mx[0], fmaxf(s[i][0], s[i][1]));
      mx[1] = fmaxf(mx[1], fmaxf(s[i][2], s[i][3]));
    }
  }
  float ms[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    // Lazy: keep the row's max unless this tile exceeds it by more than slack (-inf to finite: by inf;
    // -inf to -inf: NaN, kept). A kept -inf has alpha 1 too: its O and l are 0.
    const bool keep = slack > 0.f && !(mx[r] * scale_log2 - row_max[r] * scale_log2 > slack);
    if (keep) mx[r] = row_max[r];
    // A row that has seen only masked keys keeps max -inf; subtract 0 instead so that
    // exp2(-inf - 0) = 0 rather than exp2(-inf + inf) = NaN.
    ms[r] = (mx[r] == -INFINITY) ? 0.f : mx[r] * scale_log2;
    alpha[r] = keep ? 1.f : fast_exp2(row_max[r] * scale_log2 - ms[r]);  // old max -inf -> 0 (accumulators are 0 then)
    row_max[r] = mx[r];
  }
  ms[0] -= float(kPLog2), ms[1] -= float(kPLog2);
  float sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < N; ++i) {
    s[i][0] = fast_exp2(fmaf(s[i][0], scale_log2, -ms[0]));
    s[i][1] = fast_exp2(fmaf(s[i][1], scale_log2, -ms[0]));
    s[i][2] = fast_exp2(fmaf(s[i][2], scale_log2, -ms[1]));
    s[i][3] = fast_exp2(fmaf(s[i][3], scale_log2, -ms[1]));
    if constexpr (!kTree) {
      sum[0] += s[i][0] + s[i][1];
      sum[1] += s[i][2] + s[i][3];
    }
  }
  if constexpr (kTree) {
    sum[0] = row_tree(s, 0, add);
    sum[1] = row_tree(s, 2, add);
  }
  row_sum[0] = row_sum[0] * alpha[0] + sum[0];
  row_sum[1] = row_sum[1] * alpha[1] + sum[1];
}

// The end of the softmax: 1/l and the log2-domain LSE of the two rows (the sum is quad-reduced here);
// l == 0 <=> the row saw no key: O = 0, LSE = -inf.
__device__ __forceinline__ void softmax_finish(const float (&row_max)[2], const float (&row_sum)[2], float scale_log2,
                                               float (&inv)[2], float (&lse2)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = row_sum[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    inv[r] = l > 0.f ? 1.f / l : 0.f;
    lse2[r] = l > 0.f ? row_max[r] * scale_log2 + __log2f(l) : -INFINITY;
  }
}

// softmax_finish with an attention sink: sink_l2 (log2 domain, -inf = none) joins the denominator as
// one more term without a value: M = max(m, sink), L = l·2^(m−M) + 2^(sink−M), O scale 2^(m−M)/L,
// LSE = M + log2 L. A row that saw no key gets O = 0 and LSE = sink (-inf without one).
__device__ __forceinline__ void softmax_finish_sink(const float (&row_max)[2], const float (&row_sum)[2],
                                                    float scale_log2, float sink_l2, float (&inv)[2],
                                                    float (&lse2)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = row_sum[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const float m = l > 0.f ? row_max[r] * scale_log2 : -INFINITY;
    const float mx = fmaxf(m, sink_l2);
    if (mx == -INFINITY) {
      inv[r] = 0.f;
      lse2[r] = -INFINITY;
      continue;
    }
    const float f = fast_exp2(m - mx);  // 0 when the row saw no key
    const float total = fmaf(l, f, fast_exp2(sink_l2 - mx));
    inv[r] = f / total;
    lse2[r] = mx + __log2f(total);
  }
}

// The state of those two rows as one object (kernels that hold several tiles may keep the arrays).
struct SoftmaxRows {
  float row_max[2];  // running max of raw scores (quad-uniform)
  float row_sum[2];  // running denominator, this thread's columns only (quad-reduced by finish)

  __device__ __forceinline__ void init() {
    row_max[0] = row_max[1] = -INFINITY;
    row_sum[0] = row_sum[1] = 0.f;
  }
  template <int kPLog2 = 0, int N>
  __device__ __forceinline__ void update(float (&s)[N][4], float scale_log2, float (&alpha)[2], float slack = 0.f) {
    softmax_update<N, kPLog2>(s, row_max, row_sum, scale_log2, alpha, slack);
  }
  __device__ __forceinline__ void finish(float scale_log2, float (&inv)[2], float (&lse2)[2]) const {
    softmax_finish(row_max, row_sum, scale_log2, inv, lse2);
  }
  // The end with a mask policy's sink (Mask::kHasSinks; plain finish otherwise).
  template <class Mask>
  __device__ __forceinline__ void finish(const Mask& mask, int h, float scale_log2, float (&inv)[2],
                                         float (&lse2)[2]) const {
    if constexpr (Mask::kHasSinks)
      softmax_finish_sink(row_max, row_sum, scale_log2, mask.sink_log2(h), inv, lse2);
    else
      softmax_finish(row_max, row_sum, scale_log2, inv, lse2);
  }
};

// O rows (accumulator fragments, n8 column tile j) times the factors of their rows.
template <int N>
__device__ __forceinline__ void scale_rows(float (&o)[N][4], const float (&f)[2]) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    o[j][0] *= f[0]; o[j][1] *= f[0];
    o[j][2] *= f[1]; o[j][3] *= f[1];
  }
}

// O rows times the alpha of a softmax_update with this slack. With a lazy max (slack > 0) a warp whose
// rows all kept their max (every alpha 1) skips the multiplies: one vote, a warp-uniform branch.
template <int N>
__device__ __forceinline__ void rescale_rows(float (&o)[N][4], const float (&alpha)[2], float slack) {
  if (slack > 0.f && !__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) return;
  scale_rows(o, alpha);
}

}  // namespace flashcore::cuda::detail
