// The ring's passes on a CUDA stream: one grid-stride kernel per pass over ring_ops.hpp, the
// workspace stream-ordered (cudaMallocAsync / cudaFreeAsync). Memory-bound and small next to the
// attention of a step (a merge reads and writes the shard's O once in fp32).
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <string>

#include "context_parallel/ring_exec.hpp"

namespace flashcore::ring {
namespace {

template <class F>
__global__ void each(std::int64_t n, F f) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    f(i);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error("communicator", std::string("ring attention: ") + what + ": " + cudaGetErrorString(e));
}

/// The ring's memory pool on the current device, made once: it keeps its memory between calls
/// (release threshold: no limit), so that a loop of ring calls does not map and unmap gigabytes of
/// workspace each time (the default pool gives memory back at every synchronization). Separate
/// from the application's default pool, whose settings FlashCore leaves alone.
std::mutex& pools_mutex() {
  static std::mutex mu;
  return mu;
}
std::map<int, cudaMemPool_t>& pools() {
  static std::map<int, cudaMemPool_t> p;
  return p;
}

cudaMemPool_t pool() {
  std::mutex& mu = pools_mutex();
  std::map<int, cudaMemPool_t>& pools = ::flashcore::ring::pools();
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  std::lock_guard<std::mutex> lock(mu);
  auto it = pools.find(dev);
  if (it != pools.end()) return it->second;
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = dev;
  cudaMemPool_t p;
  check(cudaMemPoolCreate(&p, &props), "cudaMemPoolCreate");
  std::uint64_t keep = ~0ull;
  check(cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
  pools[dev] = p;
  return p;
}

class CudaExec final : public Exec {
 public:
  explicit CudaExec(void* stream) : s_(static_cast<cudaStream_t>(stream)) {}

  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMallocFromPoolAsync(&p, bytes == 0 ? 1 : bytes, pool(), s_), "cudaMallocFromPoolAsync of the workspace");
    return p;
  }
  void release(void* p) override { check(cudaFreeAsync(p, s_), "cudaFreeAsync of the workspace"); }

  void init(float* acc, std::int64_t n, float* lse, std::int64_t m) override {
    check(cudaMemsetAsync(acc, 0, sizeof(float) * n, s_), "clearing the accumulator");
    launch(m, [=] __device__(std::int64_t i) { lse[i] = -INFINITY; });
  }
  void pack(int esize, const void* src, const View4& sv, void* dst, int batch, int rows, int heads,
            int head_dim) override {
    launch(static_cast<std::int64_t>(batch) * rows * heads * head_dim, [=] __device__(std::int64_t i) {
      pack_element(esize, src, sv, dst, batch, rows, heads, head_dim, i);
    });
  }
  void merge(const Rows& r, DType dt, const void* part, const float* lse_part, float* acc, float* lse_acc) override {
    launch(r.count(), [=] __device__(std::int64_t n) { merge_element(r, dt, part, lse_part, acc, lse_acc, n); });
    launch(static_cast<std::int64_t>(r.batch) * r.heads * r.rows,
           [=] __device__(std::int64_t m) { merge_lse(r, lse_part, lse_acc, m); });
  }
  void finalize(const Rows& r, DType dt, const float* acc, const float* lse_acc, void* o, const View4& so,
                float* lse_out) override {
    launch(r.count(), [=] __device__(std::int64_t n) { finalize_element(r, dt, acc, o, so, n); });
    if (lse_out != nullptr)
      check(cudaMemcpyAsync(lse_out, lse_acc, sizeof(float) * r.batch * r.heads * r.local_rows,
                            cudaMemcpyDeviceToDevice, s_),
            "copying the LSE");
  }

 private:
  template <class F>
  void launch(std::int64_t n, F f) {
    if (n <= 0) return;
    const std::int64_t blocks = (n + 255) / 256;
    each<<<static_cast<unsigned>(blocks < 8192 ? blocks : 8192), 256, 0, s_>>>(n, f);
    check(cudaPeekAtLastError(), "a ring pass launch");
  }
  cudaStream_t s_;
};

}  // namespace

std::unique_ptr<Exec> cuda_exec(void* stream) { return std::make_unique<CudaExec>(stream); }

void trim_pools() {
  std::lock_guard<std::mutex> lock(pools_mutex());
  for (auto& [dev, p] : pools()) {
    (void)dev;
    check(cudaMemPoolTrimTo(p, 0), "cudaMemPoolTrimTo");
  }
}

}  // namespace flashcore::ring
