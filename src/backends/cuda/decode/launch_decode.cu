// The decode kernel (decode/): the plan's head dim picks the translation unit compiled for it
// (decode/instances/decode_hdim*.cu, fp16 and bf16); launched as the plan says.
#include "backends/cuda/decode/launch_decode.cuh"

namespace flashcore::cuda::detail {

cudaError_t launch_decode(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream) {
  switch (decode_head_dim(args.p.head_dim)) {
    case 64: return launch_decode_head_dim<64>(plan, args, stream);
    case 128: return launch_decode_head_dim<128>(plan, args, stream);
    case 256: return launch_decode_head_dim<256>(plan, args, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace flashcore::cuda::detail
