// Internal interfaces between the core and the backends (not installed).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "flashcore/flashcore.hpp"

namespace flashcore::detail {

/// Where a pointer lives, asked of the CUDA runtime; Host when the build has no CUDA or the
/// runtime does not know the pointer. Implemented in src/platform/cuda_runtime.cpp, or in
/// src/platform/no_cuda.cpp for builds without the CUDA toolkit.
/// *device (when not null) gets the CUDA device of device memory, -1 otherwise.
MemoryLocation pointer_location(const void* p, int* device = nullptr);

/// The current CUDA device, or false with *why set.
bool current_cuda_device(DeviceInfo* out, std::string* why);

/// Kokkos version and enabled execution spaces, for build_info() (src/platform/kokkos_runtime.cpp).
std::string kokkos_configuration();

/// The backends this build provides (src/backends/builtin.cpp).
std::vector<std::unique_ptr<Backend>> builtin_backends();

/// Validates the pointers of a call against a validated problem: non-null, not overlapping
/// the outputs. Throws Error naming the tensor.
void validate_tensors(const Problem& p, const Tensors& t);

/// The per-head parameters (alibi_slopes, sinks) in host memory: every value finite, else Error
/// naming the tensor, the head and the value. (Device-memory values are not read.)
void validate_head_parameters(const Problem& p, const Tensors& t);

}  // namespace flashcore::detail
