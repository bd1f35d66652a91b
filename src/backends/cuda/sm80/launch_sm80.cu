// The mma.sync kernels (sm80/): the plan's head dim and the problem's variants pick the translation
// unit compiled for them (sm80/instances/fwd_hdim*.cu: fp16 and bf16, the causal/key-tail mask, the
// kernels that sm80_kernel_built lists for that D; fwd_hdim*_variants.cu: the same with VariantMask);
// launched as the plan says.
#include "backends/cuda/sm80/launch.cuh"

namespace flashcore::cuda::detail {

cudaError_t launch_sm80(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream) {
  if (native_head_dim(args.p.head_dim) == 0) return cudaErrorInvalidValue;  // the plan never gets here
  const bool variants = has_variants(args.p);
  return with_native_head_dim(args.p.head_dim, [&](auto d) {
    constexpr int D = decltype(d)::value;
    return variants ? launch_sm80_head_dim<D, VariantMask>(plan, args, stream)
                    : launch_sm80_head_dim<D, CausalMask>(plan, args, stream);
  });
}

}  // namespace flashcore::cuda::detail
