// FlashCore: fused attention backward (dQ, dK, dV of O = softmax(Q·Kᵀ·scale + mask)·V) on NVIDIA
// tensor cores (mma.sync, compute capability 8.0+; the dK/dV kernel on wgmma + TMA on 9.0). Two paths,
// chosen by FlashBwdParams::deterministic:
//   atomic (default)   dQ summed in fp32 with atomics: the fastest; the order of those sums, hence the
//                      last bits of dQ, varies from run to run (dK and dV never do); D = 32, 64, 128
//                      (and 96 on compute capability 9.0, where the Hopper kernel runs it);
//   deterministic      no float atomics, every sum in a fixed order: bitwise the same gradients every time.
//
// Plain C++ interface (no Kokkos), in two steps like the forward (flash_fwd.h, cudnn-frontend style):
//   flash_bwd_plan()  checks the problem once, for one device, and decides everything a launch needs;
//   flash_bwd_run()   launches a plan, with no further checks or choices.
// Four kernels, three per path (backward/, README.md beside this file):
//   delta    delta_i = dO_i·O_i and lse2_i = LSE_i·log2(e) into a workspace (atomic path: and zeroes
//            the fp32 dQ accumulator);
//   dK/dV    one block per (batch, KV head, 64-key block): every query head of the group, every
//            64-query tile that sees the block; dK, dV accumulated in registers, written once;
//            atomic path: dQ_tile = dS·K of every tile pair added to the accumulator (5 matmuls a pair);
//            on compute capability 9.0 at D = 64, 96 and 128 (atomic path) the Hopper kernel instead
//            (backward/sm90/: 128 keys a block, TMA producer warpgroup, two wgmma warpgroups);
//   dQ       deterministic path: one block per (batch, query head, 64-query block), every key tile it
//            sees, S and dP recomputed (7 matmuls a pair), dQ written once;
//   convert  atomic path: dQ = scale · accumulator in the problem's dtype.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "backends/cuda/flash_fwd.h"  // DeviceLimits

