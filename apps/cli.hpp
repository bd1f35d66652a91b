// The flashcore command-line tool, split by concern: arguments (args.cpp), problem and inputs
// (inputs.cpp), running and timing (running.cpp), reporting (reporting.cpp), and the commands
// with main() (flashcore.cpp). This header holds what they share.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "flashcore/flashcore.hpp"
#include "verify/backward.hpp"
#include "verify/data.hpp"

namespace fcapp {

using flashcore::DType;
using flashcore::Problem;
using flashcore::Strides;

// ---------------------------------------------------------------------------------------------
// Errors and exit codes
// ---------------------------------------------------------------------------------------------

enum ExitCode { kOk = 0, kRuntime = 1, kUsage = 2, kValidationFailed = 3 };

/// Bad command line or invalid problem: exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// Anything that goes wrong while doing the work: exit code 1.
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// Command line of `run`
// ---------------------------------------------------------------------------------------------

enum class Layout { BSHD, BHSD };
inline const char* to_string(Layout l) { return l == Layout::BSHD ? "bshd" : "bhsd"; }

struct RunArgs {
  int batch = 1, heads_q = 8, heads_kv = 0, seqlen_q = 512, seqlen_k = 512, head_dim = 64;
  bool heads_kv_set = false;
  DType dtype = DType::F16;
  bool dtype_set = false;
  // fp8 (--dtype fp8_e4m3) inputs: O's dtype (--out-dtype) and the descales (--descale-q/k/v).
  DType out_dtype = DType::BF16;
  bool out_dtype_set = false;
  double descale_q = 1, descale_k = 1, descale_v = 1;
  bool causal = false;
  double scale = 0;
  int window_left = -1, window_right = -1;  // sliding window; -1 = unbounded side
  double softcap = 0;
  bool alibi = false;                       // ALiBi with the standard slopes 2^(-8(h+1)/Hq)
  bool sinks = false;
  double sink_value = 0;                    // --sinks X: every head's sink logit
  Layout layout = Layout::BSHD;
  // Sequences of different lengths (flashcore.hpp, "Sequences"); empty / false / 0: off.
  std::vector<int> seqlens_q;  // --seqlens-q: varlen Q, packed; one length per sequence (gives the batch)
  std::vector<int> seqlens_k;  // --seqlens-k: keys of each sequence (cache lengths, or packed with --varlen-k)
  bool varlen_k = false;       // --varlen-k: K/V packed by the key lengths
  int page_size = 0;           // --page-size: paged K/V, a shuffled block table
  bool has_sequences() const { return !seqlens_q.empty() || !seqlens_k.empty() || varlen_k || page_size > 0; }
  std::uint64_t seed = 0;
  std::string q_file, k_file, v_file;
  std::string out_q, out_k, out_v, out_o, out_lse;
  std::string backend;
  int repeat = 10;
  int warmup = 0;  // 0: the default of the memory used
  bool validate = false;
  bool backward = false;  // --backward: the backward pass after the forward (needs the LSE)
  bool deterministic = false;  // --deterministic: Options::deterministic for the backward
  bool json = false;
  bool lse = true;
  std::vector<std::string> shape_flags_given;  // e.g. "--batch", to check against .npy shapes
  bool help = false;
};

extern const char* kMainHelp;  // flashcore --help
extern const char* kRunHelp;   // flashcore run --help

/// The flags of `run` (and of the main job, whose defaults differ: it validates).
RunArgs parse_run_args(const std::vector<std::string>& args, bool main_job);

// ---------------------------------------------------------------------------------------------
// Problem and inputs (inputs.cpp)
// ---------------------------------------------------------------------------------------------

/// The extents of a tensor in the problem's layout: `outer` blocks (batch entries, or pages) of
/// `rows` rows. Packed Q/O are 1 x total_q, packed K/V 1 x total_k, paged K/V num_pages x page_size.
struct Extents {
  int outer = 1, rows = 1;
};
inline Extents q_extents(const Problem& p) { return p.total_q > 0 ? Extents{1, p.total_q} : Extents{p.batch, p.seqlen_q}; }
inline Extents kv_extents(const Problem& p) {
  if (p.page_size > 0) return {p.num_pages, p.page_size};
  return p.total_k > 0 ? Extents{1, p.total_k} : Extents{p.batch, p.seqlen_k};
}

struct HostData {
  Problem p;
  Layout layout = Layout::BSHD;
  std::vector<unsigned char> q, k, v, o;
  std::vector<float> lse;  // empty: no LSE
  std::vector<float> alibi_slopes, sinks;  // heads_q values each, or empty (variant off)
  SequenceArrays seqs;  // the sequence arrays (empty ones off)
  std::vector<int> lq, lk;  // queries and keys of every sequence (with or without sequence arrays)
  bool from_files = false;

