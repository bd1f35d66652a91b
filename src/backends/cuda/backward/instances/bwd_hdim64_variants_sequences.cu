// Backward kernels (dK/dV, dQ) of head dim 64 for sequence layouts (bwd_sequences.cuh) with windows,
// soft-capping or ALiBi (VariantMask): fp16 and bf16, causal and not.
#define FLASHCORE_BWD_INSTANCE
#include "backends/cuda/backward/launch_bwd.cuh"

FLASHCORE_BWD_INSTANTIATE(64, true, true)
