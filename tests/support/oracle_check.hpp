// The check every forward backend on host data passes: a case's fresh random data (outputs
// poisoned with NaN), the forward forced onto `backend`, O and LSE against the fp64 oracle within
// the reference bound of the dtype (src/verify/tolerance.hpp). Header-only: it uses GoogleTest.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "support/testing.hpp"

namespace fctest {

inline void expect_matches_oracle(const std::string& backend, const Case& c, std::uint64_t salt) {
  SCOPED_TRACE(c.name() + " on " + backend);
  HostData d = make_data(c, run_seed() ^ (salt * 0x9e3779b97f4a7c15ull));
  flashcore::Options opts;
  opts.backend = backend;
  const flashcore::Report r = flashcore::run(d.problem, d.tensors(), opts);
  EXPECT_EQ(r.chosen, backend);
  const Errors e = compare(d, oracle(d));
  EXPECT_EQ(e.bad, 0) << "max abs " << e.max_abs << ", worst/bound " << e.worst_ratio << "; first: " << e.first_bad;
  EXPECT_EQ(e.lse_bad, 0) << e.first_bad;
}

}  // namespace fctest
