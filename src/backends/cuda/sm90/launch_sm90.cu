// The Hopper kernel's dispatch: the instance the plan chose (FlashFwdPlan::hopper_dim and hopper_wgs;
// sm90/config.h, with_hopper_instance) picks the translation unit in sm90/instances/ (fwd_hdim*.cu), which
// launches it with the plan's TMA descriptors. Built for sm_90a only, with the instances.
#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <mutex>

#include "backends/cuda/kernels.h"
#include "backends/cuda/sm90/config.h"

namespace flashcore::cuda::detail {

// Defined in sm90/flash_fwd_sm90.cuh, instantiated per head dim and consumer warpgroups in sm90/instances/.
template <int D, int kWGs>
cudaError_t launch_sm90_instance(const FlashFwdPlan& plan, const KernelArgs& args, const HopperMaps& maps,
                                 cudaStream_t stream);
template <int D>
const void* sm90_kernel_address();
// Defined in sm90/instances/fwd_fp8_hdim128.cu: Vᵀ into `vt` (sm90/fp8_transpose_v.cuh), then the kernel.
cudaError_t launch_sm90_fp8(const FlashFwdPlan& plan, const KernelArgs& args, const HopperMaps& maps, void* vt,
                            cudaStream_t stream);

namespace {
// FP8: the transposed V's workspace, stream-ordered (cudaMallocAsync: from the device's pool, so a
// steady loop reuses the same memory), its TMA map, the two kernels, the release after them.
cudaError_t run_fp8(const FlashFwdPlan& plan, const KernelArgs& args, HopperMaps maps, cudaStream_t stream) {
  void* vt = nullptr;
  cudaError_t e = cudaMallocAsync(&vt, plan.fp8_vt_bytes, stream);
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: the caller sees the status
    return e;
  }
  if (sm90_fp8_vt_map(args.p, vt, plan.fp8_keys_pad, &maps.v).empty())
    e = launch_sm90_fp8(plan, args, maps, vt, stream);
  else
    e = cudaErrorInvalidValue;  // the plan checked the layout; a fresh allocation is 256-byte aligned
  const cudaError_t f = cudaFreeAsync(vt, stream);
  return e != cudaSuccess ? e : f;
}
}  // namespace

bool sm90_kernel_loads(int device) {
  static std::mutex m;
  static std::map<int, bool> cache;
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(device);
  if (it != cache.end()) return it->second;
  int prev = -1;
  bool ok = cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(device) == cudaSuccess;
  if (ok) {
    cudaFuncAttributes attr{};
    ok = cudaFuncGetAttributes(&attr, sm90_kernel_address<64>()) == cudaSuccess;
    if (!ok) cudaGetLastError();  // no sm_90a image for this device: not an error of the caller
    cudaSetDevice(prev);
  }
  cache[device] = ok;
  return ok;
}

cudaError_t launch_sm90(const FlashFwdPlan& plan, const KernelArgs& args, cudaStream_t stream) {
  if (plan.hopper_dim < args.p.head_dim || hopper_head_dim(plan.hopper_dim) != plan.hopper_dim ||
      !hopper_instance_built(plan.hopper_dim, plan.hopper_wgs))
    return cudaErrorInvalidValue;  // the plan never gets here
  HopperMaps maps;
  std::memcpy(static_cast<void*>(&maps), plan.tensor_maps, sizeof maps);
  if (args.p.fp8) return run_fp8(plan, args, maps, stream);
  return with_hopper_instance(plan.hopper_dim, plan.hopper_wgs, [&](auto d, auto w) {
    return launch_sm90_instance<decltype(d)::value, decltype(w)::value>(plan, args, maps, stream);
  });
}

}  // namespace flashcore::cuda::detail
