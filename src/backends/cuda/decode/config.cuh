// Shapes of the decode kernel (decode/flash_decode.cuh). Host code includes this too: the plan sizes
// shared memory and the split-KV workspace from it.
#pragma once

#include <cstddef>

#include "backends/cuda/common/kernel_args.h"
#include "backends/cuda/common/swizzle.cuh"

namespace flashcore::cuda::detail {

constexpr int kDecodeBlockN = 64;         // keys per K/V tile of the shared-memory ring
constexpr int kDecodeSliceN = 16;         // keys a warp takes per step: one k16 step of P·V
constexpr int kDecodeWarps = 4;           // warps per block: row tiles x key groups
constexpr int kDecodeThreads = 32 * kDecodeWarps;
constexpr int kMaxDecodeSeqlenQ = 64;     // the decode kernel takes seqlen_q up to this
constexpr int kMaxDecodeRowTiles = 4;     // 16-row tiles per block: at most 64 packed rows
constexpr int kMaxDecodeSplits = 64;      // key splits per (batch, kv head, row block) the kernel merges itself
// Pieces of a (batch, kv head, row block) merged through a thread block cluster instead of tickets (compute capability
// 9.0, the fixed grid: decode/merge.cuh, merge_cluster_pieces). Clusters of 2 measured faster, larger ones slower: the
// hardware places a cluster's blocks in one GPC, two on an SM while other SMs idle (H100, perf/dev/NOTES.md,
// fifty-fifth session: 16 pieces of (1,32,8,1,32768,128) 50.3 -> 55.6 us, 4 of (4,32,8,1,16384,128) 92.1 -> 94.4).
constexpr int kMaxDecodeClusterSplits = 2;
constexpr int kMaxDecodeCombineSplits = 256;  // with the combine kernel (decode/combine.cuh): the fixed grid
constexpr int kMaxDecodeStages = 8;
// The balanced schedule (decode/schedule.cuh) scans three block counts packed in one 64-bit value, this many
// bits each; the plan (decode/plan_decode.cu) keeps its grid, which bounds every count, below 2^kDecodeCountBits.
constexpr int kDecodeCountBits = 21;
// The balanced schedule's one-wave fit (decode/schedule.cuh) is taken where the batch's tile work fills at least
// this share of its pieces (pieces of near-equal lengths).
constexpr long long kDecodeFitFillNum = 9, kDecodeFitFillDen = 10;
// Blocks an SM of the combine kernel (decode/combine.cuh; 256 threads of 64 registers, as ptxas 13.0 gives it on
// sm_80-90), and the plan's bound for a captured balanced call to merge by it: its blocks (a packed row each) fit one wave.
constexpr int kDecodeCombineBlocksPerSm = 4;

// Head dims the decode kernel is compiled for (decode/instances/): every head dim (a multiple of 8 up to
// 256) runs on the smallest of them that holds it, its columns past head_dim zero-filled as they load
// (the kernel waits on memory, not on the MMAs those columns cost).
constexpr int kDecodeHeadDims[] = {64, 128, 256};
constexpr int decode_head_dim(int head_dim) {
  for (int d : kDecodeHeadDims)
    if (head_dim <= d) return d;
  return 0;
}

template <int D>
struct DecodeConfig {
  static constexpr int kRow = smem_row<D>();          // elements of one smem row (D rounded up to 64)
  static constexpr int kRowBytes = 2 * kRow;
  static constexpr int kChunks = D / 8;               // 16-byte chunks of the D columns
  static constexpr int kRowChunks = kRow / 8;         // 16-byte chunks of one smem row
  static_assert(kDecodeThreads % kRowChunks == 0, "a thread copies one column chunk of every row it loads");
  static constexpr int kLoadRowStep = kDecodeThreads / kRowChunks;  // threads per column chunk: a tile's rows
                                                                    // per thread are 64 / kLoadRowStep
  static constexpr int kTileElems = kDecodeBlockN * kRow;           // one K (or V) tile
  static constexpr bool kQInRegisters = D <= 128;     // above, Q fragments are re-read from shared memory
  // Blocks per SM the registers must allow (__launch_bounds__): 2 up to D = 128 (ptxas, sm_90, 16/32/64
  // rows per block: D=128 208/243/251 registers, no spills; 3 would cap them at 170: D=64's 64-row
  // instance spills 12 bytes on sm_80/86/89 there), 1 above (D=256 242/254/255). Shared memory may
  // allow fewer (the plan takes the smaller).
  static constexpr int kBlocksPerSm = D <= 128 ? 2 : 1;
  // fp32 values a key-group warp parks for the merge of the groups: O fragment + row max and sum.
  static constexpr int kMergeVals = D / 2 + 4;

  // Dynamic shared memory: [Q: block_m rows][ring: stages x (K tile, V tile)]. After the key loop the
  // ring holds the key groups' states (<= 3 warps x 32 lanes x kMergeVals floats) and the split merge's
  // weights (block_m x kMaxDecodeSplits floats): kMergeScratchBytes, the larger; the ring is at least that large.
  static constexpr size_t kGroupStateBytes = size_t(kDecodeWarps - 1) * 32 * kMergeVals * 4;
  static constexpr size_t kSplitWeightBytes = size_t(kMaxDecodeRowTiles) * 16 * kMaxDecodeSplits * 4;
  static constexpr size_t kMergeScratchBytes = kGroupStateBytes > kSplitWeightBytes ? kGroupStateBytes : kSplitWeightBytes;
  static constexpr size_t kStageBytes = size_t(2) * kTileElems * 2;  // one K tile and one V tile
  __host__ __device__ static constexpr size_t ring_bytes(int stages) {
    return stages * kStageBytes > kMergeScratchBytes ? stages * kStageBytes : kMergeScratchBytes;
  }
  // A piece of a cluster merge leaves its fp32 partial ([block_m][D]) and LSEs (block_m) in the ring behind the key
  // groups' states (key group 0's warps still read those while other warps write their partial) and behind the
  // merge's weights (piece 0 writes them where the states were, while it reads the partials). kClusterMergeFits: all
  // of it within a two-stage ring at 64 rows a block: at D = 128 and 256; not at D = 64 (33024 bytes of 32768), which
  // the plan does not take (decode/plan_decode.cu).
  static constexpr size_t kClusterPartOffset = kMergeScratchBytes;
  static constexpr bool kClusterMergeFits =
      kClusterPartOffset + size_t(kMaxDecodeRowTiles) * 16 * (D + 1) * 4 <= 2 * kStageBytes;
  __host__ __device__ static constexpr size_t smem_bytes(int block_m, int stages) {
    return size_t(block_m) * kRowBytes + ring_bytes(stages);
  }
};

}  // namespace flashcore::cuda::detail
