// The ring's passes on the host: plain loops over ring_ops.hpp.
#include <cmath>
#include <cstring>
#include <vector>

#include "context_parallel/ring_exec.hpp"

namespace flashcore::ring {
namespace {

class HostExec final : public Exec {
 public:
  void* allocate(std::size_t bytes) override { return ::operator new(bytes == 0 ? 1 : bytes); }
  void release(void* p) override { ::operator delete(p); }
  void init(float* acc, std::int64_t n, float* lse, std::int64_t m) override {
    for (std::int64_t i = 0; i < n; ++i) acc[i] = 0.f;
    for (std::int64_t i = 0; i < m; ++i) lse[i] = -INFINITY;
  }
  void pack(int esize, const void* src, const View4& s, void* dst, int batch, int rows, int heads,
            int head_dim) override {
    const std::int64_t n = static_cast<std::int64_t>(batch) * rows * heads * head_dim;
    for (std::int64_t i = 0; i < n; ++i) pack_element(esize, src, s, dst, batch, rows, heads, head_dim, i);
  }
  void merge(const Rows& r, DType dt, const void* part, const float* lse_part, float* acc, float* lse_acc) override {
    for (std::int64_t n = 0; n < r.count(); ++n) merge_element(r, dt, part, lse_part, acc, lse_acc, n);
    const std::int64_t m = static_cast<std::int64_t>(r.batch) * r.heads * r.rows;
    for (std::int64_t i = 0; i < m; ++i) merge_lse(r, lse_part, lse_acc, i);
  }
  void finalize(const Rows& r, DType dt, const float* acc, const float* lse_acc, void* o, const View4& so,
                float* lse_out) override {
    for (std::int64_t n = 0; n < r.count(); ++n) finalize_element(r, dt, acc, o, so, n);
    if (lse_out != nullptr) std::memcpy(lse_out, lse_acc, sizeof(float) * r.batch * r.heads * r.local_rows);
  }
};

}  // namespace

std::unique_ptr<Exec> host_exec() { return std::make_unique<HostExec>(); }

}  // namespace flashcore::ring

#if !defined(FLASHCORE_HAVE_CUDA_KERNELS)
namespace flashcore::ring {
std::unique_ptr<Exec> cuda_exec(void*) {
  throw Error("communicator", "ring attention on device memory needs FlashCore's CUDA kernels; this build has none");
}
void trim_pools() {}
}  // namespace flashcore::ring
#endif
