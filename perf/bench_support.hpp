// Support code of flashcore_bench: cases, command-line configuration, input data, output checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flashcore/flashcore.hpp"

namespace fcbench {

struct Shape {
  int b = 1, h = 1, l = 1, d = 64;  // batch, heads (q = kv), seqlen (q = k), head_dim
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

struct Case {
  Shape shape;
  flashcore::DType dtype = flashcore::DType::F16;
  bool causal = false;
  Variant variant;
};

/// The per-head parameters of a case's variant (host arrays, empty when off).
struct HeadParams {
  std::vector<float> alibi_slopes, sinks;
};
HeadParams head_params(const Case& c);

/// "B1_H8_L512_D64".
std::string shape_name(const Shape& s);
/// "attn/<backend>/<dtype>/<causal|full>/B1_H8_L512_D64", plus "/<variant>" when there is one.
std::string bench_name(const std::string& backend, const Case& c);
/// Contiguous (B,S,H,D) problem, heads_kv = heads_q, seqlen_k = seqlen_q.
flashcore::Problem make_problem(const Case& c);
/// Bytes moved by an ideal kernel: Q, K, V read once and O written once.
double problem_bytes(const flashcore::Problem& p);

/// Run-time configuration (own flags, parsed before benchmark::Initialize).
struct Config {
  std::vector<std::string> backends_only;     // empty: all
  std::vector<std::string> backends_skip;     // "-name" entries of --backends
  std::vector<Shape> shapes;                  // empty: the built-in lists
  std::vector<flashcore::DType> dtypes;       // empty: the built-in lists
  int causal = -1;                            // -1 both, 0 full, 1 causal
  std::vector<Variant> variants;              // empty: none (the plain problem)
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
