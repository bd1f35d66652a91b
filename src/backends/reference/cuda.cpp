// The portable Kokkos reference instantiated for Kokkos::Cuda: "reference-cuda".
// Device memory in, device memory out; runs on the caller's stream and does not synchronize.
// Compiled only when Kokkos has its CUDA backend (then the C++ compiler is nvcc_wrapper).
#include <mutex>
#include <utility>
#include <vector>

#include "backends/reference/backward.hpp"
#include "backends/reference/reference.hpp"
#include "backends/reference/reference_api.hpp"
#include "core/internal.hpp"

namespace flashcore::reference {

namespace {

// One Kokkos::Cuda instance per CUDA stream, made on first use: constructing one allocates and
// clears device memory (Kokkos 3.4), too costly per call and not allowed inside graph capture.
// The instances are released by a Kokkos finalize hook, before Kokkos shuts down.
Kokkos::Cuda instance_for(cudaStream_t stream) {
  static std::mutex mutex;
  static std::vector<std::pair<cudaStream_t, Kokkos::Cuda>> instances;
  static bool hook_pushed = false;
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [s, exec] : instances)
    if (s == stream) return exec;
  if (!hook_pushed) {
    Kokkos::push_finalize_hook([] {
      std::lock_guard<std::mutex> lock(mutex);
      instances.clear();
      hook_pushed = false;
    });
    hook_pushed = true;
  }
  instances.emplace_back(stream, Kokkos::Cuda(stream));
  return instances.back().second;
}

class CudaReference final : public Backend {
 public:
  std::string name() const override { return "reference-cuda"; }
  int priority() const override { return 10; }
  MemoryLocation location() const override { return MemoryLocation::Device; }
  BackendKind kind() const override { return BackendKind::Reference; }
  std::string description() const override {
    return "portable Kokkos reference on Kokkos::Cuda (fp32 accumulation; every dtype, head_dim, mask and stride; forward and backward)";
  }
  Support supports(const Query& q) const override { return on_current_device(common_limits(*q.problem)); }
  void run(const Query& q, const Options& opts) const override {
    enqueue(opts, "launch", [&](const Kokkos::Cuda& exec) { launch_for_dtype(exec, *q.problem, *q.tensors); });
  }
  Support supports_backward(const Query& q) const override {
    return on_current_device(backward_limits(*q.problem));
  }
  void run_backward(const Query& q, const Options& opts) const override {
    enqueue(opts, "backward launch",
            [&](const Kokkos::Cuda& exec) { launch_backward(exec, *q.problem, *q.tensors, *q.gradients); });
  }

 private:
  // Yes when there is a current CUDA device and the problem's own limits (`why`, "" = none) allow it.
  static Support on_current_device(const std::string& why) {
    DeviceInfo dev;
    std::string no_device;
    if (!detail::current_cuda_device(&dev, &no_device)) return Support::no(no_device);
    return why.empty() ? Support::yes() : Support::no(why);
  }
  // Enqueues launch(exec) on an execution space instance on the caller's stream (nullptr is CUDA's
  // default stream, not Kokkos' own default instance, so the ordering is the one a CUDA user
  // expects); a failed launch is an Error.
  template <class Launch>
  static void enqueue(const Options& opts, const char* what, Launch&& launch) {
    launch(instance_for(static_cast<cudaStream_t>(opts.stream)));
    const cudaError_t err = cudaPeekAtLastError();
    if (err != cudaSuccess)
      throw Error("backend", std::string("reference-cuda: ") + what + " failed: " + cudaGetErrorString(err));
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaReference>(); }

}  // namespace flashcore::reference
