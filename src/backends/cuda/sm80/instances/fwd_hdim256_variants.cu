// The 16-row mma.sync forward kernel compiled for head dim 256 with the attention variants (sliding
// window, soft-capping, ALiBi, sinks: common/variant_mask.cuh); head dims the plan rounds up to 256 run here too.
#define FLASHCORE_SM80_INSTANCE
#include "backends/cuda/sm80/launch.cuh"

FLASHCORE_SM80_INSTANTIATE(256, VariantMask)
