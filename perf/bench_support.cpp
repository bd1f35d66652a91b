// Support code of flashcore_bench (see bench_support.hpp).
#include "bench_support.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/numeric.hpp"
#include "verify/elements.hpp"
#include "verify/oracle.hpp"
#include "verify/tolerance.hpp"

#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
#include <cuda_runtime_api.h>
#endif

namespace fcbench {

using flashcore::DType;

std::string shape_name(const Shape& s) {
  if (s.six())
    return "B" + std::to_string(s.b) + "_Hq" + std::to_string(s.h) + "_Hkv" + std::to_string(s.heads_kv()) + "_Lq" +
           std::to_string(s.seqlen_q()) + "_Lk" + std::to_string(s.l) + "_D" + std::to_string(s.d);
  return "B" + std::to_string(s.b) + "_H" + std::to_string(s.h) + "_L" + std::to_string(s.l) + "_D" +
         std::to_string(s.d);
}

namespace {
long long total_of(const std::vector<int>& v) {
  long long t = 0;
  for (int x : v) t += x;
  return t;
}
}  // namespace

std::string Layout::name() const {
  if (!tagged) return "";
  std::string n;
  if (!varlen.empty()) {
    n = "varlen:T" + std::to_string(total_of(varlen));
  } else if (!cache_lens.empty()) {
    n = "mixed:T" + std::to_string(total_of(cache_lens));
  }
  if (page_size > 0) n += (n.empty() ? "" : "+") + std::string("paged:") + std::to_string(page_size);
  return n.empty() ? "contiguous" : n;
}

std::string Variant::name() const {
  std::string n;
  auto add = [&](const std::string& part) { n += (n.empty() ? "" : "+") + part; };
  auto num = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", x);
    return std::string(b);
  };
  if (window_left >= 0 || window_right >= 0) add("win" + std::to_string(window_left) + "_" + std::to_string(window_right));
  if (softcap > 0) add("cap" + num(softcap));
  if (alibi) add("alibi");
  if (sinks) add("sinks" + num(sink));
  return n;
}

HeadParams head_params(const Case& c) {
  HeadParams hp;
  const int H = c.shape.h;
  if (c.variant.alibi)
    for (int h = 0; h < H; ++h) hp.alibi_slopes.push_back(static_cast<float>(std::exp2(-8.0 * (h + 1) / H)));
  if (c.variant.sinks) hp.sinks.assign(H, static_cast<float>(c.variant.sink));
  return hp;
}

std::string bench_name(const std::string& backend, const Case& c) {
  const std::string v = c.variant.name(), l = c.layout.name();
  return "attn/" + backend + "/" + flashcore::to_string(c.dtype) + "/" + (c.causal ? "causal" : "full") + "/" +
         shape_name(c.shape) + (l.empty() ? "" : "/" + l) + (v.empty() ? "" : "/" + v);
}

flashcore::Problem make_problem(const Case& c) {
  const Shape& s = c.shape;
  flashcore::Problem p =
      flashcore::Problem::make(s.b, s.h, s.heads_kv(), s.seqlen_q(), s.l, s.d, c.dtype, c.causal);
  p.window_left = c.variant.window_left;
  p.window_right = c.variant.window_right;
  p.softcap = static_cast<float>(c.variant.softcap);
  return p;
}

