// Thread block clusters (compute capability 9.0): the cluster's size, its barrier, and loads from a peer
// block's shared memory (distributed shared memory). Compiled for every target; below 9.0 a launch has no
// cluster, cluster_ctas() is 1 and the other calls are never reached (they trap if they are).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace flashcore::cuda::detail {

// Blocks in this block's cluster (1 without a cluster launch).
__device__ __forceinline__ unsigned cluster_ctas() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
  return n;
#else
  return 1;
#endif
}

// Every thread of every block of the cluster: the writes before it (shared memory included) are seen by the
// reads after it in every block of the cluster (release / acquire).
__device__ __forceinline__ void cluster_sync_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}

// The address, in the cluster's shared window, of this block's shared-memory address `addr` in block `rank`.
__device__ __forceinline__ uint32_t cluster_peer(uint32_t addr, unsigned rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
#else
  __trap();
  return 0;
#endif
}

__device__ __forceinline__ float ld_peer_f32(uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
#else
  __trap();
  return 0.f;
#endif
}

__device__ __forceinline__ float4 ld_peer_v4(uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
#else
  __trap();
  return make_float4(0.f, 0.f, 0.f, 0.f);
#endif
}

}  // namespace flashcore::cuda::detail
