// flashcore_gpu_peak: the GPU's measured fp32 FMA peak without tensor cores, the ceiling the
// portable tier's GPU kernel (portable-cuda: fp32 FMAs) is stated against. Every thread runs 8
// independent chains of FMAs (enough to hide the FMA latency at full occupancy); blocks fill every
// SM several times over. Timed with CUDA events, median of 7 launches of ~0.1 s.
//
//   flashcore_gpu_peak        prints the device, its SM clock, and "fp32 FMA peak: X TFLOP/s"
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

constexpr int kChains = 8;
constexpr int kThreads = 256;

__global__ void fma_chains(float* out, int n, float a, float b) {
  float acc[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) acc[c] = threadIdx.x + c;
  for (int i = 0; i < n; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) acc[c] = fmaf(acc[c], a, b);
  }
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += acc[c];
  if (s == 1234.5f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // never true: keeps the work
}

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    const cudaError_t e = (x);                                                                     \
    if (e != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "flashcore_gpu_peak: %s: %s\n", #x, cudaGetErrorString(e));             \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

}  // namespace

int main() {
  int dev = 0;
  cudaDeviceProp prop{};
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaGetDeviceProperties(&prop, dev));
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fma_chains, kThreads, 0));
  const int blocks = prop.multiProcessorCount * per_sm * 4;
  float* out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(float) * blocks * kThreads));
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  auto time_ms = [&](int n) {
    cudaEventRecord(t0);
    fma_chains<<<blocks, kThreads>>>(out, n, 0.999999f, 1e-7f);
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, t0, t1);
    return static_cast<double>(ms);
  };
  int n = 1024;
  while (time_ms(n) < 100.0 && n < (1 << 24)) n *= 2;
  std::vector<double> tf;
  for (int r = 0; r < 7; ++r) {
    const double ms = time_ms(n);
    tf.push_back(2.0 * kChains * static_cast<double>(n) * blocks * kThreads / (ms * 1e-3) * 1e-12);
  }
  CHECK(cudaGetLastError());
  std::sort(tf.begin(), tf.end());
  std::printf("device: %s (%d SMs, SM clock %d MHz as reported)\n", prop.name, prop.multiProcessorCount,
              clock_khz / 1000);
  std::printf("fp32 FMA peak: %.1f TFLOP/s (median of 7 launches of ~0.1 s; min %.1f, max %.1f; %d blocks of %d "
              "threads, %d FMA chains each)\n",
              tf[3], tf[0], tf[6], blocks, kThreads, kChains);
  cudaFree(out);
  return 0;
}
