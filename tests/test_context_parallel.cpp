// Ring attention (context_parallel.hpp) on the host: a ring of threads (local_ring) with 1-4 ranks,
// both shardings, causal and not, GQA, every dtype, lengths that do not divide evenly; each rank's
// shard gathered from one random problem, the shards' O and LSE scattered back and compared with
// the fp64 oracle of the whole problem (tolerance::ring_bound). Also the shard map, the checks
// before any work, and the NCCL entry point of a build without GPUs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "flashcore/context_parallel.hpp"
#include "support/shards.hpp"
#include "support/testing.hpp"
#include "verify/elements.hpp"
#include "verify/tolerance.hpp"

using flashcore::ContextParallel;
using flashcore::DType;
using flashcore::ShardChunk;
using flashcore::ShardMap;
using flashcore::Sharding;
using fctest::Case;

namespace {

// ---------------------------------------------------------------------------------- shard map ---

TEST(ShardMap, ChunksCoverTheSequenceOnceAndBalance) {
  for (Sharding sh : {Sharding::Contiguous, Sharding::LoadBalanced}) {
    for (int ranks = 1; ranks <= 5; ++ranks) {
      for (int len : {2 * ranks, 2 * ranks + 1, 37, 100, 1023}) {
        SCOPED_TRACE(std::string(flashcore::to_string(sh)) + " ranks " + std::to_string(ranks) + " len " + std::to_string(len));
        const ShardMap m = ShardMap::of(len, ranks, sh);
        std::vector<int> owner(len, -1);
        int shortest = len, longest = 0;
        for (int r = 0; r < ranks; ++r) {
          int local = 0;
          for (const ShardChunk& c : m.chunks_of(r)) {
            EXPECT_EQ(c.local_offset, local);
            local += c.length;
            shortest = std::min(shortest, c.length), longest = std::max(longest, c.length);
            for (int i = c.begin; i < c.begin + c.length; ++i) {
              ASSERT_TRUE(i >= 0 && i < len) << i;
              EXPECT_EQ(owner[i], -1) << "row " << i << " held twice";
              owner[i] = r;
            }
          }
          EXPECT_EQ(local, m.local_length(r));
          EXPECT_LE(local, m.max_local_length());
        }
        for (int i = 0; i < len; ++i) EXPECT_NE(owner[i], -1) << "row " << i << " held by nobody";
        EXPECT_LE(longest - shortest, 1);
        if (sh == Sharding::LoadBalanced) {
          // Rank r holds chunks r and 2n-1-r: the first and the last row belong to rank 0.
          EXPECT_EQ(owner[0], 0);
          EXPECT_EQ(owner[len - 1], 0);
        }
      }
    }
  }
}

TEST(ShardMap, RejectsEmptySequencesAndRings) {
  try {
    ShardMap::of(0, 2, Sharding::Contiguous);
    FAIL() << "seqlen 0 accepted";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "seqlen");
  }
  try {
    ShardMap::of(10, 0, Sharding::LoadBalanced);
    FAIL() << "0 ranks accepted";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "ranks");
  }
}

// --------------------------------------------------------------------------------- the ring -----

struct RingCase {
  Case c;  // the whole problem (seqlen_q = seqlen_k = the sequence)
  int ranks;
  Sharding sharding;
  bool bhsd_shards;  // the shards in (B,H,S,D) layout instead of (B,S,H,D)
  std::string name() const {
    return c.name() + "_ranks" + std::to_string(ranks) + (sharding == Sharding::Contiguous ? "_contig" : "_balanced") +
           (bhsd_shards ? "_bhsd" : "");
  }
};

/// One rank's shard of the whole problem's data: its rows of Q, K, V (gathered), O and LSE poisoned.
struct Shard {
  ContextParallel cp;
  std::vector<unsigned char> q, k, v, o;
  std::vector<float> lse;
  std::vector<ShardChunk> chunks;
};

Shard make_shard(fctest::HostData& d, const RingCase& rc, int rank) {
  const flashcore::Problem& full = d.problem;
  const ShardMap map = ShardMap::of(full.seqlen_q, rc.ranks, rc.sharding);
  Shard s;
  s.chunks = map.chunks_of(rank);
  const int L = map.local_length(rank);
  flashcore::Problem p = flashcore::Problem::make(full.batch, full.heads_q, full.heads_kv, L, L, full.head_dim,
                                                  full.dtype, full.causal);
  if (rc.bhsd_shards) p.set_contiguous_bhsd();
  p.scale = full.scale;
  p.softcap = full.softcap;
  s.cp.local = p;
  s.cp.seqlen = full.seqlen_q;
  s.cp.sharding = rc.sharding;
  const int es = flashcore::dtype_size(full.dtype);
  auto gather = [&](std::vector<unsigned char>& src, const flashcore::Strides& fs, const flashcore::Strides& ls,
                    int heads, std::vector<unsigned char>& dst) {
    dst.assign(static_cast<std::size_t>(flashcore::span_elements(ls, full.batch, L, heads, full.head_dim)) * es, 0);
    fctest::move_rows(true, s.chunks, full.batch, heads, full.head_dim, es, src.data(), fs, dst.data(), ls);
  };
  gather(d.q, full.q, p.q, full.heads_q, s.q);
  gather(d.k, full.k, p.k, full.heads_kv, s.k);
  gather(d.v, full.v, p.v, full.heads_kv, s.v);
  s.o.assign(static_cast<std::size_t>(flashcore::span_elements(p.o, full.batch, L, full.heads_q, full.head_dim)) * es, 0);
  for (std::size_t i = 0; i < s.o.size() / es; ++i) flashcore::verify::store_element(full.dtype, s.o.data(), i, NAN);
  s.lse.assign(static_cast<std::size_t>(full.batch) * full.heads_q * L, NAN);
  return s;
}

