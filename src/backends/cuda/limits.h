// The limits every tuned kernel shares, checked once per call by the forward's plan (plan.cu) and the
// backward's (backward/plan_bwd.cu). Host code.
#pragma once

#include <initializer_list>
#include <string>

#include "backends/cuda/flash_fwd.h"

namespace flashcore::cuda::detail {

// Compute capability 8.0+, head dim a multiple of 8 up to 256, sizes, scale, window sides, the q, k,
// v, o pointers (16-byte aligned) and their strides (multiples of 8 elements), a launch override's
// fields, the smallest kernel's shared memory. "" or why not, naming the field.
std::string common_limits(const FlashFwdParams& p, const DeviceLimits& dev);

// The tensor checks both plans make, each on its own tensors: "" or the first pointer that is null
// or not 16-byte aligned ("<name> pointer is ..."), the first stride that is not a multiple of 8
// elements ("<name> <value> is not ...").
struct NamedPointer {
  const void* ptr;
  const char* name;
};
struct NamedStride {
  long long value;
  const char* name;
};
std::string pointer_limits(std::initializer_list<NamedPointer> pointers);
std::string stride_limits(std::initializer_list<NamedStride> strides);

}  // namespace flashcore::cuda::detail
