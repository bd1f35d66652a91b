// The plans flash_fwd_plan makes for devices this machine does not have (host code only, no GPU): the forced
// mma.sync variants on the suite's shapes and a few more, for an H100, an A100 and an L4 (DeviceLimits by hand),
// with the shared memory a block takes and how many such blocks an SM's shared memory holds. Written for the
// plan's ring-depth rule on 100 KB SMs (perf/dev/NOTES.md, sixty-second session); diff two builds' outputs to see
// which plans a change moves. Build against the CUDA configuration's library:
//   g++ -std=c++17 -Isrc -Iinclude -I/usr/local/cuda/include perf/dev/plan_survey.cpp -o /tmp/plan_survey
//       build/cuda-sm90/libflashcore.a -L/usr/local/cuda/lib64 -lcudart   (one line)
#include <cstdio>
#include "backends/cuda/flash_fwd.h"
#include "backends/cuda/limits.h"
using namespace flashcore::cuda;
FlashFwdParams params(int b, int hq, int hkv, int lq, int lk, int d, bool bf16, bool causal) {
  FlashFwdParams p{};
  alignas(16) static unsigned char dummy[16];
  p.q = p.k = p.v = dummy; p.o = dummy;
  p.batch = b, p.heads_q = hq, p.heads_kv = hkv, p.seqlen_q = lq, p.seqlen_k = lk, p.head_dim = d;
  p.q_head_stride = p.o_head_stride = d; p.q_seq_stride = p.o_seq_stride = (long long)hq * d;
  p.q_batch_stride = p.o_batch_stride = p.q_seq_stride * lq; p.k_head_stride = p.v_head_stride = d;
  p.k_seq_stride = p.v_seq_stride = (long long)hkv * d; p.k_batch_stride = p.v_batch_stride = p.k_seq_stride * lk;
  p.scale = 0.125f; p.bf16 = bf16, p.causal = causal; return p;
}
int main() {
  DeviceLimits l4; l4.cc_major = 8, l4.cc_minor = 9, l4.sm_count = 58, l4.smem_optin_per_block = 99 * 1024;
  DeviceLimits h100 = l4; h100.cc_major = 9; h100.cc_minor = 0; h100.sm_count = 132; h100.smem_optin_per_block = 227 * 1024;
  DeviceLimits a100 = l4; a100.cc_major = 8; a100.cc_minor = 0; a100.sm_count = 108; a100.smem_optin_per_block = 163 * 1024;
  int shapes[][4] = {{1,8,512,32},{1,8,1024,96},{4,16,1024,128},{1,8,4096,256},{4,16,2048,192},{4,16,2048,256},{1,8,8192,64},{1,8,2048,96},{1,8,512,64},{1,8,1024,64},{4,16,1024,64},{16,16,512,64},{2,16,4096,64},{2,16,4096,128},{1,16,16384,128},{8,32,2048,128},{4,16,2048,32},{4,16,2048,96},{1,8,2048,128},{1,8,2048,64}};
  for (auto& s : shapes) for (auto v : {FlashVariant::AllWarps, FlashVariant::WarpSpecialized}) for (auto* dev : {&h100, &a100, &l4}) {
    FlashFwdPlan pl; auto why = flash_fwd_plan(params(s[0],s[1],s[1],s[2],s[2],s[3],false,false), *dev, v, &pl);
    if (!why.empty()) { printf("%d,%d,%d,%d %s: %s\n", s[0],s[1],s[2],s[3], dev==&l4?"L4":dev==&a100?"A100":"H100", why.c_str()); continue; }
    printf("%d,%d,%d,%-4d %-2s %-5s smem %3zu KB  smem-blocks/SM %d  threads %d  %s\n", s[0],s[1],s[2],s[3], v==FlashVariant::AllWarps?"AW":"WS", dev==&l4?"L4":dev==&a100?"A100":"H100",
           pl.smem/1024, detail::smem_blocks_per_sm(*dev, pl.smem), pl.threads, pl.describe().c_str());
  }
}
