// flashcore_bench_backward: times the backward pass (flashcore::run_backward) on device data, for the
// perf suite's backward rows (perf/run_backward.sh puts PyTorch's SDPA backward beside it, same run).
//
//   flashcore_bench_backward [--backends=a,b] [--shapes=B,H,L,D,causal;...] [--dtype=bf16|fp16] [--seconds=S]
//                            [--variant=V] [--varlen=H,D:l1,l2,...;...]
//
// --varlen: causal batches of packed sequences (varlen Q and K/V, Lq_b = Lk_b = l_b; "LxN" = N
// sequences of L), each followed by the fixed-length problem of the same tokens (B = sequences,
// L = total / B). They replace the built-in shapes unless --shapes is given too. Timed calls pass
// Options::check_sequences = false (a training loop that knows its offsets; the warm-up call checks
// them). The JSON line adds "layout": "varlen:T<total>" or "contiguous".
//
// --variant: an attention variant for every shape, as flashcore_bench --variants writes one (window:L,R,
// softcap:X, alibi, sinks:X, joined by '+'; ALiBi slopes 2^(-8(h+1)/H), the sinks' gradient asked for).
//
// A backend name with the suffix "+deterministic" (e.g. cuda-flash+deterministic) runs that backend
// with Options::deterministic (the default path otherwise).
// For each shape: Q, K, V, dO uniform in [-1, 1] (fixed seed), the forward once on cuda-flash (O, LSE),
// then per backend: one call (checked against the first backend's gradients on sampled elements
// only as a sanity check: the tests check accuracy), then repetitions of back-to-back calls between
// two CUDA events, up to --seconds per backend and shape; the median per call is reported. A
// repetition of calls under 20 ms is at least kMinCalls calls (and >= 1 ms), preceded by kLeadCalls
// untimed ones: the GPU is busy while the host queues the first event and the timed calls, so the
// window holds GPU time, not the host's launch latency (with one call a repetition, as a 1.5 ms call
// had before, a cold launch after the event sync was inside every window). One JSON line per
// (shape, backend) on stdout: {"B":..,"H":..,"L":..,"D":..,"causal":..,"backend":..,
// "variant":..,"median_us":..,"min_us":..,"max_us":..,"host_us":..,"reps":..,"tflops":..} (host_us: the
// host's median time to issue one call; median_us is GPU time as long as it is the smaller) with
// backward FLOPs = 2.5 x the forward's (Problem::flops:
// 4·B·H·L²·D over the pairs a mask shows; sequences: summed per sequence), or "error" when the backend declines.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.hpp"  // Variant, parse_variant
#include "flashcore/flashcore.hpp"
#include "verify/elements.hpp"

