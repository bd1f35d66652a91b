// The 16-row mma.sync forward kernel compiled for head dim 96 with the attention variants (sliding
// window, soft-capping, ALiBi, sinks: common/variant_mask.cuh); head dims the plan rounds up to 96 run here too.
#define FLASHCORE_SM80_INSTANCE
#include "backends/cuda/sm80/launch.cuh"

FLASHCORE_SM80_INSTANTIATE(96, VariantMask)
