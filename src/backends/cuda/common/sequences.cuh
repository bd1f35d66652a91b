// The sequence layouts of a launch (flashcore.hpp, "Sequences": varlen Q, varlen K/V, cache lengths,
// paged K/V) as every kernel reads them: numeric::Sequences (core/sequences.hpp, the one statement of
// where a row is, shared with the Kokkos reference) built from the kernel parameters, and the strides
// of the four tensors in its terms. Without sequence arrays it describes the fixed-length batch.
#pragma once

#include "backends/cuda/flash_fwd.h"
#include "core/sequences.hpp"

namespace flashcore::cuda::detail {

__host__ __device__ inline numeric::Sequences sequences_of(const FlashFwdParams& p) {
  numeric::Sequences s;
  s.cu_seqlens_q = p.cu_seqlens_q;
  s.cu_seqlens_k = p.cu_seqlens_k;
  s.seqlens_k = p.seqlens_k;
  s.block_table = p.block_table;
  s.seqlen_q = p.seqlen_q;
  s.seqlen_k = p.seqlen_k;
  s.total_q = p.total_q;
  s.page_size = p.page_size;
  s.pages_per_seq = p.pages_per_seq;
  return s;
}

__host__ __device__ inline Strides q_strides(const FlashFwdParams& p) { return {p.q_batch_stride, p.q_seq_stride, p.q_head_stride}; }
__host__ __device__ inline Strides k_strides(const FlashFwdParams& p) { return {p.k_batch_stride, p.k_seq_stride, p.k_head_stride}; }
__host__ __device__ inline Strides v_strides(const FlashFwdParams& p) { return {p.v_batch_stride, p.v_seq_stride, p.v_head_stride}; }
__host__ __device__ inline Strides o_strides(const FlashFwdParams& p) { return {p.o_batch_stride, p.o_seq_stride, p.o_head_stride}; }

// Whether K and V are pools of pages (the decode kernel and the Hopper kernel's paged instance read them).
__host__ __device__ inline bool paged_kv(const FlashFwdParams& p) { return p.block_table != nullptr; }
// Whether K/V rows end per sequence inside the tensor (packed K/V, cache lengths or pages): rows a
// full tile reads past a sequence's keys are another sequence's, or a cache's unwritten ones.
__host__ __device__ inline bool kv_ends_per_sequence(const FlashFwdParams& p) {
  return p.cu_seqlens_k != nullptr || p.seqlens_k != nullptr || p.block_table != nullptr;
}
// Where row 0 of sequence b is in a Hopper kernel's TMA tensor maps (sm90/tensor_maps.cpp): a packed
// tensor is one batch entry of total rows, the sequence from its offset; otherwise batch entry b.
struct TmaRows {
  int row0, batch;
};
__device__ __forceinline__ TmaRows tma_q_rows(const FlashFwdParams& p, int b) {
  return p.cu_seqlens_q != nullptr ? TmaRows{p.cu_seqlens_q[b], 0} : TmaRows{0, b};
}
__device__ __forceinline__ TmaRows tma_kv_rows(const FlashFwdParams& p, int b) {
  return p.cu_seqlens_k != nullptr ? TmaRows{p.cu_seqlens_k[b], 0} : TmaRows{0, b};
}
// Whether sequences may differ in length (varlen offsets or cache lengths; a block table alone keeps
// every sequence at seqlen_q x seqlen_k).
__host__ __device__ inline bool has_sequence_lengths(const FlashFwdParams& p) {
  return p.cu_seqlens_q != nullptr || p.cu_seqlens_k != nullptr || p.seqlens_k != nullptr;
}
// Whether any sequence array is set.
__host__ __device__ inline bool has_sequences(const FlashFwdParams& p) {
  return has_sequence_lengths(p) || p.block_table != nullptr;
}

// One (batch entry b, query head h) of a prefill kernel (contiguous, not paged, K/V): the first
// element of its sequence's Q rows and of its K and V head. Lengths come from the mask policy
// (common/mask.cuh, HeldLengths / ReadLengths), O and the LSE from the epilogue (common/epilogue.cuh): read where
// they are used, so that no more than these pointers lives across the key loop.
template <typename Elem>
struct SequenceHead {
  const Elem* q;
  const Elem* k;
  const Elem* v;
};
template <typename Elem>
__device__ __forceinline__ SequenceHead<Elem> sequence_head(const FlashFwdParams& p, int b, int h, int hk) {
  const numeric::Sequences seq = sequences_of(p);
  return {static_cast<const Elem*>(p.q) + seq.q_row(q_strides(p), b, 0) + (long long)h * p.q_head_stride,
          static_cast<const Elem*>(p.k) + seq.kv_row(k_strides(p), b, 0) + (long long)hk * p.k_head_stride,
          static_cast<const Elem*>(p.v) + seq.kv_row(v_strides(p), b, 0) + (long long)hk * p.v_head_stride};
}

}  // namespace flashcore::cuda::detail
