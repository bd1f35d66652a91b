// FlashCore: fused attention forward, O = softmax(Q·Kᵀ·scale + mask)·V, on NVIDIA tensor cores.
//
// Plain C++ interface (no Kokkos). The kernels (flash_fwd.cu) need compute capability >= 8.0:
// mma.sync m16n8k16 (fp16/bf16 in, fp32 accumulate), ldmatrix, 16-byte cp.async.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

namespace flashcore::cuda {

// Development/tuning override of the launch table (flash_fwd.cu, kLaunchTable). 0 = use the table.
struct FlashFwdLaunchOverride {
  int block_m = 0;           // query rows per block: 16 x (row warps), one of {16, 32, 64, 128}
  int key_split_warps = 0;         // compute warps per row warp, each on every key_split_warps-th key tile (1..8)
  int stages = 0;            // K/V shared-memory ring depth, 2..4
  int kv_tiles_per_split = 0;  // split-KV: 64-key tiles per split; -1 = never split
};

struct FlashFwdParams {
  const void* q; const void* k; const void* v; void* o;
  float* lse;                 // nullable; fp32, contiguous [batch][heads_q][seqlen_q]
  int batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim;
  long long q_batch_stride, q_seq_stride, q_head_stride;   // element strides; dim stride is 1
  long long k_batch_stride, k_seq_stride, k_head_stride;
  long long v_batch_stride, v_seq_stride, v_head_stride;
  long long o_batch_stride, o_seq_stride, o_head_stride;
  float scale;                // already resolved (e.g. 1/sqrt(head_dim))
  bool causal;                // bottom-right aligned: query i sees key j iff j <= i + seqlen_k - seqlen_q
  bool bf16;                  // false: fp16
  // Optional: nullptr = launch table. For development and tuning only. With an override, Auto never
  // picks the Hopper kernel; the Hopper kernel itself has a fixed shape and ignores it.
  const FlashFwdLaunchOverride* launch_override = nullptr;
};

// AllWarps: every warp loads its share of each K/V tile (cp.async) and computes.
// WarpSpecialized: one producer warp fills the K/V ring, the consumer warps only compute.
// Hopper: the TMA + wgmma kernel (flash_fwd_hopper.cu), compute capability 9.0 only, built when sm_90
// is among the CUDA architectures; Q, K, V strides must be positive multiples of 16 bytes (TMA).
// Auto: the launch table's choice (measured, see perf/dev/NOTES.md), the Hopper kernel included.
enum class FlashVariant { Auto, AllWarps, WarpSpecialized, Hopper };

// nullptr-equivalent (empty string) if this kernel can run the problem on a device of this compute
// capability with this much opt-in shared memory per block, else a short reason naming the field.
// `variant` Hopper adds its own conditions (compute capability 9.0, kernel image present).
std::string flash_fwd_unsupported_reason(const FlashFwdParams& p, int cc_major, int cc_minor,
                                         size_t smem_optin_per_block, FlashVariant variant = FlashVariant::Auto);

// Launches on `stream` (asynchronous). Returns cudaErrorInvalidValue for an unsupported problem
// (see flash_fwd_unsupported_reason), else the launch status.
//
// Split-KV (used when the problem is too small to fill the GPU) needs a scratch buffer; it is
// allocated on first use per (device, stream) and cached for the process lifetime. During CUDA
// graph capture no allocation is made: if the cached buffer is too small, the launch falls back to
// no split (still correct, possibly slower). Warm up once before capturing.
cudaError_t flash_fwd(const FlashFwdParams& p, cudaStream_t stream,
                      FlashVariant variant = FlashVariant::Auto);

}  // namespace flashcore::cuda
