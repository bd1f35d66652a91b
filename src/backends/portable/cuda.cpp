// The portable tier on Kokkos::Cuda: "portable-cuda", the team kernel (team_tiles.hpp). Device memory in, device memory out; runs on
// the caller's stream and does not synchronize. Compiled only when Kokkos has its CUDA backend.
#include "backends/common/kokkos_exec.hpp"
#include "backends/portable/portable_api.hpp"
#include "backends/portable/team_tiles.hpp"

namespace flashcore::portable {

namespace {

class CudaPortable final : public Backend {
 public:
  std::string name() const override { return "portable-cuda"; }
  int priority() const override { return 50; }
  MemoryLocation location() const override { return MemoryLocation::Device; }
  BackendKind kind() const override { return BackendKind::Portable; }
  std::string description() const override {
    return "tiled Kokkos forward on Kokkos::Cuda (teams of 128 threads, 64 query rows x 64 keys a tile, O in "
           "registers; fp32 accumulation, no tensor cores; every dtype, head_dim, mask, stride, variant and sequence "
           "layout; forward only)";
  }
  Support supports(const Query& q) const override {
    const Tiles t = team::choose_tiles<Kokkos::Cuda>(q.problem->head_dim);
    const Support device = kexec::on_current_cuda_device(limits(*q.problem, t));
    return device.ok ? plan_or_decline(*q.problem, "team", t) : device;
  }
  void run(const Query& q, const Options& opts) const override {
    const Tiles t = planned_tiles(q, [&] { return team::choose_tiles<Kokkos::Cuda>(q.problem->head_dim); });
    kexec::enqueue_cuda("portable-cuda", opts, "launch",
                        [&](const Kokkos::Cuda& exec) { team::launch(exec, *q.problem, *q.tensors, t); });
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaPortable>(); }

}  // namespace flashcore::portable
