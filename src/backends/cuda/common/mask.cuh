// Score masks, as policies a kernel is templated on. A policy says which keys a query row sees and
// what its logits are, and every kernel asks it the same questions:
//   first_tile, tiles   which keys (64- or 128-key tiles) a block of rows must visit at all,
//   unmasked_first,     the tiles in between whose every key is visible to every row of a warp
//   unmasked_tiles        (no mask work there),
//   transform           the logits of one accumulator fragment (soft-capping, ALiBi), every tile,
//   apply               -inf for the scores of one accumulator fragment its rows do not see,
//   sink_log2           an attention sink joining the softmax denominator (softmax_finish),
//   row_begin, row_end  the backward's dK/dV blocks: which rows see a range of keys,
//   visible             what one row sees (keys of a query row, or rows of a key): the definition
//                       the others implement.
// Flags say at compile time which of them can do anything (kTransformsScores, kHasLeftBound,
// kHasSinks), so a kernel instantiated with CausalMask carries none of the variants' work.
// Policies: CausalMask (below; causal or none, the key tail) and VariantMask (common/variant_mask.cuh:
// sliding window, soft-capping, ALiBi, sinks). A new mask (varlen bounds, ...) is a new policy with
// these members; the kernels do not change. Both are made for the block's batch entry and use its
// sequence's lengths (HeldLengths or ReadLengths below) or, made from the parameters alone, the problem's. Members are __host__ __device__ where the launch plan
// needs the same answer (tiles).
//
// Accumulator fragment (mma.sync m16n8 C layout, also wgmma's): a thread holds rows row0 and row0 + 8
// (row0 = first row of the 16-row tile + lane/4) and, in n8 column tile i, columns 8i + 2(lane%4) + {0,1}:
// s[i][0..1] belong to row0, s[i][2..3] to row0 + 8.
#pragma once

#include <climits>
#include <cmath>

#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/flash_fwd.h"

namespace flashcore::cuda::detail {

// min and max on host and device (the device versions are single instructions the compiler reasons about).
__host__ __device__ __forceinline__ int imin(int a, int b) {
#ifdef __CUDA_ARCH__
  return min(a, b);
#else
  return a < b ? a : b;
#endif
}
__host__ __device__ __forceinline__ int imax(int a, int b) {
#ifdef __CUDA_ARCH__
  return max(a, b);
#else
  return a > b ? a : b;
#endif
}

// The lengths of the sequence a block works on: batch entry b's under the sequence layouts
// (common/sequences.cuh), the problem's seqlen_q x seqlen_k without them or for b = -1 (the plan, on
// the host: the bounds). Two ways to have them, and a mask policy is templated on which:
//   HeldLengths  read once, when the mask is made, and kept in registers: what the mma.sync kernels
//                up to D = 128 use (measured on an H100, 45feaa1 vs the reading kind: the 16-row
//                warp-specialized kernel at (1,8,1024,64) 17.4 us vs 32.1, perf/dev/NOTES.md);
//   ReadLengths  read from the parameters where a mask needs them, so that nothing lives across the
//                key loop: the kernels whose registers are spoken for (the Hopper consumers, the
//                mma.sync kernels above D = 128), which spill with HeldLengths.
struct ReadLengths {
  const FlashFwdParams& p;
  int b;
  __host__ __device__ ReadLengths(const FlashFwdParams& params, int batch) : p(params), b(batch) {}
  __host__ __device__ int len_k() const { return b < 0 ? p.seqlen_k : sequences_of(p).len_k(b); }
  __host__ __device__ int len_q() const { return b < 0 ? p.seqlen_q : sequences_of(p).len_q(b); }
  __host__ __device__ int diag() const { return len_k() - len_q(); }  // row i's diagonal key is i + diag
};
struct HeldLengths {  // ReadLengths' answers, read once
  int lk, lq;
  __host__ __device__ HeldLengths(const FlashFwdParams& p, int b)
      : lk(ReadLengths(p, b).len_k()), lq(ReadLengths(p, b).len_q()) {}
  __host__ __device__ int len_k() const { return lk; }
  __host__ __device__ int len_q() const { return lq; }
  __host__ __device__ int diag() const { return lk - lq; }
};

// Causal (bottom-right aligned, when p.causal) and the key tail: query row i sees key j iff
// j < len_k and (not causal or j <= i + len_k - len_q), with the lengths of the block's sequence.
// kCausal: -1 reads p.causal (the forward kernels); 0 or 1 fixes it at compile time for a kernel
// instantiated per value, whose launcher picks the one p.causal names (the backward's).
template <class Lengths = HeldLengths, int kCausal = -1>
struct CausalMaskOf {
  template <class L>
  using WithLengths = CausalMaskOf<L, kCausal>;  // the same policy with the other kind of lengths
  static constexpr bool kTransformsScores = false;
  static constexpr bool kHasLeftBound = false;
  static constexpr bool kHasSinks = false;
  // Reads the problem's fields where they are used (kernel parameters stay in the constant bank
  // instead of occupying registers for the whole kernel).
  const FlashFwdParams& p;
  Lengths seq;  // the block's sequence: len_k(), diag() = len_k - len_q (row i's diagonal key is i + diag)

