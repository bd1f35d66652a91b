// The fp64 oracle of the backward pass (part of the verification library, src/verify): the gradients
// of attention by plain loops in double precision on host buffers, with no Kokkos and nothing shared
// with the kernels it checks. For each query row it recomputes the row's softmax exactly (its own
// forward, not the backend's LSE), then
//   delta_i = dO_i·O_i (O: the forward's output the backward is given, or the exact one),  dx_ij = P_ij (dO_i·v_j - delta_i),  dz_ij = dx_ij · d x_ij / d(q_i·k_j)
//   dQ_i += dz_ij k_j,   dK_j += dz_ij q_i,   dV_j += P_ij dO_i,   dsink_h -= P_sink,i delta_i
// (tests/test_backward.cpp checks it against finite differences of the fp64 forward, oracle.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "verify/oracle.hpp"
#include "verify/tolerance.hpp"

namespace flashcore::verify {

/// All gradients of a problem, as contiguous arrays in logical order whatever the layout.
struct Gradients {
  std::vector<double> dq;      // (batch, seqlen_q, heads_q, head_dim), o_index(); rows i >= Lq_b NaN
  std::vector<double> dk, dv;  // (batch, seqlen_k, heads_kv, head_dim), kv_index(); rows a sequence does
                               // not store (packed K/V: j >= its count) NaN, stored rows past Lk_b 0
  std::vector<double> dsinks;  // heads_q (summed over the batch), empty without sinks
};

inline std::size_t kv_index(const Problem& p, int b, int j, int hk, int d) {
  return ((static_cast<std::size_t>(b) * p.seqlen_k + j) * p.heads_kv + hk) * p.head_dim + d;
}

/// The gradients of L = sum(dO ⊙ O) for Q, K, V (host buffers with the problem's strides and dtype;
/// d_o with O's strides) and the sinks. `o`: the forward's output as the backward pass is given it
/// (O's strides; delta_i = dO_i·O_i reads it, as every backward does), or null for the exact O of the
/// exact gradient (finite differences). Precision::Exact: fp64 throughout. Precision::Same: the naive
/// same-precision computation a kernel in the problem's dtype does (P rounded before dV, dS rounded
/// before dQ and dK, outputs rounded), whose error defines the tuned kernels' bound. threads > 1
/// computes (batch, kv head) groups on that many std::threads; the result does not depend on it.
Gradients attention_backward(const Problem& p, const void* q, const void* k, const void* v, const void* o,
                             const void* d_o, Precision precision, int threads = 1, const HeadParams& heads = {},
                             const Sequences& seqs = {});

/// Max |x| of each gradient tensor (dQ, dK, dV) of an oracle result, NaN skipped: the scales of the
/// gradient bounds (tolerance::reference_gradient_bound, kernel_gradient_bound).
std::array<double, 3> gradient_scales(const Gradients& g);
/// Max |a - b| of each gradient tensor (the naive same-precision error: a = Same, b = Exact).
std::array<double, 3> gradient_differences(const Gradients& a, const Gradients& b);

/// dQ, dK, dV of a backend (host buffers of the problem's dtype with Q's, K's, V's strides) against an
/// oracle result, each tensor with its bound: every element the layout stores (rows past a cache's
/// length against 0); elements the oracle marks NaN are skipped. A NaN in a gradient fails.
struct GradientCheck {
  std::array<double, 3> max_abs{};  // dQ, dK, dV; +inf when an element is NaN or inf
  std::array<double, 3> max_ref{};  // max |ref| of each
  long long bad = 0;                // elements beyond their bound
  std::string first_bad;            // the first of them, in words
};
GradientCheck check_gradients(const Problem& p, const Sequences& seqs, const Gradients& ref, const void* dq,
                              const void* dk, const void* dv, const std::array<tolerance::Bound, 3>& bounds);

}  // namespace flashcore::verify
