// The forward plan's parts across its files (internal to the plan; flash_fwd.h is its seam to the rest
// of the library): plan.cu chooses the kernel family (flash_fwd_plan) and plans the mma.sync kernels;
// sm90/plan_sm90.cu plans the Hopper kernel, decode/plan_decode.cu the decode kernel; run.cu launches.
#pragma once

#include <string>

#include "backends/cuda/flash_fwd.h"

namespace flashcore::cuda::detail {

// sm90/plan_sm90.cu
// The Hopper kernel's own conditions, "" or why not; on success the instance is plan->hopper_dim and
// plan->hopper_wgs (hopper_instance) and its TMA descriptors are in plan->tensor_maps.
std::string hopper_limits(const FlashFwdParams& p, const DeviceLimits& dev, FlashFwdPlan* plan, FlashVariant variant);
// After hopper_limits accepted p: the launch shape of its instance (FP8 too) and the persistent schedule.
void plan_hopper(const FlashFwdParams& p, const DeviceLimits& dev, FlashFwdPlan* plan);
// FP8 (e4m3) inputs: the Hopper kernel's FP8 instance or why not (the reference runs the rest).
std::string plan_fp8(const FlashFwdParams& p, const DeviceLimits& dev, FlashVariant variant, FlashFwdPlan* plan);

// decode/plan_decode.cu
struct DecodeLaunchRow;  // a row of the decode launch table (kDecodeTable)
// The decode kernel's own conditions: "" or why not.
std::string decode_limits(const FlashFwdParams& p, const DeviceLimits& dev);
// The decode table's row for p, or nullptr when Auto keeps it on the other kernels.
const DecodeLaunchRow* decode_row(const FlashFwdParams& p);
// The row a problem that must run on the decode kernel uses (forced, or sequence arrays): its head dim's.
const DecodeLaunchRow& decode_row_any(const FlashFwdParams& p);
// The decode kernel's launch shape: rows per block, ring depth, key splits and their workspace.
void plan_decode(const FlashFwdParams& p, const DeviceLimits& dev, const DecodeLaunchRow& row, FlashFwdPlan* plan);

}  // namespace flashcore::cuda::detail
