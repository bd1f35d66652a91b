// The flashcore tool: its usage texts and the flags of `run`.
#include <cctype>
#include <cmath>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli.hpp"

namespace fcapp {

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
    "  --dtype T                fp32 | fp16 | bf16 | fp8_e4m3 (also e4m3, fp8, float8_e4m3fn;\n"
    "                           default fp16, or that of --q); fp8_e4m3: e4m3 inputs, forward only\n"
    "  --out-dtype T            with fp8_e4m3 inputs: O's dtype, fp16 | bf16 (default bf16)\n"
    "  --descale-q X, --descale-k X, --descale-v X\n"
    "                           with fp8_e4m3 inputs: Q, K, V hold e4m3 values standing for X times\n"
    "                           them (per-tensor descales, finite and > 0; default 1)\n"
    "  --causal                 causal mask, aligned to the bottom-right corner\n"
    "  --scale X                softmax scale (default 1/sqrt(head_dim))\n"
    "  --window-left N          sliding window: keys a row sees left of its (bottom-right\n"
    "  --window-right N           aligned) diagonal, and right of it (default -1: unbounded)\n"
    "  --softcap X              logit soft-capping x -> X tanh(x / X) (default 0: none)\n"
    "  --alibi                  ALiBi with the slopes 2^(-8 (h+1) / heads) of query head h\n"
    "  --sinks X                attention sinks: logit X joins every row's softmax denominator\n"
    "  --layout L               bshd: tensors (B,S,H,D) | bhsd: (B,H,S,D) (default bshd)\n"
    "sequences of different lengths (each sequence its own causal diagonal; seqlen_q and\n"
    "seqlen_k become the bounds, by default the longest sequence):\n"
    "  --seqlens-q N,N,...      varlen Q: one query length per sequence (0 allowed), packed\n"
    "                           (total_q, Hq, D); the list gives the batch; LSE (Hq, total_q)\n"
    "  --seqlens-k N,N,...      keys of each sequence: KV-cache lengths (seqlens_k) of a K/V cache\n"
    "                           of --seqlen-k rows per sequence (default the longest)\n"
    "  --varlen-k               K/V packed (total_k, Hkv, D) by the key lengths (cu_seqlens_k)\n"
    "  --page-size N            paged K/V: pools of N-row pages (a multiple of 16) reached through\n"
    "                           a block table holding a random permutation of the pages (--seed)\n"
    "inputs:\n"
    "  --seed N                 seed of the random inputs (default 0): Q, K ~ normal(0,1),\n"
    "                           V ~ uniform(-1,1), rounded to the dtype, never zero (fp8_e4m3:\n"
    "                           rounded to e4m3, and the descales apply on top)\n"
    "  --q F --k F --v F        read Q, K, V from .npy files instead: C order, little-endian\n"
    "                           '<f4' (fp32), '<f2' (fp16), '<u2'/'<i2' holding bf16 bits\n"
    "                           (with --dtype bf16) or '|u1'/'|i1' holding e4m3 bytes (with\n"
    "                           --dtype fp8_e4m3); shape (B,S,H,D) for bshd, (B,H,S,D) for\n"
    "                           bhsd; the shapes give B, S, H and D\n"
    "outputs:\n"
    "  --out-o F                write O as .npy (dtype and layout of the inputs; bf16 as '<u2';\n"
    "                           with fp8_e4m3 inputs of --out-dtype; e4m3 inputs as '|u1')\n"
    "  --out-lse F              write LSE as .npy ('<f4', shape (B,Hq,Lq))\n"
    "  --out-q F, --out-k F, --out-v F   write the inputs as .npy\n"
    "  --no-lse                 do not compute LSE\n"
    "  --backward               then the backward pass (dQ, dK, dV) with a random dO (--seed), in the\n"
    "                           forward's memory, timed; with --validate checked against the fp64\n"
    "                           backward oracle (needs the LSE; no --page-size, no fp8_e4m3)\n"
    "  --deterministic          with --backward: bitwise-reproducible gradients (Options::deterministic;\n"
    "                           cuda-flash then computes dQ in its own kernel instead of with atomics)\n"
    "execution:\n"
    "  --backend NAME           force a backend (default: automatic, or FLASHCORE_BACKEND);\n"
    "                           `flashcore info` lists them\n"
    "  --repeat N               timed calls (default 10; 0: no timing)\n"
    "  --warmup N               untimed calls before timing, >= 1 (default 1 on the host,\n"
    "                           3 on a GPU); the first one's output is validated too\n"
    "  --validate               compare O and LSE with the fp64 reference and check the bound\n"
    "                           (reference backends: src/verify/tolerance.hpp; tuned kernels:\n"
    "                           2 x the error of a naive same-precision computation + a floor;\n"
    "                           fp8_e4m3 inputs: the output dtype's reference bound, and on tuned\n"
    "                           kernels the fp8 bound (2^-4 + keys * 2^-18) * max|v| per element\n"
    "                           plus an RMS error <= 0.1 * RMS of O)\n"
    "  --no-validate            skip validation (the main job validates by default)\n"
    "  --json                   print one JSON object on stdout instead of the report\n"
    "                           (timing: TFLOP/s and GB/s of Q, O and the K/V rows the queries see)\n"
    "  -h, --help               this text\n"
    "\n"
    "Memory: a forced backend gets the memory it reads (GPU memory for CUDA backends). Otherwise\n"
    "the data goes to GPU memory when the build has the CUDA runtime, a device is present and a\n"
    "device backend accepts the problem, else it stays in host memory.\n"
    "exit status: 0 ok, 1 runtime error, 2 usage error or invalid problem, 3 validation failed\n";

// ---------------------------------------------------------------------------------------------
// Command line of `run`
// ---------------------------------------------------------------------------------------------

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

// A comma-separated list of lengths, each in [0, 2^30].
std::vector<int> parse_lengths(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (item.empty())
      throw UsageError(flag + ": '" + text + "' is not a comma-separated list of lengths (an empty entry)");
    out.push_back(static_cast<int>(parse_integer(flag, item, 0, 1 << 30)));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
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
    } else if (flag == "--out-dtype") {
      const std::string v = take();
      try {
        a.out_dtype = flashcore::parse_dtype(v);
      } catch (const flashcore::Error& e) {
        throw UsageError(std::string("--out-dtype: ") + e.what());
      }
      if (a.out_dtype != DType::F16 && a.out_dtype != DType::BF16)
        throw UsageError("--out-dtype: '" + v + "' is not fp16 or bf16 (the outputs of fp8_e4m3 inputs)");
      a.out_dtype_set = true;
    } else if (flag == "--descale-q") {
      a.descale_q = parse_real(flag, take());
    } else if (flag == "--descale-k") {
      a.descale_k = parse_real(flag, take());
    } else if (flag == "--descale-v") {
      a.descale_v = parse_real(flag, take());
    } else if (flag == "--causal") {
      no_value();
      a.causal = true;
    } else if (flag == "--scale") {
      a.scale = parse_real(flag, take());
    } else if (flag == "--window-left") {
      a.window_left = static_cast<int>(parse_integer(flag, take(), INT_MIN, INT_MAX));
    } else if (flag == "--window-right") {
      a.window_right = static_cast<int>(parse_integer(flag, take(), INT_MIN, INT_MAX));
    } else if (flag == "--softcap") {
      a.softcap = parse_real(flag, take());
    } else if (flag == "--alibi") {
      no_value();
      a.alibi = true;
    } else if (flag == "--sinks") {
      a.sinks = true;
      a.sink_value = parse_real(flag, take());
      if (!std::isfinite(a.sink_value) || std::fabs(a.sink_value) > 1e30)
        throw UsageError("--sinks: " + std::to_string(a.sink_value) + " is not a finite fp32 logit");
    } else if (flag == "--layout") {
      const std::string v = take();
      if (v == "bshd" || v == "BSHD") a.layout = Layout::BSHD;
      else if (v == "bhsd" || v == "BHSD") a.layout = Layout::BHSD;
      else throw UsageError("--layout: '" + v + "' is not bshd or bhsd");
    } else if (flag == "--seqlens-q") {
      a.seqlens_q = parse_lengths(flag, take());
    } else if (flag == "--seqlens-k") {
      a.seqlens_k = parse_lengths(flag, take());
    } else if (flag == "--varlen-k") {
      no_value();
      a.varlen_k = true;
    } else if (flag == "--page-size") {
      a.page_size = static_cast<int>(parse_integer(flag, take(), 1, 1 << 16));
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
    } else if (flag == "--backward") {
      no_value();
      a.backward = true;
    } else if (flag == "--deterministic") {
      no_value();
      a.deterministic = true;
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
  if (!a.lse && a.backward) throw UsageError("--backward needs the forward's LSE: drop --no-lse");
  if (a.deterministic && !a.backward) throw UsageError("--deterministic applies to --backward only (the forward always is)");
  if (a.backward && a.dtype == DType::E4M3)
    throw UsageError("--backward: fp8_e4m3 inputs have no backward pass (the forward only)");
  if (a.backward && a.page_size > 0)
    throw UsageError("--backward: the backward pass has no paged K/V (drop --page-size; --varlen-k packs K/V)");
  if (files != 0 && a.has_sequences())
    throw UsageError("--q, --k and --v: .npy inputs take no --seqlens-q, --seqlens-k, --varlen-k or --page-size "
                     "(random inputs only)");
  if (a.varlen_k && a.page_size > 0)
    throw UsageError("--varlen-k and --page-size exclude each other (paged K/V take their lengths from --seqlens-k)");
  if (!a.seqlens_q.empty() && !a.seqlens_k.empty() && a.seqlens_q.size() != a.seqlens_k.size())
    throw UsageError("--seqlens-k: " + std::to_string(a.seqlens_k.size()) + " lengths, but --seqlens-q has " +
                     std::to_string(a.seqlens_q.size()) + " (one of each per sequence)");
  return a;
}

}  // namespace fcapp
