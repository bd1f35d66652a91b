// Programmatic dependent launch (PTX griddepcontrol, compute capability 9.0+): a kernel launched with
// cudaLaunchAttributeProgrammaticStreamSerialization may be scheduled while the kernel before it on the
// stream is still running, once every block of that kernel has let it (griddepcontrol.launch_dependents or
// its exit); griddepcontrol.wait then holds it until that kernel has completed and its writes are visible.
// The launch latency and the block scheduling move under the earlier kernel's last blocks: a graph of
// back-to-back 20 us kernels ran 0.26 us a call faster on an H200, a kernel and a small second kernel 0.54 us
// (perf/dev/graph_nodes_dev.cu, perf/dev/NOTES.md, forty-third session).
//
// The rule every kernel launched this way keeps: dependent_launch_wait() before its first global memory
// access (reads of inputs the kernel before may have written, writes the kernel before may still read).
// dependent_launch_allow() where the kernel's own heavy work is done: the next kernel's blocks, waiting,
// may take SM slots beside it.
// Nothing else changes: launched the ordinary way, the wait returns at once; code compiled for an
// architecture before 9.0 has neither instruction, so such a kernel must not be launched dependent
// (kernels.h, dependent_launch_loads: the loaded code's PTX version, CUDA 12.3+ runtime and driver).
//
// Where not to use it: a kernel whose plan wants fewer blocks on an SM than fit there. Its dependent
// launch places blocks in the slots that free first (an SM whose block ended early takes two), and the
// one-block-per-SM decode plan of (16,64,8,1,4096,128) ran 7 % slower launched so (allowed after the key
// loop; allowed at the start, the D = 64 decode kernel's eager calls 17 % slower). Used for the decode
// combine kernel (decode/launch_decode.cuh) and the Hopper forward (sm90/flash_fwd_sm90.cuh: one block per SM
// by its registers and shared memory, so the next call's blocks take an SM only when this call's block has left it).
#pragma once

#include <cuda_runtime.h>

namespace flashcore::cuda::detail {

// Wait for the kernels before this one on the stream (their writes visible).
__device__ __forceinline__ void dependent_launch_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
// Let the next kernel launch once every block of this one has called it (or exited); it waits in its own
// dependent_launch_wait() for this one to complete. Its blocks then take free SM slots beside this kernel's.
__device__ __forceinline__ void dependent_launch_allow() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// kernel<<<grid, block, smem, stream>>>(args...), as a dependent launch when `dependent` (the plan's
// FlashFwdPlan::dependent_launch, compute capability 9.0+, and dependent_launch_loads for the kernel). The
// kernel must call dependent_launch_wait().
template <typename... Params, typename... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                          bool dependent, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = dependent ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<Args&&>(args)...);
}

}  // namespace flashcore::cuda::detail
