#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
__global__ void k(const int4* src, int4* out, int mode) {
  __shared__ __align__(16) int4 buf[128];
  uint32_t dst = (uint32_t)__cvta_generic_to_shared(&buf[threadIdx.x]);
  uint64_t pol = 0;
  if (mode >= 1) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  if (mode == 2) asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(dst), "l"(src + threadIdx.x), "l"(pol) : "memory");
  else if (mode == 3) asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;" ::"r"(dst), "l"(src + threadIdx.x), "r"(16), "l"(pol) : "memory");
  else if (mode == 4) { asm volatile("createpolicy.fractional.L2::evict_first.L2::evict_unchanged.b64 %0, 1.0;" : "=l"(pol));
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(dst), "l"(src + threadIdx.x), "l"(pol) : "memory"); }
  else if (mode == 5) { int4 v; asm volatile("ld.global.L2::cache_hint.v4.s32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(src + threadIdx.x), "l"(pol)); buf[threadIdx.x] = v; }
  else asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src + threadIdx.x) : "memory");
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  out[threadIdx.x] = buf[threadIdx.x];
  if (threadIdx.x == 0) out[128] = make_int4((int)pol, (int)(pol >> 32), 0, 0);
}
int main() {
  int4 *s, *o; cudaMalloc(&s, 129 * 16); cudaMalloc(&o, 129 * 16); cudaMemset(s, 1, 129 * 16);
  for (int m = 0; m <= 5; ++m) {
    k<<<1, 128>>>(s, o, m);
    cudaError_t e = cudaDeviceSynchronize();
    int4 h[129]; cudaMemcpy(h, o, sizeof h, cudaMemcpyDeviceToHost);
    printf("mode %d: %s; out[5].x %08x policy %08x%08x\n", m, cudaGetErrorString(e), h[5].x, h[128].y, h[128].x);
    if (e != cudaSuccess) { cudaDeviceReset(); cudaMalloc(&s, 129 * 16); cudaMalloc(&o, 129 * 16); cudaMemset(s, 1, 129 * 16); }
  }
}
