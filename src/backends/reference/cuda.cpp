// The portable Kokkos reference instantiated for Kokkos::Cuda: "reference-cuda".
// Device memory in, device memory out; runs on the caller's stream and does not synchronize.
// Compiled only when Kokkos has its CUDA backend (then the C++ compiler is nvcc_wrapper).
#include "backends/common/kokkos_exec.hpp"
#include "backends/reference/backward.hpp"
#include "backends/reference/reference.hpp"
#include "backends/reference/reference_api.hpp"
#include "core/internal.hpp"

namespace flashcore::reference {

namespace {

class CudaReference final : public Backend {
 public:
  std::string name() const override { return "reference-cuda"; }
  int priority() const override { return 10; }
  MemoryLocation location() const override { return MemoryLocation::Device; }
  BackendKind kind() const override { return BackendKind::Reference; }
  std::string description() const override {
    return "portable Kokkos reference on Kokkos::Cuda (fp32 accumulation; every dtype, head_dim, mask and stride; forward and backward)";
  }
  Support supports(const Query& q) const override { return kexec::on_current_cuda_device(common_limits(*q.problem)); }
  void run(const Query& q, const Options& opts) const override {
    kexec::enqueue_cuda("reference-cuda", opts, "launch",
                        [&](const Kokkos::Cuda& exec) { launch_for_dtype(exec, *q.problem, *q.tensors); });
  }
  Support supports_backward(const Query& q) const override {
    return kexec::on_current_cuda_device(backward_limits(*q.problem));
  }
  void run_backward(const Query& q, const Options& opts) const override {
    kexec::enqueue_cuda("reference-cuda", opts, "backward launch",
                        [&](const Kokkos::Cuda& exec) { launch_backward(exec, *q.problem, *q.tensors, *q.gradients); });
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaReference>(); }

}  // namespace flashcore::reference
