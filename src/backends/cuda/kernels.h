// The seam between the launch plan (plan.cu) and the kernel families: one launch function per folder
// (sm80/: mma.sync kernels, compute capability 8.0+; sm90/: the TMA + wgmma kernel, 9.0 only).
// Each launches what the plan says with the arguments the plan derived; none of them checks or chooses.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "backends/cuda/common/kernel_args.h"
#include "backends/cuda/flash_bwd.h"
#include "backends/cuda/flash_fwd.h"

namespace flashcore::cuda::detail {

// sm80/launch_sm80.cu: plan.kernel is Rows16, Rows16WarpSpecialized or Wide.
cudaError_t launch_sm80(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream);

// decode/launch_decode.cu: plan.kernel is Decode.
cudaError_t launch_decode(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream);

// sm90/launch_sm90.cu + instances/ (built when sm_90 is among the CUDA architectures: FLASHCORE_HAVE_HOPPER_KERNELS).
cudaError_t launch_sm90(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream);
// True when the kernel's sm_90a image loads on `device` (cached per device).
bool sm90_kernel_loads(int device);

// sm90/tensor_maps.cpp: the TMA descriptors of Q, K and V (3 CUtensorMap, 128-byte aligned, at `maps`;
// nullptr: check only). "" when TMA can read the layout, else why not (naming the tensor and stride).
// compiled_dim, wgs: the instance that reads them (0: the head dim's own, with its default warpgroups).
// o_tma (optional): set to whether O gets a fourth map, for TMA stores (where the instance and O's layout
// allow them; otherwise the kernel's warps store O), written at maps[3] when set.
std::string sm90_tensor_maps(const FlashFwdParams& p, void* maps, int compiled_dim = 0, int wgs = 0,
                             bool* o_tma = nullptr);
// FP8: the map of the transposed V (sm90/fp8.cuh) at `vt`, keys_pad keys per row, into one CUtensorMap at `map`.
std::string sm90_fp8_vt_map(const FlashFwdParams& p, const void* vt, int keys_pad, void* map);

// sm90/tensor_maps.cpp: the Hopper backward's TMA descriptors of Q, K, V and dO (4 CUtensorMap at `maps`,
// backward/sm90/config.h: BwdHopperMaps), "" or why not.
std::string sm90_bwd_tensor_maps(const FlashBwdParams& b, void* maps);

// Raises `kernel`'s dynamic shared memory limit on `device` to `bytes` once (run.cu; the largest size
// asked so far is remembered per kernel and device).
cudaError_t raise_smem_limit(const void* kernel, int device, size_t bytes);

// Whether `kernel` may be launched as a programmatic dependent launch on `device` (common/dependent_launch.cuh;
// run.cu, cached per kernel and device): built with CUDA 12.3+ and run by a 12.3+ driver (stream capture then
// records the launch as a programmatic edge), and the code loaded for the device compiled from PTX of 9.0+
// (its griddepcontrol.wait; a build of sm_8x code only, compiled at load time for a 9.0 device, has none).
bool dependent_launch_loads(const void* kernel, int device);

}  // namespace flashcore::cuda::detail
