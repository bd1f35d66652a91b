// The decode kernel's plan (host code): its launch table (which problems Auto runs on it), its own
// limits, and its launch shape (rows per block, ring depth, key splits, the balanced schedule and the
// workspace). GQA-packed rows, split-KV over the keys, every sequence layout. The choice between
// kernels is plan.cu's (flash_fwd_plan); the kernel is flash_decode.cuh.
#include <algorithm>
#include <string>

#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/decode/config.cuh"
#include "backends/cuda/launch_scratch.h"
#include "backends/cuda/limits.h"
#include "backends/cuda/plan_internal.h"

namespace flashcore::cuda::detail {

// Decode launch table: which problems without sequence arrays Auto runs on the decode kernel (with them
// it runs every problem of seqlen_q <= 64, and it is the only kernel of paged K/V), and its ring depth. First matching row wins; rows = (heads_q / heads_kv) ·
// seqlen_q, the packed rows of one KV head; group = heads_q / heads_kv. Measurements: perf/dev/NOTES.md
// (decode), NVIDIA H100 80GB HBM3, fp16, `decode_dev cross` / `cross64` / `sweep`: (B,Hq,Hkv,Lq,Lk)
// decode us vs what Auto runs otherwise on that GPU (the Hopper kernel at D=128; the 16-row kernel at
// D=64 for these sizes and at D=256), causal when Lq > 1, D=128 unless named.
// The decode kernel wins by reading K/V once per KV head (group >= 4) and by split-KV for few blocks;
// it loses to the other kernels on short keys (its split merge and pipeline fill) and on many rows
// without GQA (its 64-row blocks are slower at compute than the Hopper kernel's 128-row tiles).
struct DecodeLaunchRow {
  int head_dim;      // the decode kernel's head dim (decode_head_dim)
  int max_rows;      // row applies if rows <= this ...
  int min_group;     // ... and group >= this ...
  int min_seqlen_k;  // ... and seqlen_k >= this
  int stages;        // K/V ring depth (reduced if the device's shared memory is short)
};

namespace {

constexpr DecodeLaunchRow kDecodeTable[] = {
    // D  rows<= group>= Lk>=  stages
    {64, 32, 8, 512, 3},     // (4,64,8,1,512,64) 10.7 us vs 16.9 (16-row); (4,32,8,1,512,64) 10.7 vs 9.0: not G=4
    {64, 128, 4, 2048, 3},   // (4,32,8,1,2048,64) 11.5 vs 23.7; (4,64,8,16,2048,64) 29.9 vs 46.3; (8,32,8,1,8192,64) s3 x4 51.8, s4 53.6
    {64, 16, 1, 8192, 3},    // (4,8,8,1,8192,64) 28.8 vs 31.9; (4,8,8,16,8192,64) 30.6 vs 34.0; at Lk 2048 11.4 vs 10.7
    {128, 16, 1, 512, 3},    // (4,8,8,1,512) 9.9 vs 11.8 (Hopper); (4,32,8,4,512) 12.5 vs 12.4; Lk 128: 9.4 vs 6.4
    {128, 32, 4, 512, 3},    // (4,64,8,4,512) 16.0 vs 23.0; (4,64,8,4,128) 14.1 vs 12.0
    {128, 128, 4, 2048, 3},  // (4,32,8,16,2048) 31.4 vs 32.3; (4,64,8,16,2048) 47.8 vs 62.2; (8,32,8,1,8192) s3 x4 97.0, s2 101.0
    {128, 128, 1, 8192, 3},  // (4,8,8,64,8192) 69.9 vs 107.7 (16-row 62.3); (4,8,8,64,2048) 33.5 vs 31.2: not
    {256, 32, 1, 512, 3},    // (4,32,8,1,512,256) 20.1 vs 36.5 (16-row; no Hopper kernel at 256)
    {256, 128, 1, 2048, 3},  // (4,32,8,16,2048,256) 70.2 vs 129.3; (4,8,8,1,8192,256) 100.9 vs 479.8; (8,32,8,1,8192,256) s3 194.4, s2 221.6
};
// Splits: one wave of blocks, at most this many per SM (measured: (8,32,8,1,8192,64) 51.4 us with 2 per SM
// (4 splits), 55.1 with 3 (6 splits); (8,32,8,1,8192) 97.0 us at 4 splits, 101.7 at 8 = 2 waves), and
// pieces of at least kDecodeMinTilesPerSplit 64-key tiles ((4,32,8,4,512) 12.5 us in 8 pieces of 1 tile,
// 15.8 in 2 of 4).
constexpr int kDecodeWaveBlocksPerSm = 2;
constexpr int kDecodeMinTilesPerSplit = 1;
// The fixed grid at D >= 128 takes one block per SM instead of two when that fills the SMs as well (within
// kDecodeOneBlockFill of the two-block wave's share): half the pieces, half the partials to merge, and the
// kernel was not slower with one block's copies in flight per SM there. H200 (run 40l, `decode_dev deep`,
// µs, one block per SM / two): (16,64,8,1,4096,128) 64.5 (1 piece, no merge) / 70.4 (2); (8,32,8,4,8192,128)
// 71.4 (2) / 74.4 (4); (8,32,8,1,8192,128) 68.0 (2) / 68.6 (4). D = 64: two (8,32,8,1,8192,64) 40.0 (4) against
// 44.9 (2) with one. D = 256 runs one per SM anyway (registers). Paged K/V alike since the block-table
// entries are staged a ring ahead (decode/flash_decode.cuh); before, pages of 16 were slower with one block
// (run 42a, `decode_dev pages`, µs, one block per SM / two, entries a tile ahead -> staged):
// (8,32,8,1,8192,128) paged:16 76.5 / 72.0 -> 73.1 / 71.8; (1,32,8,1,32768,128) 43.8 / 43.2 -> 42.0 / 42.8;
// (16,64,8,1,4096,128) 72.5 / 73.2 -> 69.2 / 72.7; (8,32,8,4,8192,128) 79.2 / 76.0 -> 75.8 / 75.5; pages of 32
// 0.94-1.01, pages of 64 0.93-1.00.
constexpr double kDecodeOneBlockFill = 0.95;
// Sequence arrays (lengths in device memory, each sequence its own): the balanced schedule
// (decode/schedule.cuh: one or two waves, as the lengths need) up to this many sequences, one per
// thread of the block that computes it; above, B · Hkv blocks of the fixed grid are many waves and
// balance themselves (512 caches of 1..4096 keys: rounds of 128 ran 13 % slower than the fixed grid
// on an H200, perf/dev/NOTES.md, fourteenth session).
constexpr int kDecodeBalanceMaxBatch = 128;
static_assert(kDecodeBalanceMaxBatch <= detail::kDecodeThreads, "decode/schedule.cuh: one sequence per thread");
// Packed rows of a (b, kv head), at most, for a captured fixed-grid split to merge by the combine kernel (plan_decode).
constexpr long long kDecodeCapturedCombineRows = 16;
// A captured balanced schedule merges by the combine kernel where its blocks (one a packed row of the call: batch x
// heads_q x seqlen_q) fit one wave of it, kDecodeCombineBlocksPerSm an SM (decode/config.cuh). H100, run 53f,
// graph-timed against the tickets: 256-512 rows 0.3-5 % faster (the suite's mixed batch 1-1.5 %), 544 1.4 %, but 640
// 0.5-0.9 % slower, 2048 3.1 %, 4096 1.6 %.

size_t decode_smem(int head_dim, int block_m, int stages) {
  switch (detail::decode_head_dim(head_dim)) {
    case 64: return DecodeConfig<64>::smem_bytes(block_m, stages);
    case 128: return DecodeConfig<128>::smem_bytes(block_m, stages);
    default: return DecodeConfig<256>::smem_bytes(block_m, stages);
  }
}
int decode_blocks_per_sm_regs(int head_dim) {
  switch (detail::decode_head_dim(head_dim)) {
    case 64: return DecodeConfig<64>::kBlocksPerSm;
    case 128: return DecodeConfig<128>::kBlocksPerSm;
    default: return DecodeConfig<256>::kBlocksPerSm;
  }
}

}  // namespace

}  // namespace flashcore::cuda::detail

