// Device timing of flashcore_bench (compiled to stubs when the build has no CUDA runtime).
//
// Method, per benchmark (one backend, one case):
//   inputs   Q, K normal(0,1), V uniform(-1,1) made on the host, uploaded once per case data
//            (shape, dtype, layout) and copied into `sets` buffer sets (Q, K, V, O each; K and V as
//            the layout stores them: contiguous, packed, or a pool of pages), sets = ceil(3 x L2 /
//            set bytes) (sequence cases: / the bytes a call touches, K and V of the valid keys), so
//            that consecutive calls never find their inputs in L2 (one set when it is larger). The
//            sequence arrays (cu_seqlens, seqlens_k, block table) are one copy shared by the sets;
//            the first call validates them (Options::check_sequences), the timed ones do not.
//   warm-up  direct calls, then an estimate of the time of one call (CUDA events).
//   graph    N back-to-back calls, call i on set i % sets, captured from flashcore::run with
//            Options.stream = our stream (cudaStreamCaptureModeRelaxed), N a multiple of sets and
//            large enough that one replay lasts >= --replay-ms (1 ms). A backend whose call cannot
//            be captured (it synchronizes, say) is timed by N back-to-back run() calls between the
//            same events instead; counter graph = 0 and the label say so.
//   check    O of every set poisoned (NaN bytes), one replay, O copied back: every element must be
//            finite and 16 sampled rows (sequence cases: and one per sequence) must match an fp64
//            host computation (bench_support.cpp, check_case_output).
//   timing   one repetition = M replays between two CUDA events (M x replay >= --rep-ms), time per
//            call = elapsed / (M x N) given to SetIterationTime; Google Benchmark reports the
//            median (and mean, stddev, cv) over the repetitions.
// Calls longer than 50 ms (the reference on the big shapes) run with N = M = 1; the registration
// gives reference backends 3 repetitions on cases of >= 1e11 FLOP, so the suite stays within its
// time budget.
#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "bench_runners.hpp"

#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
#include <cuda_runtime_api.h>
#endif

