// Sequences of different lengths (flashcore.hpp, "Sequences": varlen Q, varlen K/V, KV-cache
// lengths, paged K/V) on the host reference against the fp64 oracle, identities between layouts
// that hold whatever the oracle says (paged = contiguous cache, packed = one call per sequence),
// and the validation of every new field and array.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>

#include "support/cases.hpp"
#include "support/oracle_check.hpp"
#include "support/testing.hpp"
#include "verify/elements.hpp"

using fctest::Case;
using fctest::Layout;
using flashcore::DType;
using KvStore = fctest::Case::KvStore;
using fctest::sequence_case;

namespace {

void run_host(fctest::HostData& d) {
  flashcore::Options opts;
  opts.backend = "reference-host";
  d.poison_outputs();
  flashcore::run(d.problem, d.tensors(), opts);
}

void check_case(const Case& c, std::uint64_t salt) { fctest::expect_matches_oracle("reference-host", c, salt); }

class Sequences : public ::testing::TestWithParam<Case> {};
TEST_P(Sequences, ReferenceMatchesOracle) { check_case(GetParam(), 11); }
INSTANTIATE_TEST_SUITE_P(Reference, Sequences, ::testing::ValuesIn(fctest::sequence_set()),
                         [](const auto& info) { return info.param.name(); });

// The raw bytes of a case's O as rows (b, i, h) in logical order, for bitwise comparisons across layouts.
std::vector<double> logical_o(const fctest::HostData& d) {
  std::vector<double> out;
  const flashcore::Problem& p = d.problem;
  for (int b = 0; b < p.batch; ++b)
    for (int i = 0; i < d.len_q(b); ++i)
      for (int h = 0; h < p.heads_q; ++h)
        for (int x = 0; x < p.head_dim; ++x)
          out.push_back(flashcore::verify::load_element(p.dtype, d.o.data(), d.o_offset(b, i, h) + x));
  return out;
}
std::vector<float> logical_lse(const fctest::HostData& d) {
  std::vector<float> out;
  for (int b = 0; b < d.problem.batch; ++b)
    for (int h = 0; h < d.problem.heads_q; ++h)
      for (int i = 0; i < d.len_q(b); ++i) out.push_back(d.lse[d.lse_at(b, h, i)]);
  return out;
}

}  // namespace

TEST(Sequences, RandomProperty) {
  std::mt19937_64 rng(fctest::run_seed() + 31);
  for (int n = 0; n < 40; ++n) check_case(fctest::random_sequences(rng, 150), 300 + n);
}

TEST(Sequences, PagedEqualsContiguousCache) {
  // The same logical values (make_data fills in logical order) stored contiguously and in shuffled
  // pages of 16, 32, 64: the reference computes the same thing in the same order, bitwise.
  for (bool varlen_q : {false, true}) {
    const std::vector<int> lq = varlen_q ? std::vector<int>{3, 1, 0, 5} : std::vector<int>{};
    const std::vector<int> lk = {70, 1, 16, 33};
    const Case flat = sequence_case(4, 2, 32, DType::F16, true, lq, lk, KvStore::Batched, 0, 2, 30);
    fctest::HostData a = fctest::make_data(flat, fctest::run_seed() + 32);
    run_host(a);
    for (int page : {16, 32, 64}) {
      Case paged = flat;
      paged.kv = KvStore::Paged;
      paged.page_size = page;
      SCOPED_TRACE(paged.name());
      fctest::HostData b = fctest::make_data(paged, fctest::run_seed() + 32);
      run_host(b);
      EXPECT_EQ(logical_o(a), logical_o(b));
      EXPECT_EQ(logical_lse(a), logical_lse(b));
    }
  }
}

