// The Hopper forward kernel with FP8 (e4m3) inputs (sm90/fp8.cuh): head dim 128 (smaller ones run here
// zero-padded), O in fp16 or bf16, the causal/key-tail mask; and the transposed-V kernel it reads.
#include "backends/cuda/sm90/flash_fwd_sm90.cuh"
#include "backends/cuda/sm90/fp8_transpose_v.cuh"

namespace flashcore::cuda::detail {

namespace {
template <typename OutElem>
cudaError_t launch_fp8_typed(const FlashFwdPlan& plan, const KernelArgs& args, const HopperMaps& maps, cudaStream_t stream) {
  using Cfg = HopperFp8Config;
  void (*kernel)(KernelArgs, HopperMaps) = flash_fwd_hopper_kernel<kHopperFp8HeadDim, __nv_fp8_e4m3, CausalMask, false, OutElem>;
  const cudaError_t e = raise_smem_limit(reinterpret_cast<const void*>(kernel), plan.device, Cfg::kSmemBytes);
  if (e != cudaSuccess) return e;
  kernel<<<plan.work_blocks, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(args, maps);
  return cudaGetLastError();
}
}  // namespace

cudaError_t launch_sm90_fp8(const FlashFwdPlan& plan, const KernelArgs& args, const HopperMaps& maps, void* vt,
                            cudaStream_t stream) {
  const FlashFwdParams& p = args.p;
  const dim3 grid((plan.fp8_keys_pad + kFp8TransposeKeys - 1) / kFp8TransposeKeys, p.heads_kv, p.batch);
  fp8_transpose_v_kernel<<<grid, kFp8TransposeThreads, 0, stream>>>(
      static_cast<const uint8_t*>(p.v), p.v_batch_stride, p.v_seq_stride, p.v_head_stride, p.seqlen_k, p.head_dim,
      p.heads_kv, plan.fp8_keys_pad, static_cast<uint8_t*>(vt));
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  return p.bf16 ? launch_fp8_typed<__nv_bfloat16>(plan, args, maps, stream) : launch_fp8_typed<__half>(plan, args, maps, stream);
}

}  // namespace flashcore::cuda::detail
