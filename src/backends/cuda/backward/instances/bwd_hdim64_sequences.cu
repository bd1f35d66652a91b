// Backward kernels (dK/dV, dQ) of head dim 64 for sequence layouts (varlen Q and K/V, cache lengths;
// bwd_sequences.cuh) without variants (CausalMask, causal at run time): fp16 and bf16.
#define FLASHCORE_BWD_INSTANCE
#include "backends/cuda/backward/launch_bwd.cuh"

FLASHCORE_BWD_INSTANTIATE(64, false, true)
