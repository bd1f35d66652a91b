// flashcore: command-line tool of the FlashCore library.
//
//   flashcore                 the main job: a validated, timed fp16 problem (B=1, H=8, L=512, D=64)
//   flashcore run [flags]     one problem from flags or .npy files; timing, validation, outputs
//   flashcore info            version, build configuration, CUDA devices, backends
//
// Exit status: 0 success, 1 runtime error, 2 usage error or invalid problem, 3 validation failed.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <new>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "device.hpp"
#include "flashcore/flashcore.hpp"
#include "json.hpp"
#include "npy.hpp"

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
// Usage
// ---------------------------------------------------------------------------------------------

const char* kMainHelp =
    "usage: flashcore [run] [flags]\n"
    "       flashcore info\n"
    "       flashcore --help | run --help | --version\n"
    "\n"
    "Fused attention O = softmax(Q K^T * scale + mask) V with FlashCore.\n"
    "\n"
    "commands:\n"
    "  (none)      the main job: run -b 1 --hq 8 -l 512 -d 64 --dtype fp16 --validate --repeat 10\n"
    "              (flags given without a command adjust the main job)\n"
    "  run         run one problem: inputs, timing, optional validation and outputs\n"
    "  info        version, build configuration, CUDA devices and registered backends\n"
    "  help        this text\n";

const char* kRunHelp =
    "usage: flashcore run [flags]\n"
    "\n"
    "problem:\n"
    "  -b, --batch N            batch size (default 1)\n"
    "  --hq, --heads N          query heads (default 8)\n"
    "  --hkv, --heads-kv N      key/value heads (default: the query heads; must divide them)\n"
    "  -l, --seqlen N           query and key length (default 512)\n"
    "  --seqlen-q N             query length\n"
    "  --seqlen-k N             key/value length\n"
    "  -d, --head-dim N         head dimension, 1..256 (default 64)\n"
    "  --dtype T                fp32 | fp16 | bf16 (default fp16, or that of --q)\n"
    "  --causal                 causal mask, aligned to the bottom-right corner\n"
    "  --scale X                softmax scale (default 1/sqrt(head_dim))\n"
    "  --layout L               bshd: tensors (B,S,H,D) | bhsd: (B,H,S,D) (default bshd)\n"
    "inputs:\n"
    "  --seed N                 seed of the random inputs (default 0): Q, K ~ normal(0,1),\n"
    "                           V ~ uniform(-1,1), rounded to the dtype, never zero\n"
    "  --q F --k F --v F        read Q, K, V from .npy files instead: C order, little-endian\n"
    "                           '<f4' (fp32), '<f2' (fp16) or '<u2'/'<i2' holding bf16 bits\n"
    "                           (with --dtype bf16); shape (B,S,H,D) for bshd, (B,H,S,D) for\n"
    "                           bhsd; the shapes give B, S, H and D\n"
    "outputs:\n"
    "  --out-o F                write O as .npy (dtype and layout of the inputs; bf16 as '<u2')\n"
    "  --out-lse F              write LSE as .npy ('<f4', shape (B,Hq,Lq))\n"
    "  --out-q F, --out-k F, --out-v F   write the inputs as .npy\n"
    "  --no-lse                 do not compute LSE\n"
    "execution:\n"
    "  --backend NAME           force a backend (default: automatic, or FLASHCORE_BACKEND);\n"
    "                           `flashcore info` lists them\n"
    "  --repeat N               timed calls (default 10; 0: no timing)\n"
    "  --warmup N               untimed calls before timing, >= 1 (default 1 on the host,\n"
    "                           3 on a GPU); the first one's output is validated too\n"
    "  --validate               compare O and LSE with the fp64 reference and check the bound\n"
    "                           (reference backends: src/core/tolerance.hpp; tuned kernels:\n"
    "                           2 x the error of a naive same-precision computation + a floor)\n"
    "  --no-validate            skip validation (the main job validates by default)\n"
    "  --json                   print one JSON object on stdout instead of the report\n"
    "  -h, --help               this text\n"
    "\n"
    "Memory: a forced backend gets the memory it reads (GPU memory for CUDA backends). Otherwise\n"
    "the data goes to GPU memory when the build has the CUDA runtime, a device is present and a\n"
    "device backend accepts the problem, else it stays in host memory.\n"
    "exit status: 0 ok, 1 runtime error, 2 usage error or invalid problem, 3 validation failed\n";

// ---------------------------------------------------------------------------------------------
// Command line of `run`
// ---------------------------------------------------------------------------------------------

enum class Layout { BSHD, BHSD };
const char* to_string(Layout l) { return l == Layout::BSHD ? "bshd" : "bhsd"; }

struct RunArgs {
  int batch = 1, heads_q = 8, heads_kv = 0, seqlen_q = 512, seqlen_k = 512, head_dim = 64;
  bool heads_kv_set = false;
  DType dtype = DType::F16;
  bool dtype_set = false;
  bool causal = false;
  double scale = 0;
  Layout layout = Layout::BSHD;
  std::uint64_t seed = 0;
  std::string q_file, k_file, v_file;
  std::string out_q, out_k, out_v, out_o, out_lse;
  std::string backend;
  int repeat = 10;
  int warmup = 0;  // 0: the default of the memory used
  bool validate = false;
  bool json = false;
  bool lse = true;
  std::vector<std::string> shape_flags_given;  // e.g. "--batch", to check against .npy shapes
  bool help = false;
};

