// Where the backward's rows of sequence b are (flashcore.hpp, "Sequences": varlen Q, varlen K/V, cache
// lengths; paged K/V has no backward): its first row in Q, dO, dQ, K, V, dK, dV (numeric::Sequences, the
// statement the forward and the Kokkos reference share) and in the workspace. Every answer is computed
// where it is used, from the kernel parameters, so that no pointer lives in registers across a loop.
// A sequence's lengths come from the mask policy made for it (Mask(p, b): mask.seq.len_q(), len_k()).
//
// Which kernels read sequence layouts (kBwdSequences): those whose mask policy has per-sequence
// lengths (ReadLengths, made with the block's batch entry); the others (FixedLengths) have the
// fixed-length problem's lengths and rows, and none of these reads in their loops. Both exist for the
// plain mask and for the variants (launch_bwd.cuh, kSeq): the reads cost the plain backward 1.04-1.08x
// (deterministic, D = 128), and sequences on the variants' kernels cost 1.07-1.41x against the plain
// ones (H100, GPU runs 23a and 23b, perf/dev/NOTES.md).
#pragma once

#include <type_traits>


#include "backends/cuda/backward/bwd_config.cuh"
#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/common/variant_mask.cuh"

namespace flashcore::cuda::detail {

// The problem's lengths (seqlen_q, seqlen_k) whatever the batch entry: the kernels without sequences.
struct FixedLengths : ReadLengths {
  __host__ __device__ FixedLengths(const FlashFwdParams& params, int) : ReadLengths(params, -1) {}
};
template <class Mask>
inline constexpr bool kBwdSequences = std::is_same_v<decltype(Mask::seq), ReadLengths>;

// The workspace row of query i of sequence b, query head h (BwdArgs: fixed-length Q [batch][heads_q]
// [rows]; packed Q [heads_q][rows], sequence b from (cu_seqlens_q[b] + 64·b) rounded down to 64). A
// sequence's rows are contiguous and padded to a multiple of 64: every 64-row tile is in bounds and
// 16-byte aligned, and no two sequences share a row.
// kSeq false: the fixed-length layout only.
template <bool kSeq = true>
__device__ __forceinline__ long long bwd_ws_row(const BwdArgs& a, int b, int h, int i) {
  if constexpr (kSeq) {
    const int* cu = a.p.fwd.cu_seqlens_q;
    const long long seq0 = cu != nullptr ? (cu[b] + 64LL * b) / 64 * 64 : 0;
    return b * a.ws_batch_stride + h * a.ws_head_stride + seq0 + i;
  } else {
    return ((long long)b * a.p.fwd.heads_q + h) * a.seqlen_q_rounded + i;
  }
}

// The launch's sequence layout; with kSeq false, none (numeric::Sequences without arrays: the
// fixed-length batch, whatever arrays the parameters hold).
template <bool kSeq>
__device__ __forceinline__ numeric::Sequences bwd_seqs(const FlashFwdParams& p) {
  if constexpr (kSeq) {
    return sequences_of(p);
  } else {
    numeric::Sequences s;
    s.seqlen_q = p.seqlen_q, s.seqlen_k = p.seqlen_k;
    return s;
  }
}

// Row 0 of head h of sequence b in each tensor of the backward; kSeq false: of batch entry b of the
// fixed-length layout.
template <typename Elem, bool kSeq = true>
struct BwdSequenceRows {
  const BwdArgs& a;
  int b;
  __device__ BwdSequenceRows(const BwdArgs& args, int batch) : a(args), b(batch) {}
  __device__ numeric::Sequences seqs() const { return bwd_seqs<kSeq>(a.p.fwd); }

  __device__ const Elem* q(int h) const {
    const FlashFwdParams& p = a.p.fwd;
    return static_cast<const Elem*>(p.q) + seqs().q_row(q_strides(p), b, 0) + (long long)h * p.q_head_stride;
  }
  __device__ const Elem* d_o(int h) const {
    const FlashBwdParams& g = a.p;
    return static_cast<const Elem*>(g.d_o) + seqs().q_row({g.do_batch_stride, g.do_seq_stride, 0}, b, 0) +
           (long long)h * g.do_head_stride;
  }
  __device__ Elem* dq(int h) const {
    const FlashBwdParams& g = a.p;
    return static_cast<Elem*>(g.dq) + seqs().q_row({g.dq_batch_stride, g.dq_seq_stride, 0}, b, 0) +
           (long long)h * g.dq_head_stride;
  }
  __device__ const Elem* k(int hk) const {
    const FlashFwdParams& p = a.p.fwd;
    return static_cast<const Elem*>(p.k) + seqs().kv_row(k_strides(p), b, 0) + (long long)hk * p.k_head_stride;
  }
  __device__ const Elem* v(int hk) const {
    const FlashFwdParams& p = a.p.fwd;
    return static_cast<const Elem*>(p.v) + seqs().kv_row(v_strides(p), b, 0) + (long long)hk * p.v_head_stride;
  }
  __device__ Elem* dk(int hk) const {
    const FlashBwdParams& g = a.p;
    return static_cast<Elem*>(g.dk) + seqs().kv_row({g.dk_batch_stride, g.dk_seq_stride, 0}, b, 0) +
           (long long)hk * g.dk_head_stride;
  }
  __device__ Elem* dv(int hk) const {
    const FlashBwdParams& g = a.p;
    return static_cast<Elem*>(g.dv) + seqs().kv_row({g.dv_batch_stride, g.dv_seq_stride, 0}, b, 0) +
           (long long)hk * g.dv_head_stride;
  }
  // K/V rows sequence b stores (>= its keys; a cache's rows past its length get dK = dV = 0).
  __device__ int rows_k() const { return seqs().rows_k(b); }
};

}  // namespace flashcore::cuda::detail
