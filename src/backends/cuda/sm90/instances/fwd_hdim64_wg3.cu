// The Hopper forward kernel compiled for head dim 64 with three consumer warpgroups (192-row blocks;
// sm90/config.h, HopperConfig): fp16 and bf16, the causal/key-tail mask, contiguous or packed K/V. No
// paged or variant kernels: the plan runs those on fwd_hdim64.cu's instance (hopper_instance).
#include "backends/cuda/sm90/flash_fwd_sm90.cuh"

FLASHCORE_SM90_INSTANTIATE_WGS(64, 3)
