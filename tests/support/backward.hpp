// Test support of the backward pass: a case's data with the forward done (O and LSE from the host
// reference, as a training step has them), a random dO, gradient buffers poisoned with NaN, and the
// gradients' errors against the fp64 backward oracle (src/verify/backward.hpp).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "verify/backward.hpp"
#include "verify/tolerance.hpp"

namespace fctest {

struct BackwardData {
  HostData fwd;  // Q, K, V, the forward's O and LSE, the variants' and sequences' arrays
  std::vector<unsigned char> d_o, dq, dk, dv;  // dO with O's layout; dQ, dK, dV with Q's, K's, V's
  std::vector<float> dsinks;                   // heads_q values when the case has sinks
  /// Every byte of dQ, dK, dV (gaps included) and dsinks set to NaN patterns.
  void poison_gradients();
  flashcore::Gradients gradients();
};

/// The case's data (make_data), its forward on reference-host, and dO uniform in [-1, 1].
BackwardData make_backward_data(const Case& c, std::uint64_t seed);

/// The fp64 backward oracle on the data (threads: std::threads of the oracle), with delta from the
/// forward's O the backward is given (exact_o: from the exact O, for finite differences).
flashcore::verify::Gradients backward_oracle(const BackwardData& d, flashcore::verify::Precision precision,
                                             int threads = 1, bool exact_o = false);

/// Errors of dQ, dK, dV (and dsinks) against an oracle, each tensor with its own bound.
struct GradientErrors {
  std::array<double, 3> max_abs{};   // dq, dk, dv
  std::array<double, 3> max_ref{};   // max |ref| of each
  double dsinks_max_abs = 0, dsinks_max_ref = 0;
  long long bad = 0;                 // elements beyond their bound, NaN included
  std::string first_bad;
  std::string summary() const;
};
/// bounds[t] for dq, dk, dv; sinks_bound for dsinks. Every element the layout stores is compared
/// (rows past a cache's length against 0); elements the oracle marks NaN (rows a layout does not
/// store) are skipped.
GradientErrors compare_gradients(const BackwardData& d, const flashcore::verify::Gradients& ref,
                                 const std::array<flashcore::tolerance::Bound, 3>& bounds,
                                 flashcore::tolerance::Bound sinks_bound);

}  // namespace fctest