long long parse_integer(const std::string& flag, const std::string& text, long long lo, long long hi) {
  if (text.empty()) throw UsageError(flag + ": expects an integer, got an empty value");
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || std::isspace(static_cast<unsigned char>(text[0])))
    throw UsageError(flag + ": '" + text + "' is not an integer");
  if (errno == ERANGE || v < lo || v > hi)
    throw UsageError(flag + ": " + text + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

std::uint64_t parse_seed(const std::string& flag, const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
    throw UsageError(flag + ": '" + text + "' is not a non-negative integer");
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (*end != '\0') throw UsageError(flag + ": '" + text + "' is not a non-negative integer");
  if (errno == ERANGE) throw UsageError(flag + ": " + text + " is out of range [0, 2^64-1]");
  return v;
}

double parse_real(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0' || std::isspace(static_cast<unsigned char>(text[0])))
    throw UsageError(flag + ": '" + text + "' is not a number");
  if (errno == ERANGE && std::isinf(v)) throw UsageError(flag + ": " + text + " is out of range");
  return v;
}

RunArgs parse_run_args(const std::vector<std::string>& args, bool main_job) {
  RunArgs a;
  a.validate = main_job;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool has_inline = false;
    if (flag.rfind("--", 0) == 0) {
      const auto eq = flag.find('=');
      if (eq != std::string::npos) {
        value = flag.substr(eq + 1);
        flag = flag.substr(0, eq);
        has_inline = true;
      }
    }
    auto take = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= args.size()) throw UsageError(flag + ": missing value");
      return args[++i];
    };
    auto no_value = [&] {
      if (has_inline) throw UsageError(flag + ": takes no value");
    };
    auto shape_int = [&](int* field) {
      const std::string v = take();
      *field = static_cast<int>(parse_integer(flag, v, INT_MIN, INT_MAX));
      a.shape_flags_given.push_back(flag);
    };
    if (flag == "-h" || flag == "--help") {
      no_value();
      a.help = true;
    } else if (flag == "-b" || flag == "--batch") {
      shape_int(&a.batch);
    } else if (flag == "--hq" || flag == "--heads") {
      shape_int(&a.heads_q);
    } else if (flag == "--hkv" || flag == "--heads-kv") {
      shape_int(&a.heads_kv);
      a.heads_kv_set = true;
    } else if (flag == "-l" || flag == "--seqlen") {
      shape_int(&a.seqlen_q);
      a.seqlen_k = a.seqlen_q;
    } else if (flag == "--seqlen-q") {
      shape_int(&a.seqlen_q);
    } else if (flag == "--seqlen-k") {
      shape_int(&a.seqlen_k);
    } else if (flag == "-d" || flag == "--head-dim") {
      shape_int(&a.head_dim);
    } else if (flag == "--dtype") {
      const std::string v = take();
      try {
        a.dtype = flashcore::parse_dtype(v);
      } catch (const flashcore::Error& e) {
        throw UsageError(std::string("--dtype: ") + e.what());
      }
      a.dtype_set = true;
    } else if (flag == "--causal") {
      no_value();
      a.causal = true;
    } else if (flag == "--scale") {
      a.scale = parse_real(flag, take());
    } else if (flag == "--layout") {
      const std::string v = take();
      if (v == "bshd" || v == "BSHD") a.layout = Layout::BSHD;
      else if (v == "bhsd" || v == "BHSD") a.layout = Layout::BHSD;
      else throw UsageError("--layout: '" + v + "' is not bshd or bhsd");
    } else if (flag == "--seed") {
      a.seed = parse_seed(flag, take());
    } else if (flag == "--q") {
      a.q_file = take();
    } else if (flag == "--k") {
      a.k_file = take();
    } else if (flag == "--v") {
      a.v_file = take();
    } else if (flag == "--out-q") {
      a.out_q = take();
    } else if (flag == "--out-k") {
      a.out_k = take();
    } else if (flag == "--out-v") {
      a.out_v = take();
    } else if (flag == "--out-o") {
      a.out_o = take();
    } else if (flag == "--out-lse") {
      a.out_lse = take();
    } else if (flag == "--no-lse") {
      no_value();
      a.lse = false;
    } else if (flag == "--backend") {
      a.backend = take();
      if (a.backend.empty()) throw UsageError("--backend: empty backend name");
    } else if (flag == "--repeat") {
      a.repeat = static_cast<int>(parse_integer(flag, take(), 0, 1000000));
    } else if (flag == "--warmup") {
      a.warmup = static_cast<int>(parse_integer(flag, take(), 1, 1000000));
    } else if (flag == "--validate") {
      no_value();
      a.validate = true;
    } else if (flag == "--no-validate") {
      no_value();
      a.validate = false;
    } else if (flag == "--json") {
      no_value();
      a.json = true;
    } else if (!flag.empty() && flag[0] == '-') {
      throw UsageError("unknown flag '" + flag + "' (see flashcore run --help)");
    } else {
      throw UsageError("unexpected argument '" + flag + "' (see flashcore run --help)");
    }
  }
  if (!a.heads_kv_set) a.heads_kv = a.heads_q;
  const int files = !a.q_file.empty() + !a.k_file.empty() + !a.v_file.empty();
  if (files != 0 && files != 3) throw UsageError("--q, --k and --v must be given together");
  if (!a.lse && !a.out_lse.empty()) throw UsageError("--out-lse cannot be used with --no-lse");
  return a;
}

// ---------------------------------------------------------------------------------------------
// Problem and inputs
// ---------------------------------------------------------------------------------------------

struct HostData {
  Problem p;
  Layout layout = Layout::BSHD;
  std::vector<unsigned char> q, k, v, o;
  std::vector<float> lse;  // empty: no LSE
  bool from_files = false;

  void poison() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::int64_t n = static_cast<std::int64_t>(o.size()) / flashcore::dtype_size(p.dtype);
    for (std::int64_t i = 0; i < n; ++i) store_element(p.dtype, o.data(), i, nan);
    std::fill(lse.begin(), lse.end(), std::numeric_limits<float>::quiet_NaN());
  }
};