namespace fcbench {

#if !defined(FLASHCORE_HAVE_CUDA_RUNTIME)

bool device_timing_available() { return false; }

bool device_supports(const std::string&, const Case&, std::string* why) {
  *why = "this build has no CUDA runtime";
  return false;
}

void device_benchmark(benchmark::State& st, const std::string&, const Case&, const Config&, const DeviceSummary&) {
  st.SkipWithError("this build has no CUDA runtime");
}

void release_device_state() {}

#else  // FLASHCORE_HAVE_CUDA_RUNTIME

namespace {

using flashcore::DType;

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
}
#define FC_CK(expr) ck((expr), #expr)

constexpr std::size_t kAlign = 256;
std::size_t round_up(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Inputs of one case on the device, in `sets` rotated copies (Q, K, V, O each; K and V as the
// case stores them: contiguous, packed or a page pool), and one copy of its sequence arrays.
struct DeviceData {
  std::string key;  // data_key() of the case
  CaseData host;    // the storage uploaded, and the logical inputs of the check
  std::size_t bytes[4] = {0, 0, 0, 0};  // q, k, v, o
  std::size_t offset[4] = {0, 0, 0, 0};
  std::size_t stride = 0;  // bytes per set
  int sets = 1;
  char* base = nullptr;
  int* arrays = nullptr;  // host.arrays on the device (null when empty)
  // The variant's per-head parameters (heads_q floats each; null when off), set per case.
  float* heads = nullptr;  // [alibi slopes (H) | sinks (H)]
  Variant variant;
  HeadParams head_host;
  const float* alibi_slopes = nullptr;
  const float* sinks = nullptr;

  ~DeviceData() {
    if (base != nullptr) cudaFree(base);
    if (arrays != nullptr) cudaFree(arrays);
    if (heads != nullptr) cudaFree(heads);
  }
  void* tensor(int set, int which) const {  // which: 0 q, 1 k, 2 v, 3 o
    return base + static_cast<std::size_t>(set) * stride + offset[which];
  }
  std::size_t set_bytes() const { return stride; }
  flashcore::Tensors tensors(int set) const {
    flashcore::Tensors t;
    t.q = tensor(set, 0);
    t.k = tensor(set, 1);
    t.v = tensor(set, 2);
    t.o = tensor(set, 3);
    t.alibi_slopes = alibi_slopes;
    t.sinks = sinks;
    host.g.set_arrays(&t, arrays);
    return t;
  }
};

std::unique_ptr<DeviceData> g_data;

// The case's per-head parameters on the device (the inputs stay).
void set_variant(DeviceData& d, const Case& c) {
  const int H = c.shape.h;
  if (d.heads == nullptr) {
    void* p = nullptr;
    FC_CK(cudaMalloc(&p, 2 * H * sizeof(float)));
    d.heads = static_cast<float*>(p);
  }
  d.variant = c.variant;
  d.head_host = head_params(c);
  d.alibi_slopes = d.sinks = nullptr;
  if (!d.head_host.alibi_slopes.empty()) {
    FC_CK(cudaMemcpy(d.heads, d.head_host.alibi_slopes.data(), H * sizeof(float), cudaMemcpyHostToDevice));
    d.alibi_slopes = d.heads;
  }
  if (!d.head_host.sinks.empty()) {
    FC_CK(cudaMemcpy(d.heads + H, d.head_host.sinks.data(), H * sizeof(float), cudaMemcpyHostToDevice));
    d.sinks = d.heads + H;
  }
}

DeviceData& device_data(const Case& c, const DeviceSummary& dev) {
  const std::string key = data_key(c);
  if (g_data && g_data->key == key) {
    if (g_data->variant.name() != c.variant.name()) set_variant(*g_data, c);
    return *g_data;
  }
  g_data.reset();  // free the previous case first
  auto d = std::make_unique<DeviceData>();
  d->key = key;
  d->host = make_case_data(c);
  const CaseData& h = d->host;
  d->bytes[0] = h.q_bytes();
  d->bytes[3] = h.o_bytes();
  d->bytes[1] = d->bytes[2] = h.kv_bytes();
  for (int w = 0; w < 4; ++w) {
    d->offset[w] = d->stride;
    d->stride += round_up(d->bytes[w], kAlign);
  }
  // Enough sets that what consecutive calls read and write (for the sequence cases: Q, O, and K
  // and V of the valid keys) adds up to 3x the L2.
  const double touched = c.layout.tagged ? h.g.bytes : double(d->set_bytes());
  const double l2 = dev.info.l2_bytes > 0 ? double(dev.info.l2_bytes) : 50e6;
  d->sets = static_cast<int>(std::ceil(3.0 * l2 / std::max(touched, 1.0)));
  d->sets = std::max(1, std::min(d->sets, 256));
  std::size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
    while (d->sets > 1 && double(d->sets) * d->set_bytes() > 0.5 * double(free_b)) --d->sets;
  }
  cudaGetLastError();
  void* p = nullptr;
  FC_CK(cudaMalloc(&p, d->sets * d->set_bytes()));
  d->base = static_cast<char*>(p);
  const void* src[3] = {h.in->q.data(), h.k_storage(), h.v_storage()};
  for (int w = 0; w < 3; ++w) FC_CK(cudaMemcpy(d->tensor(0, w), src[w], d->bytes[w], cudaMemcpyHostToDevice));
  for (int s = 1; s < d->sets; ++s)
    for (int w = 0; w < 3; ++w)
      FC_CK(cudaMemcpy(d->tensor(s, w), d->tensor(0, w), d->bytes[w], cudaMemcpyDeviceToDevice));
  for (int s = 0; s < d->sets; ++s) FC_CK(cudaMemset(d->tensor(s, 3), kPoisonByte, d->bytes[3]));
  if (!h.arrays.empty()) {
    void* a = nullptr;
    FC_CK(cudaMalloc(&a, h.arrays.size() * sizeof(int)));
    d->arrays = static_cast<int*>(a);
    FC_CK(cudaMemcpy(d->arrays, h.arrays.data(), h.arrays.size() * sizeof(int), cudaMemcpyHostToDevice));
  }
  set_variant(*d, c);
  FC_CK(cudaDeviceSynchronize());
  g_data = std::move(d);
  return *g_data;
}

// What one benchmark keeps between its repetitions.
struct Prepared {
  std::string name;
  std::string error;  // non-empty: every repetition reports it
  cudaStream_t stream = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool use_graph = false;
  int calls = 1;    // N per replay
  int replays = 1;  // M per repetition
  double replay_s = 0;
  std::string label;
  Geometry g;  // the case's problem (causal, variant: the data may have been made for another case) and work

  ~Prepared() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (e0 != nullptr) cudaEventDestroy(e0);
    if (e1 != nullptr) cudaEventDestroy(e1);
    if (stream != nullptr) {
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
    cudaGetLastError();
  }
};

std::unique_ptr<Prepared> g_prep;
void* g_scratch = nullptr;  // buffers device_supports() asks explain() about
std::size_t g_scratch_bytes = 0;

// Calls with Options::check_sequences off (the arrays are checked once, by the first call of
// prepare(), and then trusted, as a decode loop would).
struct Caller {
  const DeviceData& data;
  const flashcore::Problem& p;
  flashcore::Options opts;
  void call(int i) const { flashcore::run(p, data.tensors(i % data.sets), opts); }
  void call_checked(int i) const {
    flashcore::Options checked = opts;
    checked.check_sequences = true;
    flashcore::run(p, data.tensors(i % data.sets), checked);
  }
};

flashcore::Options timing_options(const std::string& backend, cudaStream_t stream) {
  flashcore::Options opts;
  opts.backend = backend;
  opts.location = flashcore::MemoryLocation::Device;
  opts.stream = stream;
  opts.check_sequences = false;
  return opts;
}

// Seconds between the events around fn(), fn enqueueing work on the stream.
template <class F>
double timed(Prepared& pr, F&& fn) {
  FC_CK(cudaEventRecord(pr.e0, pr.stream));
  fn();
  FC_CK(cudaEventRecord(pr.e1, pr.stream));
  FC_CK(cudaEventSynchronize(pr.e1));
  float ms = 0;
  FC_CK(cudaEventElapsedTime(&ms, pr.e0, pr.e1));
  return ms * 1e-3;
}

// Captures N calls into pr.exec; returns "" or why it could not.
std::string capture(Prepared& pr, const Caller& caller, int n) {
  if (pr.exec != nullptr) {
    cudaGraphExecDestroy(pr.exec);
    pr.exec = nullptr;
  }
  cudaGetLastError();
  cudaError_t e = cudaStreamBeginCapture(pr.stream, cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(e);
  }
  std::string why;
  try {
    for (int i = 0; i < n; ++i) caller.call(i);
  } catch (const std::exception& ex) {
    why = std::string("run() during capture: ") + ex.what();
  }
  cudaGraph_t graph = nullptr;
  e = cudaStreamEndCapture(pr.stream, &graph);
  if (why.empty() && e != cudaSuccess) why = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(e);
  if (why.empty() && graph == nullptr) why = "capture produced no graph";
  if (why.empty()) {
    e = cudaGraphInstantiateWithFlags(&pr.exec, graph, 0);
    if (e != cudaSuccess) {
      why = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(e);
      pr.exec = nullptr;
    }
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaGetLastError();
  if (why.empty()) {  // a replay must work before it is trusted
    e = cudaGraphLaunch(pr.exec, pr.stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(pr.stream);
    if (e != cudaSuccess) {
      why = std::string("graph replay: ") + cudaGetErrorString(e);
      cudaGetLastError();
      cudaGraphExecDestroy(pr.exec);
      pr.exec = nullptr;
    }
  }
  return why;
}

void replay_once(const Prepared& pr, const Caller& caller) {
  if (pr.use_graph) {
    FC_CK(cudaGraphLaunch(pr.exec, pr.stream));
  } else {
    for (int i = 0; i < pr.calls; ++i) caller.call(i);
  }
}

std::string fmt_ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g ms", s * 1e3);
  return b;
}

void prepare(Prepared& pr, const std::string& backend, const Case& c, const Config& cfg, const DeviceSummary& dev) {
  const DeviceData& data = device_data(c, dev);
  FC_CK(cudaStreamCreateWithFlags(&pr.stream, cudaStreamNonBlocking));
  FC_CK(cudaEventCreate(&pr.e0));
  FC_CK(cudaEventCreate(&pr.e1));
  pr.g = geometry(c);
  const flashcore::Problem& p = pr.g.problem;
  const Caller caller{data, p, timing_options(backend, pr.stream)};

  // Warm-up (the first call validates the sequence arrays) and an estimate of one call.
  const auto t0 = std::chrono::steady_clock::now();
  caller.call_checked(0);
  FC_CK(cudaStreamSynchronize(pr.stream));
  const double first = seconds_since(t0);
  const int k = first > 0.05 ? 1 : first > 0.005 ? 3 : 10;
  const double est = timed(pr, [&] {
                       for (int i = 0; i < k; ++i) caller.call(1 + i);
                     }) / k;
  const bool slow = est > 0.05;
  const double replay_target = cfg.replay_ms * 1e-3;
  int n = 1;
  if (!slow) {
    n = static_cast<int>(std::ceil(replay_target / std::max(est, 1e-7)));
    n = std::max(1, std::min(n, 4096));
    if (data.sets > 1) n = static_cast<int>(round_up(static_cast<std::size_t>(n), data.sets));
  }

  // The graph of N calls (or the fallback).
  std::string note;
  pr.calls = n;
  pr.use_graph = false;
  if (cfg.timing != "launches") {
    note = capture(pr, caller, n);
    if (note.empty()) {
      pr.use_graph = true;
      // The estimate included launch overhead; lengthen the replay when it came out short.
      const double t = slow ? est : timed(pr, [&] { replay_once(pr, caller); });
      if (!slow && t < 0.9 * replay_target && n < 4096) {
        int n2 = static_cast<int>(std::ceil(n * 1.05 * replay_target / std::max(t, 1e-7)));
        n2 = std::min(std::max(n2, n + 1), 4096);
        if (data.sets > 1) n2 = static_cast<int>(round_up(static_cast<std::size_t>(n2), data.sets));
        const std::string again = capture(pr, caller, n2);
        if (again.empty()) {
          pr.calls = n2;
        } else {  // keep going with launches rather than a half-made graph
          pr.use_graph = false;
          note = again;
        }
      }
    } else if (cfg.timing == "graph") {
      pr.error = "graph capture failed (--timing=graph): " + note;
      return;
    }
    if (!pr.use_graph) {
      std::fprintf(stderr, "flashcore_bench: %s: CUDA graph capture failed (%s); timing back-to-back launches\n",
                   pr.name.c_str(), note.c_str());
      cudaGetLastError();
    }
  }

  // Output check on what the timed path produces.
  if (cfg.check) {
    const std::size_t o_bytes = data.bytes[3];
    for (int s = 0; s < data.sets; ++s) FC_CK(cudaMemsetAsync(data.tensor(s, 3), kPoisonByte, o_bytes, pr.stream));
    replay_once(pr, caller);
    FC_CK(cudaStreamSynchronize(pr.stream));
    std::vector<unsigned char> o(o_bytes);
    FC_CK(cudaMemcpy(o.data(), data.tensor(0, 3), o_bytes, cudaMemcpyDeviceToHost));
    CheckResult r = check_case_output(c, data.host, o.data(), 16, data.head_host);
    const int used = std::min(pr.calls, data.sets);
    for (int s = 1; s < used && r.ok; ++s) {
      FC_CK(cudaMemcpy(o.data(), data.tensor(s, 3), o_bytes, cudaMemcpyDeviceToHost));
      const std::int64_t bad =
          count_nonfinite(data.host.g.problem.o_dtype(), o.data(),
                          static_cast<std::int64_t>(o_bytes) / flashcore::dtype_size(data.host.g.problem.o_dtype()));
      if (bad > 0) {
        r.ok = false;
        r.message = "output check: " + std::to_string(bad) + " non-finite elements in the output of buffer set " +
                    std::to_string(s);
      }
    }
    if (!r.ok) {
      pr.error = r.message;
      return;
    }
  }

  // Replay length, warm-up to a steady clock, replays per repetition.
  pr.replay_s = slow ? est : timed(pr, [&] { replay_once(pr, caller); });
  if (!slow) {
    const int warm = static_cast<int>(std::min(50.0, std::ceil(0.025 / std::max(pr.replay_s, 1e-6))));
    for (int i = 0; i < warm; ++i) replay_once(pr, caller);
    FC_CK(cudaStreamSynchronize(pr.stream));
    const double rep_target = (cfg.rep_ms > 0 ? cfg.rep_ms : cfg.quick ? 5.0 : 10.0) * 1e-3;
    pr.replays = static_cast<int>(std::max(1.0, std::min(1000.0, std::ceil(rep_target / std::max(pr.replay_s, 1e-6)))));
  } else {
    pr.replays = 1;
  }
  pr.label = backend + " | " + dev.info.name + " | " +
             (pr.use_graph ? "graph of " + std::to_string(pr.calls) + " calls"
                           : std::to_string(pr.calls) + " launches (no graph)") +
             " x" + std::to_string(pr.replays) + " | " + std::to_string(data.sets) + " buffer set" +
             (data.sets > 1 ? "s" : "") + (slow ? " | slow: 1 call/rep" : "");
  std::fprintf(stderr, "flashcore_bench: %s: ~%s/call, %s\n", pr.name.c_str(), fmt_ms(est).c_str(), pr.label.c_str());
}

}  // namespace

bool device_timing_available() { return true; }

bool device_supports(const std::string& backend, const Case& c, std::string* why) {
  // Real, separately allocated, aligned device buffers of the case's size, and its real sequence
  // arrays (the library validates them).
  const Geometry g = geometry(c);
  const std::size_t es = flashcore::dtype_size(c.dtype);
  const std::size_t qes = std::max<std::size_t>(es, flashcore::dtype_size(g.problem.o_dtype()));  // Q's and O's slots
  const std::size_t qb = round_up(static_cast<std::size_t>(g.q_elems) * qes, kAlign);
  const std::size_t kvb = round_up(static_cast<std::size_t>(g.kv_elems) * es, kAlign);
  const std::vector<int> arrays = g.arrays();
  const std::size_t ab = round_up(arrays.size() * sizeof(int), kAlign);
  const std::size_t heads_bytes = round_up(2 * c.shape.h * sizeof(float), kAlign);
  const std::size_t need = 2 * qb + 2 * kvb + ab + heads_bytes;
  void*& scratch = g_scratch;
  std::size_t& scratch_bytes = g_scratch_bytes;
  if (scratch_bytes < need) {
    if (scratch != nullptr) cudaFree(scratch);
    scratch = nullptr;
    scratch_bytes = 0;
    const cudaError_t e = cudaMalloc(&scratch, need);
    if (e != cudaSuccess) {
      cudaGetLastError();
      *why = std::string("cannot allocate the case's buffers: ") + cudaGetErrorString(e);
      return false;
    }
    scratch_bytes = need;
  }
  char* b = static_cast<char*>(scratch);
  flashcore::Tensors t;
  t.q = b;
  t.k = b + qb;
  t.v = b + qb + kvb;
  t.o = b + qb + 2 * kvb;
  int* arr = reinterpret_cast<int*>(b + 2 * qb + 2 * kvb);
  if (!arrays.empty()) {
    const cudaError_t e = cudaMemcpy(arr, arrays.data(), arrays.size() * sizeof(int), cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
      cudaGetLastError();
      *why = std::string("cannot upload the sequence arrays: ") + cudaGetErrorString(e);
      return false;
    }
  }
  g.set_arrays(&t, arr);
  const float* heads = reinterpret_cast<const float*>(b + 2 * qb + 2 * kvb + ab);
  if (c.variant.alibi) t.alibi_slopes = heads;
  if (c.variant.sinks) t.sinks = heads + c.shape.h;
  return backend_accepts(backend, g.problem, t, flashcore::MemoryLocation::Device, why);
}

void device_benchmark(benchmark::State& st, const std::string& backend, const Case& c, const Config& cfg,
                      const DeviceSummary& dev) {
  const std::string name = bench_name(backend, c);
  if (!g_prep || g_prep->name != name) {
    const std::string late = out_of_time(cfg);
    if (!late.empty()) {
      g_prep.reset();  // free the previous benchmark's graph and buffers
      g_data.reset();
      st.SkipWithError(late.c_str());
      return;
    }
  }
  try {
    if (!g_prep || g_prep->name != name) {
      g_prep.reset();
      g_prep = std::make_unique<Prepared>();
      g_prep->name = name;
      prepare(*g_prep, backend, c, cfg, dev);
    }
  } catch (const std::exception& e) {
    if (g_prep) g_prep->error = std::string("setup failed: ") + e.what();
  }
  Prepared& pr = *g_prep;
  if (!pr.error.empty()) {
    st.SkipWithError(pr.error.c_str());
    return;
  }
  const DeviceData* data = nullptr;
  try {
    data = &device_data(c, dev);
    const Caller caller{*data, pr.g.problem, timing_options(backend, pr.stream)};
    for (auto _ : st) {
      const double s = timed(pr, [&] {
        for (int m = 0; m < pr.replays; ++m) replay_once(pr, caller);
      });
      st.SetIterationTime(s / (double(pr.replays) * pr.calls));
    }
  } catch (const std::exception& e) {
    pr.error = std::string("timing failed: ") + e.what();
    st.SkipWithError(pr.error.c_str());
    return;
  }
  const Geometry& g = pr.g;
  st.counters["flop"] = benchmark::Counter(g.flops, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["bytes"] = benchmark::Counter(g.bytes, benchmark::Counter::kIsIterationInvariantRate);
  if (c.layout.tagged) st.counters["bytes_per_call"] = g.bytes;
  st.counters["graph"] = pr.use_graph ? 1 : 0;
  st.counters["calls_per_replay"] = pr.calls;
  st.counters["sets"] = g_data ? g_data->sets : 0;
  st.SetLabel(pr.label.c_str());
}

void release_device_state() {
  g_prep.reset();
  g_data.reset();
  if (g_scratch != nullptr) cudaFree(g_scratch);
  g_scratch = nullptr;
  g_scratch_bytes = 0;
}

#endif  // FLASHCORE_HAVE_CUDA_RUNTIME

}  // namespace fcbench
