// The mma.sync forward kernels compiled for head dim 32 (head dims the plan rounds up to 32 run here too).
#define FLASHCORE_SM80_INSTANCE
#include "backends/cuda/sm80/launch.cuh"

FLASHCORE_SM80_INSTANTIATE(32, CausalMask)