double problem_bytes(const flashcore::Problem& p) {
  const double es = flashcore::dtype_size(p.dtype), oes = flashcore::dtype_size(p.o_dtype());
  const double q = double(p.batch) * p.seqlen_q * p.heads_q * p.head_dim;
  const double kv = double(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim;
  return es * (q + 2 * kv) + oes * q;
}

// ---------------------------------------------------------------------------------------------
// Sequence layouts
// ---------------------------------------------------------------------------------------------

namespace {

inline std::uint64_t splitmix64(std::uint64_t* state);

// FLOPs of one sequence of a case (Geometry::flops).
double sequence_flops(const flashcore::Problem& p, int lq, int lk) {
  if (lq <= 0 || lk <= 0) return 0;
  flashcore::Problem one = flashcore::Problem::make(1, p.heads_q, p.heads_kv, lq, lk, p.head_dim, p.dtype, p.causal);
  one.window_left = p.window_left;
  one.window_right = p.window_right;
  if (p.causal && lq != lk && !one.has_window()) {  // bottom-right: query i sees keys 0 .. i + lk - lq
    double pairs = 0;
    for (int i = 0; i < lq; ++i) pairs += std::min<double>(lk, std::max<double>(0, double(i) + lk - lq + 1));
    return 4.0 * p.heads_q * p.head_dim * pairs;
  }
  return one.flops();
}

std::vector<int> offsets(const std::vector<int>& lens) {
  std::vector<int> cu(1, 0);
  for (int x : lens) cu.push_back(cu.back() + x);
  return cu;
}

}  // namespace

Geometry geometry(const Case& c) {
  Geometry g;
  g.problem = make_problem(c);
  flashcore::Problem& p = g.problem;
  const Layout& lay = c.layout;
  const int B = p.batch, Hq = p.heads_q, Hkv = p.heads_kv, D = p.head_dim;
  g.q_elems = std::int64_t(B) * p.seqlen_q * Hq * D;
  g.kv_elems = std::int64_t(B) * p.seqlen_k * Hkv * D;
  g.len_q.assign(B, p.seqlen_q);
  g.len_k.assign(B, p.seqlen_k);
  if (!lay.tagged) {  // the suite's usual cases: counted as before
    g.bytes = problem_bytes(p);
    g.flops = p.flops();
    return g;
  }
  if (!lay.varlen.empty() && (lay.page_size > 0 || !lay.cache_lens.empty()))
    throw std::invalid_argument("a varlen case has neither pages nor cache lengths in this suite");
  if (!lay.varlen.empty()) {
    if (static_cast<int>(lay.varlen.size()) != B) throw std::invalid_argument("varlen: batch != sequences");
    g.len_q = g.len_k = lay.varlen;
    g.cu_q = g.cu_k = offsets(lay.varlen);
    p.total_q = p.total_k = g.cu_q.back();
    g.q_elems = std::int64_t(p.total_q) * Hq * D;
    g.kv_elems = std::int64_t(p.total_k) * Hkv * D;
  } else if (!lay.cache_lens.empty()) {
    if (static_cast<int>(lay.cache_lens.size()) != B) throw std::invalid_argument("mixed: batch != sequences");
    g.len_k = g.seqlens_k = lay.cache_lens;
  }
  if (lay.page_size > 0) {
    const int P = lay.page_size;
    p.page_size = P;
    p.pages_per_seq = (p.seqlen_k + P - 1) / P;
    std::vector<int> used(B);
    int pages = 0;
    for (int b = 0; b < B; ++b) pages += used[b] = (g.len_k[b] + P - 1) / P;  // the valid keys' pages only
    p.num_pages = std::max(1, pages);
    // Pages in a shuffled order (Fisher-Yates, deterministic per case), so that a sequence's pages
    // are scattered over the pool as a cache that has been in use for a while would have them.
    std::vector<int> perm(p.num_pages);
    for (int i = 0; i < p.num_pages; ++i) perm[i] = i;
    std::uint64_t st = 0x9A6E5EEDull ^ (std::uint64_t(P) << 32) ^ std::uint64_t(p.num_pages);
    for (int i = p.num_pages - 1; i > 0; --i) std::swap(perm[i], perm[splitmix64(&st) % std::uint64_t(i + 1)]);
    g.block_table.assign(std::size_t(B) * p.pages_per_seq, 0);  // entries past the used pages: page 0, never read
    int next = 0;
    for (int b = 0; b < B; ++b)
      for (int j = 0; j < used[b]; ++j) g.block_table[std::size_t(b) * p.pages_per_seq + j] = perm[next++];
    p.k = {std::int64_t(P) * Hkv * D, std::int64_t(Hkv) * D, D};  // (page, row, head, dim)
    p.v = p.k;
    g.kv_elems = std::int64_t(p.num_pages) * P * Hkv * D;
  }
  const double es = flashcore::dtype_size(p.dtype), oes = flashcore::dtype_size(p.o_dtype());
  double rows_q = 0, rows_k = 0;
  for (int b = 0; b < B; ++b) {
    rows_q += g.len_q[b];
    rows_k += g.len_k[b];
    g.flops += sequence_flops(p, g.len_q[b], g.len_k[b]);
  }
  g.bytes = (es + oes) * rows_q * Hq * D + es * 2.0 * rows_k * Hkv * D;
  return g;
}

std::vector<int> Geometry::arrays() const {
  std::vector<int> a;
  for (const auto* v : {&cu_q, &cu_k, &seqlens_k, &block_table}) a.insert(a.end(), v->begin(), v->end());
  return a;
}

void Geometry::set_arrays(flashcore::Tensors* t, const int* copy) const {
  std::size_t at = 0;
  auto next = [&](const std::vector<int>& v) -> const int* {
    const int* ptr = v.empty() ? nullptr : copy + at;
    at += v.size();
    return ptr;
  };
  t->cu_seqlens_q = next(cu_q);
  t->cu_seqlens_k = next(cu_k);
  t->seqlens_k = next(seqlens_k);
  t->block_table = next(block_table);
}

// ---------------------------------------------------------------------------------------------
// Flags
// ---------------------------------------------------------------------------------------------

namespace {

std::vector<std::string> split(const std::string& s, const std::string& seps) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (seps.find(ch) != std::string::npos) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (ch != ' ') {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

bool parse_double(const std::string& s, double* out) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parse_int(const std::string& s, int* out) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (end == s.c_str() || *end != '\0' || v < -1000000000L || v > 1000000000L) return false;
  *out = static_cast<int>(v);
  return true;
}

// "l1,l2,...", where "LxN" stands for N sequences of length L.
bool parse_lengths(const std::string& s, std::vector<int>* out) {
  out->clear();
  for (const std::string& item : split(s, ",")) {
    const auto x = item.find('x');
    int len = 0, n = 1;
    if (!parse_int(item.substr(0, x), &len) || len < 0) return false;
    if (x != std::string::npos && (!parse_int(item.substr(x + 1), &n) || n < 1 || n > 100000)) return false;
    out->insert(out->end(), static_cast<std::size_t>(n), len);
  }
  return !out->empty();
}

// "N1,N2,...:lengths" -> the numbers before the colon and the lengths after it.
bool parse_with_lengths(const std::string& s, std::size_t numbers, std::vector<int>* head, std::vector<int>* lens) {
  const auto colon = s.find(':');
  if (colon == std::string::npos) return false;
  const std::vector<std::string> f = split(s.substr(0, colon), ",");
  if (f.size() != numbers) return false;
  head->assign(numbers, 0);
  for (std::size_t i = 0; i < numbers; ++i)
    if (!parse_int(f[i], &(*head)[i]) || (*head)[i] < 1) return false;
  return parse_lengths(s.substr(colon + 1), lens);
}

}  // namespace

bool parse_sequence_lengths(const std::string& text, std::vector<int>* out) { return parse_lengths(text, out); }

bool parse_variant(const std::string& text, Variant* out, std::string* bad_part) {
  Variant var;
  for (const std::string& part : split(text, "+")) {
    const auto colon = part.find(':');
    const std::string key = part.substr(0, colon), arg = colon == std::string::npos ? "" : part.substr(colon + 1);
    const std::vector<std::string> nums = split(arg, ",");
    bool ok = true;
    if (key == "none") {
    } else if (key == "window" && nums.size() == 2) {
      ok = parse_int(nums[0], &var.window_left) && parse_int(nums[1], &var.window_right);
    } else if (key == "softcap" && nums.size() == 1) {
      var.softcap = std::atof(nums[0].c_str());
      ok = var.softcap > 0;
    } else if (key == "alibi" && nums.empty()) {
      var.alibi = true;
    } else if (key == "sinks" && nums.size() == 1) {
      var.sinks = true;
      var.sink = std::atof(nums[0].c_str());
    } else {
      ok = false;
    }
    if (!ok) {
      if (bad_part != nullptr) *bad_part = part;
      return false;
    }
  }
  *out = var;
  return true;
}


void print_usage(const char* argv0) {
  std::printf(
      "usage: %s [own flags] [Google Benchmark flags]\n"
      "Own flags (parsed first):\n"
      "  --backends=a,b,-c     only these backends; '-name' excludes one (default: all registered)\n"
      "  --shapes=B,H,L,D;...  shapes instead of the built-in GPU and host lists\n"
      "  --dtypes=fp16,bf16    dtypes (default: fp16,bf16 on the GPU list; a subset of fp32,fp16,bf16 on\n"
      "                        the host list)\n"
      "  --causal=0|1|both     full, causal or both (default both)\n"
      "  --variants=V;V...     attention variants, each case once per V: none, window:L,R, softcap:X,\n"
      "                        alibi, sinks:X, joined by '+' (e.g. window:255,0+softcap:30); default none\n"
      "Sequence cases (flashcore.hpp, \"Sequences\"; they replace the built-in lists unless --shapes is\n"
      "given too; fp16 unless --dtypes; causal, bottom-right, unless --causal=0; names end in the layout):\n"
      "  --decode=B,Hq,Hkv,Lq,Lk,D;...\n"
      "                        decode shapes, K/V contiguous (B, Lk, Hkv, D): layout 'contiguous'\n"
      "  --paged=P,P,...       also each --decode and --mixed case with K/V in pages of P rows (a pool of\n"
      "                        the valid keys' pages, shuffled block table): layout 'paged:P'\n"
      "  --mixed=Hq,Hkv,Lq,D:l1,l2,...;...\n"
      "                        a batch of one sequence per cache length l_b (Tensors::seqlens_k; K/V\n"
      "                        (B, max l, Hkv, D)), Lq queries each: layout 'mixed:T<sum>'\n"
      "  --varlen=H,D:l1,l2,...;...\n"
      "                        packed sequences of lengths l_b (cu_seqlens_q/k, Hq = Hkv = H, Lq = Lk):\n"
      "                        layout 'varlen:T<sum>'; followed by the fixed-length problem of the same\n"
      "                        tokens, B = sequences, L = sum/B ('contiguous'). LxN = N times L\n"
      "  Bytes (counter 'bytes', and 'bytes_per_call'): Q read, O written, K and V read for the valid keys.\n"
      "  --device-only         only device backends on the GPU list\n"
      "  --host-only           only host backends on the host list\n"
      "  --quick               fewer repetitions, shorter measurements\n"
      "  --no-check            skip the output check (poisoned output, fp64 check of sampled rows)\n"
      "  --timing=auto|graph|launches\n"
      "                        device timing: CUDA graph of N calls with fallback to back-to-back\n"
      "                        launches (auto), graph only (a capture failure is an error), launches only\n"
      "  --replay-ms=X         a timed replay (N calls) lasts at least X ms (default 1)\n"
      "  --rep-ms=X            GPU time per repetition, several replays (default 10, quick 5)\n"
      "  --reps=N              repetitions per benchmark (default device 10 / host 5; quick 5 / 3)\n"
      "  --host-min-time=S     seconds per host repetition (default 0.2, quick 0.05)\n"
      "  --max-seconds=S       benchmarks that would start after S seconds are skipped (reported as\n"
      "                        errors), so the run ends in time with complete output (default: no limit)\n"
      "Names: attn/<backend>/<dtype>/<causal|full>/B<b>_H<h>_L<l>_D<d> (sequence cases:\n"
      "B<b>_Hq<h>_Hkv<h>_Lq<l>_Lk<l>_D<d>/<layout>); --benchmark_filter=REGEX selects\n"
      "among them, --benchmark_list_tests=true lists them, --benchmark_out=F --benchmark_out_format=json\n"
      "writes JSON. Reported time is per call (median over repetitions).\n",
      argv0);
}

bool parse_flags(int* argc, char** argv, Config* cfg) {
  int out = 1;
  std::string own;
  for (int i = 1; i < *argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag, std::string* v) {
      const std::string f = std::string(flag) + "=";
      if (!starts_with(a, f)) return false;
      *v = a.substr(f.size());
      return true;
    };
    std::string v;
    bool mine = true;
    if (a == "--help" || a == "-h") {
      print_usage(argv[0]);
      std::exit(0);
    } else if (value("--backends", &v)) {
      cfg->backends_only.clear();
      cfg->backends_skip.clear();
      for (const std::string& n : split(v, ",")) {
        if (n[0] == '-' || n[0] == '!') {
          if (n.size() > 1) cfg->backends_skip.push_back(n.substr(1));
        } else if (n != "all") {
          cfg->backends_only.push_back(n);
        }
      }
    } else if (value("--shapes", &v)) {
      cfg->shapes.clear();
      for (const std::string& one : split(v, ";/")) {
        const std::vector<std::string> f = split(one, ",x");
        Shape s;
        if (f.size() != 4 || !parse_int(f[0], &s.b) || !parse_int(f[1], &s.h) || !parse_int(f[2], &s.l) ||
            !parse_int(f[3], &s.d) || s.b < 1 || s.h < 1 || s.l < 1 || s.d < 1) {
          std::fprintf(stderr, "flashcore_bench: bad shape '%s' in --shapes (want B,H,L,D;B,H,L,D...)\n",
                       one.c_str());
          return false;
        }
        cfg->shapes.push_back(s);
      }
    } else if (value("--dtypes", &v)) {
      cfg->dtypes.clear();
      for (const std::string& n : split(v, ",")) {
        try {
          cfg->dtypes.push_back(flashcore::parse_dtype(n));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "flashcore_bench: --dtypes: %s\n", e.what());
          return false;
        }
      }
    } else if (value("--variants", &v)) {
      cfg->variants.clear();
      for (const std::string& one : split(v, ";/")) {
        Variant var;
        std::string bad;
        if (!parse_variant(one, &var, &bad)) {
          std::fprintf(stderr,
                       "flashcore_bench: bad variant '%s' in --variants (want none, window:L,R, softcap:X, alibi, "
                       "sinks:X, joined by '+'; variants separated by ';')\n",
                       bad.c_str());
          return false;
        }
        cfg->variants.push_back(var);
      }
    } else if (value("--decode", &v)) {
      cfg->decode.clear();
      for (const std::string& one : split(v, ";/")) {
        const std::vector<std::string> f = split(one, ",x");
        Shape s;
        bool ok = f.size() == 6 && parse_int(f[0], &s.b) && parse_int(f[1], &s.h) && parse_int(f[2], &s.hkv) &&
                  parse_int(f[3], &s.lq) && parse_int(f[4], &s.l) && parse_int(f[5], &s.d);
        ok = ok && s.b >= 1 && s.h >= 1 && s.hkv >= 1 && s.lq >= 1 && s.l >= 1 && s.d >= 1;
        if (!ok) {
          std::fprintf(stderr, "flashcore_bench: bad shape '%s' in --decode (want B,Hq,Hkv,Lq,Lk,D;...)\n", one.c_str());
          return false;
        }
        cfg->decode.push_back(s);
      }
    } else if (value("--paged", &v)) {
      cfg->paged.clear();
      for (const std::string& n : split(v, ",")) {
        int ps = 0;
        if (!parse_int(n, &ps) || ps < 1) {
          std::fprintf(stderr, "flashcore_bench: bad page size '%s' in --paged (want P,P,...)\n", n.c_str());
          return false;
        }
        cfg->paged.push_back(ps);
      }
    } else if (value("--mixed", &v) || value("--varlen", &v)) {
      const bool mixed = starts_with(a, "--mixed");
      std::vector<Case>& list = mixed ? cfg->mixed : cfg->varlen;
      list.clear();
      for (const std::string& one : split(v, ";/")) {
        std::vector<int> head, lens;
        if (!parse_with_lengths(one, mixed ? 4 : 2, &head, &lens) || total_of(lens) < 1 ||
            total_of(lens) > 2000000000LL) {
          std::fprintf(stderr, "flashcore_bench: bad batch '%s' in %s (want %s:l1,l2,... or L1xN,...)\n", one.c_str(),
                       mixed ? "--mixed" : "--varlen", mixed ? "Hq,Hkv,Lq,D" : "H,D");
          return false;
        }
        Case c;
        c.layout.tagged = true;
        c.shape.b = static_cast<int>(lens.size());
        c.shape.l = std::max(1, *std::max_element(lens.begin(), lens.end()));
        if (mixed) {
          c.shape.h = head[0];
          c.shape.hkv = head[1];
          c.shape.lq = head[2];
          c.shape.d = head[3];
          c.layout.cache_lens = lens;
        } else {
          c.shape.h = head[0];
          c.shape.d = head[1];
          c.layout.varlen = lens;
        }
        list.push_back(c);
      }
    } else if (value("--causal", &v)) {
      if (v == "0" || v == "full" || v == "false" || v == "no") {
        cfg->causal = 0;
      } else if (v == "1" || v == "causal" || v == "true" || v == "yes") {
        cfg->causal = 1;
      } else if (v == "both" || v == "-1") {
        cfg->causal = -1;
      } else {
        std::fprintf(stderr, "flashcore_bench: --causal=%s: want 0, 1 or both\n", v.c_str());
        return false;
      }
    } else if (a == "--device-only") {
      cfg->device = true;
      cfg->host = false;
    } else if (a == "--host-only") {
      cfg->device = false;
      cfg->host = true;
    } else if (a == "--quick") {
      cfg->quick = true;
    } else if (a == "--no-check") {
      cfg->check = false;
    } else if (value("--timing", &v)) {
      if (v != "auto" && v != "graph" && v != "launches") {
        std::fprintf(stderr, "flashcore_bench: --timing=%s: want auto, graph or launches\n", v.c_str());
        return false;
      }
      cfg->timing = v;
    } else if (value("--replay-ms", &v)) {
      if (!parse_double(v, &cfg->replay_ms) || cfg->replay_ms <= 0) {
        std::fprintf(stderr, "flashcore_bench: bad --replay-ms=%s\n", v.c_str());
        return false;
      }
    } else if (value("--rep-ms", &v)) {
      if (!parse_double(v, &cfg->rep_ms) || cfg->rep_ms <= 0) {
        std::fprintf(stderr, "flashcore_bench: bad --rep-ms=%s\n", v.c_str());
        return false;
      }
    } else if (value("--reps", &v)) {
      if (!parse_int(v, &cfg->reps) || cfg->reps < 1) {
        std::fprintf(stderr, "flashcore_bench: bad --reps=%s\n", v.c_str());
        return false;
      }
    } else if (value("--max-seconds", &v)) {
      if (!parse_double(v, &cfg->max_seconds) || cfg->max_seconds < 0) {
        std::fprintf(stderr, "flashcore_bench: bad --max-seconds=%s\n", v.c_str());
        return false;
      }
    } else if (value("--host-min-time", &v)) {
      if (!parse_double(v, &cfg->host_min_time) || cfg->host_min_time <= 0) {
        std::fprintf(stderr, "flashcore_bench: bad --host-min-time=%s\n", v.c_str());
        return false;
      }
    } else {
      mine = false;
    }
    if (mine) {
      own += (own.empty() ? "" : " ") + a;
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  argv[out] = nullptr;
  cfg->args = own;
  return true;
}

namespace {
std::chrono::steady_clock::time_point g_start = std::chrono::steady_clock::now();
}

void start_clock() { g_start = std::chrono::steady_clock::now(); }

std::string out_of_time(const Config& cfg) {
  if (cfg.max_seconds <= 0) return {};
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - g_start).count();
  if (s < cfg.max_seconds) return {};
  char buf[160];
  std::snprintf(buf, sizeof buf, "skipped: the --max-seconds=%g budget of this run was used up", cfg.max_seconds);
  return buf;
}