TEST(Sequences, PackedEqualsOneCallPerSequence) {
  // A packed batch against each sequence run alone as a fixed-length problem on the same memory.
  const Case c = sequence_case(4, 2, 64, DType::BF16, true, {7, 1, 12, 4}, {20, 9, 12, 1}, KvStore::Packed);
  fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 33);
  run_host(d);
  fctest::HostData alone = d;  // same buffers; O and LSE written per sequence below
  alone.poison_outputs();
  const flashcore::Problem& p = d.problem;
  const int es = flashcore::dtype_size(p.dtype);
  for (int b = 0; b < p.batch; ++b) {
    flashcore::Problem one = p;
    one.batch = 1, one.total_q = 0, one.total_k = 0;
    one.seqlen_q = d.cu_seqlens_q[b + 1] - d.cu_seqlens_q[b];
    one.seqlen_k = d.cu_seqlens_k[b + 1] - d.cu_seqlens_k[b];
    const std::int64_t q0 = d.cu_seqlens_q[b] * p.q.seq, k0 = d.cu_seqlens_k[b] * p.k.seq;
    std::vector<float> lse(static_cast<std::size_t>(p.heads_q) * one.seqlen_q);
    flashcore::Tensors t{alone.q.data() + q0 * es, alone.k.data() + k0 * es, alone.v.data() + k0 * es,
                         alone.o.data() + q0 * es, lse.data()};
    flashcore::Options opts;
    opts.backend = "reference-host";
    flashcore::run(one, t, opts);
    for (int h = 0; h < p.heads_q; ++h)
      for (int i = 0; i < one.seqlen_q; ++i) alone.lse[alone.lse_at(b, h, i)] = lse[h * one.seqlen_q + i];
  }
  EXPECT_EQ(logical_o(d), logical_o(alone));
  EXPECT_EQ(logical_lse(d), logical_lse(alone));
}

TEST(Sequences, OracleAgreesAcrossStorage) {
  // The oracle's own addressing: the same logical data packed, cached and paged gives one answer.
  const std::vector<int> lk = {30, 2, 17};
  std::vector<flashcore::verify::Result> results;
  for (KvStore kv : {KvStore::Batched, KvStore::Packed, KvStore::Paged}) {
    const Case c = sequence_case(2, 1, 16, DType::F32, true, {4, 2, 3}, lk, kv, 16);
    const fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 34);
    results.push_back(fctest::oracle(d));
  }
  for (std::size_t n = 1; n < results.size(); ++n) {
    EXPECT_EQ(flashcore::verify::max_abs_difference(results[n].o, results[0].o), 0.0);
    EXPECT_EQ(flashcore::verify::max_abs_difference(results[n].lse, results[0].lse), 0.0);
  }
}

// ---------------------------------------------------------------------------------------------
// Validation: each field and array, named, before any work, outputs untouched.
// ---------------------------------------------------------------------------------------------

namespace {

struct BadSeq {
  const char* what;
  Case base;
  std::function<void(fctest::HostData&)> mutate;
  const char* field;
  const char* message;
};

std::vector<BadSeq> bad_sequences() {
  const Case packed = sequence_case(2, 1, 16, DType::F16, false, {3, 0, 4}, {5, 2, 6}, KvStore::Packed);
  const Case cache = sequence_case(2, 1, 16, DType::F16, false, {}, {5, 2, 6}, KvStore::Batched, 0, 1, 4);
  const Case paged = sequence_case(2, 1, 16, DType::F16, false, {}, {20, 2, 33}, KvStore::Paged, 16);
  using D = fctest::HostData;
  return {
      {"cu_q_decreasing", packed, [](D& d) { d.cu_seqlens_q[2] = 2; }, "cu_seqlens_q", "cu_seqlens_q[2] = 2 is less than cu_seqlens_q[1] = 3"},
      {"cu_q_not_zero", packed, [](D& d) { d.cu_seqlens_q[0] = 1; }, "cu_seqlens_q", "cu_seqlens_q[0] = 1 must be 0"},
      // (Q and O made one row longer: with total_q 8 their byte ranges would otherwise reach past the
      // buffers, and where the heap put O right after Q the overlap check fired first.)
      {"cu_q_total", packed, [](D& d) { d.problem.total_q = 8, d.q.resize(d.q.size() * 2), d.o.resize(d.o.size() * 2); },
       "cu_seqlens_q", "cu_seqlens_q[3] = 7 must equal total_q 8"},
      {"cu_q_over_bound", packed, [](D& d) { d.problem.seqlen_q = 3; }, "cu_seqlens_q", "sequence 2 has 4 rows"},
      {"cu_k_decreasing", packed, [](D& d) { d.cu_seqlens_k[1] = 8; }, "cu_seqlens_k", "cu_seqlens_k[2] = 7 is less than cu_seqlens_k[1] = 8"},
      {"cu_k_over_bound", packed, [](D& d) { d.problem.seqlen_k = 5; }, "cu_seqlens_k", "sequence 2 has 6 rows"},
      {"cu_q_null", packed, [](D& d) { d.cu_seqlens_q.clear(); }, "cu_seqlens_q", "pointer is null, but total_q"},
      {"cu_k_without_total", cache, [](D& d) { d.cu_seqlens_k = {0, 5, 7, 13}; }, "cu_seqlens_k", "given, but total_k is 0"},
      {"seqlens_k_past_cache", cache, [](D& d) { d.seqlens_k[1] = 11; }, "seqlens_k", "seqlens_k[1] = 11 is not in [0, 10]"},
      {"seqlens_k_negative", cache, [](D& d) { d.seqlens_k[0] = -1; }, "seqlens_k", "seqlens_k[0] = -1"},
      {"seqlens_k_past_packed", packed, [](D& d) { d.seqlens_k = {5, 3, 1}; }, "seqlens_k", "seqlens_k[1] = 3 is not in [0, 2]"},
      {"block_table_out_of_range", paged, [](D& d) { d.block_table[d.problem.pages_per_seq * 2 + 2] = d.problem.num_pages; },
       "block_table", "(sequence 2, page 2 of its 3 in use) is not a page index in [0, num_pages"},
      {"block_table_negative", paged, [](D& d) { d.block_table[0] = -1; }, "block_table", "block_table[0] = -1"},
      {"block_table_null", paged, [](D& d) { d.block_table.clear(); }, "block_table", "pointer is null, but page_size"},
      {"page_size_not_16", paged, [](D& d) { d.problem.page_size = 24; }, "page_size", "page_size 24 must be 0 (not paged) or a multiple of 16"},
      {"page_size_negative", paged, [](D& d) { d.problem.page_size = -16; }, "page_size", "page_size -16"},
      {"num_pages_zero", paged, [](D& d) { d.problem.num_pages = 0; }, "num_pages", "num_pages 0 must be in [1, 2^30]"},
      {"num_pages_not_paged", cache, [](D& d) { d.problem.num_pages = 4; }, "num_pages", "num_pages 4 is set but page_size is 0"},
      {"pages_per_seq_short", paged, [](D& d) { d.problem.pages_per_seq = 2; }, "seqlen_k", "seqlen_k 33 exceeds what a block-table row holds"},
      {"paged_and_packed", paged, [](D& d) { d.problem.total_k = 5; }, "total_k", "paged sequences take their lengths from seqlens_k"},
      {"total_q_negative", packed, [](D& d) { d.problem.total_q = -1; }, "total_q", "total_q -1"},
      {"q_stride_packed_overlap", packed, [](D& d) { d.problem.q.seq = 8; }, "q.seq", "stride 8"},
  };
}

}  // namespace

