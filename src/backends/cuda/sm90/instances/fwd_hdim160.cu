// The Hopper forward kernel compiled for head dim 160 (136..152 run here too: sm90/config.h, hopper_head_dim),
// in rows of five 32-column panels in the 64-byte swizzle: fp16 and bf16, the causal/key-tail mask and
// VariantMask.
#include "backends/cuda/sm90/flash_fwd_sm90.cuh"

FLASHCORE_SM90_INSTANTIATE(160)
