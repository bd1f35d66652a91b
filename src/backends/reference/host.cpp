// The Kokkos reference instantiated for the default host execution space (OpenMP or Serial):
// "reference-host", and the fp64 oracle mode the tools validate with.
#include "backends/common/kokkos_exec.hpp"
#include "backends/reference/backward.hpp"
#include "backends/reference/reference.hpp"
#include "backends/reference/reference_api.hpp"
#include "core/internal.hpp"

namespace flashcore::reference {

namespace {

using HostExec = Kokkos::DefaultHostExecutionSpace;
using kexec::on_host;

class HostReference final : public Backend {
 public:
  std::string name() const override { return "reference-host"; }
  int priority() const override { return 10; }
  MemoryLocation location() const override { return MemoryLocation::Host; }
  BackendKind kind() const override { return BackendKind::Reference; }
  std::string description() const override {
    return std::string("portable Kokkos reference on ") + HostExec::name() +
           " (fp32 accumulation; every dtype, head_dim, mask and stride; forward and backward)";
  }
  Support supports(const Query& q) const override {
    const std::string why = common_limits(*q.problem);
    return why.empty() ? Support::yes() : Support::no(why);
  }
  void run(const Query& q, const Options&) const override {
    on_host("reference-host", [&](const auto& exec) { launch_for_dtype(exec, *q.problem, *q.tensors); });
  }
  Support supports_backward(const Query& q) const override {
    const std::string why = backward_limits(*q.problem);
    return why.empty() ? Support::yes() : Support::no(why);
  }
  void run_backward(const Query& q, const Options&) const override {
    on_host("reference-host", [&](const auto& exec) { launch_backward(exec, *q.problem, *q.tensors, *q.gradients); });
  }
};

}  // namespace

std::unique_ptr<Backend> make_host_backend() { return std::make_unique<HostReference>(); }

void run_host_fp64(const Problem& p, const Tensors& t, double* o, double* lse) {
  validate(p);
  if (t.q == nullptr || t.k == nullptr || t.v == nullptr || o == nullptr) throw Error("tensors", "tensors: null pointer");
  if ((p.total_q > 0 && t.cu_seqlens_q == nullptr) || (p.total_k > 0 && t.cu_seqlens_k == nullptr) ||
      (p.page_size > 0 && t.block_table == nullptr))
    throw Error("tensors", "tensors: the problem's sequence layout needs cu_seqlens_q / cu_seqlens_k / block_table");
  detail::validate_sequences(p, p.total_q > 0 ? t.cu_seqlens_q : nullptr, p.total_k > 0 ? t.cu_seqlens_k : nullptr,
                             t.seqlens_k, p.page_size > 0 ? t.block_table : nullptr);
  const std::string why = common_limits(p);
  if (!why.empty()) throw Error("backend", "fp64 reference: " + why);
  on_host("fp64 reference", [&](const auto& exec) { launch_fp64_for_dtype(exec, p, t, o, lse); });
}

}  // namespace flashcore::reference
