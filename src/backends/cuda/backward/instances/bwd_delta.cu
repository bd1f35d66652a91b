// The backward's delta kernel (bwd_delta.cuh), both dtypes, every head dim.
#define FLASHCORE_BWD_INSTANCE
#include "backends/cuda/backward/launch_bwd.cuh"

namespace flashcore::cuda::detail {

cudaError_t launch_bwd_delta(const FlashBwdPlan& plan, const BwdArgs& args, cudaStream_t stream) {
  if (args.p.fwd.bf16)
    flash_bwd_delta_kernel<__nv_bfloat16><<<plan.grid_delta, plan.delta_threads, 0, stream>>>(args);
  else
    flash_bwd_delta_kernel<__half><<<plan.grid_delta, plan.delta_threads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace flashcore::cuda::detail