namespace flashcore::cuda {
// The decode kernel's images: built for compute capability 9.0 where the Hopper kernel is (sm_90 among the CUDA
// architectures, CMakeLists.txt), and only then can a launch take a cluster's path.
bool decode_cluster_merge_built() {
#ifdef FLASHCORE_HAVE_HOPPER_KERNELS
  return true;
#else
  return false;
#endif
}
}  // namespace flashcore::cuda

namespace flashcore::cuda::detail {

std::string decode_limits(const FlashFwdParams& p, const DeviceLimits& dev) {
  if (p.seqlen_q > detail::kMaxDecodeSeqlenQ)
    return "the decode kernel takes seqlen_q <= " + std::to_string(detail::kMaxDecodeSeqlenQ) + ", not " +
           std::to_string(p.seqlen_q);
  const FlashFwdLaunchOverride* ov = p.launch_override;
  if (ov && ov->block_m && ov->block_m > 16 * detail::kMaxDecodeRowTiles)
    return "launch_override.block_m: the decode kernel takes 16, 32 or 64 rows per block";
  if (ov && ov->block_m == 48) return "launch_override.block_m: the decode kernel takes 16, 32 or 64 rows per block";
  const size_t need = decode_smem(p.head_dim, 16, 2);
  if (need > dev.smem_optin_per_block)
    return "the decode kernel needs " + std::to_string(need) + " bytes of shared memory per block at head_dim " +
           std::to_string(p.head_dim) + ", device allows " + std::to_string(dev.smem_optin_per_block);
  return {};
}

void plan_decode(const FlashFwdParams& p, const DeviceLimits& dev, const DecodeLaunchRow& row, FlashFwdPlan* plan) {
  const FlashFwdLaunchOverride* ov = p.launch_override;
  const long long rows = (long long)(p.heads_q / p.heads_kv) * p.seqlen_q;  // packed rows of a KV head
  int row_tiles = (int)std::min<long long>(detail::kMaxDecodeRowTiles, (rows + 15) / 16);
  if (row_tiles == 3) row_tiles = 4;  // 1, 2 or 4 row tiles: the 4 warps split into row tiles x key groups
  if (ov && ov->block_m) row_tiles = ov->block_m / 16;
  plan->kernel = FlashKernel::Decode;
  plan->block_m = 16 * row_tiles;
  plan->key_split_warps = detail::kDecodeWarps / row_tiles;
  plan->threads = detail::kDecodeThreads;
  plan->n_mblocks = (int)((rows + plan->block_m - 1) / plan->block_m);
  plan->stages = ov && ov->stages ? ov->stages : row.stages;
  while (plan->stages > 2 && decode_smem(p.head_dim, plan->block_m, plan->stages) > dev.smem_optin_per_block)
    --plan->stages;
  plan->smem = decode_smem(p.head_dim, plan->block_m, plan->stages);
  // Splits: fill one wave. Blocks resident per SM: what the registers (__launch_bounds__) and shared
  // memory (limits.h, smem_blocks_per_sm) allow.
  const int per_sm = std::max<int>(1, std::min<long long>({(long long)kDecodeWaveBlocksPerSm,
                                                           (long long)decode_blocks_per_sm_regs(p.head_dim),
                                                           (long long)smem_blocks_per_sm(dev, plan->smem)}));
  const long long slots = (long long)per_sm * dev.sm_count;
  const long long base = (long long)p.batch * p.heads_kv * plan->n_mblocks;
  const int tiles = (p.seqlen_k + detail::kDecodeBlockN - 1) / detail::kDecodeBlockN;
  long long splits = std::max<long long>(1, slots / base);
  if (detail::decode_head_dim(p.head_dim) >= 128 && per_sm > 1 && base <= dev.sm_count) {
    const long long one = dev.sm_count / base;  // pieces a (b, hk, row block) with one block per SM
    if ((double)(one * base) / dev.sm_count >= kDecodeOneBlockFill * (double)(splits * base) / slots) splits = one;
  }
  // Sequence arrays take the balanced schedule (below), except with a forced split count or more than
  // kDecodeBalanceMaxBatch sequences. (Its block counts are scanned in kDecodeCountBits-bit fields, each at most
  // its grid's waves · slots + base blocks, kept below 2^kDecodeCountBits.) Sequences of equal lengths (no length
  // arrays: contiguous, or paged K/V alone) take the fixed grid, the same pieces without the schedule's scans in
  // every block: on an H200 paged (8,32,8,1,8192,128) had its first tile 6.6 us after a block started with the
  // schedule, 5.4 without (contiguous 4.0), and the paged decode rows ran 2.8-3.5 % faster (perf/dev/NOTES.md,
  // fortieth session).
  const int work_waves = ov && ov->work_waves ? ov->work_waves : 0;  // 0: one or two, as the lengths need
  const long long work_blocks = slots * std::max(2, work_waves) + base;  // the balanced schedule's grid
  const bool balanced = detail::has_sequence_lengths(p) && !(ov && (ov->splits || ov->combine)) &&
                        p.batch <= kDecodeBalanceMaxBatch && work_blocks < (1ll << detail::kDecodeCountBits);
  // The fixed grid may cut a (b, kv head, row block) into more than the kMaxDecodeSplits pieces the kernel
  // merges itself: the combine kernel merges them (decode/combine.cuh), so that one or two (b, kv head) pairs
  // fill the SMs. The balanced schedule keeps 64.
  const int cap = balanced ? detail::kMaxDecodeSplits : detail::kMaxDecodeCombineSplits;
  splits = std::min<long long>({splits, std::max(1, tiles / kDecodeMinTilesPerSplit), (long long)cap});
  if (ov && ov->splits) splits = std::min(ov->splits, std::max(1, tiles));
  plan->max_splits = (int)splits;
  plan->tiles_per_split = 1 << 30;
  plan->work_slots = plan->work_waves = plan->work_blocks = plan->work_fit = 0;
  size_t ws_rows = (size_t)base / plan->n_mblocks * plan->max_splits * rows;  // fixed grid: (b, hk, split, row)
  if (balanced) {
    // Balanced schedule: at most waves · work_slots + base work items (decode/schedule.cuh); workspace
    // rows by block index.
    plan->work_slots = (int)slots;
    plan->work_waves = work_waves;
    plan->work_blocks = (int)work_blocks;
    plan->work_fit = ov ? ov->work_fit : 0;
    plan->max_splits = std::min(detail::kMaxDecodeSplits, std::max(1, tiles));  // the most one sequence can get
    ws_rows = (size_t)plan->work_blocks * plan->block_m;
  }
  plan->split_combine = plan->max_splits > 1 && (plan->max_splits > detail::kMaxDecodeSplits || (ov && ov->combine));
  plan->dependent_launch = dev.cc_major >= 9;
  // The fixed grid's pieces of one row block as a thread block cluster (decode/merge.cuh, merge_cluster_pieces):
  // kMaxDecodeClusterSplits pieces (clusters of 2; larger ones lost to where the hardware put their blocks), D = 128
  // (measured there). H100, graph-timed against the combine kernel (perf/dev/NOTES.md, fifty-fifth session, run
  // 55b): (8,32,8,1,8192,128) 91.8 -> 90.9 us, (8,32,8,4,8192,128) 94.9 -> 92.3, paged alike.
  // Only where this build compiled the kernel for compute capability 9.0 (cluster_ctas() is 1 in an sm_80-89 image,
  // which would then take the tickets this plan has no workspace for) and the partials fit the ring
  // (DecodeConfig::kClusterMergeFits).
  plan->split_cluster = 0;
  if (decode_cluster_merge_built() && !balanced && dev.cc_major >= 9 && plan->n_mblocks == 1 && plan->max_splits >= 2 &&
      plan->max_splits <= detail::kMaxDecodeClusterSplits && !plan->split_combine &&
      detail::decode_head_dim(p.head_dim) == 128 && DecodeConfig<128>::kClusterMergeFits && !(ov && ov->split_cluster < 0))
    plan->split_cluster = plan->max_splits;
  // A captured call of up to 16 packed rows a (b, kv head) merges its pieces by the combine kernel (flash_fwd_run):
  // measured there (Lq 1-4), 0.8-3.7 us faster on the fixed grid; with more rows the combine kernel's blocks (one a
  // row) outnumber the work, not measured: those keep the tickets. The balanced schedule's pieces too, where the
  // combine kernel's blocks fit one wave (kDecodeCombineBlocksPerSm): it finds each item's first block and piece count
  // in a map the item's first block writes (split_map_offset).
  plan->combine_when_captured =
      plan->max_splits > 1 && !plan->split_combine && !plan->split_cluster && rows <= kDecodeCapturedCombineRows &&
      (!balanced || (long long)p.batch * p.heads_q * p.seqlen_q <= (long long)detail::kDecodeCombineBlocksPerSm * dev.sm_count);
  if (plan->max_splits > 1 && !plan->split_cluster) {  // a cluster merge needs no workspace
    const int d = detail::decode_head_dim(p.head_dim);
    plan->split_lse_offset = detail::scratch_align_up(ws_rows * d * sizeof(float));
    plan->split_partial_bytes = plan->split_lse_offset + detail::scratch_align_up(ws_rows * sizeof(float));
    plan->split_map_offset = 0;
    if (balanced && plan->combine_when_captured) {  // (first block, pieces) per (b, kv head, row block)
      plan->split_map_offset = plan->split_partial_bytes;
      plan->split_partial_bytes += detail::scratch_align_up((size_t)base * 2 * sizeof(int));
    }
    // Tickets only where the last block merges: a captured call zeroes them in a memset node of its own
    // (launch_scratch.h), 1.6-1.9 us a call on an H200 (perf/dev/graph_nodes_dev.cu).
    if (!plan->split_combine) plan->split_counter_bytes = detail::scratch_align_up((size_t)base * sizeof(int));
  }
}

const DecodeLaunchRow* decode_row(const FlashFwdParams& p) {
  const int d = detail::decode_head_dim(p.head_dim);
  const int group = p.heads_q / p.heads_kv;
  const long long rows = (long long)group * p.seqlen_q;
  if (p.seqlen_q > detail::kMaxDecodeSeqlenQ) return nullptr;
  for (const DecodeLaunchRow& r : kDecodeTable)
    if (r.head_dim == d && rows <= r.max_rows && group >= r.min_group && p.seqlen_k >= r.min_seqlen_k) return &r;
  return nullptr;
}
const DecodeLaunchRow& decode_row_any(const FlashFwdParams& p) {
  const int d = detail::decode_head_dim(p.head_dim);
  for (const DecodeLaunchRow& r : kDecodeTable)
    if (r.head_dim == d) return r;
  return kDecodeTable[0];
}

}  // namespace flashcore::cuda::detail
