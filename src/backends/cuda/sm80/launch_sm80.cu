// The mma.sync kernels (sm80/), instantiated for what the launch table needs: head dim 64 and 128,
// fp16 and bf16, the causal/key-tail mask; launched as the plan says.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/common/mask.cuh"
#include "backends/cuda/common/scheduler.cuh"
#include "backends/cuda/kernels.h"
#include "backends/cuda/sm80/flash_fwd_rows16.cuh"
#include "backends/cuda/sm80/flash_fwd_wide.cuh"

namespace flashcore::cuda::detail {
namespace {

template <int D, typename Elem, class Mask>
cudaError_t launch_typed(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream) {
  void (*kernel)(KernelArgs) = plan.kernel == FlashKernel::Wide ? flash_fwd_wide_kernel<D, Elem, Mask>
                               : plan.kernel == FlashKernel::Rows16WarpSpecialized
                                   ? flash_fwd_kernel<D, Elem, true, Mask>
                                   : flash_fwd_kernel<D, Elem, false, Mask>;
  const cudaError_t e = raise_smem_limit(reinterpret_cast<const void*>(kernel), plan.device, plan.smem);
  if (e != cudaSuccess) return e;
  const dim3 grid = heavy_first_grid(plan.n_mblocks, plan.max_splits, args.p.heads_q, args.p.batch);
  kernel<<<grid, plan.threads, plan.smem, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_sm80(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream) {
  if (args.p.head_dim == 64)
    return args.p.bf16 ? launch_typed<64, __nv_bfloat16, CausalMask>(plan, args, stream)
                       : launch_typed<64, __half, CausalMask>(plan, args, stream);
  return args.p.bf16 ? launch_typed<128, __nv_bfloat16, CausalMask>(plan, args, stream)
                     : launch_typed<128, __half, CausalMask>(plan, args, stream);
}

}  // namespace flashcore::cuda::detail
