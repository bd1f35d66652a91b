// The decode kernel compiled for head dim 128 (head dims the plan rounds up to 128 run here too).
#define FLASHCORE_DECODE_INSTANCE
#include "backends/cuda/decode/launch_decode.cuh"

FLASHCORE_DECODE_INSTANTIATE(128)
