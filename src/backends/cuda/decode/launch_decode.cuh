// Launching the decode kernel (decode/flash_decode.cuh), and after it the combine kernel where the plan says
// (decode/combine.cuh): one translation unit per head dim in decode/instances/ (fp16 and bf16, 16, 32 and 64
// rows per block each), dispatched by decode/launch_decode.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/decode/config.cuh"
#include "backends/cuda/kernels.h"

namespace flashcore::cuda::detail {

template <int D>
cudaError_t launch_decode_head_dim(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream);

}  // namespace flashcore::cuda::detail

#ifdef FLASHCORE_DECODE_INSTANCE  // only the instance files compile the kernels
#include "backends/cuda/common/dependent_launch.cuh"
#include "backends/cuda/decode/combine.cuh"
#include "backends/cuda/decode/flash_decode.cuh"

namespace flashcore::cuda::detail {

template <int D, typename Elem>
cudaError_t launch_decode_typed(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream) {
  void (*kernel)(KernelArgs) = plan.block_m == 64   ? flash_decode_kernel<D, Elem, 4>
                               : plan.block_m == 32 ? flash_decode_kernel<D, Elem, 2>
                                                    : flash_decode_kernel<D, Elem, 1>;
  const cudaError_t e = raise_smem_limit(reinterpret_cast<const void*>(kernel), plan.device, plan.smem);
  if (e != cudaSuccess) return e;
  // Fixed grid: x row blocks x splits (row block fastest), y KV heads, z sequences; balanced schedule:
  // one block per work item (decode/schedule.cuh).
  const dim3 grid = plan.work_slots > 0 ? dim3((unsigned)plan.work_blocks)
                                        : dim3((unsigned)(plan.n_mblocks * plan.max_splits), (unsigned)args.p.heads_kv,
                                               (unsigned)args.p.batch);
  if (plan.split_cluster > 1) {  // the pieces of a row block (consecutive in x: one row block) as one cluster
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(kDecodeThreads);
    cfg.dynamicSmemBytes = plan.smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = (unsigned)plan.split_cluster;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, args);
  }
  kernel<<<grid, kDecodeThreads, plan.smem, stream>>>(args);
  const cudaError_t e0 = cudaGetLastError();
  if (e0 != cudaSuccess || !args.split_combine) return e0;
  // The pieces' merge (decode/combine.cuh): a block per packed row (G x seqlen_q bound), KV head, sequence;
  // a dependent launch where the device has them (common/dependent_launch.cuh), its blocks waiting beside
  // the decode kernel's merges. The decode kernel itself is launched the ordinary way: a dependent launch
  // places its blocks in the SM slots that free first, two on an SM where the plan wants one, and
  // (16,64,8,1,4096,128) ran 7 % slower (perf/dev/NOTES.md, forty-third session).
  void (*combine)(KernelArgs) = decode_combine_kernel<D, Elem>;
  const bool dependent =
      plan.dependent_launch && dependent_launch_loads(reinterpret_cast<const void*>(combine), plan.device);
  return launch_kernel(combine,
                       dim3((unsigned)(args.q_heads_per_kv * args.p.seqlen_q), (unsigned)args.p.heads_kv,
                            (unsigned)args.p.batch),
                       dim3(kCombineThreads), 0, stream, dependent, args);
}

template <int D>
cudaError_t launch_decode_head_dim(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream) {
  return args.p.bf16 ? launch_decode_typed<D, __nv_bfloat16>(plan, args, stream)
                     : launch_decode_typed<D, __half>(plan, args, stream);
}

}  // namespace flashcore::cuda::detail

#define FLASHCORE_DECODE_INSTANTIATE(D)                                               \
  template cudaError_t flashcore::cuda::detail::launch_decode_head_dim<D>(            \
      const flashcore::cuda::FlashFwdPlan&, const flashcore::cuda::detail::KernelArgs&, cudaStream_t);
#endif