flashcore::Tensors tensors_of(Shard& s) {
  flashcore::Tensors t;
  t.q = s.q.data(), t.k = s.k.data(), t.v = s.v.data(), t.o = s.o.data(), t.lse = s.lse.data();
  return t;
}

/// Runs every rank of a local ring on its own thread; the first exception of any rank is rethrown.
std::vector<flashcore::Report> run_ring(std::vector<Shard>& shards, const std::string& backend) {
  const int n = static_cast<int>(shards.size());
  auto comms = flashcore::local_ring(n);
  std::vector<flashcore::Report> reports(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        flashcore::Options opts;
        opts.backend = backend;
        reports[r] = flashcore::ring_attention(shards[r].cp, tensors_of(shards[r]), *comms[r], opts);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return reports;
}

double max_abs(const fctest::HostData& d, const std::vector<unsigned char>& buf, const flashcore::Strides& s, int heads,
               int seq) {
  double m = 0;
  for (int b = 0; b < d.problem.batch; ++b)
    for (int i = 0; i < seq; ++i)
      for (int h = 0; h < heads; ++h)
        for (int x = 0; x < d.problem.head_dim; ++x) m = std::max(m, std::fabs(fctest::element(d.problem, buf, s, b, i, h, x)));
  return m;
}

// GoogleTest prints the parameter with this (instead of a byte dump).
void PrintTo(const RingCase& rc, std::ostream* os) { *os << rc.name(); }

class Ring : public ::testing::TestWithParam<RingCase> {};

TEST_P(Ring, MatchesOracleOfTheWholeSequence) {
  const RingCase& rc = GetParam();
  SCOPED_TRACE(rc.name());
  fctest::HostData d = fctest::make_data(rc.c, fctest::run_seed() ^ 0x7269ull);
  std::vector<Shard> shards;
  for (int r = 0; r < rc.ranks; ++r) shards.push_back(make_shard(d, rc, r));
  const std::vector<flashcore::Report> reports = run_ring(shards, "reference-host");
  for (const auto& rep : reports) {
    EXPECT_EQ(rep.chosen, "reference-host");
    EXPECT_NE(rep.plan.find("ring of " + std::to_string(rc.ranks)), std::string::npos) << rep.plan;
  }

  // Scatter the shards' O and LSE into the whole problem's (poisoned) outputs.
  d.poison_outputs();
  const flashcore::Problem& full = d.problem;
  const int es = flashcore::dtype_size(full.dtype);
  for (int r = 0; r < rc.ranks; ++r) {
    Shard& s = shards[r];
    fctest::move_rows(false, s.chunks, full.batch, full.heads_q, full.head_dim, es, d.o.data(), full.o, s.o.data(),
                      s.cp.local.o);
    fctest::scatter_lse(s.chunks, full.batch, full.heads_q, full.seqlen_q, s.cp.local.seqlen_q, s.lse.data(), d.lse.data());
  }
  const auto ref = fctest::oracle(d);
  const auto bound = flashcore::tolerance::ring_bound(full.dtype, flashcore::tolerance::reference_bound(full.dtype),
                                                      max_abs(d, d.v, full.v, full.heads_kv, full.seqlen_k));
  const fctest::Errors e = fctest::compare_o(d, ref, bound.atol, bound.rtol);
  EXPECT_EQ(e.bad, 0) << "max abs " << e.max_abs << ", worst/bound " << e.worst_ratio << "; first: " << e.first_bad;
  EXPECT_EQ(e.lse_bad, 0) << e.first_bad;
}

std::vector<RingCase> ring_cases() {
  std::vector<RingCase> out;
  const DType dts[] = {DType::F32, DType::F16, DType::BF16};
  int n = 0;
  for (int ranks : {1, 2, 3, 4})
    for (Sharding sh : {Sharding::LoadBalanced, Sharding::Contiguous})
      for (bool causal : {true, false}) {
        const int len = 8 * ranks + 5 + 3 * n;  // never a multiple of the chunk count
        Case c = fctest::make_case(n % 2 + 1, 4, n % 3 == 0 ? 1 : 2, len, len, n % 2 ? 40 : 64, dts[n % 3], causal);
        out.push_back({c, ranks, sh, n % 4 == 3});
        ++n;
      }
  // The shortest sequences a ring takes: one row a chunk.
  out.push_back({fctest::make_case(1, 2, 1, 8, 8, 32, DType::F32, true), 4, Sharding::LoadBalanced, false});
  out.push_back({fctest::make_case(1, 2, 2, 3, 3, 16, DType::F16, true), 3, Sharding::Contiguous, false});
  // Soft-capping and a given scale travel with the problem.
  Case capped = fctest::make_case(2, 2, 1, 29, 29, 48, DType::BF16, true);
  capped.softcap = 5.0;
  out.push_back({capped, 2, Sharding::LoadBalanced, false});
  return out;
}

INSTANTIATE_TEST_SUITE_P(LocalRing, Ring, ::testing::ValuesIn(ring_cases()),
                         [](const ::testing::TestParamInfo<RingCase>& i) { return i.param.name(); });

// ------------------------------------------------------------- checks before any work -----------

/// ring_attention on every rank of a local ring; each must throw Error naming `field`, and the
/// shards' O must still be poisoned (nothing written).
void expect_declined(std::vector<Shard>& shards, const std::string& field, const flashcore::Tensors* extra = nullptr) {
  const int n = static_cast<int>(shards.size());
  auto comms = flashcore::local_ring(n);
  std::vector<std::string> fields(n, "(no error)");
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      flashcore::Tensors t = tensors_of(shards[r]);
      if (extra != nullptr) t.sinks = extra->sinks, t.alibi_slopes = extra->alibi_slopes, t.seqlens_k = extra->seqlens_k;
      try {
        flashcore::ring_attention(shards[r].cp, t, *comms[r]);
      } catch (const flashcore::Error& e) {
        fields[r] = e.field();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(fields[r], field) << "rank " << r;
    const DType dt = shards[r].cp.local.dtype;
    for (std::size_t i = 0; i < shards[r].o.size() / flashcore::dtype_size(dt); ++i)
      ASSERT_TRUE(std::isnan(flashcore::verify::load_element(dt, shards[r].o.data(), i))) << "O written at " << i;
  }
}

TEST(RingChecks, DeclinesBeforeAnyWorkNamingTheField) {
  const RingCase rc{fctest::make_case(1, 2, 1, 21, 21, 32, DType::F16, true), 2, Sharding::LoadBalanced, false};
  fctest::HostData d = fctest::make_data(rc.c, fctest::run_seed());
  auto shards_of = [&] {
    std::vector<Shard> s;
    for (int r = 0; r < rc.ranks; ++r) s.push_back(make_shard(d, rc, r));
    return s;
  };
  {
    auto s = shards_of();
    for (auto& x : s) x.cp.local.seqlen_q += 1, x.cp.local.seqlen_k += 1;
    expect_declined(s, "seqlen_q");
  }
  {
    auto s = shards_of();
    for (auto& x : s) x.cp.local.seqlen_k -= 1;
    expect_declined(s, "seqlen_k");
  }
  {
    auto s = shards_of();
    for (auto& x : s) x.cp.local.window_left = 4, x.cp.local.window_right = 0;
    expect_declined(s, "window_left");
  }
  {
    auto s = shards_of();
    for (auto& x : s) x.cp.local.head_dim = 0;
    expect_declined(s, "head_dim");
  }
  {
    auto s = shards_of();
    std::vector<float> sinks(rc.c.heads_q, 0.5f);
    flashcore::Tensors extra;
    extra.sinks = sinks.data();
    expect_declined(s, "sinks", &extra);
    std::vector<float> slopes(rc.c.heads_q, 0.1f);
    flashcore::Tensors extra2;
    extra2.alibi_slopes = slopes.data();
    expect_declined(s, "alibi_slopes", &extra2);
  }
  {
    auto s = shards_of();
    for (auto& x : s) x.cp.seqlen = 3, x.cp.local.seqlen_q = x.cp.local.seqlen_k = 1;  // 4 chunks, 3 rows
    expect_declined(s, "seqlen");
  }
  {
    auto s = shards_of();
    for (auto& x : s) x.o.clear(), x.o.shrink_to_fit();
    // o null: named before the ring starts (O cannot be checked for poison: there is none).
    auto comms = flashcore::local_ring(2);
    std::vector<std::string> fields(2);
    std::vector<std::thread> th;
    for (int r = 0; r < 2; ++r)
      th.emplace_back([&, r] {
        flashcore::Tensors t = tensors_of(s[r]);
        t.o = nullptr;
        try {
          flashcore::ring_attention(s[r].cp, t, *comms[r]);
        } catch (const flashcore::Error& e) {
          fields[r] = e.field();
        }
      });
    for (auto& t : th) t.join();
    EXPECT_EQ(fields[0], "o");
    EXPECT_EQ(fields[1], "o");
  }
}

TEST(RingChecks, NcclCommunicatorOfANullCommIsAnError) {
  try {
    flashcore::nccl_communicator(nullptr);
    FAIL() << "accepted";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "communicator");
    if (!flashcore::has_nccl()) EXPECT_NE(std::string(e.what()).find("without NCCL"), std::string::npos) << e.what();
  }
}

}  // namespace
