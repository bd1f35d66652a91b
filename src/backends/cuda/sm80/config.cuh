// Tile sizes and block shapes of the mma.sync kernels (sm80/: compute capability 8.0 and newer).
// Host code includes this too: the launch plan sizes shared memory and threads from it.
#pragma once

#include <cstddef>

#include "backends/cuda/common/kernel_args.h"

namespace flashcore::cuda::detail {

constexpr int kBlockN = 64;            // keys per K/V tile
constexpr int kMaxConsumerWarps = 8;   // compute warps per block (R x G) of the 16-row kernel
constexpr int kMaxStages = 4;

// Warp-specialized synchronisation. FULL[s] ("ring slot s has landed") is an mbarrier completed by the
// producer lanes' cp.async.mbarrier.arrive.noinc, so the producer never waits for its own copies.
// EMPTY[s] ("slot s may be refilled") is a named barrier: consumers bar.arrive, the producer bar.sync.
constexpr int kBarEmpty = 1;                   // named barrier ids kBarEmpty + s (0 is __syncthreads)
constexpr int kBarConsumers = 1 + kMaxStages;  // all compute warps (KV-group merge)
constexpr int kBarEpilogue = 2 + kMaxStages;   // group-0 warps only (split-KV ticket and merge)

template <int D>
struct TileConfig {
  static_assert(D % 16 == 0 && D <= 256, "head dim");
  static constexpr int kHeadDim = D;
  static constexpr int kChunks = D / 8;          // 16-byte chunks in one smem row (8 halfs each)
  static constexpr int kQKSteps = D / 16;        // k16 steps of S = Q·Kᵀ
  static constexpr int kSTiles = kBlockN / 8;    // n8 column tiles of S (8)
  static constexpr int kPVSteps = kBlockN / 16;  // k16 steps of O += P·V (4)
  static constexpr int kOTiles = D / 8;          // n8 column tiles of O
  static constexpr int kTileElems = kBlockN * D; // one K (or V) tile
  // Dynamic shared memory: [Q: block_m x D][ring: stages x key_split_warps x (K tile, V tile)], 16-bit elements.
  __host__ __device__ static constexpr size_t smem_bytes(int block_m, int key_split_warps, int stages) {
    return 2ull * (size_t(block_m) * D + size_t(stages) * key_split_warps * 2 * kTileElems);
  }
};

// Warps per block (upper bound, for __launch_bounds__). More than 8 warps put 3 warps on one SM
// sub-partition, which caps registers at 168/thread: the warp-specialized kernels therefore use at most
// 4 compute warps + 1 producer (255-register cap).
template <int D, bool kWarpSpecialized>
struct BlockShape {
  static constexpr int kMaxComputeWarps = kWarpSpecialized ? 4 : detail::kMaxConsumerWarps;
  static constexpr int kMaxThreads = 32 * (kMaxComputeWarps + (kWarpSpecialized ? 1 : 0));
};

// The wide-warp kernel (sm80/flash_fwd_wide.cuh): 4 warps x 32 query rows, one block shape.
constexpr int kWideWarpRows = 32;
constexpr int kWideWarps = 4;
constexpr int kWideBlockM = kWideWarpRows * kWideWarps;  // 128

}  // namespace flashcore::cuda::detail
