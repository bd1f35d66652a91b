// Tile sizes, block shapes and kernel arguments of the backward kernels (backward/). Host code
// includes this too: the plan (plan_bwd.cu) sizes shared memory, grids and the workspace from it.
#pragma once

#include <cstddef>

#include "backends/cuda/flash_bwd.h"
#include "backends/cuda/sm80/config.cuh"  // TileConfig (smem row of a swizzled tile), kBlockN

namespace flashcore::cuda::detail {

constexpr int kBwdBlockM = 64;        // query rows per tile
constexpr int kBwdBlockN = kBlockN;   // keys per tile (64: the forward's tile ops are sized for it)
constexpr int kBwdWarps = 4;          // 16 rows (keys in dK/dV, queries in dQ) per warp
constexpr int kBwdThreads = 32 * kBwdWarps;
constexpr int kBwdDeltaThreads = 256;
constexpr int kBwdDeltaThreadsPerRow = 8;  // lanes sharing one row's dot product dO_i·O_i
constexpr int kBwdConvertThreads = 256;    // dq_accum -> dQ (atomic path), per 64 query rows
static_assert(kBwdWarps * 16 == kBwdBlockM && kBwdBlockM == kBwdBlockN, "one 16-row tile per warp");

// The head dims the backward is compiled for (one instance file each); a problem runs only on its own.
constexpr bool bwd_head_dim_built(int d) { return d == 32 || d == 64 || d == 96 || d == 128; }
// The head dims with the atomic dQ path (bwd_dkdv.cuh, kAtomicDq); 96 runs the deterministic path always:
// its dK/dV kernel with the dQ atomics spilled 8-28 bytes on sm_90 whatever the dQ column pass (16-96).
constexpr bool bwd_atomic_dq_built(int d) { return d == 32 || d == 64 || d == 128; }

template <int D>
struct BwdConfig {
  using Tile = TileConfig<D>;
  static constexpr int kRow = Tile::kRow;          // elements of one swizzled smem row
  static constexpr int kTileBytes = 64 * Tile::kRowBytes;
  // A operands (the warp's 16 rows of K and V in dK/dV, of Q and dO in dQ) held in registers for the
  // whole kernel, or re-read from shared memory (ldmatrix) at every k16 step. In registers they cost
  // D/4 registers each next to the 2 x D/2-float dK, dV accumulators: only up to D = 64 (ptxas, sm_90).
  static constexpr bool kDkdvARegs = D <= 64;
  static constexpr bool kDqARegs = D <= 64;
  // dK/dV: [K][V][Q x 2][dO x 2] tiles + [lse2 x 2][delta x 2] x 64 floats + 2 workspace rows (int64).
  static constexpr size_t kSmemDkdv = size_t(6) * kTileBytes + 4 * 64 * sizeof(float) + 2 * sizeof(long long);
  // dQ: [Q][dO][K x 2][V x 2] tiles.
  static constexpr size_t kSmemDq = size_t(6) * kTileBytes;
};

// What the backward kernels receive (by value).
struct BwdArgs {
  FlashBwdParams p;
  float scale_log2;       // scale · log2(e): P = exp2(S·scale_log2 − lse2)
  int group;              // heads_q / heads_kv
  int seqlen_q_rounded;   // fixed-length Q: the workspace's rows per (batch, query head), seqlen_q rounded up to 64
  int heavy_group;        // Hopper dK/dV, causal: (KV head, batch) pairs per scheduling group (key_block_order)
  float* delta;           // dO_i·O_i (0 on padding rows)
  float* lse2;            // LSE_i·log2(e); +inf where LSE = -inf and on padding rows
  int acc_dim;            // atomic path: columns of a dq_accum row, the dK/dV kernel's head dim (head_dim, or
                          // 128 for head_dim 96 on the Hopper kernel: the padding columns hold 0)
  float* dq_accum;        // atomic path: acc_dim fp32 dQ/scale sums per workspace row, each 64-row tile in
                          // fragment order (dq_frag_index); zeroed by the delta kernel; nullptr on the
                          // deterministic path
  // Workspace rows: one per query row of every (sequence, query head), each sequence's rows padded to a
  // multiple of 64 (bwd_sequences.cuh, bwd_ws_row). Fixed-length Q: [batch][heads_q][seqlen_q_rounded]
  // (these strides: heads_q x seqlen_q_rounded, seqlen_q_rounded); packed Q (cu_seqlens_q): [heads_q]
  // [ws_head_stride], sequence b from row (cu_seqlens_q[b] + 64·b) rounded down to 64, so that the padded
  // sequences never overlap and a head holds total_q + 64·batch rows at most, not batch x the longest.
  // (Last: the fields the fixed-length kernels read keep their offsets in the parameter block.)
  long long ws_batch_stride, ws_head_stride;
};

}  // namespace flashcore::cuda::detail
