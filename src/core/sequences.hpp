// Where sequence b's rows are, and how many it has: the one statement of the sequence layouts of
// flashcore.hpp ("Sequences": varlen Q, varlen K/V, cache lengths, paged K/V), host and device
// inline, for the Kokkos reference and the CUDA kernels. (The fp64 oracle in src/verify states
// them again on its own, so that it checks this.)
#pragma once

#include <cstdint>

#include "core/numeric.hpp"
#include "flashcore/flashcore.hpp"

namespace flashcore::numeric {

struct Sequences {
  const int* cu_seqlens_q = nullptr;  // batch+1, or null: every sequence has seqlen_q queries
  const int* cu_seqlens_k = nullptr;  // batch+1, or null
  const int* seqlens_k = nullptr;     // batch, or null
  const int* block_table = nullptr;   // batch x pages_per_seq, or null (not paged)
  int seqlen_q = 1, seqlen_k = 1;     // the problem's lengths (bounds when per-sequence)
  int total_q = 0;                    // packed Q rows (LSE is (heads_q, total_q) then)
  int page_size = 0, pages_per_seq = 0;

  static Sequences of(const Problem& p, const Tensors& t) {
    Sequences s;
    s.cu_seqlens_q = p.total_q > 0 ? t.cu_seqlens_q : nullptr;
    s.cu_seqlens_k = p.total_k > 0 ? t.cu_seqlens_k : nullptr;
    s.seqlens_k = t.seqlens_k;
    s.block_table = p.page_size > 0 ? t.block_table : nullptr;
    s.seqlen_q = p.seqlen_q;
    s.seqlen_k = p.seqlen_k;
    s.total_q = p.total_q;
    s.page_size = p.page_size;
    s.pages_per_seq = p.pages_per_seq;
    return s;
  }

  /// Queries of sequence b (Lq_b).
  FC_HOST_DEVICE int len_q(int b) const {
    return cu_seqlens_q != nullptr ? cu_seqlens_q[b + 1] - cu_seqlens_q[b] : seqlen_q;
  }
  /// Keys of sequence b (Lk_b): its cache length, else its packed count, else seqlen_k.
  FC_HOST_DEVICE int len_k(int b) const {
    if (seqlens_k != nullptr) return seqlens_k[b];
    return cu_seqlens_k != nullptr ? cu_seqlens_k[b + 1] - cu_seqlens_k[b] : seqlen_k;
  }
  /// K/V rows sequence b stores (>= len_k(b)): its packed count, else seqlen_k (a cache's rows).
  FC_HOST_DEVICE int rows_k(int b) const {
    return cu_seqlens_k != nullptr ? cu_seqlens_k[b + 1] - cu_seqlens_k[b] : seqlen_k;
  }
  /// Element offset of (sequence b, query i, head 0, dim 0) in Q or O with strides s.
  FC_HOST_DEVICE std::int64_t q_row(const Strides& s, int b, int i) const {
    if (cu_seqlens_q != nullptr) return static_cast<std::int64_t>(cu_seqlens_q[b] + i) * s.seq;
    return b * s.batch + static_cast<std::int64_t>(i) * s.seq;
  }
  /// Element offset of (sequence b, key j, head 0, dim 0) in K or V with strides s.
  FC_HOST_DEVICE std::int64_t kv_row(const Strides& s, int b, int j) const {
    if (block_table != nullptr) {
      const int page = block_table[static_cast<std::int64_t>(b) * pages_per_seq + j / page_size];
      return page * s.batch + static_cast<std::int64_t>(j % page_size) * s.seq;
    }
    if (cu_seqlens_k != nullptr) return static_cast<std::int64_t>(cu_seqlens_k[b] + j) * s.seq;
    return b * s.batch + static_cast<std::int64_t>(j) * s.seq;
  }
  /// Index of row (b, h, i) in the LSE: (batch, heads_q, seqlen_q), or (heads_q, total_q) packed.
  FC_HOST_DEVICE std::int64_t lse_index(int b, int h, int i, int heads_q) const {
    if (cu_seqlens_q != nullptr) return static_cast<std::int64_t>(h) * total_q + cu_seqlens_q[b] + i;
    return (static_cast<std::int64_t>(b) * heads_q + h) * seqlen_q + i;
  }
};

}  // namespace flashcore::numeric
