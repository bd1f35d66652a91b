// Support code of flashcore_bench: cases, command-line configuration, input data, output checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flashcore/flashcore.hpp"

namespace fcbench {

struct Shape {
  int b = 1, h = 1, l = 1, d = 64;  // batch, heads_q, seqlen_k (and seqlen_q when lq = 0), head_dim
  int hkv = 0;                      // heads_kv; 0: = h
  int lq = 0;                       // seqlen_q; 0: = l
  int heads_kv() const { return hkv > 0 ? hkv : h; }
  int seqlen_q() const { return lq > 0 ? lq : l; }
  /// Whether the shape was given as (B, Hq, Hkv, Lq, Lk, D) (--decode, --mixed): its name says so.
  bool six() const { return hkv > 0 || lq > 0; }
};

/// An attention variant of the benchmarked problems (--variants): sliding window, soft-capping,
/// ALiBi (the slopes 2^(-8(h+1)/H)), attention sinks (one logit for every head).
struct Variant {
  int window_left = -1, window_right = -1;
  double softcap = 0;
  bool alibi = false;
  bool sinks = false;
  double sink = 0;
  /// "" for none, else e.g. "win255_0+cap30+alibi+sinks1".
  std::string name() const;
  bool none() const { return name().empty(); }
};

/// How the sequences of a case are stored (--decode, --paged, --mixed, --varlen; flashcore.hpp,
/// "Sequences"). The default is the suite's usual case, whose name has no layout part.
struct Layout {
  bool tagged = false;          // the benchmark name carries the layout (every case of the flags above)
  int page_size = 0;            // > 0: K and V in a pool of pages of this many rows, shuffled block table
  std::vector<int> cache_lens;  // mixed: the cache length Lk_b of each sequence (Tensors::seqlens_k)
  std::vector<int> varlen;      // varlen: the length Lq_b = Lk_b of each sequence; Q, K, V, O packed
  /// "" (untagged), "contiguous", "paged:16", "mixed:T<sum>", "mixed:T<sum>+paged:16", "varlen:T<sum>".
  std::string name() const;
  /// Whether the case has per-sequence lengths or pages (checked sequence by sequence).
  bool sequences() const { return page_size > 0 || !cache_lens.empty() || !varlen.empty(); }
};

struct Case {
  Shape shape;
  flashcore::DType dtype = flashcore::DType::F16;
  bool causal = false;
  Variant variant;
  Layout layout;
};

/// One variant from its text: none, window:L,R, softcap:X, alibi, sinks:X, joined by '+'
/// (e.g. "window:255,0+softcap:30"). False, with the part it could not read in *bad_part, if malformed.
bool parse_variant(const std::string& text, Variant* out, std::string* bad_part);
/// Sequence lengths from their text "l1,l2,..." ("LxN" = N sequences of L), as --varlen and --mixed
/// read them. False if malformed.
bool parse_sequence_lengths(const std::string& text, std::vector<int>* out);

/// The per-head parameters of a case's variant (host arrays, empty when off).
struct HeadParams {
  std::vector<float> alibi_slopes, sinks;
};
HeadParams head_params(const Case& c);

/// "B1_H8_L512_D64"; a six-number shape "B8_Hq32_Hkv8_Lq1_Lk8192_D128".
std::string shape_name(const Shape& s);
/// "attn/<backend>/<dtype>/<causal|full>/B1_H8_L512_D64", plus "/<layout>" and "/<variant>" when
/// there are.
std::string bench_name(const std::string& backend, const Case& c);
/// Contiguous (B,S,H,D) problem of the shape (heads_kv, seqlen_q as the shape says), with the
/// variant's fields; no sequence layout (geometry() adds it).
flashcore::Problem make_problem(const Case& c);
/// Bytes moved by an ideal kernel: Q, K, V read once and O written once.
double problem_bytes(const flashcore::Problem& p);

/// Everything about a case but its data: the problem as the backends get it (strides and
/// sequence fields set), the storage sizes, the sequence arrays (host copies) and the work.
struct Geometry {
  flashcore::Problem problem;
  std::int64_t q_elems = 0;   // storage of Q and of O: (B, Lq, Hq, D), or (total, Hq, D) packed
  std::int64_t kv_elems = 0;  // storage of K and of V: (B, Lk, Hkv, D), packed rows, or the page pool
  std::vector<int> len_q, len_k;                        // Lq_b, Lk_b of every sequence
  std::vector<int> cu_q, cu_k, seqlens_k, block_table;  // the Tensors' int32 arrays; empty = off
  /// Bytes an ideal kernel moves: Q read and O written, K and V read for the valid keys only
  /// (block table and lengths not counted). Plain cases: problem_bytes().
  double bytes = 0;
  /// FLOPs: 4*Hq*D*(visible (query, key) pairs) summed over the sequences; a square causal sequence
  /// counts L*L/2 (Problem::flops' convention), a causal Lq < Lk one its exact bottom-right pairs.
  /// Plain cases: Problem::flops().
  double flops = 0;
  /// The four arrays one after the other (one upload); set_arrays() points a Tensors into a copy.
  std::vector<int> arrays() const;
  void set_arrays(flashcore::Tensors* t, const int* copy_of_arrays) const;
};
Geometry geometry(const Case& c);

/// Run-time configuration (own flags, parsed before benchmark::Initialize).
struct Config {
  std::vector<std::string> backends_only;     // empty: all
  std::vector<std::string> backends_skip;     // "-name" entries of --backends
  std::vector<Shape> shapes;                  // empty: the built-in lists
  std::vector<flashcore::DType> dtypes;       // empty: the built-in lists
  int causal = -1;                            // -1 both, 0 full, 1 causal
  std::vector<Variant> variants;              // empty: none (the plain problem)
  std::vector<Shape> decode;                  // --decode: (B,Hq,Hkv,Lq,Lk,D), contiguous K/V
  std::vector<int> paged;                     // --paged: page sizes (copies of the decode and mixed cases)
  std::vector<Case> mixed;                    // --mixed: shape and cache lengths (layout.cache_lens)
  std::vector<Case> varlen;                   // --varlen: shape and sequence lengths (layout.varlen)
  bool device = true, host = true;
  bool quick = false;
  bool check = true;
  std::string timing = "auto";                // auto (graph, else launches), graph, launches
  double replay_ms = 1.0;                     // a graph replay runs at least this long
  double rep_ms = -1;                         // GPU time per repetition (-1: 10, quick 5)
  int reps = -1;                              // repetitions (-1: device 10/5, host 5/3 for quick)
  double host_min_time = -1;                  // seconds per host repetition (-1: 0.2, quick 0.05)
  double max_seconds = 0;                     // > 0: benchmarks starting later are skipped
  std::string args;                           // the own flags, for the JSON context
};

/// Starts the --max-seconds clock (call once, early in main).
void start_clock();
/// Non-empty (the skip message) when --max-seconds has passed since start_clock().
std::string out_of_time(const Config& cfg);

/// Removes the flags it knows from argv (so Google Benchmark sees only its own) and fills cfg.
/// Returns false (after printing why) on a malformed flag; --help prints usage and exits.
bool parse_flags(int* argc, char** argv, Config* cfg);
void print_usage(const char* argv0);

bool backend_selected(const Config& cfg, const std::string& name);

/// Whether the flags asked for sequence cases (--decode, --mixed, --varlen): they then replace the
/// built-in lists unless --shapes is given too.
bool has_sequence_cases(const Config& cfg);
/// The sequence cases of the flags (causal, dtype, variant left to the caller): each --decode shape
/// contiguous then paged per --paged size; each --mixed batch likewise; each --varlen batch packed,
/// then the fixed-length problem of the same total tokens, B = sequences, L = total / B (contiguous).
std::vector<Case> sequence_cases(const Config& cfg);

/// The built-in lists.
std::vector<Shape> gpu_shapes();
std::vector<Shape> host_shapes();
/// dtypes of the host list per shape (a subset keeps the CPU run short).
std::vector<flashcore::DType> host_dtypes(const Shape& s);

/// Inputs of one (shape, dtype) in storage format: Q, K normal(0,1), V uniform(-1,1), rounded
/// to the dtype. Deterministic for a seed; generated on all host threads.
struct HostInputs {
  Shape shape;
  flashcore::DType dtype = flashcore::DType::F16;
  std::vector<unsigned char> q, k, v;  // (B,S,H,D) contiguous, same sizes
};
void fill_inputs(HostInputs* in, const Shape& s, flashcore::DType dt, std::uint64_t seed);
std::uint64_t case_seed(const Shape& s, flashcore::DType dt);

/// The data of one case as the backends read it, and the logical inputs the check uses.
struct CaseData {
  /// The geometry of the case it was made for: its storage sizes and arrays hold for every case of
  /// the same data_key(); the problem's causal flag and variant fields do not (use geometry(c)).
  Geometry g;
  /// Q as stored (batched or packed); K and V logical: (B, Lk, Hkv, D) batched, or packed rows.
  std::shared_ptr<const HostInputs> in;
  std::vector<unsigned char> k_pages, v_pages;  // paged: the pools K and V are read from; else empty
  std::vector<int> arrays;                      // g.arrays()
  const unsigned char* k_storage() const { return k_pages.empty() ? in->k.data() : k_pages.data(); }
  const unsigned char* v_storage() const { return v_pages.empty() ? in->v.data() : v_pages.data(); }
  std::size_t q_bytes() const;   // Q storage
  std::size_t o_bytes() const;   // O storage (Q's, but fp16/bf16 with fp8 inputs)
  std::size_t kv_bytes() const;  // K storage, and V's
};
/// Builds a case's data; the logical inputs of the last (shape, dtype, lengths) are kept, so the
/// layouts of one shape (contiguous, paged:16, ...) share them.
CaseData make_case_data(const Case& c);
/// What the data of a case is: cases with equal keys (which may differ in causal and variant) share
/// the storage and sequence arrays of one CaseData.
std::string data_key(const Case& c);

/// Element of a storage buffer as float.
float load(flashcore::DType dt, const void* base, std::int64_t index);
/// Whether `backend` accepts the problem on these buffers; *why gets its reason when not.
bool backend_accepts(const std::string& backend, const flashcore::Problem& p, const flashcore::Tensors& t,
                     flashcore::MemoryLocation location, std::string* why);
/// Fills a buffer with a NaN pattern (0xFF bytes are NaN in fp32, fp16 and bf16).
constexpr unsigned char kPoisonByte = 0xFF;

/// Result of an output check.
struct CheckResult {
  bool ok = true;
  std::string message;  // why not, or a summary when ok
};
/// Counts the non-finite elements of an output buffer (count elements).
std::int64_t count_nonfinite(flashcore::DType dt, const void* o, std::int64_t count);
/// Checks O (contiguous BSHD storage, as written by the backend) of problem p: every element
/// finite, and `rows` sampled query rows (first and last row included) against an fp64
/// computation on the host from the same rounded inputs.
CheckResult check_output(const flashcore::Problem& p, const HostInputs& in, const void* o, int rows = 16,
                         const HeadParams& heads = {});
/// The check of any case: check_output() for cases without sequences; otherwise every element of
/// O finite and sampled rows (the first, the last, one in every sequence, random ones up to `rows`)
/// against the fp64 oracle reading the same storage with the case's sequence arrays
/// (verify::Sequences: the oracle's own statement of pages, packing and cache lengths).
CheckResult check_case_output(const Case& c, const CaseData& d, const void* o, int rows = 16,
                              const HeadParams& heads = {});

/// Device description for labels and the JSON context.
struct DeviceSummary {
  bool have = false;
  flashcore::DeviceInfo info;
  std::string why;  // when !have
};
DeviceSummary current_device();
std::string host_cpu_name();

/// "Kokkos 3.4.1 (execution spaces: ...)" line of build_info(), or "unknown".
std::string kokkos_line();

}  // namespace fcbench
