// Test support: random problems and their host data, the fp64 oracle on them, error measurement.
// The oracle, the bounds, element access, random fill and poisoning are the verification
// library's (src/verify: plain loops in double precision, no Kokkos, no code shared with the
// library's kernels, so it checks the Kokkos reference independently); this adapts them to Case
// and HostData.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "flashcore/flashcore.hpp"
#include "verify/oracle.hpp"

namespace fctest {

using flashcore::DType;
using flashcore::Problem;

enum class Layout { BSHD, BHSD, Padded };  // Padded: BSHD with gaps between rows and heads

struct Case {
  int batch = 1, heads_q = 1, heads_kv = 1, seqlen_q = 1, seqlen_k = 1, head_dim = 64;
  DType dtype = DType::F16;
  bool causal = false;
  Layout layout = Layout::BSHD;
  bool lse = true;
  double q_gain = 1.0;  // multiplies Q: large values make the softmax peaked (stability test)
  // fp8 (dtype E4M3) inputs: Problem::descale_q/k/v and out_dtype. make_data stores x / descale
  // rounded to e4m3 for each drawn x, so the dequantized inputs follow the usual distributions
  // whatever the descales (which only move the stored values over e4m3's binades).
  double descale_q = 1, descale_k = 1, descale_v = 1;
  DType out_dtype = DType::BF16;
  // Variants (flashcore.hpp): window sides (-1 = unbounded), soft-capping (0 = none), ALiBi and
  // sinks with random per-head slopes in [0.02, 0.6] and sink logits in [-2, 3] (make_data).
  int window_left = -1, window_right = -1;
  double softcap = 0;
  bool alibi = false, sinks = false;
  bool has_variant() const { return window_left >= 0 || window_right >= 0 || softcap > 0 || alibi || sinks; }
  // Sequences (flashcore.hpp, "Sequences"). lens_q non-empty: varlen Q/O, packed, one length per
  // batch entry (batch is lens_q.size(); seqlen_q the bound, >= each). lens_k non-empty: keys per
  // sequence (seqlen_k the bound), stored as `kv` says. K/V rows past a sequence's keys and pages
  // no sequence uses hold NaN: a backend that reads them fails. Unused block-table entries are -1.
  enum class KvStore { Batched, Packed, Paged };
  std::vector<int> lens_q, lens_k;
  KvStore kv = KvStore::Batched;  // Batched + lens_k: a (batch, seqlen_k) cache with seqlens_k
  int page_size = 0;              // Paged: rows per page (seqlens_k = lens_k, or seqlen_k each)
  bool has_sequences() const { return !lens_q.empty() || !lens_k.empty() || kv != KvStore::Batched; }
  std::string name() const;
};
/// A case from its shape (the tests' shorthand).
Case make_case(int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k, int head_dim, DType dtype, bool causal,
               Layout layout = Layout::BSHD);
/// A case of sequences (flashcore.hpp, "Sequences"): lens_q empty = every sequence has fixed_q
/// queries, lens_k empty = every sequence has the bound's keys; the bounds seqlen_q / seqlen_k are
/// the longest sequence plus `slack` (a cache larger than its longest sequence).
Case sequence_case(int heads_q, int heads_kv, int head_dim, DType dtype, bool causal, std::vector<int> lens_q,
                   std::vector<int> lens_k, Case::KvStore kv, int page_size = 0, int fixed_q = 1, int slack = 0,
                   Layout layout = Layout::BSHD);
/// The case with random variants (property tests): each of a window (random sides, one of them
/// possibly unbounded), soft-capping, ALiBi and sinks on with probability 1/2.
Case with_random_variants(Case c, std::mt19937_64& rng);
/// A random case for property tests: batch 1-3, heads_kv 1-3 with groups 1-4, lengths
/// 1..max_len each, a head dim from `dims`, a dtype in [min_dtype, bf16], random causal flag,
/// layout, and a peaked softmax (Q x 4) one time in four. (fp8 cases: fp8_case.)
Case random_case(std::mt19937_64& rng, int max_len, const std::vector<int>& dims, DType min_dtype = DType::F32);
/// The case with fp8 (e4m3) inputs: dtype E4M3, these descales and O of out_dtype.
Case fp8_case(Case c, DType out_dtype, double descale_q = 1, double descale_k = 1, double descale_v = 1);
/// GoogleTest prints parameters with this (instead of a byte dump).
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name(); }

