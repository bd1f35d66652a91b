// The fp64 attention oracle of the tests and tools (part of the verification library, src/verify):
// attention by plain loops in double precision on host buffers, with no Kokkos and nothing shared
// with the kernels it checks. It computes every query row, every row_stride-th row (large
// problems) or an explicit list of rows (perf harnesses), either exactly or as the "naive
// same-precision computation" that defines the tuned kernels' error bound (tolerance.hpp).
//
// It uses only the header-defined parts of flashcore/flashcore.hpp (Problem, Strides,
// element_offset), no symbol of libflashcore, so that perf/dev/flash_dev.cu can compile it
// without the library.
#pragma once

#include <cstddef>
#include <vector>

#include "flashcore/flashcore.hpp"

namespace flashcore::verify {

enum class Precision {
  Exact,  // fp64 throughout: the exact attention of the (rounded) inputs
  Same,   // the probabilities rounded to the problem's dtype before P·V and the output rounded to
          // it, as a straightforward kernel in that precision would (scores and sums in fp64);
          // fp8 inputs: P rounded as e4m3(256 p) / 256, the output to Problem::o_dtype()
};

/// One query row: batch b, query head h, row i.
struct Row {
  int b = 0, h = 0, i = 0;
};

/// The sequence arrays of a call (flashcore.hpp, "Sequences": Tensors::cu_seqlens_q, cu_seqlens_k,
/// seqlens_k, block_table), host arrays or null; the Problem's total_q, total_k, page_size say
/// which the layout uses. Sequence b has Lq_b = len_q(p, b) queries and Lk_b = len_k(p, b) keys.
struct Sequences {
  const int* cu_seqlens_q = nullptr;
  const int* cu_seqlens_k = nullptr;
  const int* seqlens_k = nullptr;
  const int* block_table = nullptr;
  static Sequences of(const Tensors& t) { return {t.cu_seqlens_q, t.cu_seqlens_k, t.seqlens_k, t.block_table}; }
  int len_q(const Problem& p, int b) const;
  int len_k(const Problem& p, int b) const;
  /// Element offsets of (b, query i, head h, dim 0) in Q or O, and of (b, key j, head h, dim 0) in K or V.
  long long q_offset(const Problem& p, const Strides& s, int b, int i, int h) const;
  long long kv_offset(const Problem& p, const Strides& s, int b, int j, int h) const;
  /// Index of (b, query head h, query i) in an LSE a backend wrote (Tensors::lse): (batch, heads_q,
  /// seqlen_q), or (heads_q, total_q) with packed Q.
  std::size_t lse_offset(const Problem& p, int b, int h, int i) const;
};

/// Whether row i of a sequence of len_q queries and len_k keys sees key j: a plain statement of the
/// masks in flashcore.hpp (causal and sliding window, bottom-right aligned), written in this library
/// again (not shared with the library's numeric::visible_keys) so that the oracles check the library's
/// key ranges.
bool sees(const Problem& p, int len_q, int len_k, int i, long long j);

/// Rows computed by attention_rows, in the order asked for.
struct RowsResult {
  std::vector<Row> rows;
  std::vector<double> o;    // rows.size() x head_dim: row n at o[n * head_dim]
  std::vector<double> lse;  // rows.size(); -inf for a row that sees no key (its O is 0), sink[h] with sinks
};

/// The per-head parameters of the variants (Tensors::alibi_slopes, Tensors::sinks), host arrays
/// of heads_q values or null. The window and soft-capping are Problem fields.
struct HeadParams {
  const float* alibi_slopes = nullptr;
  const float* sinks = nullptr;
  /// The parameters held in two vectors, an empty one meaning that variant is off.
  static HeadParams of(const std::vector<float>& alibi_slopes, const std::vector<float>& sinks) {
    return {alibi_slopes.empty() ? nullptr : alibi_slopes.data(), sinks.empty() ? nullptr : sinks.data()};
  }
};

/// Attention of the given rows of a problem whose Q, K, V are host buffers with the problem's
/// strides and dtype (the problem is not validated here: pass a valid one). fp8 (E4M3) inputs are
/// dequantized exactly: e4m3_to_float(x) * descale_q/k/v (elements.hpp, load_input). threads > 1 computes
/// rows on that many std::threads; the result does not depend on it. A row outside the problem
/// throws std::out_of_range naming the row, before anything is computed (with sequences: i >= Lq_b).
RowsResult attention_rows(const Problem& p, const void* q, const void* k, const void* v, const std::vector<Row>& rows,
                          Precision precision, int threads = 1, const HeadParams& heads = {},
                          const Sequences& seqs = {});

/// All rows, as contiguous arrays in logical order, whatever the tensors' layout (with sequences,
/// row i of sequence b at index i, rows i >= Lq_b NaN).
struct Result {
  std::vector<double> o;    // (batch, seqlen_q, heads_q, head_dim), index o_index()
  std::vector<double> lse;  // (batch, heads_q, seqlen_q), index lse_index(); -inf for rows that see no key
};

/// Attention of the whole problem. row_stride > 1 computes only rows i with i % row_stride == 0
/// and the last row (for problems too large for the full oracle); the others are NaN.
Result attention(const Problem& p, const void* q, const void* k, const void* v, Precision precision,
                 int row_stride = 1, int threads = 1, const HeadParams& heads = {}, const Sequences& seqs = {});

/// The rows attention() computes for a row_stride: (b, h, i) in that order, i < Lq_b and
/// i % row_stride == 0 or i the last row of its sequence.
std::vector<Row> strided_rows(const Problem& p, int row_stride, const Sequences& seqs = {});

inline std::size_t o_index(const Problem& p, int b, int i, int h, int d) {
  return ((static_cast<std::size_t>(b) * p.seqlen_q + i) * p.heads_q + h) * p.head_dim + d;
}
inline std::size_t lse_index(const Problem& p, int b, int h, int i) {
  return (static_cast<std::size_t>(b) * p.heads_q + h) * p.seqlen_q + i;
}

/// max |a[n] - ref[n]| over the elements where ref is not NaN (rows a sampled oracle skipped);
/// a NaN in a is ignored as well. The error of the naive same-precision computation is
/// max_abs_difference(attention(..., Same).o, attention(..., Exact).o).
double max_abs_difference(const std::vector<double>& a, const std::vector<double>& ref);

/// The softmax scale of a problem: the given one, or 1/sqrt(head_dim) in fp32 (the rule of
/// Problem::effective_scale, restated here so that this library needs no symbol of libflashcore;
/// tests/test_verify.cpp checks that the two agree).
double softmax_scale(const Problem& p);

}  // namespace flashcore::verify