bool backend_selected(const Config& cfg, const std::string& name) {
  if (std::find(cfg.backends_skip.begin(), cfg.backends_skip.end(), name) != cfg.backends_skip.end()) return false;
  if (cfg.backends_only.empty()) return true;
  return std::find(cfg.backends_only.begin(), cfg.backends_only.end(), name) != cfg.backends_only.end();
}

bool has_sequence_cases(const Config& cfg) {
  return !cfg.decode.empty() || !cfg.mixed.empty() || !cfg.varlen.empty();
}

std::vector<Case> sequence_cases(const Config& cfg) {
  std::vector<Case> out;
  std::set<std::string> seen;  // once each (two --varlen batches may share their fixed-length problem)
  auto add = [&](const Case& c) {
    if (seen.insert(data_key(c)).second) out.push_back(c);
  };
  auto with_pages = [&](const Case& c) {
    add(c);
    for (int ps : cfg.paged) {
      Case p = c;
      p.layout.page_size = ps;
      add(p);
    }
  };
  for (const Shape& s : cfg.decode) {
    Case c;
    c.shape = s;
    c.layout.tagged = true;
    with_pages(c);
  }
  for (const Case& c : cfg.mixed) with_pages(c);
  for (const Case& c : cfg.varlen) {
    add(c);
    Case fixed;  // the fixed-length problem of the same tokens
    const long long total = total_of(c.layout.varlen);
    fixed.shape = Shape{c.shape.b, c.shape.h, static_cast<int>(std::max(1LL, (total + c.shape.b / 2) / c.shape.b)),
                        c.shape.d};
    fixed.layout.tagged = true;
    add(fixed);
  }
  return out;
}

