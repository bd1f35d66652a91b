// Entry points of the Kokkos reference that the rest of FlashCore calls (no Kokkos include).
#pragma once

#include <memory>

#include "flashcore/flashcore.hpp"

namespace flashcore::reference {

/// The reference on Kokkos' default host execution space (OpenMP or Serial): "reference-host".
std::unique_ptr<Backend> make_host_backend();

#if defined(FLASHCORE_HAVE_KOKKOS_CUDA)
/// The reference on Kokkos::Cuda, reading device memory: "reference-cuda".
std::unique_ptr<Backend> make_cuda_backend();
#endif

/// The fp64 oracle mode on the host: fp64 accumulation, O (with p.o strides) and LSE
/// (in the layout of Tensors::lse; may be null) written as double. Synchronous.
/// Throws Error when the problem is invalid or Kokkos is not initialized. Reads t.q, t.k, t.v, the
/// variants' per-head parameters and the sequence arrays (host memory; validated); t.o and t.lse
/// are not used.
void run_host_fp64(const Problem& p, const Tensors& t, double* o, double* lse);
inline void run_host_fp64(const Problem& p, const void* q, const void* k, const void* v, double* o, double* lse) {
  run_host_fp64(p, Tensors{q, k, v, nullptr, nullptr}, o, lse);
}

}  // namespace flashcore::reference