std::size_t tensor_bytes(const Problem& p, const Strides& s, int seq, int heads) {
  return static_cast<std::size_t>(flashcore::span_elements(s, p.batch, seq, heads, p.head_dim)) *
         flashcore::dtype_size(p.dtype);
}

/// Shape of a tensor as stored, per layout.
std::vector<std::int64_t> stored_shape(const Problem& p, Layout l, int seq, int heads) {
  if (l == Layout::BSHD) return {p.batch, seq, heads, p.head_dim};
  return {p.batch, heads, seq, p.head_dim};
}

std::string npy_descr(DType dt) {
  switch (dt) {
    case DType::F32: return "<f4";
    case DType::F16: return "<f2";
    case DType::BF16: return "<u2";
  }
  return "";
}

void set_layout(Problem& p, Layout l) {
  if (l == Layout::BSHD) p.set_contiguous_bshd();
  else p.set_contiguous_bhsd();
}

// The descriptors accepted for a dtype, with '=' / '|' read as little-endian.
bool descr_matches(const std::string& descr, DType dt) {
  std::string d = descr;
  if (!d.empty() && (d[0] == '=' || d[0] == '|')) d[0] = '<';
  switch (dt) {
    case DType::F32: return d == "<f4";
    case DType::F16: return d == "<f2";
    case DType::BF16: return d == "<u2" || d == "<i2";
  }
  return false;
}

std::string accepted_descrs(DType dt) {
  return dt == DType::BF16 ? "'<u2' or '<i2' holding bf16 bits" : "'" + npy_descr(dt) + "'";
}

// Reads Q, K, V from .npy files; the shapes determine the problem.
void load_inputs(const RunArgs& a, HostData& d) {
  struct Input {
    const char* flag;
    const std::string* path;
    NpyArray arr;
  };
  Input in[3] = {{"--q", &a.q_file, {}}, {"--k", &a.k_file, {}}, {"--v", &a.v_file, {}}};
  for (Input& x : in) {
    try {
      x.arr = read_npy(*x.path);
    } catch (const NpyError& e) {
      throw RunError(std::string(x.flag) + " " + e.what());
    }
  }
  auto where = [](const Input& x) { return std::string(x.flag) + " " + *x.path; };
  const char* dims = a.layout == Layout::BSHD ? "(B,S,H,D)" : "(B,H,S,D)";
  for (const Input& x : in) {
    if (x.arr.fortran_order)
      throw RunError(where(x) + ": Fortran-order arrays are not supported (save a C-order array, e.g. with "
                     "np.ascontiguousarray)");
    if (x.arr.shape.size() != 4)
      throw RunError(where(x) + ": expected a 4-D array " + dims + " for layout " + to_string(a.layout) +
                     ", got shape " + shape_string(x.arr.shape));
    for (std::int64_t s : x.arr.shape)
      if (s > INT_MAX) throw RunError(where(x) + ": shape " + shape_string(x.arr.shape) + " has a dimension beyond 2^31-1");
  }
  // dtype: --dtype, or the one of the Q file.
  DType dt = a.dtype;
  if (!a.dtype_set) {
    const std::string& qd = in[0].arr.descr;
    if (descr_matches(qd, DType::F32)) dt = DType::F32;
    else if (descr_matches(qd, DType::F16)) dt = DType::F16;
    else if (descr_matches(qd, DType::BF16))
      throw RunError(where(in[0]) + ": dtype '" + qd + "' holds 16-bit integers; pass --dtype bf16 if they are bf16 bits");
    else
      throw RunError(where(in[0]) + ": unsupported dtype '" + qd +
                     "' (expected '<f4', '<f2', or '<u2'/'<i2' with --dtype bf16)");
  }
  for (const Input& x : in)
    if (!descr_matches(x.arr.descr, dt))
      throw RunError(where(x) + ": dtype '" + x.arr.descr + "' does not match " +
                     (a.dtype_set ? "--dtype " : "the dtype of --q, ") + flashcore::to_string(dt) + " (expected " +
                     accepted_descrs(dt) + ")");
  // Shapes: index 1/2 are S/H for bshd, H/S for bhsd.
  const int si = a.layout == Layout::BSHD ? 1 : 2, hi = a.layout == Layout::BSHD ? 2 : 1;
  const auto& qs = in[0].arr.shape;
  const auto& ks = in[1].arr.shape;
  const auto& vs = in[2].arr.shape;
  if (vs != ks)
    throw RunError(where(in[2]) + ": shape " + shape_string(vs) + " differs from the shape " + shape_string(ks) +
                   " of " + where(in[1]));
  if (ks[0] != qs[0])
    throw RunError(where(in[1]) + ": batch " + std::to_string(ks[0]) + " (shape " + shape_string(ks) +
                   ") differs from the batch " + std::to_string(qs[0]) + " of " + where(in[0]) + " (shape " +
                   shape_string(qs) + ")");
  if (ks[3] != qs[3])
    throw RunError(where(in[1]) + ": head_dim " + std::to_string(ks[3]) + " (shape " + shape_string(ks) +
                   ") differs from the head_dim " + std::to_string(qs[3]) + " of " + where(in[0]) + " (shape " +
                   shape_string(qs) + ")");
  Problem& p = d.p;
  p.batch = static_cast<int>(qs[0]);
  p.seqlen_q = static_cast<int>(qs[si]);
  p.heads_q = static_cast<int>(qs[hi]);
  p.head_dim = static_cast<int>(qs[3]);
  p.seqlen_k = static_cast<int>(ks[si]);
  p.heads_kv = static_cast<int>(ks[hi]);
  p.dtype = dt;
  // Explicit shape flags must agree with the files.
  for (const std::string& f : a.shape_flags_given) {
    auto clash = [&](const char* what, long long flag_v, long long file_v) {
      if (flag_v != file_v)
        throw UsageError(f + " " + std::to_string(flag_v) + " contradicts the input files (" + what + " " +
                         std::to_string(file_v) + " from shapes " + shape_string(qs) + " and " + shape_string(ks) + ")");
    };
    if (f == "-b" || f == "--batch") clash("batch", a.batch, p.batch);
    if (f == "--hq" || f == "--heads") clash("heads_q", a.heads_q, p.heads_q);
    if (f == "--hkv" || f == "--heads-kv") clash("heads_kv", a.heads_kv, p.heads_kv);
    if (f == "-l" || f == "--seqlen") {
      clash("seqlen_q", a.seqlen_q, p.seqlen_q);
      clash("seqlen_k", a.seqlen_k, p.seqlen_k);
    }
    if (f == "--seqlen-q") clash("seqlen_q", a.seqlen_q, p.seqlen_q);
    if (f == "--seqlen-k") clash("seqlen_k", a.seqlen_k, p.seqlen_k);
    if (f == "-d" || f == "--head-dim") clash("head_dim", a.head_dim, p.head_dim);
  }
  d.q = std::move(in[0].arr.data);
  d.k = std::move(in[1].arr.data);
  d.v = std::move(in[2].arr.data);
  d.from_files = true;
}