/// Sets OMP_PROC_BIND=spread and OMP_PLACES=threads unless set: Kokkos' recommended binding,
/// without which its OpenMP backend prints a warning on stdout.
void set_openmp_binding_defaults();

/// The seed of this test run: FLASHCORE_TEST_SEED if set, else fresh from random_device.
/// Printed once so a failure can be replayed.
std::uint64_t run_seed();

/// Host tensors of one case: inputs filled with random values (never zeros, verify::fill_random),
/// O and LSE poisoned with NaN so that unwritten elements fail.
struct HostData {
  Problem problem;
  std::vector<unsigned char> q, k, v, o;
  std::vector<float> lse;  // empty when the case has no LSE
  std::vector<float> alibi_slopes, sinks;  // heads_q values each, empty when the variant is off
  std::vector<int> cu_seqlens_q, cu_seqlens_k, seqlens_k, block_table;  // empty when the layout has none
  void poison_outputs();
  flashcore::Tensors tensors();
  flashcore::verify::HeadParams head_params() const;
  flashcore::verify::Sequences sequences() const;
  int len_q(int b) const { return sequences().len_q(problem, b); }
  /// Element offset of row (b, i, h) of O (or Q), and the index of its LSE, in the case's layout.
  long long o_offset(int b, int i, int h) const { return sequences().q_offset(problem, problem.o, b, i, h); }
  std::size_t lse_at(int b, int h, int i) const;
};

Problem make_problem(const Case& c);
HostData make_data(const Case& c, std::uint64_t seed);

/// Element (b,s,h,d) of a tensor as double.
double element(const Problem& p, const std::vector<unsigned char>& buf, const flashcore::Strides& s, int b, int i,
               int h, int d);

/// The fp64 oracle of src/verify on a case's data: O as contiguous (b, i, h, d) doubles and LSE
/// (b, h, i). naive_same_precision: softmax probabilities rounded to the case's dtype before P·V
/// and the output rounded too, the "naive same-precision computation" that tuned kernels are
/// compared with. row_stride > 1 computes only query rows i with i % row_stride == 0 and the
/// last row (for problems too large for the full oracle); the other rows are NaN and comparisons
/// skip them.
using OracleOut = flashcore::verify::Result;
OracleOut oracle(const HostData& d, int row_stride = 1);
OracleOut naive_same_precision(const HostData& d, int row_stride = 1);

/// Errors of O (and LSE) against an oracle.
struct Errors {
  double max_abs = 0;
  double rel_l2 = 0;
  double worst_ratio = 0;  // max over elements of |err| / (atol + rtol*|ref|): <= 1 passes
  long long bad = 0;       // elements beyond the bound, NaN included
  long long lse_bad = 0;
  std::string first_bad;   // description of the first failing element
};
/// kernel_lse: LSE checked with the tuned-kernel bound instead of the reference bound.
Errors compare_o(const HostData& d, const OracleOut& ref, double atol, double rtol, bool kernel_lse = false);
// Reference bound of the dtype + LSE; extra_atol: added to the bound's atol (tolerance::reference_logit_atol where
// inputs make very large scores).
Errors compare(const HostData& d, const OracleOut& ref, double extra_atol = 0);

/// Max abs error of a naive same-precision computation against the fp64 oracle.
double naive_error(const HostData& d, const OracleOut& ref, int row_stride = 1);

}  // namespace fctest
