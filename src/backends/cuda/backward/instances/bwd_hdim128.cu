// Backward kernels (dK/dV, dQ) of head dim 128 without soft-capping, ALiBi or windows (CausalMask):
// fp16 and bf16, causal and not.
#define FLASHCORE_BWD_INSTANCE
#include "backends/cuda/backward/launch_bwd.cuh"

FLASHCORE_BWD_INSTANTIATE(128, false, false)
