// FlashCore: the Hopper-native forward kernel (flash_fwd_hopper.cu, wgmma, sm_90a only), as seen
// from the launcher (flash_fwd.cu). Built when sm_90 is among the CUDA architectures
// (FLASHCORE_HAVE_HOPPER_KERNELS); elsewhere the launcher never calls these.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "flash_fwd.h"

namespace flashcore::cuda::detail {

struct KernelArgs;

// Empty if the kernel's TMA tensor maps accept p's pointers and strides, else why not (naming the tensor).
std::string hopper_unsupported_reason(const FlashFwdParams& p);

// Query rows per block (64 per consumer warpgroup), head_dim 64 or 128.
int hopper_block_m(int head_dim);
// Dynamic shared memory of one block (head_dim 64 or 128).
size_t hopper_smem_bytes(int head_dim);
// True when the kernel's sm_90a image loads on `device` (a compute capability 9.0 GPU).
bool hopper_kernel_available(int device);
// Raises `kernel`'s dynamic shared memory limit on `device` to `bytes` once (the largest size asked so
// far is remembered per kernel and device). Defined in flash_fwd.cu, used by both launchers.
cudaError_t raise_smem_limit(const void* kernel, int device, size_t bytes);
// Launch on `stream`; args.n_mblocks counts blocks of hopper_block_m(head_dim) rows. No split-KV.
cudaError_t launch_hopper(const KernelArgs& args, int device, cudaStream_t stream);

}  // namespace flashcore::cuda::detail
