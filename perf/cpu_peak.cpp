// flashcore_cpu_peak: the CPU's measured fp32 FMA peak, the ceiling perf/run_cpu.sh states the
// portable tier's GFLOP/s against. Each thread runs 12 independent chains of 8-lane vector FMAs
// (src/backends/portable/simd.hpp: the portable tier's own vector type, compiled with the same
// FLASHCORE_PORTABLE_HOST_FLAGS), enough to cover the FMA latency (4-5 cycles) on two pipes.
//
//   flashcore_cpu_peak [threads...]     default: 1 and every hardware thread (OpenMP)
// Prints one line per thread count: "threads N: X GFLOP/s (median of 7 runs of ~0.2 s)".
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backends/portable/simd.hpp"

namespace simd = flashcore::portable::simd;

namespace {

constexpr int kChains = 12;

// n iterations of kChains FMAs on 8 lanes: 2·8·kChains·n FLOP. The result is returned so the work
// is not optimized away.
__attribute__((noinline)) float fma_chains(long n, float seed) {
  simd::f8 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = simd::splat(seed + c);
  const simd::f8 a = simd::splat(0.999999f), b = simd::splat(1e-7f);
  for (long i = 0; i < n; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * a + b;
  simd::f8 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = s + acc[c];
  float out[8];
  simd::store(out, s);
  return out[0] + out[7];
}

volatile float g_sink = 0;  // every result lands here: the work cannot be optimized away

double gflops(int threads, long n) {
  double sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  sink += fma_chains(n, static_cast<float>(omp_get_thread_num()));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g_sink = static_cast<float>(sink);
  return 2.0 * simd::kLanes * kChains * static_cast<double>(n) * threads / s * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> counts;
  for (int i = 1; i < argc; ++i) counts.push_back(std::atoi(argv[i]));
  if (counts.empty()) counts = {1, omp_get_max_threads()};
  std::printf("fp32 FMA peak, %d-lane vectors (%s), %d chains a thread\n", simd::kLanes, simd::kHow, kChains);
  long n = 1 << 16;
  for (;; n *= 2) {  // ~0.2 s a run on one thread
    const auto t0 = std::chrono::steady_clock::now();
    g_sink = fma_chains(n, 1.f);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > 0.2 || n >= (1L << 34)) break;
  }
  for (int t : counts) {
    std::vector<double> runs;
    for (int r = 0; r < 7; ++r) runs.push_back(gflops(t, n));
    std::sort(runs.begin(), runs.end());
    std::printf("threads %d: %.1f GFLOP/s (median of 7 runs of ~0.2 s; min %.1f, max %.1f)\n", t, runs[3], runs[0],
                runs[6]);
  }
  return 0;
}
