// The Hopper backward's dK/dV kernel for head dim 64 with sequence layouts (bwd_sequences.cuh) and
// windows, soft-capping or ALiBi (VariantMask): fp16 and bf16, causal and not; sm_90a only.
#include "backends/cuda/backward/sm90/bwd_dkdv_sm90.cuh"

FLASHCORE_BWD_SM90_INSTANTIATE(64, true, true)
