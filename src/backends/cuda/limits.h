// The limits every tuned kernel shares, checked once per call by the forward's plan (plan.cu) and the
// backward's (backward/plan_bwd.cu). Host code.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>

#include "backends/cuda/flash_fwd.h"

namespace flashcore::cuda::detail {

// Compute capability 8.0+, head dim a multiple of 8 up to 256, sizes, scale, window sides, the q, k,
// v, o pointers (16-byte aligned) and their strides (multiples of 8 elements), a launch override's
// fields, the smallest kernel's shared memory. "" or why not, naming the field.
std::string common_limits(const FlashFwdParams& p, const DeviceLimits& dev);

// The tensor checks both plans make, each on its own tensors: "" or the first pointer that is null
// or not 16-byte aligned ("<name> pointer is ..."), the first stride that is not a multiple of 8
// elements ("<name> <value> is not ...").
struct NamedPointer {
  const void* ptr;
  const char* name;
};
struct NamedStride {
  long long value;
  const char* name;
};
std::string pointer_limits(std::initializer_list<NamedPointer> pointers);
std::string stride_limits(std::initializer_list<NamedStride> strides);

// Blocks of `smem` bytes (dynamic shared memory) an SM holds as far as shared memory goes: an SM has the
// opt-in per-block size plus 1 KB (sm_80: 164 KB, sm_86/89: 100 KB, sm_90: 228 KB) and every block
// reserves 1 KB (cudaDevAttrReservedSharedMemoryPerBlock).
inline int smem_blocks_per_sm(const DeviceLimits& dev, size_t smem) {
  return (int)((dev.smem_optin_per_block + 1024) / (smem + 1024));
}
// Blocks of `threads` threads an SM holds as far as registers go, whatever the kernel's count: every
// compute capability 8.0-9.0 SM has 64K registers, and a thread has at most 255 (256 as allocated), so
// 8 warps at the least (128 threads: 2 blocks, as the wide kernel's __launch_bounds__ asks; 160 or 256: 1).
inline int register_cap_blocks_per_sm(int threads) { return std::max(1, 8 / ((threads + 31) / 32)); }

}  // namespace flashcore::cuda::detail
