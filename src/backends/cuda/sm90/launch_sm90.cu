// The Hopper kernel's dispatch: the compiled head dim that runs the problem's (sm90/config.h,
// hopper_head_dim) picks the translation unit in sm90/instances/ (fwd_hdim*.cu), which launches it with
// the plan's TMA descriptors. Built for sm_90a only, with the instances.
#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <mutex>

#include "backends/cuda/kernels.h"
#include "backends/cuda/sm90/config.h"

namespace flashcore::cuda::detail {

// Defined in sm90/flash_fwd_sm90.cuh, instantiated per head dim in sm90/instances/.
template <int D>
cudaError_t launch_sm90_head_dim(const FlashFwdPlan& plan, const KernelArgs& args, const HopperMaps& maps,
                                 cudaStream_t stream);
template <int D>
const void* sm90_kernel_address();

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
  if (hopper_head_dim(args.p.head_dim) == 0) return cudaErrorInvalidValue;  // the plan never gets here
  HopperMaps maps;
  std::memcpy(static_cast<void*>(&maps), plan.tensor_maps, sizeof maps);
  return with_hopper_head_dim(args.p.head_dim, [&](auto d) {
    return launch_sm90_head_dim<decltype(d)::value>(plan, args, maps, stream);
  });
}

}  // namespace flashcore::cuda::detail
