// The plans flash_fwd_plan makes for devices this machine does not have (host code only, no GPU): the forced
// mma.sync variants on the suite's shapes and a few more, for an H100, an A100 and an L4 (DeviceLimits by hand),
// with the shared memory a block takes and how many such blocks an SM's shared memory holds. Written for the
// plan's ring-depth rule on 100 KB SMs (perf/dev/NOTES.md, sixty-second session); diff two builds' outputs to see
// which plans a change moves. Build against the CUDA configuration's library:
//   nvcc -std=c++17 -Isrc -Iinclude perf/dev/plan_survey.cu -o /tmp/plan_survey build/cuda-sm90/libflashcore.a
#include <cstdio>

#include "backends/cuda/limits.h"
#include "dev_common.cuh"

using namespace flashcore::cuda;

int main() {
  struct Named { const char* name; DeviceLimits dev; };
  Named devices[3];
  devices[0].name = "H100", devices[1].name = "A100", devices[2].name = "L4";
  DeviceLimits& h100 = devices[0].dev;
  DeviceLimits& a100 = devices[1].dev;
  DeviceLimits& l4 = devices[2].dev;
  h100.cc_major = 9, h100.cc_minor = 0, h100.sm_count = 132, h100.smem_optin_per_block = 227 * 1024;
  a100.cc_major = 8, a100.cc_minor = 0, a100.sm_count = 108, a100.smem_optin_per_block = 163 * 1024;
  l4.cc_major = 8, l4.cc_minor = 9, l4.sm_count = 58, l4.smem_optin_per_block = 99 * 1024;
  const int shapes[][4] = {{1, 8, 512, 32},   {1, 8, 1024, 96},   {4, 16, 1024, 128}, {1, 8, 4096, 256},
                           {4, 16, 2048, 192}, {4, 16, 2048, 256}, {1, 8, 8192, 64},   {1, 8, 2048, 96},
                           {1, 8, 512, 64},    {1, 8, 1024, 64},   {4, 16, 1024, 64},  {16, 16, 512, 64},
                           {2, 16, 4096, 64},  {2, 16, 4096, 128}, {1, 16, 16384, 128}, {8, 32, 2048, 128},
                           {4, 16, 2048, 32},  {4, 16, 2048, 96},  {1, 8, 2048, 128},  {1, 8, 2048, 64}};
  alignas(16) static unsigned char dummy[16];  // the plan checks pointers' alignment, never reads them
  for (const auto& s : shapes)
    for (const FlashVariant v : {FlashVariant::AllWarps, FlashVariant::WarpSpecialized})
      for (const Named& d : devices) {
        const FlashFwdParams p = bshd_params(s[0], s[1], s[1], s[2], s[2], s[3], dummy, dummy, dummy, dummy, nullptr);
        FlashFwdPlan pl;
        const std::string why = flash_fwd_plan(p, d.dev, v, &pl);
        if (!why.empty()) {
          printf("%d,%d,%d,%d %s: %s\n", s[0], s[1], s[2], s[3], d.name, why.c_str());
          continue;
        }
        printf("%d,%d,%d,%-4d %-2s %-5s smem %3zu KB  smem-blocks/SM %d  threads %d  %s\n", s[0], s[1], s[2], s[3],
               v == FlashVariant::AllWarps ? "AW" : "WS", d.name, pl.smem / 1024,
               detail::smem_blocks_per_sm(d.dev, pl.smem), pl.threads, pl.describe().c_str());
      }
}
