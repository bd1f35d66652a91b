// The mma.sync kernels (sm80/): the plan's head dim picks the translation unit compiled for it
// (sm80/instances/fwd_hdim*.cu: fp16 and bf16, the causal/key-tail mask, the kernels that
// sm80_kernel_built lists for that D); launched as the plan says.
#include "backends/cuda/sm80/launch.cuh"

namespace flashcore::cuda::detail {

cudaError_t launch_sm80(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream) {
  if (native_head_dim(args.p.head_dim) == 0) return cudaErrorInvalidValue;  // the plan never gets here
  return with_native_head_dim(args.p.head_dim,
                              [&](auto d) { return launch_sm80_head_dim<decltype(d)::value>(plan, args, stream); });
}

}  // namespace flashcore::cuda::detail
