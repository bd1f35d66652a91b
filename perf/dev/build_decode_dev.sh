#!/usr/bin/env bash
# Builds the decode harness (perf/dev/decode_dev.cu) on the CPU machine against the CUDA configuration's
# library (build/cuda-sm90: `cmake --build build/cuda-sm90 --target flashcore` first), into .gpu/bin/
# beside the staged binaries (scripts/fc gpu-build), so that it travels with them. HARNESS names another
# harness of perf/dev built the same way (build_fp8_dev.sh: fp8_dev; build_hopper_dev.sh: hopper_dev).
# LIB links another build of the library (an A/B: the baseline's archive copied aside before a change),
# OUTNAME names the binary, EXTRA_OBJS are objects linked before the library (a kernel instance built
# with other flags then replaces its archive member).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build/cuda-sm90}
KOKKOS=$(sed -n 's/^Kokkos_ROOT:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
KOKKOS=${KOKKOS:-$HOME/.cache/flashcore/kokkos-cuda-sm90}
CUDA=${CUDA:-/usr/local/cuda}
H=${HARNESS:-decode_dev}
LIB=${LIB:-$BUILD/libflashcore.a}
OUTNAME=${OUTNAME:-$H}
mkdir -p .gpu/bin
nvcc -std=c++17 -O3 -Isrc -Iinclude -gencode arch=compute_90,code=sm_90 -c perf/dev/$H.cu -o "$BUILD/$H.o"
"$KOKKOS/bin/nvcc_wrapper" -O3 -DKOKKOS_DEPENDENCE -fopenmp -arch=sm_90 "$BUILD/$H.o" -o .gpu/bin/$OUTNAME \
  ${EXTRA_OBJS:-} "$LIB" "$KOKKOS/lib/libkokkoscontainers.a" "$KOKKOS/lib/libkokkoscore.a" \
  "$CUDA/lib64/stubs/libcuda.so" -ldl "$CUDA/lib64/libcudart.so"
echo "built .gpu/bin/$OUTNAME"
