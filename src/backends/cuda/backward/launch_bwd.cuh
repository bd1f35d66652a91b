// Launching the backward kernels: declared for the plan (plan_bwd.cu), defined where
// FLASHCORE_BWD_INSTANCE is set: instances/bwd_hdim*.cu (one translation unit per head dim and mask
// policy, fixed-length or sequences, both dtypes, causal and not: they compile in parallel) and
// instances/bwd_delta.cu.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/backward/bwd_config.cuh"
#include "backends/cuda/backward/sm90/config.h"  // bwd_hopper_built
#include "backends/cuda/kernels.h"  // raise_smem_limit

namespace flashcore::cuda::detail {

// delta and lse2 into the workspace (bwd_delta.cuh); on the atomic path also zeroes dq_accum; with
// args.p.dsinks set, then the sinks' gradient from them.
cudaError_t launch_bwd_delta(const FlashBwdPlan& plan, const BwdArgs& args, cudaStream_t stream);
// Head dim D, mask policy BwdMask<kVariants, causal, kSeq> (bwd_tile_ops.cuh; kSeq: sequence layouts,
// bwd_sequences.cuh): the dK/dV kernel, then the dQ kernel (deterministic path) or, when args.dq_accum
// is set, the dK/dV kernel with dQ atomics and the conversion of the accumulator to dQ (bwd_convert.cuh).
template <int D, bool kVariants, bool kSeq>
cudaError_t launch_bwd_head_dim(const FlashBwdPlan& plan, const BwdArgs& args, cudaStream_t stream);
// The Hopper dK/dV kernel of head dim D (64, 128: bwd_hopper_head_dim), when plan.hopper: defined in
// backward/sm90/instances/ (sm_90a; in the build when FLASHCORE_HAVE_HOPPER_KERNELS is).
template <int D, bool kVariants, bool kSeq>
cudaError_t launch_bwd_sm90_head_dim(const FlashBwdPlan& plan, const BwdArgs& args, cudaStream_t stream);

}  // namespace flashcore::cuda::detail

#ifdef FLASHCORE_BWD_INSTANCE
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/backward/bwd_convert.cuh"
#include "backends/cuda/backward/bwd_delta.cuh"
#include "backends/cuda/backward/bwd_dkdv.cuh"
#include "backends/cuda/backward/bwd_dq.cuh"

namespace flashcore::cuda::detail {

template <int D, typename Elem, bool kVariants, bool kCausal, bool kSeq>
cudaError_t launch_bwd_typed(const FlashBwdPlan& plan, const BwdArgs& args, cudaStream_t stream) {
  using Mask = BwdMask<kVariants, kCausal, kSeq>;
  // The forward's once-per-(kernel, device) raise of the dynamic shared memory limit (run.cu).
  if (plan.hopper) {  // the Hopper dK/dV kernel (its head dim: D, or 128 for 96), then the conversion
    cudaError_t e = cudaErrorInvalidValue;  // a build without the Hopper kernel never plans it
#ifdef FLASHCORE_HAVE_HOPPER_KERNELS
    constexpr int kD = bwd_hopper_head_dim(D);
    if constexpr (kD != 0) {
      e = launch_bwd_sm90_head_dim<kD, kVariants, kSeq>(plan, args, stream);  // dispatches dtype and causal itself
      if (e != cudaSuccess) return e;
      flash_bwd_convert_dq_kernel<kD, Elem, kSeq><<<plan.grid_dq, kBwdConvertThreads, 0, stream>>>(args);
      e = cudaGetLastError();
    }
#endif
    return e;
  }
  if constexpr (bwd_atomic_dq_built(D)) {
    if (plan.atomic_dq) {
      void (*dkdv)(BwdArgs) = flash_bwd_dkdv_kernel<D, Elem, Mask, true>;
      cudaError_t e = raise_smem_limit(reinterpret_cast<const void*>(dkdv), plan.device, plan.smem_dkdv);
      if (e != cudaSuccess) return e;
      dkdv<<<plan.grid_dkdv, plan.threads, plan.smem_dkdv, stream>>>(args);
      e = cudaGetLastError();
      if (e != cudaSuccess) return e;
      flash_bwd_convert_dq_kernel<D, Elem, kSeq><<<plan.grid_dq, kBwdConvertThreads, 0, stream>>>(args);
      return cudaGetLastError();
    }
  }
  if (plan.atomic_dq) return cudaErrorInvalidValue;  // the plan never gets here (bwd_atomic_dq_built)
  void (*dkdv)(BwdArgs) = flash_bwd_dkdv_kernel<D, Elem, Mask, false>;
  void (*dq)(BwdArgs) = flash_bwd_dq_kernel<D, Elem, Mask>;
  cudaError_t e = raise_smem_limit(reinterpret_cast<const void*>(dkdv), plan.device, plan.smem_dkdv);
  if (e != cudaSuccess) return e;
  e = raise_smem_limit(reinterpret_cast<const void*>(dq), plan.device, plan.smem_dq);
  if (e != cudaSuccess) return e;
  dkdv<<<plan.grid_dkdv, plan.threads, plan.smem_dkdv, stream>>>(args);
  e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  dq<<<plan.grid_dq, plan.threads, plan.smem_dq, stream>>>(args);
  return cudaGetLastError();
}

// The VariantMask kernels take causal at run time (a window's right edge of 0), and so do those of
// sequence layouts (one instance each); the plain CausalMask ones as a template argument (BwdMask).
template <int D, typename Elem, bool kVariants, bool kSeq>
cudaError_t launch_bwd_causal(const FlashBwdPlan& plan, const BwdArgs& args, cudaStream_t stream) {
  if constexpr (kVariants || kSeq)
    return launch_bwd_typed<D, Elem, kVariants, false, kSeq>(plan, args, stream);
  else
    return args.p.fwd.causal ? launch_bwd_typed<D, Elem, false, true, false>(plan, args, stream)
                             : launch_bwd_typed<D, Elem, false, false, false>(plan, args, stream);
}

template <int D, bool kVariants, bool kSeq>
cudaError_t launch_bwd_head_dim(const FlashBwdPlan& plan, const BwdArgs& args, cudaStream_t stream) {
  return args.p.fwd.bf16 ? launch_bwd_causal<D, __nv_bfloat16, kVariants, kSeq>(plan, args, stream)
                         : launch_bwd_causal<D, __half, kVariants, kSeq>(plan, args, stream);
}

}  // namespace flashcore::cuda::detail

#define FLASHCORE_BWD_INSTANTIATE(D, VARIANTS, SEQ)                                               \
  template cudaError_t flashcore::cuda::detail::launch_bwd_head_dim<D, VARIANTS, SEQ>(            \
      const flashcore::cuda::FlashBwdPlan&, const flashcore::cuda::detail::BwdArgs&, cudaStream_t);
#endif