  /// The variants' per-head parameters as the oracle takes them (host pointers, null when off).
  flashcore::verify::HeadParams head_params() const {
    return flashcore::verify::HeadParams::of(alibi_slopes, sinks);
  }

  void poison() {
    const Extents x = q_extents(p);
    flashcore::verify::poison(p.o_dtype(), o.data(), p.o, x.outer, x.rows, p.heads_q, p.head_dim);
    std::fill(lse.begin(), lse.end(), std::numeric_limits<float>::quiet_NaN());
  }
};

/// Bytes of a tensor with these strides and extents, of elements of dtype dt (O: p.o_dtype()).
std::size_t tensor_bytes(const Problem& p, const Strides& s, Extents x, int heads, DType dt);

/// What one call does by the sequences' own lengths (not the bounds seqlen_q, seqlen_k): FLOPs
/// (Problem::flops() of each sequence) and bytes moved at least once: Q and O, and the K and V rows
/// that some query row of their sequence sees.
struct Work {
  double flops = 0;
  double bytes = 0;
};
Work work_of(const HostData& d);
/// The problem and its inputs (from .npy files or random), validated: usage errors before any work.
HostData make_data(const RunArgs& a);
/// Writes the .npy outputs the flags ask for.
void write_outputs(const RunArgs& a, const HostData& d);

// ---------------------------------------------------------------------------------------------
// Running and timing (running.cpp)
// ---------------------------------------------------------------------------------------------

struct Outcome {
  flashcore::Report report;
  std::string location = "host";
  std::string device = "host";
  // Automatic selection on a machine with a CUDA device that ended on the host: why the device
  // backends declined.
  bool have_device_report = false;
  flashcore::Report device_report;
  int warmup = 0;
  int repeat = 0;
  std::string timing_method;
  double median_us = std::numeric_limits<double>::quiet_NaN();
  double mean_us = std::numeric_limits<double>::quiet_NaN();
  double min_us = std::numeric_limits<double>::quiet_NaN();
  // Outputs of the first (poisoned) call, and of the final call.
  std::vector<unsigned char> o_first;
  std::vector<float> lse_first;
  bool have_final = false;
};

/// Median of timing samples (NaN when there are none).
double median(std::vector<double> v);
/// A message on one line ("; " between its lines).
std::string one_line(std::string s);
/// The library's words for forcing a backend ("Options::backend") in the CLI's ("--backend").
std::string in_cli_terms(std::string text);
flashcore::Report cli_report(flashcore::Report r);
/// Runs on host memory: the first call on poisoned outputs, warm-up, timed calls, and (when
/// validating) a final call on poisoned outputs. d.o / d.lse end with the last call's outputs.
void run_host(const RunArgs& a, HostData& d, flashcore::Options opts, Outcome& out);
#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
/// Which device backend would run the problem on device data, and why the others decline.
flashcore::Report device_explain(const HostData& d, bool want_lse, const flashcore::Options& opts);
/// The same as run_host on device memory, timed with CUDA events.
void run_device(const RunArgs& a, HostData& d, flashcore::Options opts, Outcome& out);
#endif

// ---------------------------------------------------------------------------------------------
// The backward pass (backward.cpp)
// ---------------------------------------------------------------------------------------------

struct BackwardOutcome {
  bool done = false;
  flashcore::Report report;
  std::string location;
  int repeat = 0;
  double median_us = std::numeric_limits<double>::quiet_NaN();
  double tflops = std::numeric_limits<double>::quiet_NaN();
  bool validated = false, passed = false;
  std::string bound;
  flashcore::verify::GradientCheck check;
};
/// --backward: after the forward (d.o and d.lse hold its outputs), the backward pass with a random dO
/// in the forward's memory: the first call on NaN-poisoned gradients (the checked one), warm-up, timed
/// calls; with --validate against the fp64 backward oracle.
BackwardOutcome run_backward_step(const RunArgs& a, HostData& d, flashcore::MemoryLocation loc,
                                  const flashcore::Options& opts);
void print_backward_text(const BackwardOutcome& b);
std::string backward_json(const BackwardOutcome& b);

// ---------------------------------------------------------------------------------------------
// Reporting (reporting.cpp)
// ---------------------------------------------------------------------------------------------

/// The human-readable report of a run, and the --json one.
void print_text(const RunArgs& a, const HostData& d, const Outcome& out, const Validation& val);
/// bwd: the --backward outcome, or null.
void print_json(const RunArgs& a, const HostData& d, const Outcome& out, const Validation& val,
                const BackwardOutcome* bwd = nullptr);

}  // namespace fcapp
