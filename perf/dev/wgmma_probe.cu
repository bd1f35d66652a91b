// Probe of the wgmma shared-memory descriptor conventions used by flash_fwd_hopper.cu (sm_90a only).
//
// Tiles live in the "core-matrix" layout of the Hopper kernel: element (row, col) of a [rows x D]
// 16-bit tile at byte ((row/8)·(D/8) + col/8)·128 + (row%8)·16 + (col%8)·2, i.e. 8x8 core matrices of
// 128 contiguous bytes, row-group major. For each operand the probe runs one wgmma with the
// kernel's descriptor strides (LBO, SBO) and prints the max error against the host (the swapped order
// was tried once: it faults, so it is no longer run):
//   SS  S[64 x 64] = Q[64 x 16] · K[64 x 16]ᵀ, both K-major, k16 slice kk = 3 of D = 128
//   RS  O[64 x 128] = P[64 x 16] (registers) · V[16 x 128], V MN-major (transposed), keys 16..31
// Build: nvcc -std=c++17 -O2 -gencode arch=compute_90a,code=sm_90a -o .gpu-dev/wgmma_probe perf/dev/wgmma_probe.cu
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "../../src/backends/cuda/sm90/wgmma_ops.inc"

constexpr int D = 128;
__host__ __device__ inline int cm_off(int row, int col) {  // element offset in the core-matrix layout
  return (((row >> 3) * (D / 8) + (col >> 3)) * 64) + (row & 7) * 8 + (col & 7);
}
__device__ uint64_t desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32);
}
__device__ void fence_operand(float& x) { asm volatile("" : "+f"(x)::"memory"); }

