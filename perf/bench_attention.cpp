// flashcore_bench: Google Benchmark suite of FlashCore's attention backends.
//
// Benchmarks are registered at run time, one per (backend, case) that the backend accepts, with
// names attn/<backend>/<dtype>/<causal|full>/B<b>_H<h>_L<l>_D<d>:
//   device backends (they read device memory) on the GPU shape list, timed with CUDA events around
//     CUDA-graph replays of N calls (bench_device.cpp);
//   host backends on the smaller host list, timed by wall clock per call.
// Every reported time is per call; repetitions are aggregated (median, mean, stddev, cv) and only
// the aggregates are reported. Counters: flop and bytes as rates (flop/s, bytes/s; bytes = Q, K,
// V read once plus O written once; for the sequence cases of --decode/--mixed/--varlen K and V of
// the valid keys only, and bytes_per_call), graph (1: timed through a CUDA graph), calls_per_replay,
// sets (rotated buffer sets). See perf/README.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench_runners.hpp"
#include "bench_support.hpp"

#include "flashcore_commit.h"  // FLASHCORE_GIT_COMMIT, generated at build time (perf/write_commit.cmake)
#ifndef FLASHCORE_PERF_BUILD_TYPE
#define FLASHCORE_PERF_BUILD_TYPE "unknown"
#endif

