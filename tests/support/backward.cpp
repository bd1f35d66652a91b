// Test support of the backward pass (see backward.hpp).
#include "support/backward.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "verify/elements.hpp"

namespace fctest {

namespace verify = flashcore::verify;

void BackwardData::poison_gradients() {
  for (auto* buf : {&dq, &dk, &dv}) std::memset(buf->data(), 0xff, buf->size());  // NaN in fp32, fp16 and bf16
  for (float& x : dsinks) x = std::numeric_limits<float>::quiet_NaN();
}

flashcore::Gradients BackwardData::gradients() {
  return {d_o.data(), dq.data(), dk.data(), dv.data(), dsinks.empty() ? nullptr : dsinks.data()};
}

BackwardData make_backward_data(const Case& c, std::uint64_t seed) {
  Case with_lse = c;
  with_lse.lse = true;
  BackwardData d;
  d.fwd = make_data(with_lse, seed);
  flashcore::Options opts;
  opts.backend = "reference-host";
  flashcore::run(d.fwd.problem, d.fwd.tensors(), opts);
  const Problem& p = d.fwd.problem;
  const verify::Sequences sq = d.fwd.sequences();
  d.d_o.assign(d.fwd.o.size(), 0x5a);
  std::mt19937_64 rng(seed ^ 0xd0d0ull);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (int b = 0; b < p.batch; ++b)
    for (int i = 0; i < sq.len_q(p, b); ++i)
      for (int h = 0; h < p.heads_q; ++h)
        for (int dd = 0; dd < p.head_dim; ++dd)
          verify::store_element(p.dtype, d.d_o.data(), sq.q_offset(p, p.o, b, i, h) + dd, uniform(rng));
  d.dq.resize(d.fwd.q.size());
  d.dk.resize(d.fwd.k.size());
  d.dv.resize(d.fwd.v.size());
  if (c.sinks) d.dsinks.resize(p.heads_q);
  d.poison_gradients();
  return d;
}

verify::Gradients backward_oracle(const BackwardData& d, verify::Precision precision, int threads, bool exact_o) {
  return verify::attention_backward(d.fwd.problem, d.fwd.q.data(), d.fwd.k.data(), d.fwd.v.data(),
                                    exact_o ? nullptr : d.fwd.o.data(), d.d_o.data(), precision, threads, d.fwd.head_params(), d.fwd.sequences());
}

GradientErrors compare_gradients(const BackwardData& d, const verify::Gradients& ref,
                                 const std::array<flashcore::tolerance::Bound, 3>& bounds,
                                 flashcore::tolerance::Bound sinks_bound) {
  const verify::GradientCheck c =
      verify::check_gradients(d.fwd.problem, d.fwd.sequences(), ref, d.dq.data(), d.dk.data(), d.dv.data(), bounds);
  GradientErrors e;
  e.max_abs = c.max_abs;
  e.max_ref = c.max_ref;
  e.bad = c.bad;
  e.first_bad = c.first_bad;
  for (std::size_t h = 0; h < d.dsinks.size() && h < ref.dsinks.size(); ++h) {
    const double g = d.dsinks[h], r = ref.dsinks[h];
    e.dsinks_max_abs = std::max(e.dsinks_max_abs, std::isnan(g) ? std::numeric_limits<double>::infinity() : std::fabs(g - r));
    e.dsinks_max_ref = std::max(e.dsinks_max_ref, std::fabs(r));
    if (!sinks_bound.ok(g, r) && e.bad++ == 0) {
      std::ostringstream os;
      os << "dsinks(h=" << h << ") = " << g << ", expected " << r;
      e.first_bad = os.str();
    }
  }
  return e;
}

std::string GradientErrors::summary() const {
  std::ostringstream os;
  const char* names[] = {"dQ", "dK", "dV"};
  for (int t = 0; t < 3; ++t) os << names[t] << " max err " << max_abs[t] << " (max |ref| " << max_ref[t] << "); ";
  os << "dsinks max err " << dsinks_max_abs << "; bad " << bad << (bad ? "; first: " + first_bad : std::string());
  return os.str();
}

}  // namespace fctest
