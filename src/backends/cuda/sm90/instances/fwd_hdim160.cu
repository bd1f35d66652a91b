// The Hopper forward kernel compiled for head dim 160 (144, and 136..152 where every row is 32-byte aligned, run
// here too: sm90/config.h, hopper_head_dim; sm90/plan_sm90.cu, hopper_instance),
// in rows of five 32-column panels in the 64-byte swizzle: fp16 and bf16, the causal/key-tail mask and
// VariantMask.
#include "backends/cuda/sm90/flash_fwd_sm90.cuh"

FLASHCORE_SM90_INSTANTIATE(160)