namespace fcbench {
namespace {

using flashcore::DType;

// ---------------------------------------------------------------------------------------------
// Host backends
// ---------------------------------------------------------------------------------------------

struct HostData {
  std::string key;  // data_key() of the case
  CaseData data;
  std::vector<unsigned char> o;
};
std::unique_ptr<HostData> g_host;
std::map<std::string, CheckResult> g_host_checked;  // by benchmark name

HostData& host_data(const Case& c) {
  const std::string key = data_key(c);
  if (g_host && g_host->key == key) return *g_host;
  g_host.reset();
  auto d = std::make_unique<HostData>();
  d->key = key;
  d->data = make_case_data(c);
  d->o.assign(d->data.o_bytes(), kPoisonByte);
  g_host = std::move(d);
  return *g_host;
}

// The tensors of a case on host buffers (Q, K, V, O, and the sequence arrays when there are).
flashcore::Tensors host_tensors(const CaseData& d, void* o, const HeadParams& hp) {
  flashcore::Tensors t;
  t.q = d.in->q.data();
  t.k = d.k_storage();
  t.v = d.v_storage();
  t.o = o;
  if (!hp.alibi_slopes.empty()) t.alibi_slopes = hp.alibi_slopes.data();
  if (!hp.sinks.empty()) t.sinks = hp.sinks.data();
  d.g.set_arrays(&t, d.arrays.data());
  return t;
}

void host_benchmark(benchmark::State& st, const std::string& backend, const Case& c, const Config& cfg,
                    const std::string& label) {
  const std::string name = bench_name(backend, c);
  const Geometry g = geometry(c);
  const flashcore::Problem& p = g.problem;
  flashcore::Options opts;
  opts.backend = backend;
  opts.location = flashcore::MemoryLocation::Host;
  try {
    const std::string late = out_of_time(cfg);
    if (!late.empty() && g_host_checked.find(name) == g_host_checked.end()) {
      st.SkipWithError(late.c_str());  // not started before the budget ran out
      return;
    }
    HostData& d = host_data(c);
    const HeadParams hp = head_params(c);
    const flashcore::Tensors t = host_tensors(d.data, d.o.data(), hp);
    auto it = g_host_checked.find(name);
    if (it == g_host_checked.end()) {
      CheckResult r;
      std::fill(d.o.begin(), d.o.end(), kPoisonByte);
      flashcore::run(p, t, opts);  // warm-up, and the output checked
      if (cfg.check) r = check_case_output(c, d.data, d.o.data(), 16, hp);
      it = g_host_checked.emplace(name, r).first;
    }
    if (!it->second.ok) {
      st.SkipWithError(it->second.message.c_str());
      return;
    }
    for (auto _ : st) flashcore::run(p, t, opts);
  } catch (const std::exception& e) {
    st.SkipWithError((std::string("run failed: ") + e.what()).c_str());
    return;
  }
  st.counters["flop"] = benchmark::Counter(g.flops, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["bytes"] = benchmark::Counter(g.bytes, benchmark::Counter::kIsIterationInvariantRate);
  if (c.layout.tagged) st.counters["bytes_per_call"] = g.bytes;
  st.SetLabel(label.c_str());
}

bool host_supports(const std::string& backend, const Case& c, std::string* why) {
  const Geometry g = geometry(c);
  const std::size_t es = flashcore::dtype_size(c.dtype);
  const std::size_t oes = flashcore::dtype_size(g.problem.o_dtype());
  std::vector<unsigned char> q(g.q_elems * es, 0), k(g.kv_elems * es, 0), v(g.kv_elems * es, 0), o(g.q_elems * oes, 0);
  const std::vector<int> arrays = g.arrays();
  const HeadParams hp = head_params(c);
  flashcore::Tensors t;
  t.q = q.data();
  t.k = k.data();
  t.v = v.data();
  t.o = o.data();
  if (!hp.alibi_slopes.empty()) t.alibi_slopes = hp.alibi_slopes.data();
  if (!hp.sinks.empty()) t.sinks = hp.sinks.data();
  g.set_arrays(&t, arrays.data());
  return backend_accepts(backend, g.problem, t, flashcore::MemoryLocation::Host, why);
}

// ---------------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------------

std::vector<Case> cases_for(const Config& cfg, bool device) {
  const std::vector<Variant> variants = cfg.variants.empty() ? std::vector<Variant>{Variant{}} : cfg.variants;
  std::vector<Case> out;
  if (!has_sequence_cases(cfg) || !cfg.shapes.empty()) {
    const std::vector<Shape> shapes = !cfg.shapes.empty() ? cfg.shapes : device ? gpu_shapes() : host_shapes();
    for (const Shape& s : shapes) {
      std::vector<DType> dts = cfg.dtypes;
      if (dts.empty()) dts = device ? std::vector<DType>{DType::F16, DType::BF16} : host_dtypes(s);
      for (DType dt : dts)
        for (int causal = 0; causal < 2; ++causal) {
          if (cfg.causal >= 0 && causal != cfg.causal) continue;
          for (const Variant& v : variants) out.push_back({s, dt, causal == 1, v, Layout{}});
        }
    }
  }
  // Sequence cases: once each, causal (bottom-right) unless --causal=0; fp16 unless --dtypes.
  const std::vector<DType> seq_dts = cfg.dtypes.empty() ? std::vector<DType>{DType::F16} : cfg.dtypes;
  for (Case c : sequence_cases(cfg))
    for (DType dt : seq_dts)
      for (const Variant& v : variants) {
        c.dtype = dt;
        c.causal = cfg.causal != 0;
        c.variant = v;
        out.push_back(c);
      }
  return out;
}

struct Declined {
  std::vector<std::string> cases;
};

int register_all(const Config& cfg, const DeviceSummary& dev) {
  const std::vector<flashcore::BackendInfo> all = flashcore::backends();
  // Lowest priority (the references) first: each case reads reference, then the tuned ones.
  std::vector<flashcore::BackendInfo> order(all.rbegin(), all.rend());
  for (const std::string& n : cfg.backends_only) {
    if (std::none_of(all.begin(), all.end(), [&](const auto& b) { return b.name == n; })) {
      std::string names;
      for (const auto& b : all) names += (names.empty() ? "" : ", ") + b.name;
      std::fprintf(stderr, "flashcore_bench: --backends names '%s', which is not registered (registered: %s)\n",
                   n.c_str(), names.c_str());
    }
  }
  const int dev_reps = cfg.reps > 0 ? cfg.reps : cfg.quick ? 5 : 10;
  const int host_reps = cfg.reps > 0 ? cfg.reps : cfg.quick ? 3 : 5;
  const double host_min_time = cfg.host_min_time > 0 ? cfg.host_min_time : cfg.quick ? 0.05 : 0.2;
  std::map<std::pair<std::string, std::string>, Declined> declined;  // (backend, reason) -> cases
  int registered = 0;
  const unsigned hw = std::thread::hardware_concurrency();
  const char* omp = std::getenv("OMP_NUM_THREADS");
  const std::string host_label = host_cpu_name() + " | OMP_NUM_THREADS=" + (omp != nullptr ? omp : "unset") +
                                 " of " + std::to_string(hw) + " hw threads";

  for (int pass = 0; pass < 2; ++pass) {
    const bool device = pass == 0;
    if (device && !cfg.device) continue;
    if (!device && !cfg.host) continue;
    const flashcore::MemoryLocation loc = device ? flashcore::MemoryLocation::Device : flashcore::MemoryLocation::Host;
    std::vector<flashcore::BackendInfo> backends;
    for (const auto& b : order)
      if (b.location == loc && backend_selected(cfg, b.name)) backends.push_back(b);
    if (backends.empty()) continue;
    if (device && (!device_timing_available() || !dev.have)) {
      std::fprintf(stderr, "flashcore_bench: device backends not benchmarked: %s\n",
                   !device_timing_available() ? "this build has no CUDA runtime" : dev.why.c_str());
      continue;
    }
    for (const Case& c : cases_for(cfg, device)) {
      for (const auto& b : backends) {
        std::string why;
        const bool ok = device ? device_supports(b.name, c, &why) : host_supports(b.name, c, &why);
        if (!ok) {
          declined[{b.name, why}].cases.push_back(bench_name(b.name, c));
          continue;
        }
        const std::string name = bench_name(b.name, c);
        benchmark::internal::Benchmark* bm = nullptr;
        if (device) {
          const bool big_reference = b.name.find("reference") != std::string::npos && geometry(c).flops >= 1e11;
          bm = benchmark::RegisterBenchmark(name.c_str(), [name = b.name, c, &cfg, &dev](benchmark::State& st) {
            device_benchmark(st, name, c, cfg, dev);
          });
          bm->UseManualTime()->Iterations(1)->Repetitions(big_reference ? std::min(dev_reps, 3) : dev_reps);
        } else {
          bm = benchmark::RegisterBenchmark(name.c_str(), [name = b.name, c, &cfg, host_label](benchmark::State& st) {
            host_benchmark(st, name, c, cfg, name + " | " + host_label);
          });
          bm->UseRealTime()->MinTime(host_min_time)->Repetitions(host_reps);
        }
        bm->Unit(benchmark::kMicrosecond)->ReportAggregatesOnly(true);
        ++registered;
      }
    }
  }
  release_device_state();  // the buffers the support questions used
  std::string all_declined;  // for the JSON context: "<reason> [name name ...]" per reason, joined by " ;; "
  for (const auto& [key, d] : declined) {
    std::string list, names;
    for (std::size_t i = 0; i < d.cases.size() && i < 4; ++i) list += (i ? ", " : "") + d.cases[i];
    if (d.cases.size() > 4) list += ", ...";
    for (const std::string& n : d.cases) names += (names.empty() ? "" : " ") + n;
    std::fprintf(stderr, "flashcore_bench: declined: %s: %s (%zu case%s: %s)\n", key.first.c_str(),
                 key.second.c_str(), d.cases.size(), d.cases.size() == 1 ? "" : "s", list.c_str());
    std::string reason = key.first + ": " + key.second;
    for (char& ch : reason)
      if (ch == '\n') ch = ' ';
    all_declined += (all_declined.empty() ? "" : " ;; ") + reason + " [" + names + "]";
  }
  if (!all_declined.empty()) benchmark::AddCustomContext("declined", all_declined);
  return registered;
}

std::string one_line(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  for (char& ch : s)
    if (ch == '\n') ch = ';';
  return s;
}

void add_context(const Config& cfg, const DeviceSummary& dev) {
  benchmark::AddCustomContext("flashcore_version", flashcore::version());
  benchmark::AddCustomContext("git_commit", FLASHCORE_GIT_COMMIT);
  benchmark::AddCustomContext("build_type", FLASHCORE_PERF_BUILD_TYPE);
  benchmark::AddCustomContext("kokkos_version", kokkos_line());
  benchmark::AddCustomContext("flashcore_build_info", one_line(flashcore::build_info()));
  std::string names;
  for (const auto& n : flashcore::backend_names()) names += (names.empty() ? "" : ",") + n;
  benchmark::AddCustomContext("backends", names);
  if (dev.have) {
    benchmark::AddCustomContext("device_name", dev.info.name);
    benchmark::AddCustomContext("compute_capability",
                                std::to_string(dev.info.cc_major) + "." + std::to_string(dev.info.cc_minor));
    benchmark::AddCustomContext("sm_count", std::to_string(dev.info.sm_count));
    benchmark::AddCustomContext("clock_mhz", std::to_string(dev.info.clock_mhz));
    benchmark::AddCustomContext("l2_bytes", std::to_string(dev.info.l2_bytes));
    benchmark::AddCustomContext("device_memory_bytes", std::to_string(dev.info.global_mem_bytes));
  } else {
    benchmark::AddCustomContext("device_name", "none");
    benchmark::AddCustomContext("device_why", dev.why);
  }
  benchmark::AddCustomContext("host_cpu", host_cpu_name());
  const char* omp = std::getenv("OMP_NUM_THREADS");
  benchmark::AddCustomContext("omp_num_threads", omp != nullptr ? omp : "unset");
  benchmark::AddCustomContext("bench_flags", cfg.args.empty() ? "(none)" : cfg.args);
  benchmark::AddCustomContext("timing_method",
                              "device: CUDA events around CUDA-graph replays of N calls (fallback: N launches), "
                              "per-call time = elapsed/(replays*N), inputs rotated over >= 3x L2; host: wall "
                              "clock per call; median over repetitions");
}

}  // namespace
}  // namespace fcbench

int main(int argc, char** argv) {
  fcbench::start_clock();
  fcbench::Config cfg;
  if (!fcbench::parse_flags(&argc, argv, &cfg)) return 2;
  flashcore::initialize();
  int rc = 0;
  {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
      flashcore::finalize();
      return 2;
    }
    const fcbench::DeviceSummary dev = fcbench::current_device();
    fcbench::add_context(cfg, dev);
    if (std::string(FLASHCORE_PERF_BUILD_TYPE) != "Release" && std::string(FLASHCORE_PERF_BUILD_TYPE) != "RelWithDebInfo")
      std::fprintf(stderr, "flashcore_bench: WARNING: build type %s; timings of a non-optimized build\n",
                   FLASHCORE_PERF_BUILD_TYPE);
    const int n = fcbench::register_all(cfg, dev);
    if (n == 0) {
      std::fprintf(stderr, "flashcore_bench: no benchmark to run (backends: ");
      for (const auto& b : flashcore::backend_names()) std::fprintf(stderr, "%s ", b.c_str());
      std::fprintf(stderr, "; flags: %s)\n", cfg.args.c_str());
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  }
  fcbench::release_device_state();
  flashcore::finalize();
  return rc;
}
