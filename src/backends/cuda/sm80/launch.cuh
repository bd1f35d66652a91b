// Launching one head dim's mma.sync kernels (sm80/): included by the per-head-dim translation units in
// sm80/instances/ (one file per D and mask policy, so they compile in parallel and a new D is one new
// file pair), and declared for the dispatch in sm80/launch_sm80.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/common/mask.cuh"
#include "backends/cuda/common/scheduler.cuh"
#include "backends/cuda/common/variant_mask.cuh"
#include "backends/cuda/kernels.h"
#include "backends/cuda/sm80/config.cuh"

namespace flashcore::cuda::detail {

// Mask: CausalMask (problems without variants) or VariantMask.
template <int D, class Mask>
cudaError_t launch_sm80_head_dim(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream);

}  // namespace flashcore::cuda::detail

#ifdef FLASHCORE_SM80_INSTANCE  // only the instance files compile the kernels
#include "backends/cuda/sm80/flash_fwd_rows16.cuh"
#include "backends/cuda/sm80/flash_fwd_wide.cuh"

namespace flashcore::cuda::detail {

template <int D, typename Elem, class Mask>
cudaError_t launch_typed(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream) {
  constexpr bool kVariants = Mask::kTransformsScores;
  void (*kernel)(KernelArgs) = flash_fwd_kernel<D, Elem, false, Mask>;
  if constexpr (sm80_kernel_built(FlashKernel::Wide, D, kVariants)) {
    if (plan.kernel == FlashKernel::Wide) kernel = flash_fwd_wide_kernel<D, Elem, Mask>;
  }
  if constexpr (sm80_kernel_built(FlashKernel::Rows16WarpSpecialized, D, kVariants)) {
    if (plan.kernel == FlashKernel::Rows16WarpSpecialized) kernel = flash_fwd_kernel<D, Elem, true, Mask>;
  }
  const cudaError_t e = raise_smem_limit(reinterpret_cast<const void*>(kernel), plan.device, plan.smem);
  if (e != cudaSuccess) return e;
  const dim3 grid = heavy_first_grid(plan.n_mblocks, plan.max_splits, args.p.heads_q, args.p.batch);
  kernel<<<grid, plan.threads, plan.smem, stream>>>(args);
  return cudaGetLastError();
}

template <int D, class Mask>
cudaError_t launch_sm80_head_dim(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream) {
  return args.p.bf16 ? launch_typed<D, __nv_bfloat16, Mask>(plan, args, stream)
                     : launch_typed<D, __half, Mask>(plan, args, stream);
}

}  // namespace flashcore::cuda::detail

#define FLASHCORE_SM80_INSTANTIATE(D, MASK)                                                           \
  template cudaError_t flashcore::cuda::detail::launch_sm80_head_dim<D, flashcore::cuda::detail::MASK>( \
      const flashcore::cuda::FlashFwdPlan&, const flashcore::cuda::detail::KernelArgs&, cudaStream_t);
#endif
