#!/usr/bin/env bash
# Builds the 16-bit Hopper forward's harness (perf/dev/hopper_dev.cu) into .gpu/bin/ the way
# build_decode_dev.sh builds its own (against build/cuda-sm90's library: `cmake --build build/cuda-sm90
# --target flashcore` first; LIB, OUTNAME and EXTRA_OBJS as there, for A/Bs).
HARNESS=hopper_dev exec "$(dirname "$0")/build_decode_dev.sh"