namespace {

constexpr int kMinCalls = 5;   // calls a repetition times at least (calls under 20 ms)
constexpr int kLeadCalls = 2;  // untimed calls before each repetition's first event (calls under 20 ms)

struct Shape {
  int b, h, l, d;
  bool causal;
};

std::vector<Shape> parse_shapes(const std::string& s) {
  std::vector<Shape> out;
  std::stringstream all(s);
  std::string one;
  while (std::getline(all, one, ';')) {
    Shape x{};
    int c = 0;
    if (std::sscanf(one.c_str(), "%d,%d,%d,%d,%d", &x.b, &x.h, &x.l, &x.d, &c) != 5) {
      std::fprintf(stderr, "bad shape '%s' (B,H,L,D,causal)\n", one.c_str());
      std::exit(2);
    }
    x.causal = c != 0;
    out.push_back(x);
  }
  return out;
}

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// One benchmarked problem: the plain shapes, or a --varlen batch and its fixed-length twin.
struct BenchCase {
  fcbench::Geometry geo;  // problem, storage sizes, sequence arrays, FLOPs
  std::string layout;     // "" (plain), "varlen:T<n>", "contiguous"
};

BenchCase plain_case(const Shape& s, flashcore::DType dt) {
  fcbench::Case c;
  c.shape.b = s.b, c.shape.h = s.h, c.shape.l = s.l, c.shape.d = s.d;
  c.dtype = dt;
  c.causal = s.causal;
  return {fcbench::geometry(c), ""};
}

// "H,D:lengths;..." -> each batch packed, then its fixed-length twin.
std::vector<BenchCase> varlen_cases(const std::string& text, flashcore::DType dt) {
  std::vector<BenchCase> out;
  std::stringstream all(text);
  std::string one;
  while (std::getline(all, one, ';')) {
    int h = 0, d = 0;
    std::vector<int> lens;
    const auto colon = one.find(':');
    if (colon == std::string::npos || std::sscanf(one.substr(0, colon).c_str(), "%d,%d", &h, &d) != 2 ||
        !fcbench::parse_sequence_lengths(one.substr(colon + 1), &lens)) {
      std::fprintf(stderr, "bad --varlen batch '%s' (H,D:l1,l2,...)\n", one.c_str());
      std::exit(2);
    }
    fcbench::Case c;
    int total = 0;
    for (int x : lens) total += x;
    c.shape.b = static_cast<int>(lens.size()), c.shape.h = h, c.shape.d = d;
    c.shape.l = std::max(1, *std::max_element(lens.begin(), lens.end()));
    c.dtype = dt;
    c.causal = true;
    c.layout.tagged = true;
    c.layout.varlen = lens;
    out.push_back({fcbench::geometry(c), c.layout.name()});
    fcbench::Case twin = c;
    twin.layout = fcbench::Layout{};
    twin.layout.tagged = true;
    twin.shape.l = std::max(1, total / c.shape.b);
    out.push_back({fcbench::geometry(twin), twin.layout.name()});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // The issue-13 shapes (torch's figures in the issue are bf16 on an H100).
  std::string shapes = "4,16,1024,64,0;8,16,2048,64,1;2,16,4096,128,0;2,16,4096,128,1;1,16,16384,128,1";
  bool shapes_given = false;
  std::string backends = "cuda-flash,cuda-flash+deterministic,reference-cuda";
  std::string dtype_name = "bf16";
  std::string varlen;
  double seconds = 2.0;
  fcbench::Variant variant;
  for (int n = 1; n < argc; ++n) {
    const std::string a = argv[n];
    auto val = [&](const char* flag) { return a.rfind(flag, 0) == 0 ? a.substr(std::string(flag).size()) : std::string(); };
    if (!val("--shapes=").empty()) shapes = val("--shapes="), shapes_given = true;
    else if (!val("--varlen=").empty()) varlen = val("--varlen=");
    else if (!val("--backends=").empty()) backends = val("--backends=");
    else if (!val("--dtype=").empty()) dtype_name = val("--dtype=");
    else if (!val("--seconds=").empty()) seconds = std::stod(val("--seconds="));
    else if (!val("--variant=").empty()) {
      std::string bad;
      if (!fcbench::parse_variant(val("--variant="), &variant, &bad)) {
        std::fprintf(stderr, "bad variant part '%s' (window:L,R, softcap:X, alibi, sinks:X, joined by '+')\n", bad.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--backends=a,b] [--shapes=B,H,L,D,causal;...] [--dtype=bf16|fp16] [--seconds=S] "
                   "[--variant=V] [--varlen=H,D:l1,l2,...;...]\n",
                   argv[0]);
      return 2;
    }
  }
  flashcore::initialize();
  const flashcore::DType dt = flashcore::parse_dtype(dtype_name);
  std::vector<std::string> names;
  {
    std::stringstream ss(backends);
    std::string b;
    while (std::getline(ss, b, ',')) names.push_back(b);
  }
  cudaStream_t stream;
  ck(cudaStreamCreate(&stream), "cudaStreamCreate");
  std::vector<BenchCase> cases;
  if (varlen.empty() || shapes_given)
    for (const Shape& s : parse_shapes(shapes)) cases.push_back(plain_case(s, dt));
  for (BenchCase& c : varlen_cases(varlen, dt)) cases.push_back(std::move(c));
  for (const BenchCase& bc : cases) {
    flashcore::Problem p = bc.geo.problem;
    const Shape s{p.batch, p.heads_q, p.seqlen_q, p.head_dim, p.causal};
    p.window_left = variant.window_left;
    p.window_right = variant.window_right;
    p.softcap = variant.softcap;
    const std::size_t nq = static_cast<std::size_t>(bc.geo.q_elems), nk = static_cast<std::size_t>(bc.geo.kv_elems);
    const std::size_t rows_q = nq / (static_cast<std::size_t>(s.h) * s.d);  // LSE entries per head
    std::vector<std::uint16_t> host(std::max(nq, nk));
    std::mt19937_64 rng(1234);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    void *q, *k, *v, *o, *d_o, *dq, *dk, *dv;
    float* lse;
    for (void** buf : {&q, &k, &v, &d_o}) {
      const std::size_t n = buf == &k || buf == &v ? nk : nq;
      for (std::size_t i = 0; i < n; ++i) flashcore::verify::store_element(dt, host.data(), i, u(rng));
      ck(cudaMalloc(buf, n * 2), "cudaMalloc");
      ck(cudaMemcpy(*buf, host.data(), n * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    for (void** buf : {&o, &dq}) ck(cudaMalloc(buf, nq * 2), "cudaMalloc");
    for (void** buf : {&dk, &dv}) ck(cudaMalloc(buf, nk * 2), "cudaMalloc");
    ck(cudaMalloc(reinterpret_cast<void**>(&lse), rows_q * s.h * sizeof(float)), "cudaMalloc");
    // The sequence arrays (cu_seqlens_q/k of a varlen case) on the device.
    const std::vector<int> arrays = bc.geo.arrays();
    int* d_arrays = nullptr;
    if (!arrays.empty()) {
      ck(cudaMalloc(reinterpret_cast<void**>(&d_arrays), arrays.size() * sizeof(int)), "cudaMalloc");
      ck(cudaMemcpy(d_arrays, arrays.data(), arrays.size() * sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    // The variant's per-head arrays (ALiBi slopes, sinks) and the sinks' gradient.
    float *slopes = nullptr, *sinks = nullptr, *dsinks = nullptr;
    auto put_floats = [&](const std::vector<float>& x) {
      float* d = nullptr;
      ck(cudaMalloc(reinterpret_cast<void**>(&d), x.size() * sizeof(float)), "cudaMalloc");
      ck(cudaMemcpy(d, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
      return d;
    };
    if (variant.alibi) {
      std::vector<float> x(s.h);
      for (int h = 0; h < s.h; ++h) x[h] = static_cast<float>(std::exp2(-8.0 * (h + 1) / s.h));
      slopes = put_floats(x);
    }
    if (variant.sinks) {
      sinks = put_floats(std::vector<float>(s.h, static_cast<float>(variant.sink)));
      dsinks = put_floats(std::vector<float>(s.h, 0.f));
    }
    flashcore::Options fo;
    fo.stream = stream;
    flashcore::Tensors t{q, k, v, o, lse};
    t.alibi_slopes = slopes;
    t.sinks = sinks;
    if (d_arrays != nullptr) bc.geo.set_arrays(&t, d_arrays);
    flashcore::run(p, t, fo);
    flashcore::Gradients g{d_o, dq, dk, dv};
    g.dsinks = dsinks;
    const double flops = 2.5 * (bc.layout.empty() ? p.flops() : bc.geo.flops);
    for (const std::string& name : names) {
      flashcore::Options opts;
      const std::string suffix = "+deterministic";
      opts.deterministic = name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
      opts.backend = opts.deterministic ? name.substr(0, name.size() - suffix.size()) : name;
      opts.stream = stream;
      std::printf("{\"B\":%d,\"H\":%d,\"L\":%d,\"D\":%d,\"causal\":%s,\"dtype\":\"%s\",\"variant\":\"%s\",\"layout\":\"%s\",\"backend\":\"%s\"",
                  s.b, s.h, s.l, s.d, s.causal ? "true" : "false", dtype_name.c_str(), variant.name().c_str(),
                  bc.layout.c_str(), name.c_str());
      try {
        const flashcore::Report r = flashcore::run_backward(p, t, g, opts);  // warm-up (and plan): checks the arrays
        ck(cudaStreamSynchronize(stream), "warm-up");
        opts.check_sequences = false;  // timed calls: a training loop that knows its offsets
        cudaEvent_t e0, e1;
        ck(cudaEventCreate(&e0), "event");
        ck(cudaEventCreate(&e1), "event");
        // Calls per repetition: enough for >= 1 ms, from the warm-up call's time.
        const auto w0 = std::chrono::steady_clock::now();
        flashcore::run_backward(p, t, g, opts);
        ck(cudaStreamSynchronize(stream), "sync");
        const double one = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
        // Calls under 20 ms (the tuned ones): the lead and kMinCalls; a launch latency (10-100 us) is
        // under 0.5 % of longer ones (the reference), timed a call a repetition.
        const bool short_call = one < 20e-3;
        const int lead = short_call ? kLeadCalls : 0;
        const int calls = std::max(short_call ? kMinCalls : 1, static_cast<int>(1e-3 / std::max(one, 1e-7)));
        std::vector<double> per_call, host_per_call;  // GPU time (events); host time to issue a call
        const auto t0 = std::chrono::steady_clock::now();
        while (per_call.size() < 5 ||
               (per_call.size() < 50 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds)) {
          for (int c = 0; c < lead; ++c) flashcore::run_backward(p, t, g, opts);  // untimed: the GPU's lead
          ck(cudaEventRecord(e0, stream), "record");
          const auto h0 = std::chrono::steady_clock::now();
          for (int c = 0; c < calls; ++c) flashcore::run_backward(p, t, g, opts);
          host_per_call.push_back(1e6 * std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count() / calls);
          ck(cudaEventRecord(e1, stream), "record");
          ck(cudaEventSynchronize(e1), "sync");
          float ms = 0;
          ck(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
          per_call.push_back(1e3 * ms / calls);
          if (one * (calls + lead) > seconds) break;  // a repetition is longer than the budget: one
        }
        std::sort(per_call.begin(), per_call.end());
        std::sort(host_per_call.begin(), host_per_call.end());
        const double med = per_call[per_call.size() / 2];
        std::printf(",\"plan\":\"%s\",\"median_us\":%.2f,\"min_us\":%.2f,\"max_us\":%.2f,\"host_us\":%.2f,"
                    "\"reps\":%zu,\"calls_per_rep\":%d,\"tflops\":%.1f}\n",
                    r.plan.c_str(), med, per_call.front(), per_call.back(), host_per_call[host_per_call.size() / 2],
                    per_call.size(), calls, flops / (med * 1e-6) / 1e12);
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
      } catch (const std::exception& e) {
        std::string what = e.what();
        for (char& c : what)
          if (c == '"' || c == '\n') c = '\'';
        std::printf(",\"error\":\"%s\"}\n", what.c_str());
      }
      std::fflush(stdout);
    }
    for (void* buf : {q, k, v, o, d_o, dq, dk, dv}) cudaFree(buf);
    for (float* buf : {slopes, sinks, dsinks}) cudaFree(buf);
    cudaFree(d_arrays);
    cudaFree(lse);
  }
  cudaStreamDestroy(stream);
  flashcore::finalize();
  return 0;
}
