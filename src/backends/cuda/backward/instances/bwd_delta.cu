// The backward's delta kernel (bwd_delta.cuh), both dtypes, every head dim; the sinks' gradient.
#define FLASHCORE_BWD_INSTANCE
#include "backends/cuda/backward/launch_bwd.cuh"

namespace flashcore::cuda::detail {

cudaError_t launch_bwd_delta(const FlashBwdPlan& plan, const BwdArgs& args, cudaStream_t stream) {
  const bool seq = plan.sequences();  // (bwd_sequences.cuh)
  void (*delta)(BwdArgs) = args.p.fwd.bf16 ? (seq ? flash_bwd_delta_kernel<__nv_bfloat16, true>
                                                  : flash_bwd_delta_kernel<__nv_bfloat16, false>)
                                           : (seq ? flash_bwd_delta_kernel<__half, true> : flash_bwd_delta_kernel<__half, false>);
  delta<<<plan.grid_delta, plan.delta_threads, 0, stream>>>(args);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && args.p.dsinks != nullptr) {
    flash_bwd_dsinks_kernel<><<<args.p.fwd.heads_q, kBwdDsinksThreads, 0, stream>>>(args);
    e = cudaGetLastError();
  }
  return e;
}

}  // namespace flashcore::cuda::detail
