// The limits every tuned kernel shares, checked once per call by the forward's plan (plan.cu) and the
// backward's (backward/plan_bwd.cu). Host code.
#pragma once

#include <string>

#include "backends/cuda/flash_fwd.h"

namespace flashcore::cuda::detail {

// Compute capability 8.0+, head dim a multiple of 8 up to 256, sizes, scale, window sides, the q, k,
// v, o pointers (16-byte aligned) and their strides (multiples of 8 elements), a launch override's
// fields, the smallest kernel's shared memory. "" or why not, naming the field.
std::string common_limits(const FlashFwdParams& p, const DeviceLimits& dev);

}  // namespace flashcore::cuda::detail
