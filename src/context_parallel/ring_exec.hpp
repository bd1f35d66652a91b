// Where the ring's own passes run (pack, init, merge, finalize) and where its workspace lives:
// the host (loops over ring_ops.hpp, for local_ring) or a CUDA stream (kernels over the same
// functions, ring_ops.cu, for NCCL). The partial attentions themselves go through run().
#pragma once

#include <cstddef>
#include <memory>

#include "context_parallel/ring_ops.hpp"

namespace flashcore::ring {

class Exec {
 public:
  virtual ~Exec() = default;
  /// Workspace of `bytes`, freed by release (stream-ordered on a device).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) = 0;
  /// acc = 0 over n floats, lse = -inf over m floats.
  virtual void init(float* acc, std::int64_t n, float* lse, std::int64_t m) = 0;
  virtual void pack(int esize, const void* src, const View4& s, void* dst, int batch, int rows, int heads,
                    int head_dim) = 0;
  virtual void merge(const Rows& r, DType dt, const void* part, const float* lse_part, float* acc, float* lse_acc) = 0;
  /// O (and lse_out when given, contiguous (batch, heads, local rows)) from the accumulator.
  virtual void finalize(const Rows& r, DType dt, const float* acc, const float* lse_acc, void* o, const View4& so,
                        float* lse_out) = 0;
};

std::unique_ptr<Exec> host_exec();
/// Throws Error("communicator", ...) when built without CUDA kernels.
std::unique_ptr<Exec> cuda_exec(void* stream);
/// Gives the memory the ring's device pools keep between calls back (none without CUDA kernels).
void trim_pools();

}  // namespace flashcore::ring