namespace flashcore::cuda {

struct FlashBwdParams {
  // The forward call's problem and tensors (Q, K, V, its output O and its LSE, sizes, strides, scale,
  // causal, dtype, the attention variants, the sequence arrays of varlen Q, varlen K/V and cache lengths;
  // paged K/V has no backward: flash_bwd_plan declines block_table, naming the field).
  // LSE is required: fp32, contiguous [batch][heads_q][seqlen_q] ([heads_q][total_q] with varlen Q),
  // natural log, -inf for rows that see no key.
  FlashFwdParams fwd;
  // dO (in), dQ, dK, dV (out): the problem's dtype, device memory, head dim contiguous; element strides
  // (flashcore: dO has O's strides, dQ Q's, dK K's, dV V's).
  const void* d_o;
  void* dq; void* dk; void* dv;
  long long do_batch_stride, do_seq_stride, do_head_stride;
  long long dq_batch_stride, dq_seq_stride, dq_head_stride;
  long long dk_batch_stride, dk_seq_stride, dk_head_stride;
  long long dv_batch_stride, dv_seq_stride, dv_head_stride;
  float* dsinks = nullptr;  // the sinks' gradient (fwd.sinks set): heads_q fp32, summed over the batch; or null
  bool deterministic = false;  // true: the deterministic path (Options::deterministic)
};

// Everything one call decided. Valid for the params (sizes, strides, dtype) and device it was made for;
// with hopper the TMA descriptors hold the Q, K, V and dO pointers too, so those may not change between
// plan and run (as for the forward's Hopper plan).
struct FlashBwdPlan {
  int device = -1;
  int head_dim = 0;             // the problem's head dim (32, 64, 96 or 128; hopper runs 96 on its D = 128 kernel)
  int block_m = 64;             // query rows per tile (dQ kernel: per block)
  int block_n = 64;             // keys per dK/dV block (hopper: 128)
  int threads = 128;            // per block of the dK/dV and dQ kernels (4 warps x 16 rows; hopper dK/dV: 384)
  int delta_threads = 256;      // delta kernel
  int seqlen_q_rounded = 0;     // seqlen_q (the longest sequence's queries) rounded up to block_m: the grids
  bool atomic_dq = true;        // dQ through the fp32 accumulator (not deterministic), else the dQ kernel
                                // (deterministic asked for, or head_dim 96, which has only that path)
  // The dK/dV kernel: the Hopper one (backward/sm90/: TMA + wgmma, 128 keys a block, 384 threads;
  // compute capability 9.0, head dims 64 and 128, atomic path only) or the mma.sync one.
  bool hopper = false;
  bool variants = false;        // windows, soft-capping or ALiBi: the VariantMask kernels (common/variant_mask.cuh)
  bool dsinks = false;          // the sinks' gradient after the delta kernel (bwd_delta.cuh)
  // Sequence layouts (backward/bwd_sequences.cuh): packed Q (cu_seqlens_q), packed K/V (cu_seqlens_k),
  // cache lengths (seqlens_k): the kernels that read them (one instance per mask policy; the others
  // read none). Blocks past their sequence's rows return at once.
  bool varlen_q = false, varlen_k = false, cache_lengths = false;
  bool sequences() const { return varlen_q || varlen_k || cache_lengths; }  // the sequence instances run
  // The workspace's rows (BwdArgs): per batch entry (0 with varlen Q) and per query head.
  long long ws_batch_stride = 0, ws_head_stride = 0;
  alignas(128) unsigned char tensor_maps[4 * 128] = {};  // hopper: CUtensorMap of Q, K, V, dO
  const void* map_inputs[4] = {};  // hopper: the Q, K, V, dO those maps hold (flash_bwd_run declines others)
  int heavy_group = 1;          // hopper, causal: (KV head, batch) pairs scheduled heavy-first together
  int acc_dim = 0;              // atomic path: the dQ accumulator's columns (head_dim; 128 for 96 on hopper)
  dim3 grid_delta, grid_dkdv, grid_dq;  // grid_dq: the dQ kernel, or the conversion on the atomic path
  size_t smem_dkdv = 0, smem_dq = 0;  // dynamic shared memory per block
  // Workspace: delta and lse2, one float a row each, and on the atomic path the dQ accumulator, acc_dim
  // floats a row; rows: batch x heads_q x seqlen_q_rounded, or with varlen Q heads_q x (total_q + 64 x
  // batch, rounded up to 64) (each sequence padded to 64 rows); allocated by
  // flash_bwd_run on the stream (cudaMallocAsync) and released there (cudaFreeAsync) after the kernels.
  size_t workspace_bytes = 0;
  // e.g. (B=1, Hq=8, Lq=512, D=64)
  // "sm80-bwd D=64 dq_path=atomic block=64x64 threads=128 smem dkdv=50176 dq=49152 workspace=1081344"
  std::string describe() const;
};

// "" and *plan filled when the backward kernels can run p on `dev`, else why not (naming the field and
// value). Every limit is checked here once (dtype and head dim, sequence layouts, GQA,
// 16-byte alignment of the pointers and strides, grid limits, shared memory).
// variant: Auto runs the Hopper dK/dV kernel where it can (compute capability 9.0 with the sm_90a image,
// head dim 64 or 128, the atomic path, TMA-readable layouts), else the mma.sync kernels; Hopper forces
// the Hopper kernel (or says why not), AllWarps the mma.sync kernels; the other variants have no backward.
std::string flash_bwd_plan(const FlashBwdParams& p, const DeviceLimits& dev, FlashBwdPlan* plan,
                           FlashVariant variant = FlashVariant::Auto);

// Launches a plan on `stream` (asynchronous; the current device must be plan.device): allocates the
// workspace with cudaMallocAsync on `stream` (stream-ordered, from the device's default memory pool),
// runs the path's three kernels, and frees it with cudaFreeAsync on `stream`. If the atomic path's
// workspace cannot be allocated, the call runs the deterministic path (its workspace is 2 floats a
// row). Every element of dQ, dK and dV in the problem's extents is written. Returns the first failing status (allocation or launch).
// Not capturable into a CUDA graph on drivers without stream-ordered allocation support in graphs.
cudaError_t flash_bwd_run(const FlashBwdParams& p, const FlashBwdPlan& plan, cudaStream_t stream);

}  // namespace flashcore::cuda
