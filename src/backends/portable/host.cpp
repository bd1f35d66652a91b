// The portable tier on the default host execution space (OpenMP or Serial): "portable-host", the
// CPU kernel (cpu_tiles.hpp). Compiled with FLASHCORE_PORTABLE_HOST_FLAGS (CMakeLists.txt; default
// -march=x86-64-v3 where the build machine has AVX2 and FMA) so that its 8-lane vectors are AVX2.
#include "backends/common/kokkos_exec.hpp"
#include "backends/portable/cpu_tiles.hpp"
#include "backends/portable/portable_api.hpp"

namespace flashcore::portable {

namespace {

using HostExec = Kokkos::DefaultHostExecutionSpace;

class HostPortable final : public Backend {
 public:
  std::string name() const override { return "portable-host"; }
  int priority() const override { return 50; }
  MemoryLocation location() const override { return MemoryLocation::Host; }
  BackendKind kind() const override { return BackendKind::Portable; }
  std::string description() const override {
    return std::string("tiled Kokkos forward on ") + HostExec::name() +
           " (a thread per block of up to 64 query rows, 64-key tiles, register tiles of 8-lane vectors as " +
           simd::kHow + "; fp32 accumulation; every dtype, head_dim, mask, stride, variant and sequence layout; " +
           "forward only)";
  }
  Support supports(const Query& q) const override {
    return plan_or_decline(*q.problem, "cpu", tiles(*q.problem));
  }
  void run(const Query& q, const Options&) const override {
    const Tiles t = planned_tiles(q, [&] { return tiles(*q.problem); });
    kexec::on_host("portable-host", [&](const auto& exec) { cpu::launch(exec, *q.problem, *q.tensors, t); });
  }

 private:
  static Tiles tiles(const Problem& p) { return cpu::choose_tiles(p.head_dim, p.seqlen_q); }
};

}  // namespace

std::unique_ptr<Backend> make_host_backend() { return std::make_unique<HostPortable>(); }

}  // namespace flashcore::portable
