// The mma.sync kernels (sm80/): the plan's head dim picks the translation unit compiled for it
// (sm80/instances/fwd_hdim*.cu: fp16 and bf16, the causal/key-tail mask, the kernels that
// sm80_kernel_built lists for that D); launched as the plan says.
#include "backends/cuda/sm80/launch.cuh"

namespace flashcore::cuda::detail {

cudaError_t launch_sm80(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream) {
  switch (native_head_dim(args.p.head_dim)) {
    case 32: return launch_sm80_head_dim<32>(plan, args, stream);
    case 64: return launch_sm80_head_dim<64>(plan, args, stream);
    case 96: return launch_sm80_head_dim<96>(plan, args, stream);
    case 128: return launch_sm80_head_dim<128>(plan, args, stream);
    case 192: return launch_sm80_head_dim<192>(plan, args, stream);
    case 256: return launch_sm80_head_dim<256>(plan, args, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace flashcore::cuda::detail
