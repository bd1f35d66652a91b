#!/usr/bin/env bash
# Builds the development harness on the CPU machine (nvcc 13.0): .gpu-dev/flash_dev for sm_90 with the
# Hopper kernel (sm_90a, its own translation unit) and the fp64 oracle of src/verify (plain C++, compiled
# in: it needs no symbol of libflashcore), and the wgmma descriptor probe.
# Extra nvcc flags for the Hopper kernel via HOPPER_FLAGS (e.g. -DFLASHCORE_HOPPER_V_SWAP=1); OUTNAME names the binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu-dev
OUTNAME=${OUTNAME:-flash_dev}
F="-std=c++17 -O3 --expt-relaxed-constexpr -Isrc -Iinclude"
nvcc $F ${HOPPER_FLAGS:-} -gencode arch=compute_90a,code=sm_90a -c -o .gpu-dev/$OUTNAME.hopper.o src/backends/cuda/sm90/flash_fwd_sm90.cu
# The plan (plan.cu, sm90/plan_sm90.cu, decode/plan_decode.cu, run.cu), the mma.sync kernels (sm80/), the TMA descriptors, the device cache (src/platform)
# and the fp64 oracle of src/verify.
nvcc $F -DFLASHCORE_HAVE_HOPPER_KERNELS -gencode arch=compute_90,code=sm_90 -o .gpu-dev/$OUTNAME \
  perf/dev/flash_dev.cu src/backends/cuda/plan.cu src/backends/cuda/sm90/plan_sm90.cu src/backends/cuda/decode/plan_decode.cu src/backends/cuda/run.cu src/backends/cuda/sm80/launch_sm80.cu src/backends/cuda/sm80/instances/*.cu \
  src/backends/cuda/sm90/tensor_maps.cpp src/platform/cuda_runtime.cpp src/verify/oracle.cpp .gpu-dev/$OUTNAME.hopper.o
nvcc -std=c++17 -O2 -gencode arch=compute_90a,code=sm_90a -o .gpu-dev/wgmma_probe perf/dev/wgmma_probe.cu
