// Tile sizes and block shapes of the mma.sync kernels (sm80/: compute capability 8.0 and newer).
// Host code includes this too: the launch plan sizes shared memory and threads from it.
#pragma once

#include <cstddef>
#include <type_traits>

#include "backends/cuda/common/kernel_args.h"
#include "backends/cuda/common/swizzle.cuh"

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

// Head dims the mma.sync kernels are compiled for. A problem's head_dim (a multiple of 8) runs on the
// smallest one that holds it, its columns past head_dim zero-filled in shared memory as they load
// (40 -> 64, 80 -> 96, 112 -> 128, 160 -> 192, 224 -> 256): no copies, no padded global buffers.
constexpr int kNativeHeadDims[] = {32, 64, 96, 128, 192, 256};
constexpr int native_head_dim(int head_dim) {
  for (int d : kNativeHeadDims)
    if (head_dim <= d) return d;
  return 0;
}
// f(std::integral_constant<int, D>{}) for the native head dim D that runs head_dim (the one place a
// runtime head dim becomes a template argument; head_dim in [1, 256]).
template <class F>
decltype(auto) with_native_head_dim(int head_dim, F&& f) {
  switch (native_head_dim(head_dim)) {
    case 32: return f(std::integral_constant<int, 32>{});
    case 64: return f(std::integral_constant<int, 64>{});
    case 96: return f(std::integral_constant<int, 96>{});
    case 128: return f(std::integral_constant<int, 128>{});
    case 192: return f(std::integral_constant<int, 192>{});
    default: return f(std::integral_constant<int, 256>{});
  }
}

// The largest head dim whose O accumulator (D/2 floats per thread of a 16-row warp) leaves registers for
// the rest: Q fragments, a prefetched second score tile, the KV-group and split-KV merges, and the
// warp-specialized and wide-warp kernels. Above it the 16-row all-warps kernel runs alone, leaner
// (TileConfig::kQInRegisters, kSplitsKeys; ptxas: spills otherwise).
constexpr int kMaxRegisterHeadDim = 128;
constexpr bool sm80_splits_keys(int D) { return D <= kMaxRegisterHeadDim; }

// Which kernels are compiled for native head dim D (sm80/instances/): the 16-row all-warps kernel for
// every D; the warp-specialized and wide-warp kernels up to kMaxRegisterHeadDim (the launch table never
// picks them above). With the attention variants (VariantMask, common/variant_mask.cuh) only the
// 16-row all-warps kernel, for every D (sm80/instances/fwd_hdim*_variants.cu).
constexpr bool sm80_kernel_built(FlashKernel kernel, int D, bool variants = false) {
  return kernel == FlashKernel::Rows16 || (!variants && D <= kMaxRegisterHeadDim);
}

template <int D>
struct TileConfig {
  static_assert(D % 16 == 0 && D <= 256, "head dim");
  static constexpr int kHeadDim = D;
  static constexpr int kRow = smem_row<D>();     // elements of one smem row (D rounded up to 64)
  static constexpr int kRowBytes = 2 * kRow;
  static constexpr int kChunks = D / 8;          // 16-byte chunks of D columns (8 halfs each)
  static constexpr int kQKSteps = D / 16;        // k16 steps of S = Q·Kᵀ
  static constexpr int kSTiles = kBlockN / 8;    // n8 column tiles of S (8)
  static constexpr int kPVSteps = kBlockN / 16;  // k16 steps of O += P·V (4)
  static constexpr int kOTiles = D / 8;          // n8 column tiles of O
  static constexpr int kTileElems = kBlockN * kRow;  // one K (or V) tile
  // Q A-fragments stay in registers up to D = 128; above, the O accumulator (D/2 floats) leaves no room
  // and every Q·Kᵀ step re-reads them from the Q tile in shared memory (ldmatrix).
  static constexpr bool kQInRegisters = D <= kMaxRegisterHeadDim;
  // KV groups (key_split_warps > 1) and split-KV up to D = 128. Above, their merge code next to the
  // D/2-float O accumulator costs the 16-row kernel register spills (ptxas, sm_90): one group, no split.
  static constexpr bool kSplitsKeys = sm80_splits_keys(D);
  // Dynamic shared memory: [Q: block_m x kRow][ring: stages x key_split_warps x (K tile, V tile)], 16-bit elements.
  __host__ __device__ static constexpr size_t smem_bytes(int block_m, int key_split_warps, int stages) {
    return 2ull * (size_t(block_m) * kRow + size_t(stages) * key_split_warps * 2 * kTileElems);
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
// 64-key tiles per softmax step of the wide-warp kernel: two at D = 32 (128 keys a step: one update, one
// O rescale and one block barrier for both; H200, forced cuda-flash-allwarps, run 36b: D = 32 rows 2.6-7.3 %
// faster, the short causal (4,16,1024,32) 3 % slower), one above: at D = 64 two-tile steps measured 0-8 %
// slower non-causal and 1-30 % causal (run 36a: S 128 + O 64 registers spill 32-104 bytes, and Q has to
// come from shared memory; perf/dev/NOTES.md, thirty-sixth session). The ring then needs room for two
// steps: at least wide_min_stages stages (the plan raises the row's).
constexpr int wide_tiles_per_step(int native_d) { return native_d <= 32 ? 2 : 1; }
template <int D>
constexpr int kWideTilesPerStep = wide_tiles_per_step(D);
constexpr int wide_min_stages(int native_d) { return 2 * wide_tiles_per_step(native_d); }

}  // namespace flashcore::cuda::detail
