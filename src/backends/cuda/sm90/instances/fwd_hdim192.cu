// The Hopper forward kernel compiled for head dim 192 (168..184 run here too:
// sm90/config.h, hopper_head_dim): fp16 and bf16, the causal/key-tail mask and VariantMask.
#include "backends/cuda/sm90/flash_fwd_sm90.cuh"

FLASHCORE_SM90_INSTANTIATE(192)
