#!/usr/bin/env bash
# Builds perf/dev/hopper_dev.cu (the 16-bit Hopper forward's harness) against the CUDA configuration's
# library, like build_decode_dev.sh. LIB=path/to/libflashcore.a links another build of the library
# (an A/B: the baseline's archive copied aside before the change), OUTNAME names the binary.
# EXTRA_OBJS: objects linked before the library (a kernel instance built with other flags replaces its member).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build/cuda-sm90}
LIB=${LIB:-$BUILD/libflashcore.a}
OUTNAME=${OUTNAME:-hopper_dev}
KOKKOS=$(sed -n 's/^Kokkos_ROOT:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
KOKKOS=${KOKKOS:-$HOME/.cache/flashcore/kokkos-cuda-sm90}
CUDA=${CUDA:-/usr/local/cuda}
mkdir -p .gpu/bin
nvcc -std=c++17 -O3 -Isrc -Iinclude -gencode arch=compute_90,code=sm_90 -c perf/dev/hopper_dev.cu -o "$BUILD/hopper_dev.o"
"$KOKKOS/bin/nvcc_wrapper" -O3 -DKOKKOS_DEPENDENCE -fopenmp -arch=sm_90 "$BUILD/hopper_dev.o" -o .gpu/bin/$OUTNAME \
  ${EXTRA_OBJS:-} "$LIB" "$KOKKOS/lib/libkokkoscontainers.a" "$KOKKOS/lib/libkokkoscore.a" \
  "$CUDA/lib64/stubs/libcuda.so" -ldl "$CUDA/lib64/libcudart.so"
echo "built .gpu/bin/$OUTNAME"