// Fills a tensor in logical (b, s, h, d) order, so that a seed gives the same values in both
// layouts; values are rounded to the dtype and never zero.
template <class Draw>
void fill_random(const Problem& p, std::vector<unsigned char>& buf, const Strides& s, int seq, int heads, Draw draw) {
  for (int b = 0; b < p.batch; ++b)
    for (int i = 0; i < seq; ++i)
      for (int h = 0; h < heads; ++h)
        for (int dd = 0; dd < p.head_dim; ++dd) {
          double x = draw();
          while (round_to(p.dtype, x) == 0.0) x = draw();
          store_element(p.dtype, buf.data(),
                        flashcore::element_offset(s, b, i, h, dd), x);
        }
}

HostData make_data(const RunArgs& a) {
  HostData d;
  d.layout = a.layout;
  Problem& p = d.p;
  if (!a.q_file.empty()) {
    load_inputs(a, d);
  } else {
    p.batch = a.batch;
    p.heads_q = a.heads_q;
    p.heads_kv = a.heads_kv;
    p.seqlen_q = a.seqlen_q;
    p.seqlen_k = a.seqlen_k;
    p.head_dim = a.head_dim;
    p.dtype = a.dtype;
  }
  p.causal = a.causal;
  p.scale = static_cast<float>(a.scale);
  if (std::isfinite(a.scale) && a.scale != 0 && p.scale == 0.0f)
    throw UsageError("--scale: " + std::to_string(a.scale) + " underflows to 0 in fp32");
  if (std::isfinite(a.scale) && std::fabs(a.scale) > std::numeric_limits<float>::max())
    throw UsageError("--scale: " + std::to_string(a.scale) + " is beyond the fp32 range");
  set_layout(p, a.layout);
  try {
    flashcore::validate(p);
  } catch (const flashcore::Error& e) {
    throw UsageError(e.what());
  }
  if (!d.from_files) {
    d.q.assign(tensor_bytes(p, p.q, p.seqlen_q, p.heads_q), 0);
    d.k.assign(tensor_bytes(p, p.k, p.seqlen_k, p.heads_kv), 0);
    d.v.assign(tensor_bytes(p, p.v, p.seqlen_k, p.heads_kv), 0);
    std::mt19937_64 rng(a.seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    fill_random(p, d.q, p.q, p.seqlen_q, p.heads_q, [&] { return normal(rng); });
    fill_random(p, d.k, p.k, p.seqlen_k, p.heads_kv, [&] { return normal(rng); });
    fill_random(p, d.v, p.v, p.seqlen_k, p.heads_kv, [&] { return uniform(rng); });
  }
  d.o.assign(tensor_bytes(p, p.o, p.seqlen_q, p.heads_q), 0);
  if (a.lse) d.lse.assign(static_cast<std::size_t>(p.batch) * p.heads_q * p.seqlen_q, 0.0f);
  return d;
}

// ---------------------------------------------------------------------------------------------
// Running and timing
// ---------------------------------------------------------------------------------------------

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ';';
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ';' && i + 1 < s.size()) {
      out += "; ";
      while (i + 1 < s.size() && s[i + 1] == ' ') ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// The selection for data in `loc`; unknown backends are usage errors.
flashcore::Report explain_at(const Problem& p, const flashcore::Tensors& t, flashcore::Options opts,
                             flashcore::MemoryLocation loc) {
  opts.location = loc;
  try {
    return flashcore::explain(p, t, opts);
  } catch (const flashcore::Error& e) {
    if (e.field() == "backend") throw UsageError(e.what());
    throw;
  }
}

#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
/// The selection for data in device memory, asked with placeholder device addresses (explain()
/// touches no memory): which device backend would run the problem, and why the others decline.
flashcore::Report device_explain(const Problem& p, bool want_lse, const flashcore::Options& opts) {
  std::uintptr_t next = std::uintptr_t(1) << 44;  // far from any real allocation; 256-byte aligned ranges
  auto place = [&](std::size_t bytes) {
    const std::uintptr_t at = next;
    next += (bytes + 511) / 256 * 256;
    return reinterpret_cast<void*>(at);
  };
  flashcore::Tensors t;
  t.q = place(tensor_bytes(p, p.q, p.seqlen_q, p.heads_q));
  t.k = place(tensor_bytes(p, p.k, p.seqlen_k, p.heads_kv));
  t.v = place(tensor_bytes(p, p.v, p.seqlen_k, p.heads_kv));
  t.o = place(tensor_bytes(p, p.o, p.seqlen_q, p.heads_q));
  if (want_lse) t.lse = static_cast<float*>(place(static_cast<std::size_t>(p.batch) * p.heads_q * p.seqlen_q * 4));
  return explain_at(p, t, opts, flashcore::MemoryLocation::Device);
}
#endif

/// The library names its own way of forcing a backend ("forced by Options::backend", "runs only when
/// forced by name (Options::backend or FLASHCORE_BACKEND)"); the CLI fills Options::backend only from
/// --backend, so that is what a CLI user is told.
std::string in_cli_terms(std::string text) {
  const std::string from = "Options::backend";
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
    text.replace(at, from.size(), "--backend");
  return text;
}
flashcore::Report cli_report(flashcore::Report r) {
  r.how = in_cli_terms(r.how);
  for (auto& d : r.decisions) d.reason = in_cli_terms(d.reason);
  return r;
}

/// Why no backend runs the problem: the forced backend's reason, or every backend's.
std::string decline_message(const flashcore::Report& report, const char* where) {
  const flashcore::Report r = cli_report(report);
  if (r.mode != flashcore::SelectionMode::Automatic) {
    for (const auto& dec : r.decisions)
      if (dec.code != flashcore::DecisionCode::NotSelected)
        return "backend '" + dec.backend + "' (" + r.how + ") cannot run this problem in " + where +
               " memory: " + dec.reason;
  }
  std::string s = std::string("no backend can run this problem in ") + where + " memory (" + r.how + "):";
  for (std::size_t i = 0; i < r.decisions.size(); ++i)
    s += (i ? "; " : " ") + r.decisions[i].backend + ": " + r.decisions[i].reason;
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

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

void fill_timing(Outcome& out, const std::vector<double>& samples) {
  if (samples.empty()) return;
  out.median_us = median(samples);
  out.min_us = *std::min_element(samples.begin(), samples.end());
  double s = 0;
  for (double x : samples) s += x;
  if (std::isnan(out.mean_us)) out.mean_us = s / samples.size();
}

/// Runs on host memory: the first call on poisoned outputs, warm-up, timed calls, and (when
/// validating) a final call on poisoned outputs. d.o / d.lse end with the last call's outputs.
void run_host(const RunArgs& a, HostData& d, flashcore::Options opts, Outcome& out) {
  const Problem& p = d.p;
  flashcore::Tensors t{d.q.data(), d.k.data(), d.v.data(), d.o.data(), d.lse.empty() ? nullptr : d.lse.data()};
  opts.location = flashcore::MemoryLocation::Host;
  out.report = explain_at(p, t, opts, flashcore::MemoryLocation::Host);
  if (out.report.chosen.empty())
    throw RunError(decline_message(out.report, "host"));
  out.warmup = a.warmup > 0 ? a.warmup : 1;
  out.repeat = a.repeat;
  out.timing_method = "std::chrono::steady_clock per call";
  d.poison();
  out.report = flashcore::run(p, t, opts);
  out.o_first = d.o;
  out.lse_first = d.lse;
  for (int i = 1; i < out.warmup; ++i) flashcore::run(p, t, opts);
  std::vector<double> samples;
  for (int i = 0; i < a.repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    flashcore::run(p, t, opts);
    const auto t1 = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  fill_timing(out, samples);
  if (a.validate && a.repeat + out.warmup > 1) {
    d.poison();
    flashcore::run(p, t, opts);
    out.have_final = true;
  }
}

#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
/// The same on device memory, timed with CUDA events.
void run_device(const RunArgs& a, HostData& d, flashcore::Options opts, Outcome& out) {
  const Problem& p = d.p;
  DeviceBuffer q(d.q.size(), "q"), k(d.k.size(), "k"), v(d.v.size(), "v"), o(d.o.size(), "o");
  std::unique_ptr<DeviceBuffer> lse_buf;
  if (!d.lse.empty()) lse_buf = std::make_unique<DeviceBuffer>(d.lse.size() * sizeof(float), "lse");
  q.upload(d.q.data(), d.q.size());
  k.upload(d.k.data(), d.k.size());
  v.upload(d.v.data(), d.v.size());
  flashcore::Tensors t{q.get(), k.get(), v.get(), o.get(), lse_buf ? static_cast<float*>(lse_buf->get()) : nullptr};
  opts.location = flashcore::MemoryLocation::Device;
  out.report = explain_at(p, t, opts, flashcore::MemoryLocation::Device);
  if (out.report.chosen.empty())
    throw RunError(decline_message(out.report, "device"));
  out.location = "device";
  out.device = current_device_name();
  out.warmup = a.warmup > 0 ? a.warmup : 3;
  out.repeat = a.repeat;
  out.timing_method = "CUDA events: median of per-call times; mean over back-to-back calls";
  auto poison = [&] {
    d.poison();
    o.upload(d.o.data(), d.o.size());
    if (lse_buf) lse_buf->upload(d.lse.data(), d.lse.size() * sizeof(float));
  };
  auto fetch = [&] {
    device_synchronize(out.report.chosen.c_str());
    o.download(d.o.data(), d.o.size());
    if (lse_buf) lse_buf->download(d.lse.data(), d.lse.size() * sizeof(float));
  };
  poison();
  out.report = flashcore::run(p, t, opts);
  fetch();
  out.o_first = d.o;
  out.lse_first = d.lse;
  for (int i = 1; i < out.warmup; ++i) flashcore::run(p, t, opts);
  device_synchronize("the warm-up calls");
  double total_us = 0;
  const std::vector<double> samples = time_device_calls([&] { flashcore::run(p, t, opts); }, a.repeat, &total_us);
  if (a.repeat > 0) out.mean_us = total_us / a.repeat;
  fill_timing(out, samples);
  if (a.validate && a.repeat + out.warmup > 1) {
    poison();
    flashcore::run(p, t, opts);
    out.have_final = true;
  }
  fetch();
  // Buffers are freed here, before flashcore::finalize().
}
#endif

// ---------------------------------------------------------------------------------------------
// Reports
// ---------------------------------------------------------------------------------------------

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string description_of(const std::string& backend) {
  for (const flashcore::BackendInfo& b : flashcore::backends())
    if (b.name == backend) return b.name + ": " + b.description;
  return backend;
}

void print_text(const RunArgs& a, const HostData& d, const Outcome& out, const Validation& val) {
  const Problem& p = d.p;
  std::ostringstream os;
  os << "FlashCore " << flashcore::version() << ": O = softmax(Q K^T * scale + mask) V\n";
  os << "problem   : B=" << p.batch << " Hq=" << p.heads_q << " Hkv=" << p.heads_kv << " Lq=" << p.seqlen_q
     << " Lk=" << p.seqlen_k << " D=" << p.head_dim << " " << flashcore::to_string(p.dtype) << " "
     << (p.causal ? "causal" : "non-causal") << " layout=" << to_string(d.layout)
     << " scale=" << fmt("%.6g", p.effective_scale()) << (d.lse.empty() ? " (no LSE)" : "") << "\n";
  if (d.from_files)
    os << "inputs    : --q " << a.q_file << ", --k " << a.k_file << ", --v " << a.v_file << "\n";
  else
    os << "inputs    : random, seed " << a.seed << " (Q, K ~ normal(0,1); V ~ uniform(-1,1))\n";
  os << "data      : " << out.location << " memory" << (out.location == "device" ? ", " + out.device : "") << "\n";
  os << "selection : " << cli_report(out.report).to_string() << "\n";
  os << "            " << description_of(out.report.chosen) << "\n";
  if (out.have_device_report) {
    os << "            (a CUDA device is present, but no device backend accepts the problem:";
    for (const auto& dec : out.device_report.decisions)
      if (dec.code != flashcore::DecisionCode::OtherMemory) os << "\n             " << dec.backend << ": " << dec.reason;
    os << ")\n";
  }
  if (out.repeat > 0) {
    os << "timing    : " << out.warmup << " warm-up + " << out.repeat << " timed calls (" << out.timing_method
       << ")\n";
    os << "            median " << fmt("%.1f", out.median_us) << " us, min " << fmt("%.1f", out.min_us) << " us, mean "
       << fmt("%.1f", out.mean_us) << " us; " << fmt("%.4g", p.flops() / (out.median_us * 1e-6) / 1e12)
       << " TFLOP/s at the median (" << fmt("%.4g", p.flops()) << " FLOP)\n";
  } else {
    os << "timing    : none (--repeat 0)\n";
  }
  if (val.done) {
    os << "validation: against the fp64 reference (reference::run_host_fp64), " << (out.have_final ? "first and last" : "first")
       << " call on NaN-poisoned outputs\n";
    os << "            max abs err " << fmt("%.3e", val.max_abs_err) << ", rel L2 err " << fmt("%.3e", val.rel_l2_err);
    if (val.have_lse) os << ", LSE max abs err " << fmt("%.3e", val.lse_max_abs_err);
    os << "\n            " << val.bound_text << "\n";
    if (val.o_nonfinite) os << "            " << val.o_nonfinite << " output elements are NaN or infinite\n";
    if (val.passed) {
      os << "            result: PASS\n";
    } else {
      os << "            result: FAIL";
      if (val.o_bad || val.lse_bad) os << " (" << val.o_bad << " O and " << val.lse_bad << " LSE elements out of bounds)";
      os << "\n";
      if (!val.first_bad.empty()) os << "            first failure: " << val.first_bad << "\n";
    }
  } else {
    os << "validation: not requested (--validate)\n";
  }
  std::vector<std::string> written;
  for (const std::string* f : {&a.out_q, &a.out_k, &a.out_v, &a.out_o, &a.out_lse})
    if (!f->empty()) written.push_back(*f);
  if (!written.empty()) {
    os << "wrote     :";
    for (const auto& f : written) os << " " << f;
    os << "\n";
  }
  std::cout << os.str() << std::flush;
}

void print_json(const RunArgs& a, const HostData& d, const Outcome& out, const Validation& val) {
  const Problem& p = d.p;
  const flashcore::Report rep = cli_report(out.report);  // in the CLI's terms
  JsonObject j;
  j.str("backend", rep.chosen).str("kind", rep.chosen.empty() ? "" : flashcore::to_string(rep.chosen_kind));
  j.str("how", rep.how).str("device", out.device).str("location", out.location);
  j.integer("B", p.batch).integer("Hq", p.heads_q).integer("Hkv", p.heads_kv).integer("Lq", p.seqlen_q);
  j.integer("Lk", p.seqlen_k).integer("D", p.head_dim).str("dtype", flashcore::to_string(p.dtype));
  j.boolean("causal", p.causal).str("layout", to_string(d.layout)).num("scale", p.effective_scale());
  j.boolean("lse", !d.lse.empty());
  j.str("inputs", d.from_files ? "files" : "random");
  if (d.from_files) j.null("seed");
  else j.raw("seed", std::to_string(a.seed));
  j.integer("repeat", out.repeat).integer("warmup", out.warmup).str("timing", out.timing_method);
  j.num("median_us", out.median_us).num("mean_us", out.mean_us).num("min_us", out.min_us);
  j.num("flops", p.flops());
  j.num("tflops", out.repeat > 0 ? p.flops() / (out.median_us * 1e-6) / 1e12 : std::nan(""));
  j.boolean("validated", val.done);
  if (val.done) {
    j.num("max_abs_err", val.max_abs_err).num("rel_l2_err", val.rel_l2_err);
    if (val.have_lse) j.num("lse_max_abs_err", val.lse_max_abs_err);
    else j.null("lse_max_abs_err");
    j.str("bound", val.bound).str("bound_text", val.bound_text);
    if (val.threshold >= 0) j.num("naive_err", val.naive_err).num("threshold", val.threshold);
    else j.null("naive_err").null("threshold");
    j.integer("nonfinite", val.o_nonfinite).integer("o_bad", val.o_bad).integer("lse_bad", val.lse_bad);
    if (val.first_bad.empty()) j.null("first_failure");
    else j.str("first_failure", val.first_bad);
    j.boolean("passed", val.passed);
  } else {
    for (const char* k : {"max_abs_err", "rel_l2_err", "lse_max_abs_err", "bound", "passed"}) j.null(k);
  }
  std::string sel = "[";
  for (std::size_t i = 0; i < rep.decisions.size(); ++i) {
    const auto& dec = rep.decisions[i];
    JsonObject o;
    o.str("backend", dec.backend).str("kind", flashcore::to_string(dec.kind)).boolean("ok", dec.ok);
    o.str("code", flashcore::to_string(dec.code)).str("reason", dec.reason);
    sel += (i ? ", " : "") + o.render();
  }
  j.raw("selection", sel + "]");
  if (out.have_device_report) {
    std::string dsel = "[";
    for (std::size_t i = 0; i < out.device_report.decisions.size(); ++i) {
      const auto& dec = out.device_report.decisions[i];
      JsonObject o;
      o.str("backend", dec.backend).str("kind", flashcore::to_string(dec.kind)).boolean("ok", dec.ok);
    o.str("code", flashcore::to_string(dec.code)).str("reason", dec.reason);
      dsel += (i ? ", " : "") + o.render();
    }
    j.raw("device_selection", dsel + "]");
  } else {
    j.null("device_selection");
  }
  std::vector<std::string> written;
  for (const std::string* f : {&a.out_q, &a.out_k, &a.out_v, &a.out_o, &a.out_lse})
    if (!f->empty()) written.push_back(json_string(*f));
  std::string w = "[";
  for (std::size_t i = 0; i < written.size(); ++i) w += (i ? ", " : "") + written[i];
  j.raw("wrote", w + "]");
  j.str("version", flashcore::version());
  std::cout << j.render() << "\n" << std::flush;
}

void write_outputs(const RunArgs& a, const HostData& d) {
  const Problem& p = d.p;
  auto write = [&](const std::string& path, const std::string& descr, const std::vector<std::int64_t>& shape,
                   const void* data, std::size_t bytes) {
    if (path.empty()) return;
    try {
      write_npy(path, descr, shape, data, bytes);
    } catch (const NpyError& e) {
      throw RunError(e.what());
    }
  };
  const std::string descr = npy_descr(p.dtype);
  write(a.out_q, descr, stored_shape(p, d.layout, p.seqlen_q, p.heads_q), d.q.data(), d.q.size());
  write(a.out_k, descr, stored_shape(p, d.layout, p.seqlen_k, p.heads_kv), d.k.data(), d.k.size());
  write(a.out_v, descr, stored_shape(p, d.layout, p.seqlen_k, p.heads_kv), d.v.data(), d.v.size());
  write(a.out_o, descr, stored_shape(p, d.layout, p.seqlen_q, p.heads_q), d.o.data(), d.o.size());
  write(a.out_lse, "<f4", {p.batch, p.heads_q, p.seqlen_q}, d.lse.data(), d.lse.size() * sizeof(float));
}

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

/// Kokkos through FlashCore: initialized on first use, finalized at exit.
struct Runtime {
  bool started = false;
  void start() {
    if (!started) {
      // Kokkos' OpenMP backend prints a warning on stdout when thread binding is unset, which
      // would break --json; the tool sets Kokkos' recommended binding unless the user chose one.
      setenv("OMP_PROC_BIND", "spread", /*overwrite=*/0);
      setenv("OMP_PLACES", "threads", /*overwrite=*/0);
      flashcore::initialize();
      started = true;
    }
  }
  ~Runtime() {
    if (started) {
      try {
        flashcore::finalize();
      } catch (...) {
      }
    }
  }
};

int cmd_run(const std::vector<std::string>& args, bool main_job, Runtime& rt) {
  const RunArgs a = parse_run_args(args, main_job);
  if (a.help) {
    std::cout << kRunHelp;
    return kOk;
  }
  HostData d = make_data(a);  // validates the problem (usage errors) before Kokkos starts
  rt.start();
  flashcore::Options opts;
  opts.backend = a.backend;
  Outcome out;
  // Where the data goes: a forced backend (--backend or FLASHCORE_BACKEND) decides by the memory
  // it reads; automatically, device memory when a device backend accepts the problem.
  std::string forced_by;
  std::string forced;
  try {
    forced = flashcore::forced_backend(opts, &forced_by);
    forced_by = in_cli_terms(forced_by);
  } catch (const flashcore::Error& e) {
    throw UsageError(in_cli_terms(e.what()));
  }
  flashcore::MemoryLocation loc = flashcore::MemoryLocation::Host;
  std::string no_device_why;
#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
  const bool have_device = !flashcore::cuda_devices(&no_device_why).empty();
#else
  const bool have_device = false;
  no_device_why = "this build has no CUDA runtime";
#endif
  if (!forced.empty()) {
    for (const auto& b : flashcore::backends())
      if (b.name == forced) loc = b.location;
    if (loc == flashcore::MemoryLocation::Device && !have_device)
      throw RunError("backend '" + forced + "' (" + forced_by + ") reads device memory, but there is no CUDA device: " +
                     no_device_why);
  }
#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
  else if (have_device) {
    out.device_report = device_explain(d.p, !d.lse.empty(), opts);
    if (!out.device_report.chosen.empty()) loc = flashcore::MemoryLocation::Device;
    else out.have_device_report = true;
  }
  if (loc == flashcore::MemoryLocation::Device) run_device(a, d, opts, out);
#endif
  if (loc != flashcore::MemoryLocation::Device) run_host(a, d, opts, out);

  Validation val;
  if (a.validate) {
    const Problem& p = d.p;
    const bool reference = out.report.chosen_kind == flashcore::BackendKind::Reference;
    const Oracle ref = compute_oracle(p, d.q.data(), d.k.data(), d.v.data(), !reference);
    val = compare(p, ref, out.o_first.data(), out.lse_first.empty() ? nullptr : out.lse_first.data(),
                  out.report.chosen_kind);
    if (out.have_final)
      val = worst(val, compare(p, ref, d.o.data(), d.lse.empty() ? nullptr : d.lse.data(), out.report.chosen_kind));
  }
  write_outputs(a, d);
  if (a.json) print_json(a, d, out, val);
  else print_text(a, d, out, val);
  return val.done && !val.passed ? kValidationFailed : kOk;
}

std::string bytes_string(std::size_t b) {
  char buf[64];
  if (b >= (std::size_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", b / 1073741824.0);
  else if (b >= (std::size_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  return buf;
}

int cmd_info(const std::vector<std::string>& args, Runtime& rt) {
  for (const std::string& s : args) {
    if (s == "-h" || s == "--help") {
      std::cout << "usage: flashcore info\n\nPrints the version, the build configuration, the CUDA devices "
                   "found and the registered backends.\n";
      return kOk;
    }
    throw UsageError("info: unexpected argument '" + s + "'");
  }
  rt.start();
  std::ostringstream os;
  os << "FlashCore " << flashcore::version() << "\n\nbuild:\n";
  std::istringstream bi(flashcore::build_info());
  for (std::string line; std::getline(bi, line);) os << "  " << line << "\n";
  os << "\nCUDA devices:\n";
  std::string why;
  const auto devs = flashcore::cuda_devices(&why);
  if (devs.empty()) os << "  none (" << (why.empty() ? "no reason given" : why) << ")\n";
  for (const auto& dev : devs) {
    os << "  [" << dev.index << "] " << dev.name << ": compute capability " << dev.cc_major << "." << dev.cc_minor
       << ", " << dev.sm_count << " SMs";
    if (dev.clock_mhz) os << " at " << dev.clock_mhz << " MHz";
    os << ", shared memory " << bytes_string(dev.smem_optin_per_block) << " per block (opt-in), "
       << bytes_string(dev.smem_per_sm) << " per SM, memory " << bytes_string(dev.global_mem_bytes) << ", L2 "
       << bytes_string(dev.l2_bytes) << "\n";
  }
  os << "\nbackends (priority order):\n";
  for (const std::string& b : flashcore::backend_descriptions()) os << "  " << b << "\n";
  if (const char* env = std::getenv("FLASHCORE_BACKEND"); env != nullptr && *env)
    os << "\nFLASHCORE_BACKEND=" << env << " forces that backend\n";
  std::cout << os.str() << std::flush;
  return kOk;
}

int dispatch(int argc, char** argv, Runtime& rt) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return cmd_run({}, true, rt);
  const std::string cmd = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    if (!rest.empty() && rest[0] == "run") std::cout << kRunHelp;
    else std::cout << kMainHelp << "\n" << kRunHelp;
    return kOk;
  }
  if (cmd == "--version" || cmd == "version") {
    std::cout << "flashcore " << flashcore::version() << "\n";
    return kOk;
  }
  if (cmd == "run") return cmd_run(rest, false, rt);
  if (cmd == "info") return cmd_info(rest, rt);
  if (!cmd.empty() && cmd[0] == '-') return cmd_run(args, true, rt);  // flags for the main job
  throw UsageError("unknown command '" + cmd + "' (commands: run, info, help)");
}

int report_error(const std::string& msg, int code) {
  std::cout << std::flush;
  std::cerr << "flashcore: error: " << one_line(msg) << std::endl;
  return code;
}

}  // namespace fcapp

int main(int argc, char** argv) {
  using namespace fcapp;
  int code = kRuntime;
  {
    Runtime rt;  // finalizes Kokkos on every path, after the device buffers are gone
    try {
      code = dispatch(argc, argv, rt);
    } catch (const UsageError& e) {
      code = report_error(e.what(), kUsage);
    } catch (const RunError& e) {
      code = report_error(e.what(), kRuntime);
    } catch (const DeviceError& e) {
      code = report_error(std::string("CUDA: ") + e.what(), kRuntime);
    } catch (const flashcore::Error& e) {
      code = report_error(e.what(), kRuntime);
    } catch (const std::bad_alloc&) {
      code = report_error("out of host memory", kRuntime);
    } catch (const std::exception& e) {
      code = report_error(e.what(), kRuntime);
    } catch (...) {
      code = report_error("unknown exception", kRuntime);
    }
  }
  return code;
}