std::vector<Shape> gpu_shapes() {
  return {{1, 8, 512, 64},    {1, 8, 1024, 64},   {1, 8, 2048, 64},     {4, 16, 1024, 64},  {16, 16, 512, 64},
          {2, 16, 4096, 64},  {2, 16, 4096, 128}, {1, 16, 16384, 128}, {8, 32, 2048, 128}};
}

std::vector<Shape> host_shapes() { return {{1, 8, 128, 64}, {1, 8, 512, 64}, {1, 8, 1024, 64}, {4, 8, 64, 128}}; }

std::vector<DType> host_dtypes(const Shape& s) {
  // fp32 everywhere (the reference's native precision); fp16 and bf16 on the smaller shapes,
  // where the conversion cost shows most.
  if (s.l >= 1024) return {DType::F32, DType::F16};
  return {DType::F32, DType::F16, DType::BF16};
}

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

namespace {

inline std::uint64_t splitmix64(std::uint64_t* state) {
  std::uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1], 24 random bits.
inline float unit(std::uint64_t* st) { return (static_cast<float>(splitmix64(st) >> 40) + 1.0f) * (1.0f / 16777216.0f); }

inline void store(DType dt, unsigned char* base, std::int64_t i, float x) {
  switch (dt) {
    case DType::F32: std::memcpy(base + 4 * i, &x, 4); break;
    case DType::F16: {
      const std::uint16_t h = flashcore::numeric::float_to_half(x);
      std::memcpy(base + 2 * i, &h, 2);
      break;
    }
    case DType::BF16: {
      const std::uint16_t h = flashcore::numeric::float_to_bf16(x);
      std::memcpy(base + 2 * i, &h, 2);
      break;
    }
    case DType::E4M3: base[i] = flashcore::numeric::float_to_e4m3(x); break;
  }
}

// kind 0: normal(0, 1) (Box-Muller), kind 1: uniform(-1, 1).
void fill_tensor(std::vector<unsigned char>* buf, DType dt, std::int64_t n, int kind, std::uint64_t seed) {
  buf->assign(static_cast<std::size_t>(n) * flashcore::dtype_size(dt), 0);
  constexpr std::int64_t kChunk = 1 << 16;
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
  unsigned hw = std::thread::hardware_concurrency();
  const int nthreads = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>({hw ? hw : 1, 32, chunks})));
  auto work = [&](int t) {
    for (std::int64_t c = t; c < chunks; c += nthreads) {
      std::uint64_t st = seed ^ (0xD1B54A32D192ED03ull * static_cast<std::uint64_t>(c + 1));
      splitmix64(&st);
      const std::int64_t begin = c * kChunk, end = std::min(n, begin + kChunk);
      for (std::int64_t i = begin; i < end; i += 2) {
        float x0, x1;
        if (kind == 0) {
          const float r = std::sqrt(-2.0f * std::log(unit(&st)));
          const float a = 6.2831853f * unit(&st);
          x0 = r * std::cos(a);
          x1 = r * std::sin(a);
        } else {
          x0 = 2.0f * unit(&st) - 1.0f;
          x1 = 2.0f * unit(&st) - 1.0f;
        }
        store(dt, buf->data(), i, x0);
        if (i + 1 < end) store(dt, buf->data(), i + 1, x1);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < nthreads; ++t) threads.emplace_back(work, t);
  work(0);
  for (auto& th : threads) th.join();
}

}  // namespace