// q, k, v: [64][D] in core-matrix layout (global); p: [64][16] row-major; outputs row-major.
__global__ void probe(const __half* q, const __half* k, const __half* v, const __half* p, float* s_out, float* o_out,
                      int swap_ss, int swap_rs) {
  __shared__ __align__(128) __half sq[64 * D], sk[64 * D], sv[64 * D];
  const int tid = threadIdx.x;
  for (int i = tid; i < 64 * D; i += 128) { sq[i] = q[i]; sk[i] = k[i]; sv[i] = v[i]; }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  // ---- SS: k16 slice kk = 3
  const uint32_t kmaj_k = 128, kmaj_mn = 16 * D;  // K-direction and M/N-direction core-matrix strides
  const int kk = 3;
  const uint32_t aq = (uint32_t)__cvta_generic_to_shared(sq) + kk * 256, bk = (uint32_t)__cvta_generic_to_shared(sk) + kk * 256;
  float s[32];
  for (int i = 0; i < 32; ++i) s[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  if (!swap_ss) wgmma_ss_m64n64k16(s, desc(aq, kmaj_k, kmaj_mn), desc(bk, kmaj_k, kmaj_mn), 0, __half{});
  else          wgmma_ss_m64n64k16(s, desc(aq, kmaj_mn, kmaj_k), desc(bk, kmaj_mn, kmaj_k), 0, __half{});
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  for (int i = 0; i < 32; ++i) fence_operand(s[i]);
  for (int i = 0; i < 8; ++i)
    for (int e = 0; e < 4; ++e) {
      const int row = 16 * warp + g + (e >> 1) * 8, col = 8 * i + 2 * t + (e & 1);
      s_out[row * 64 + col] = s[4 * i + e];
    }
  // ---- RS: A = P fragments (mma.sync m16n8k16 A layout per warp), B = V keys 16..31 (MN-major)
  uint32_t a[4];
  auto pk = [&](int r, int c) {
    __half2 h = __halves2half2(p[r * 16 + c], p[r * 16 + c + 1]);
    return *reinterpret_cast<uint32_t*>(&h);
  };
  const int r0 = 16 * warp + g;
  a[0] = pk(r0, 2 * t); a[1] = pk(r0 + 8, 2 * t); a[2] = pk(r0, 2 * t + 8); a[3] = pk(r0 + 8, 2 * t + 8);
  const uint32_t bv = (uint32_t)__cvta_generic_to_shared(sv) + 2 * (D / 8) * 128;  // key row group 2 = keys 16..
  const uint32_t mn_stride = 128, k_stride = 16 * D;  // V: d (N) chunks 128 B apart, key groups 16·D B apart
  float o[64];
  for (int i = 0; i < 64; ++i) o[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  if (!swap_rs) wgmma_rs_m64n128k16(o, a, desc(bv, k_stride, mn_stride), __half{});
  else          wgmma_rs_m64n128k16(o, a, desc(bv, mn_stride, k_stride), __half{});
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  for (int i = 0; i < 64; ++i) fence_operand(o[i]);
  for (int i = 0; i < 16; ++i)
    for (int e = 0; e < 4; ++e) {
      const int row = 16 * warp + g + (e >> 1) * 8, col = 8 * i + 2 * t + (e & 1);
      o_out[row * 128 + col] = o[4 * i + e];
    }
}

int main() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> Q(64 * D), K(64 * D), V(64 * D), P(64 * 16);
  for (auto* m : {&Q, &K, &V, &P}) for (float& x : *m) x = __half2float(__float2half(u(rng)));
  std::vector<__half> hq(64 * D), hk(64 * D), hv(64 * D), hp(64 * 16);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < D; ++c) {
      hq[cm_off(r, c)] = __float2half(Q[r * D + c]);
      hk[cm_off(r, c)] = __float2half(K[r * D + c]);
      hv[cm_off(r, c)] = __float2half(V[r * D + c]);
    }
  for (int i = 0; i < 64 * 16; ++i) hp[i] = __float2half(P[i]);
  __half *dq, *dk, *dv, *dp;
  float *ds, *dout;
  cudaMalloc(&dq, 64 * D * 2); cudaMalloc(&dk, 64 * D * 2); cudaMalloc(&dv, 64 * D * 2); cudaMalloc(&dp, 64 * 16 * 2);
  cudaMalloc(&ds, 64 * 64 * 4); cudaMalloc(&dout, 64 * 128 * 4);
  cudaMemcpy(dq, hq.data(), 64 * D * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dk, hk.data(), 64 * D * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dv, hv.data(), 64 * D * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dp, hp.data(), 64 * 16 * 2, cudaMemcpyHostToDevice);
  std::vector<float> S(64 * 64), O(64 * 128);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      double acc = 0;
      for (int c = 48; c < 64; ++c) acc += (double)Q[i * D + c] * K[j * D + c];
      S[i * 64 + j] = (float)acc;
    }
  for (int i = 0; i < 64; ++i)
    for (int n = 0; n < 128; ++n) {
      double acc = 0;
      for (int c = 0; c < 16; ++c) acc += (double)P[i * 16 + c] * V[(16 + c) * D + n];
      O[i * 128 + n] = (float)acc;
    }
  int rc = 1;
  for (int sw = 0; sw < 1; ++sw) {  // the swapped order (sw = 1) reads out of bounds: not run
    probe<<<1, 128>>>(dq, dk, dv, dp, ds, dout, sw, sw);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { printf("probe swap=%d: CUDA error %s\n", sw, cudaGetErrorString(e)); return 2; }
    std::vector<float> s(64 * 64), o(64 * 128);
    cudaMemcpy(s.data(), ds, s.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(o.data(), dout, o.size() * 4, cudaMemcpyDeviceToHost);
    double es = 0, eo = 0;
    for (int i = 0; i < 64 * 64; ++i) es = std::fmax(es, std::fabs(s[i] - S[i]));
    for (int i = 0; i < 64 * 128; ++i) eo = std::fmax(eo, std::fabs(o[i] - O[i]));
    printf("PROBE %s: SS (K-major Q,K) max err %.3g %s | RS (MN-major V) max err %.3g %s\n",
           sw ? "swapped (LBO=M/N stride, SBO=K stride)" : "as built (LBO=K stride, SBO=M/N stride)", es,
           es < 1e-3 ? "OK" : "WRONG", eo, eo < 1e-3 ? "OK" : "WRONG");
    if (!sw && es < 1e-3 && eo < 1e-3) rc = 0;
  }
  return rc;
}
