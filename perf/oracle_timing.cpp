// flashcore_oracle_timing: wall time of the fp64 host oracle (reference::run_host_fp64), the
// computation behind `flashcore run --validate`, at a few sizes. Prints a markdown table.
//
//   flashcore_oracle_timing [B,H,L,D ...]   (default: 1,8,512,64 1,8,1024,64 1,8,2048,64 4,16,1024,64)
//
// Inputs are fp16 (random, non-zero); each size runs non-causal and causal once (the oracle is
// deterministic work, one run is representative; the first size also runs a warm-up).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backends/reference/reference_api.hpp"
#include "core/numeric.hpp"
#include "flashcore/flashcore.hpp"

namespace {

struct Shape {
  int b, h, l, d;
};

double time_one(const Shape& s, bool causal) {
  const flashcore::Problem p = flashcore::Problem::make(s.b, s.h, s.h, s.l, s.l, s.d, flashcore::DType::F16, causal);
  const std::size_t n = static_cast<std::size_t>(s.b) * s.l * s.h * s.d;
  std::vector<std::uint16_t> q(n), k(n), v(n);
  std::uint64_t st = 12345;
  auto next = [&] {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((st >> 40) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
  };
  for (std::size_t i = 0; i < n; ++i) {
    q[i] = flashcore::numeric::float_to_half(next());
    k[i] = flashcore::numeric::float_to_half(next());
    v[i] = flashcore::numeric::float_to_half(next());
  }
  std::vector<double> o(n), lse(static_cast<std::size_t>(s.b) * s.h * s.l);
  const auto t0 = std::chrono::steady_clock::now();
  flashcore::reference::run_host_fp64(p, q.data(), k.data(), v.data(), o.data(), lse.data());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    Shape s{};
    if (std::sscanf(argv[i], "%d,%d,%d,%d", &s.b, &s.h, &s.l, &s.d) != 4) {
      std::fprintf(stderr, "usage: %s [B,H,L,D ...]\n", argv[0]);
      return 2;
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) shapes = {{1, 8, 512, 64}, {1, 8, 1024, 64}, {1, 8, 2048, 64}, {4, 16, 1024, 64}};
  flashcore::initialize();
  const char* omp = std::getenv("OMP_NUM_THREADS");
  std::printf("fp64 host oracle (reference::run_host_fp64), fp16 inputs, %u hw threads, OMP_NUM_THREADS=%s\n",
              std::thread::hardware_concurrency(), omp ? omp : "unset");
  std::printf("%s\n", flashcore::build_info().c_str());
  std::printf("| B,H,L,D | GFLOP (full) | full: seconds | causal: seconds | GFLOP/s (full) |\n|---|---|---|---|---|\n");
  time_one({1, 1, 64, 64}, false);  // warm-up (thread pool, first touch)
  for (const Shape& s : shapes) {
    const double flop = 4.0 * s.b * s.h * double(s.l) * s.l * s.d;
    const double tf = time_one(s, false);
    const double tc = time_one(s, true);
    std::printf("| %d,%d,%d,%d | %.2f | %.2f | %.2f | %.2f |\n", s.b, s.h, s.l, s.d, flop * 1e-9, tf, tc,
                flop * 1e-9 / tf);
    std::fflush(stdout);
  }
  flashcore::finalize();
  return 0;
}