std::uint64_t case_seed(const Shape& s, DType dt) {
  std::uint64_t st = 0x5EEDF1A5C0DEull;
  std::uint64_t h = 0;
  std::vector<std::uint64_t> parts = {std::uint64_t(s.b), std::uint64_t(s.h), std::uint64_t(s.l), std::uint64_t(s.d),
                                      std::uint64_t(static_cast<int>(dt))};
  if (s.six()) parts.insert(parts.end(), {std::uint64_t(s.heads_kv()), std::uint64_t(s.seqlen_q())});
  for (std::uint64_t v : parts) {
    st ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h = splitmix64(&st);
  }
  return h;
}

namespace {
// Q of nq elements, K and V of nkv.
void fill_counts(HostInputs* in, DType dt, std::int64_t nq, std::int64_t nkv, std::uint64_t seed) {
  fill_tensor(&in->q, dt, nq, 0, seed ^ 0x1111111111111111ull);
  fill_tensor(&in->k, dt, nkv, 0, seed ^ 0x2222222222222222ull);
  fill_tensor(&in->v, dt, nkv, 1, seed ^ 0x3333333333333333ull);
}
}  // namespace

void fill_inputs(HostInputs* in, const Shape& s, DType dt, std::uint64_t seed) {
  in->shape = s;
  in->dtype = dt;
  fill_counts(in, dt, std::int64_t(s.b) * s.seqlen_q() * s.h * s.d, std::int64_t(s.b) * s.l * s.heads_kv() * s.d,
              seed);
}