TEST(SequenceValidation, EveryFieldNamedAndOutputsUntouched) {
  for (const BadSeq& bad : bad_sequences()) {
    SCOPED_TRACE(bad.what);
    fctest::HostData d = fctest::make_data(bad.base, fctest::run_seed() + 35);
    bad.mutate(d);
    const std::vector<unsigned char> o_before = d.o;
    flashcore::Options opts;
    opts.backend = "reference-host";
    try {
      flashcore::run(d.problem, d.tensors(), opts);
      ADD_FAILURE() << "no error";
    } catch (const flashcore::Error& e) {
      EXPECT_EQ(e.field(), bad.field) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad.message), std::string::npos) << e.what();
    }
    EXPECT_EQ(d.o, o_before) << "outputs written";
  }
}

TEST(SequenceValidation, OutputsMayNotOverlapTheSequenceArrays) {
  const Case c = sequence_case(2, 1, 16, DType::F32, false, {}, {5, 2, 6}, KvStore::Batched, 0, 1, 4);
  fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 36);
  flashcore::Tensors t = d.tensors();
  t.seqlens_k = reinterpret_cast<const int*>(t.lse) + 1;  // lse is written: it may not hold the lengths
  try {
    flashcore::run(d.problem, t, flashcore::Options{"reference-host"});
    ADD_FAILURE() << "no error";
  } catch (const flashcore::Error& e) {
    EXPECT_EQ(e.field(), "lse") << e.what();
    EXPECT_NE(std::string(e.what()).find("overlaps seqlens_k"), std::string::npos) << e.what();
  }
}

TEST(SequenceValidation, BlockTableEntriesPastTheUsedPagesAreNotRead) {
  // make_data leaves -1 in the entries past each sequence's pages: valid, and never read.
  const Case c = sequence_case(2, 1, 16, DType::F32, false, {}, {1, 40, 0}, KvStore::Paged, 16, 1, 60);
  fctest::HostData d = fctest::make_data(c, fctest::run_seed() + 37);
  ASSERT_EQ(d.block_table[1], -1);  // sequence 0 uses one page of its 7
  run_host(d);
  const fctest::Errors e = fctest::compare(d, fctest::oracle(d));
  EXPECT_EQ(e.bad + e.lse_bad, 0) << e.first_bad;
}
