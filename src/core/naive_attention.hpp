// Attention by plain loops in double precision on host buffers: the independent oracle of the
// tests (no Kokkos, nothing shared with the reference kernel it checks) and the "naive
// same-precision computation" that defines the tuned kernels' error bound (src/core/tolerance.hpp).
#pragma once

#include <vector>

#include "flashcore/flashcore.hpp"

namespace flashcore::naive {

struct Result {
  std::vector<double> o;    // contiguous (batch, seqlen_q, heads_q, head_dim)
  std::vector<double> lse;  // contiguous (batch, heads_q, seqlen_q); -inf for rows that see no key
};

/// Computes attention of a validated problem whose Q, K, V are host buffers with the problem's
/// strides. same_precision: round the probabilities to the problem's dtype before P·V and the
/// output to it, as a straightforward kernel in that precision would. row_stride > 1 computes only
/// rows i with i % row_stride == 0 and the last row (large problems); the others are NaN.
Result attention(const Problem& p, const void* q, const void* k, const void* v, bool same_precision,
                 int row_stride = 1);

}  // namespace flashcore::naive