namespace {

std::string joined(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// The logical inputs of a case (Q as stored; K, V batched or packed), the last one kept.
std::shared_ptr<const HostInputs> logical_inputs(const Case& c, const Geometry& g) {
  static std::shared_ptr<const HostInputs> kept;
  static std::string kept_key;
  const std::string key =
      shape_name(c.shape) + "/" + flashcore::to_string(c.dtype) + "/" + joined(c.layout.varlen);
  if (kept && kept_key == key) return kept;
  kept.reset();  // free it before making the next
  auto in = std::make_shared<HostInputs>();
  in->shape = c.shape;
  in->dtype = c.dtype;
  const flashcore::Problem& p = g.problem;
  std::uint64_t seed = case_seed(c.shape, c.dtype);
  if (!c.layout.varlen.empty()) {
    for (int x : c.layout.varlen) seed = splitmix64(&seed) ^ std::uint64_t(x);
    fill_counts(in.get(), c.dtype, std::int64_t(p.total_q) * p.heads_q * p.head_dim,
                std::int64_t(p.total_k) * p.heads_kv * p.head_dim, seed);
  } else {
    fill_inputs(in.get(), c.shape, c.dtype, seed);
  }
  kept = in;
  kept_key = key;
  return kept;
}

// Logical (B, Lk, Hkv, D) rows copied into the pages the block table gives them; the rows of a
// sequence's last page past its length stay zero.
std::vector<unsigned char> to_pages(const Geometry& g, const std::vector<unsigned char>& logical) {
  const flashcore::Problem& p = g.problem;
  const std::size_t es = flashcore::dtype_size(p.dtype);
  const std::size_t row = std::size_t(p.heads_kv) * p.head_dim * es;
  std::vector<unsigned char> pool(static_cast<std::size_t>(g.kv_elems) * es, 0);
  for (int b = 0; b < p.batch; ++b)
    for (int j = 0; j < g.len_k[b]; ++j) {
      const int page = g.block_table[std::size_t(b) * p.pages_per_seq + j / p.page_size];
      std::memcpy(pool.data() + (std::size_t(page) * p.page_size + j % p.page_size) * row,
                  logical.data() + (std::size_t(b) * p.seqlen_k + j) * row, row);
    }
  return pool;
}

}  // namespace

std::string data_key(const Case& c) {
  return shape_name(c.shape) + "/" + flashcore::to_string(c.dtype) + "/" + c.layout.name() + "/" +
         joined(c.layout.cache_lens) + "/" + joined(c.layout.varlen);
}

std::size_t CaseData::q_bytes() const { return static_cast<std::size_t>(g.q_elems) * flashcore::dtype_size(g.problem.dtype); }
std::size_t CaseData::o_bytes() const { return static_cast<std::size_t>(g.q_elems) * flashcore::dtype_size(g.problem.o_dtype()); }
std::size_t CaseData::kv_bytes() const { return static_cast<std::size_t>(g.kv_elems) * flashcore::dtype_size(g.problem.dtype); }

CaseData make_case_data(const Case& c) {
  CaseData d;
  d.g = geometry(c);
  d.in = logical_inputs(c, d.g);
  d.arrays = d.g.arrays();
  if (d.g.problem.page_size > 0) {
    d.k_pages = to_pages(d.g, d.in->k);
    d.v_pages = to_pages(d.g, d.in->v);
  }
  return d;
}

float load(DType dt, const void* base, std::int64_t i) {
  return static_cast<float>(flashcore::verify::load_element(dt, base, i));
}

bool backend_accepts(const std::string& backend, const flashcore::Problem& p, const flashcore::Tensors& t,
                     flashcore::MemoryLocation location, std::string* why) {
  flashcore::Options opts;
  opts.backend = backend;
  opts.location = location;
  try {
    const flashcore::Report r = flashcore::explain(p, t, opts);
    if (r.chosen == backend) return true;
    for (const auto& d : r.decisions)
      if (d.backend == backend) *why = d.reason;
    if (why->empty()) *why = "declined (no reason given)";
  } catch (const std::exception& e) {
    *why = e.what();
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Output check
// ---------------------------------------------------------------------------------------------

std::int64_t count_nonfinite(DType dt, const void* o, std::int64_t count) {
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < count; ++i)
    if (!std::isfinite(load(dt, o, i))) ++bad;
  return bad;
}

namespace {
// Whether all `count` output elements are finite; else *r says how many are not (r->ok false).
bool all_finite(DType dt, const void* o, std::int64_t count, CheckResult* r) {
  const std::int64_t bad = count_nonfinite(dt, o, count);
  if (bad == 0) return true;
  r->ok = false;
  r->message = "output check: " + std::to_string(bad) + " of " + std::to_string(count) +
               " output elements are not finite (poisoned output not written, or NaN/Inf computed)";
  return false;
}
}  // namespace

namespace {
// The bench check's bound: bench_check_bound of the dtype, or with fp8 inputs the fp8 kernel bound
// (tolerance::fp8_kernel_bound: P rounded to e4m3) with the whole V's largest |v| and every key.
flashcore::tolerance::Bound bench_bound(const flashcore::Problem& p, const HostInputs& in) {
  if (p.dtype != DType::E4M3) return flashcore::tolerance::bench_check_bound(p.dtype);
  double vmax = 0;
  const std::int64_t nv = static_cast<std::int64_t>(in.v.size());
  for (std::int64_t i = 0; i < nv; ++i) vmax = std::max(vmax, std::fabs(flashcore::verify::load_input(p, 'v', in.v.data(), i)));
  const flashcore::tolerance::Fp8KernelBound b = flashcore::tolerance::fp8_kernel_bound(p.o_dtype());
  return {b.atol(p.seqlen_k, vmax), b.output.rtol};
}
}  // namespace

CheckResult check_output(const flashcore::Problem& p, const HostInputs& in, const void* o, int rows,
                         const HeadParams& heads) {
  CheckResult r;
  const std::int64_t count = std::int64_t(p.batch) * p.seqlen_q * p.heads_q * p.head_dim;
  const DType odt = p.o_dtype();
  if (!all_finite(odt, o, count, &r)) return r;
  // Sampled rows: the first and the last row, then rows from a splitmix64 stream seeded by the size.
  std::uint64_t st = 0xC0FFEEull ^ static_cast<std::uint64_t>(count);
  std::vector<flashcore::verify::Row> sample;
  for (int row = 0; row < rows; ++row) {
    if (row == 0) {
      sample.push_back({0, 0, 0});
    } else if (row == 1) {
      sample.push_back({p.batch - 1, p.heads_q - 1, p.seqlen_q - 1});
    } else {
      const int b = static_cast<int>(splitmix64(&st) % static_cast<std::uint64_t>(p.batch));
      const int h = static_cast<int>(splitmix64(&st) % static_cast<std::uint64_t>(p.heads_q));
      const int i = static_cast<int>(splitmix64(&st) % static_cast<std::uint64_t>(p.seqlen_q));
      sample.push_back({b, h, i});
    }
  }
  // fp64 from the same rounded inputs (the oracle of src/verify), within the bench check's bound.
  const flashcore::verify::RowsResult ref = flashcore::verify::attention_rows(
      p, in.q.data(), in.k.data(), in.v.data(), sample, flashcore::verify::Precision::Exact, 1,
      flashcore::verify::HeadParams::of(heads.alibi_slopes, heads.sinks));
  const flashcore::tolerance::Bound bound = bench_bound(p, in);
  const double atol = bound.atol, rtol = bound.rtol;
  double worst = 0;  // largest error / allowed
  std::string worst_where;
  for (std::size_t n = 0; n < sample.size(); ++n) {
    const flashcore::verify::Row& x = sample[n];
    const std::int64_t oo = flashcore::element_offset(p.o, x.b, x.i, x.h, 0);
    for (int d = 0; d < p.head_dim; ++d) {
      const double want = ref.o[n * static_cast<std::size_t>(p.head_dim) + d];
      const double got = load(odt, o, oo + d);
      const double ratio = std::fabs(got - want) / (atol + rtol * std::fabs(want));
      if (!(ratio <= worst)) {  // NaN-safe
        worst = std::isnan(ratio) ? INFINITY : ratio;
        char buf[200];
        std::snprintf(buf, sizeof buf, "b=%d h=%d row=%d d=%d: got %.6g, fp64 %.6g", x.b, x.h, x.i, d, got, want);
        worst_where = buf;
      }
    }
  }
  char buf[400];
  std::snprintf(buf, sizeof buf, "%d sampled rows vs fp64: worst error %.3g x the bound (atol %.1e, rtol %.1e) at %s",
                rows, worst, atol, rtol, worst_where.c_str());
  r.ok = worst <= 1.0;
  r.message = r.ok ? buf : std::string("output check failed: ") + buf;
  return r;
}

CheckResult check_case_output(const Case& c, const CaseData& data, const void* o, int rows, const HeadParams& heads) {
  const Geometry g = geometry(c);  // this case's problem (data may have been made for another causal flag or variant)
  const HostInputs& in = *data.in;
  const flashcore::Problem& p = g.problem;
  if (!c.layout.sequences()) return check_output(p, in, o, rows, heads);
  CheckResult r;
  const std::int64_t count = g.q_elems;  // O has Q's storage
  if (!all_finite(p.o_dtype(), o, count, &r)) return r;
  const int B = p.batch;
  std::vector<int> with_rows;  // sequences that have queries
  for (int b = 0; b < B; ++b)
    if (g.len_q[b] > 0) with_rows.push_back(b);
  if (with_rows.empty()) return r;
  // Sampled rows: the first row, the last row, one row of every sequence, then random ones.
  std::uint64_t st = 0xC0FFEEull ^ static_cast<std::uint64_t>(count);
  auto rnd = [&](int n) { return static_cast<int>(splitmix64(&st) % static_cast<std::uint64_t>(n)); };
  std::vector<flashcore::verify::Row> sample;
  const int last = with_rows.back();
  sample.push_back({with_rows.front(), 0, 0});
  sample.push_back({last, p.heads_q - 1, g.len_q[last] - 1});
  for (int b : with_rows) sample.push_back({b, rnd(p.heads_q), rnd(g.len_q[b])});
  while (static_cast<int>(sample.size()) < rows) {
    const int b = with_rows[rnd(static_cast<int>(with_rows.size()))];
    sample.push_back({b, rnd(p.heads_q), rnd(g.len_q[b])});
  }
  // The oracle reads the storage the backend read (pages, packing, cache lengths) through its own
  // statement of the layouts (verify::Sequences).
  const std::vector<int> arrays = g.arrays();
  flashcore::Tensors t;
  g.set_arrays(&t, arrays.data());
  const flashcore::verify::Sequences seqs = flashcore::verify::Sequences::of(t);
  const flashcore::verify::RowsResult ref = flashcore::verify::attention_rows(
      p, in.q.data(), data.k_storage(), data.v_storage(), sample, flashcore::verify::Precision::Exact, 1,
      flashcore::verify::HeadParams::of(heads.alibi_slopes, heads.sinks), seqs);
  const flashcore::tolerance::Bound bound = bench_bound(p, in);
  double worst = 0;
  std::string worst_where;
  for (std::size_t n = 0; n < sample.size(); ++n) {
    const flashcore::verify::Row& x = sample[n];
    const long long oo = seqs.q_offset(p, p.o, x.b, x.i, x.h);
    for (int k = 0; k < p.head_dim; ++k) {
      const double w = ref.o[n * static_cast<std::size_t>(p.head_dim) + k];
      const double got = load(p.o_dtype(), o, oo + k);
      const double ratio = std::fabs(got - w) / (bound.atol + bound.rtol * std::fabs(w));
      if (!(ratio <= worst)) {  // NaN-safe
        worst = std::isnan(ratio) ? INFINITY : ratio;
        char buf[240];
        std::snprintf(buf, sizeof buf, "sequence %d (Lq %d, Lk %d) h=%d row=%d d=%d: got %.6g, fp64 %.6g", x.b,
                      g.len_q[x.b], g.len_k[x.b], x.h, x.i, k, got, w);
        worst_where = buf;
      }
    }
  }
  char buf[480];
  std::snprintf(buf, sizeof buf,
                "%zu sampled rows (every sequence) vs fp64: worst error %.3g x the bound (atol %.1e, rtol %.1e) at %s",
                sample.size(), worst, bound.atol, bound.rtol, worst_where.c_str());
  r.ok = worst <= 1.0;
  r.message = r.ok ? buf : std::string("output check failed: ") + buf;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Environment
// ---------------------------------------------------------------------------------------------

DeviceSummary current_device() {
  DeviceSummary d;
  const std::vector<flashcore::DeviceInfo> devs = flashcore::cuda_devices(&d.why);
  if (devs.empty()) {
    if (d.why.empty()) d.why = "no CUDA device";
    return d;
  }
  int index = 0;
#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
  if (cudaGetDevice(&index) != cudaSuccess) {
    cudaGetLastError();
    index = 0;
  }
#endif
  d.info = devs.front();
  for (const auto& x : devs)
    if (x.index == index) d.info = x;
  d.have = true;
  return d;
}

std::string host_cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (starts_with(line, "model name")) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string n = line.substr(colon + 1);
        n.erase(0, n.find_first_not_of(" \t"));
        return n;
      }
    }
  }
  return "unknown CPU";
}

std::string kokkos_line() {
  std::istringstream is(flashcore::build_info());
  std::string line;
  while (std::getline(is, line))
    if (starts_with(line, "Kokkos ") && line.find("reference") == std::string::npos) return line;
  return "unknown";
}

}  // namespace fcbench
