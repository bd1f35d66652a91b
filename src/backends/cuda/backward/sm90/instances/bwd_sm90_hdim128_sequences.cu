// The Hopper backward's dK/dV kernel for head dim 128 with sequence layouts (varlen Q and K/V, cache
// lengths; bwd_sequences.cuh), no variants (causal at run time): fp16 and bf16; sm_90a only.
#include "backends/cuda/backward/sm90/bwd_dkdv_sm90.cuh"

FLASHCORE_BWD_SM90_INSTANTIATE(128, false, true)
