#!/usr/bin/env bash
# Builds the FP8 harness (perf/dev/fp8_dev.cu) into .gpu/bin/ the way build_decode_dev.sh builds its own
# (against build/cuda-sm90's library: `cmake --build build/cuda-sm90 --target flashcore` first).
HARNESS=fp8_dev exec "$(dirname "$0")/build_decode_dev.sh"