  // The fixed-length problem (every sequence seqlen_q x seqlen_k: the plan), or sequence b's.
  __host__ __device__ explicit CausalMaskOf(const FlashFwdParams& params, int b = -1) : p(params), seq(params, b) {}
  __host__ __device__ bool causal() const { return kCausal < 0 ? p.causal : kCausal != 0; }

  // Keys [0, key_end) hold every key that some row before row_end sees.
  __host__ __device__ int key_end(int row_end) const {
    int n = seq.len_k();
    if (causal()) n = imin(n, row_end + seq.diag());
    return n;
  }
  // No row skips the first keys.
  __host__ __device__ int first_tile(int, int) const { return 0; }
  __host__ __device__ int unmasked_first(int, int) const { return 0; }
  // Number of tile_n-key tiles rows before row_end visit.
  __host__ __device__ int tiles(int row_end, int tile_n) const {
    const int n = key_end(row_end);
    return n > 0 ? (n + tile_n - 1) / tile_n : 0;
  }
  // Tiles [0, unmasked_tiles) are visible to every row from row_begin on in full: they need no mask.
  __host__ __device__ int unmasked_tiles(int row_begin, int tile_n) const {
    int t = seq.len_k() / tile_n;
    if (causal()) t = imin(t, imax(0, row_begin + seq.diag() + 1) / tile_n);
    return t;
  }
  // ---- the backward's questions (a dK/dV block walks the rows that see its keys)
  // Rows [row_begin(k0), row_end(k1)) hold every row that sees a key of [k0, k1) (an empty range when
  // row_begin >= row_end).
  __host__ __device__ int row_begin(int key_begin) const {
    return causal() ? imin(imax(0, key_begin - seq.diag()), seq.len_q()) : 0;
  }
  __host__ __device__ int row_end(int) const { return seq.len_q(); }
  // What one row sees, as a closed range [x, y] of the other index (indices are never negative): the
  // keys of query row r, or (kKeysOnRows) the query rows that see key r; nothing when x > every index
  // (x = INT_MAX), no bound as INT_MIN / INT_MAX. The definition the tile ranges and apply implement;
  // the backward masks its fragments with it. Edges that cannot bind are constants, so that the
  // compiler drops their compares (the masked tiles of the backward's dK/dV loop).
  template <bool kKeysOnRows>
  __host__ __device__ int2 visible(int r) const {
    const int len_k = seq.len_k(), diag = seq.diag();
    if constexpr (kKeysOnRows) {
      return make_int2(r >= len_k ? INT_MAX : (causal() ? r - diag : INT_MIN), INT_MAX);
    } else {
      return make_int2(INT_MIN, causal() ? imin(len_k - 1, r + diag) : len_k - 1);
    }
  }

  // Masks one fragment: rows row0, row0 + 8; n8 column tile i starts at key key0 + 8i.
  template <int N>
  __device__ __forceinline__ void apply(float (&s)[N][4], int row0, int key0, int lane) const {
    const int t = lane & 3;
    const int last = seq.len_k() - 1, diag = seq.diag();
    const int lim0 = causal() ? min(last, row0 + diag) : last;
    const int lim1 = causal() ? min(last, row0 + 8 + diag) : last;
#pragma unroll
    for (int i = 0; i < N; ++i) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = key0 + 8 * i + 2 * t + e;
        if (col > lim0) s[i][e] = -INFINITY;
        if (col > lim1) s[i][2 + e] = -INFINITY;
      }
    }
  }
  template <int N>
  __device__ __forceinline__ void transform(float (&)[N][4], int, int, int, int) const {}
  __device__ __forceinline__ float sink_log2(int) const { return -INFINITY; }
};
using CausalMask = CausalMaskOf<>;

}  // namespace flashcore::cuda::detail
