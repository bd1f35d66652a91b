// Tile sizes of the Hopper kernel (sm90/flash_fwd_sm90.cuh): the one place they live. Host code
// includes this too (TMA box sizes, shared memory of a launch).
#pragma once

#include <cuda.h>  // CUtensorMap (type only)
#include <cuda_runtime_api.h>  // __host__ __device__ (empty in host-only compilers)

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/common/swizzle.cuh"  // smem_row: the O staging's rows

namespace flashcore::cuda::detail {

// Compiled head dims (multiples of the 64-column swizzle panel; 32, 96 and 160: rows of one, three and
// five 32-column panels in the 64-byte swizzle). Any other head dim up to 256 runs on the next one: its
// tensor maps have head_dim columns and TMA zero-fills the box past them (Q, K and V), so the padding
// adds zeros to S and gives O columns the epilogue does not store (8..24 -> 32; 40..56 -> 64; 72..88 ->
// 96; 104..120 -> 128; 136..152 -> 160; 168..184 -> 192; 200..248 -> 256). The plan sends a problem whose
// rows are not all 32-byte aligned from the D = 160 instance to the D = 192 one (sm90/plan_sm90.cu, hopper_instance).
constexpr int kHopperHeadDims[] = {32, 64, 96, 128, 160, 192, 256};
constexpr int hopper_head_dim(int head_dim) {
  for (int d : kHopperHeadDims)
    if (head_dim <= d) return d;
  return 0;
}

// Per head dim: D <= 128 keeps 128-key tiles (S = 64 registers a thread beside O's D/2). Above, two
// stages of 128-key K and V tiles do not fit 227 KB beside Q (D = 192: 48 KB + 4 x 48 KB), and
// O (96 or 128 registers) + S + P must stay within the consumers' 240: 96-key tiles at 192 (S 48,
// P 24; two stages, 193 KB; H100 (4,16,2048,192) 398 us against 433 with three stages of 64 keys),
// 64-key tiles at 256 (two stages, 197.7 KB). 112 keys at 192 and 80 at 256 spill in every consumer.
// D = 160 takes D = 192's 96-key tiles (O 80 + S 48 + P 24 registers, where 128 keys would need 176 beside
// O, near the 180 that spilled at 192; two stages 160 KB with its own O staging, 209 KB in all).
//
// kInBytes = 1: FP8 e4m3 inputs (D = 128 only). A 128-byte swizzle row then holds 128 elements, so Q,
// K and the transposed V (Vᵀ: D rows of kBlockN keys, sm90/fp8_transpose_v.cuh) are one panel each;
// a wgmma k32 step reads 32 bytes of a row like a k16 step of 16-bit types. Tiles are half the bytes:
// four stages (16 KB per K or Vᵀ tile). O (fp16/bf16) is staged in a region of 2 bytes per element,
// twice Q's 16 KB.
//
// D = 32 (16-bit): a row is 64 bytes, so its tiles are one panel in the 64-byte swizzle (TMA and the
// wgmma descriptors both say so: swizzle_row_bytes) instead of a 64-column panel half of zeros: S = Q·Kᵀ
// takes 2 k16 steps instead of 4 and P·V is m64n32 instead of m64n64. Four stages of 8 KB tiles. Its
// softmax, not its tensor work, is the longer part of a tile, so it has three consumer warpgroups (192
// query rows a block, 160 registers each: O is 16 of them; no spills) to hide the softmax's dependent
// chains behind each other, where the other head dims keep two at 240 (D = 64 has a second instance
// with three: below).
//
// D = 96 (16-bit): a 192-byte row is three 32-column panels in the 64-byte swizzle (FlashAttention-3 and
// CUTLASS take the 64-byte swizzle for 96 too: the 128-byte one needs whole 64-column panels), so Q and
// every K or V tile hold no padding (24 KB a tile) and S = Q·Kᵀ takes 6 k16 steps, P·V is m64n96: 3/4
// of the D = 128 kernel's tensor work, where D = 96 ran before (its 128-column rows half zeros in the
// last panel). H200, run 38a (forced Hopper, 32 rows of (B,H,L) x fp16/bf16 x causal): 0.87-0.96 of the
// time on the D = 128 instance ((4,16,2048,96) fp16 212.1 -> 197.6 µs); two stages (152 KB) with the
// lazy max 0.913 on the geometric mean, three stages 0.919 with it and 0.925 without.
//
// D = 160 (16-bit), the same way: a 320-byte row is five 32-column panels in the 64-byte swizzle, S = Q·Kᵀ
// takes 10 k16 steps and P·V is m64n160, 5/6 of the D = 192 kernel's tensor work, where 136..160 ran before
// (its last 64-column panel half or more zeros).
// Shared by the host (tensor maps) and the kernel: the swizzle row of a compiled head dim (128 bytes
// where the row is whole 128-byte panels, else 64: D = 32, 96 and 160).
constexpr int swizzle_row_bytes(int d, int in_bytes) { return d * in_bytes % 128 == 0 ? 128 : 64; }
//
// Consumer warpgroups (kWGs, 64 query rows each): an instance's own number, 3 at D = 32 and 2 elsewhere
// (hopper_default_wgs). D = 64 has a second instance with three (fwd_hdim64_wg3.cu: 192-row blocks, 160
// registers a consumer, no spills without pages and variants, so those two only): with the turns, two
// warpgroups' softmaxes run under each one's wgmmas instead of one. Where it runs, and the H200
// measurements behind that: sm90/plan_sm90.cu, hopper_instance.
constexpr int hopper_default_wgs(int d) { return d == 32 ? 3 : 2; }
template <int D, int kInBytes = 2, int kWGs = hopper_default_wgs(D)>
struct HopperConfig {
  static_assert((D % 64 == 0 && D >= 64 && D <= 256) || ((D == 32 || D == 96 || D == 160) && kInBytes == 2), "compiled head dims: kHopperHeadDims");
  static_assert(kInBytes == 2 || (kInBytes == 1 && D == 128), "FP8 inputs: D = 128 only");
  static_assert(kWGs == 2 || (kWGs == 3 && D <= 64 && kInBytes == 2), "three consumer warpgroups (160 registers) at D <= 64 only");
  static constexpr bool kFp8 = kInBytes == 1;
  static constexpr int kConsumerWGs = kWGs;
  static constexpr int kBlockM = 64 * kConsumerWGs;        // query rows per block
  static constexpr int kBlockN = D <= 128 ? 128 : D <= 192 ? 96 : 64;  // keys per K/V tile
  static constexpr int kStages = kFp8 || D == 32 ? 4 : D == 64 ? 3 : 2;  // K/V ring depth
  static constexpr int kThreads = 128 * (kConsumerWGs + 1);
  // setmaxnreg moves registers inside the block's launch allocation (the 64K register file over
  // kThreads, in steps of 8: 168 for 384 threads): consumers can only grow by what the producer gives
  // back, or setmaxnreg.inc waits forever (a 32-register producer beside 240-register consumers hung
  // the kernel on the H200). Two consumer warpgroups: 240 and producer 24, except with paged K/V: the
  // paged producer's page lookups spill at 24 (8-32 bytes at D = 128-256), and with the V gather of small pages
  // (gather_paged_v_tile) 38-66 bytes at 40, so there 224 and 56 (no spill in either role). At D = 64
  // the consumers run 3-6 % faster at 240 than at 232 (H100, run 63c; D = 128 within 1 %). Three (512
  // threads, 128 each at launch): 160 and producer 32 (paged 152 and 56).
  static constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
  static constexpr int consumer_regs(bool paged) { return kConsumerWGs == 3 ? (paged ? 152 : 160) : paged ? 224 : 240; }
  static constexpr int producer_regs(bool paged) {
    return (kLaunchRegs * kThreads - consumer_regs(paged) * 128 * kConsumerWGs) / 128 / 8 * 8;
  }
  static_assert(producer_regs(false) >= 24 && producer_regs(true) >= 24, "setmaxnreg takes 24 registers at least");
  static_assert(producer_regs(true) * 128 + consumer_regs(true) * 128 * kConsumerWGs <= kLaunchRegs * kThreads,
                "setmaxnreg budget exceeds the launch allocation");
  static constexpr int kRowBytes = swizzle_row_bytes(D, kInBytes);  // a panel row: 128 bytes (64 at D = 32, 96, 160)
  static constexpr int kPanelCols = kRowBytes / kInBytes;  // elements of a swizzle row
  static constexpr int kPanels = D / kPanelCols;           // swizzle panels of a Q or K row
  static constexpr int kStepsPerPanel = kRowBytes / 32;    // k16 (k32) steps of S in one panel row
  static constexpr uint32_t kQPanelBytes = kBlockM * kRowBytes;
  static constexpr uint32_t kKVPanelBytes = kBlockN * kRowBytes;
  static constexpr uint32_t kQBytes = kPanels * kQPanelBytes;
  // O (16-bit) staged for the stores, in the epilogue's rows (common/swizzle.cuh, smem_row: D = 32 stages 64)
  static constexpr uint32_t kOStageBytes = uint32_t(kBlockM) * smem_row<D>() * 2;
  static constexpr uint32_t kTileBytes = kPanels * kKVPanelBytes;  // one K or V tile
  static_assert(!kFp8 || kTileBytes == uint32_t(D) * kBlockN, "FP8: a Vᵀ tile (D rows of kBlockN bytes) is a K tile's size");
  // mbarriers: Q, 4 per stage, V tail, Q empty; then the item slot (16-byte aligned): the next work item as
  // the producer decoded it, two int4 (flash_fwd_sm90.cuh, "the item hand-off").
  static constexpr uint32_t kMbarBytes = 8 * (3 + 4 * kStages);
  static constexpr uint32_t kItemSlotOffset = (kMbarBytes + 15) / 16 * 16;
  static constexpr uint32_t kBarBytes = kItemSlotOffset + 32;
  // O staged in its own region where shared memory allows (D <= 128, FP8): the next work item's Q may
  // then land as soon as the current item's last S is computed. Otherwise O is staged in Q's region once
  // both consumer warpgroups are done with Q (D = 192, 256).
  static constexpr bool kOwnOStage =
      1024 + kQBytes + 2 * kStages * kTileBytes + kOStageBytes + kBarBytes <= 227 * 1024;
  static constexpr uint32_t kQRegionBytes = kOwnOStage || kQBytes > kOStageBytes ? kQBytes : kOStageBytes;
  static constexpr uint32_t kOStageOffset = kOwnOStage ? kQRegionBytes + 2 * kStages * kTileBytes : 0;
  static constexpr uint32_t kBarOffset = kQRegionBytes + 2 * kStages * kTileBytes + (kOwnOStage ? kOStageBytes : 0);
  static constexpr size_t kSmemBytes = 1024 /* alignment slack */ + kBarOffset + kBarBytes;
  static_assert(kBarOffset % 16 == 0, "the item slot's int4 accesses need 16-byte alignment");
  static_assert(kSmemBytes <= 227 * 1024, "more shared memory than a block of compute capability 9.0 may have");
  static constexpr int kSTiles = kBlockN / 8;              // n8 column tiles of S per thread row pair
  static constexpr int kKSteps = D * kInBytes / 32;        // k16 (k32 for FP8) steps of S = Q·Kᵀ
  static constexpr int kPVSteps = kBlockN * kInBytes / 32; // k16 (k32) steps of P·V
  static constexpr int kOAcc = D / 2;                      // O accumulator floats per thread (64 x D / 128)
  static constexpr int kBarEpilogue = 1;                   // named barrier of the consumer threads
  // The item hand-off (flash_fwd_sm90.cuh), one pair per consumer warpgroup c, each of the producer
  // warp and that warpgroup (160 threads): ITEM_FULL(c) the slot is written, ITEM_EMPTY(c) it is read.
  static constexpr int kBarItemFull = 2;                   // + c
  static constexpr int kBarItemEmpty = 2 + kConsumerWGs;   // + c
  static constexpr int kItemBarThreads = 32 + 128;
  // Tensor-core turns (flash_fwd_sm90.cuh, "turns"): consumer warpgroup c issues a step's wgmmas only
  // once warpgroup c - 1 has issued its own (TURN(c), 256 threads: c syncs, c - 1 arrives), so the
  // warpgroups take the tensor cores one after the other and one's softmax and epilogue run under the
  // others' wgmmas, where otherwise they run in step and wait together. Every 16-bit head dim: D = 192
  // and 256 since H200 runs 38b and 38c (28 rows of forced Hopper, each 4 rounds: 0.986 and 0.992 of the
  // time on the geometric mean; (2,16,4096,192) fp16 non-causal 1.035 and 1.068 slower, bf16 faster).
  static constexpr bool kTurns = !kFp8;
  // The lazy max of the online softmax (common/online_softmax.cuh, slack; FlashAttention-4's conditional
  // rescale): a row's max moves only when a tile exceeds it by more than this (log2 domain), so most
  // steps skip O's rescale (D/2 multiplies a thread) for a compare and a warp vote; P then reaches 2^8,
  // which fp16 and bf16 hold with room to spare. H100 (runs 29a, 29b; perf/dev/NOTES.md): D = 128-256
  // mostly 1-9 % faster; D = 64 within 1.3 % either way (its rescale is 32 multiplies), so 0 (off)
  // below 96, except on the three-warpgroup D = 64 instance (H200 run 37c, non-causal: 0.94-0.99x on
  // all 12 rows measured). D = 96: 0.99 on the geometric mean of 32 rows (H200, run 38a). FP8 1-7.5 % slower with the slack e4m3 leaves (0.75: 2^(0.75 + kFp8PLog2) =
  // 431 < 448).
  static constexpr float kMaxSlack = !kFp8 && (D >= 96 || (D == 64 && kWGs == 3)) ? 8.f : 0.f;
  static constexpr int kBarTurn = 2 + 2 * kConsumerWGs;    // + c
  static constexpr int kTurnBarThreads = 2 * 128;
  // The V gather of small pages (flash_fwd_sm90.cuh, gather_paged_v_tile): the producer warpgroup's warps 1-3 read
  // each item from the slot like a consumer warpgroup, between warp 0 and themselves (128 threads).
  static constexpr int kBarGatherItemFull = kBarTurn + kConsumerWGs;
  static constexpr int kBarGatherItemEmpty = kBarGatherItemFull + 1;
  static_assert(kBarGatherItemEmpty < 16, "16 named barriers");
};

// f(std::integral_constant<int, D>{}) for the compiled head dim D that runs head_dim (1..256).
template <class F>
decltype(auto) with_hopper_head_dim(int head_dim, F&& f) {
  switch (hopper_head_dim(head_dim)) {
    case 32: return f(std::integral_constant<int, 32>{});
    case 64: return f(std::integral_constant<int, 64>{});
    case 96: return f(std::integral_constant<int, 96>{});
    case 128: return f(std::integral_constant<int, 128>{});
    case 160: return f(std::integral_constant<int, 160>{});
    case 192: return f(std::integral_constant<int, 192>{});
    default: return f(std::integral_constant<int, 256>{});
  }
}
// The compiled instances: a head dim with its default warpgroups, and D = 64 with three.
constexpr bool hopper_instance_built(int dim, int wgs) { return wgs == hopper_default_wgs(dim) || (dim == 64 && wgs == 3); }
// f(D, W) (integral constants) for the instance of compiled head dim `dim` with `wgs` consumer warpgroups
// (0, or one not built: the head dim's default).
template <class F>
decltype(auto) with_hopper_instance(int dim, int wgs, F&& f) {
  if (hopper_head_dim(dim) == 64 && wgs == 3) return f(std::integral_constant<int, 64>{}, std::integral_constant<int, 3>{});
  return with_hopper_head_dim(dim, [&](auto d) {
    return f(d, std::integral_constant<int, hopper_default_wgs(decltype(d)::value)>{});
  });
}
// FP8 inputs: every head dim up to 128 runs on the D = 128 instance (TMA zero-fills the padding).
constexpr int kHopperFp8HeadDim = 128;
using HopperFp8Config = HopperConfig<kHopperFp8HeadDim, 1>;
// Query rows per block, keys per K/V tile and dynamic shared memory of one launch, for the plan and
// the tensor maps (fp8: the FP8 instance's).
// wgs: the instance's consumer warpgroups (0: the head dim's default).
inline int sm90_block_m(int head_dim, bool fp8 = false, int wgs = 0) {
  if (fp8) return HopperFp8Config::kBlockM;
  return with_hopper_instance(head_dim, wgs, [](auto d, auto w) { return HopperConfig<decltype(d)::value, 2, decltype(w)::value>::kBlockM; });
}
inline int sm90_block_n(int head_dim, bool fp8 = false) {
  if (fp8) return HopperFp8Config::kBlockN;
  return with_hopper_head_dim(head_dim, [](auto d) { return HopperConfig<decltype(d)::value>::kBlockN; });
}
// Paged K/V: rows of one TMA box, the largest power of two dividing both the page size (a multiple
// of 16) and the tile's keys, so that every box of a tile lies inside one page. Device code computes
// the same (both use paged_box_rows).
__host__ __device__ constexpr int paged_box_rows(int page_size, int block_n) {
  const int low = page_size & -page_size, low_n = block_n & -block_n;  // largest powers of two dividing them
  return low < low_n ? low : low_n;
}
// Pages of fewer rows than this have their V tiles gathered by the producer warpgroup's warps 1-3 (cp.async;
// flash_fwd_sm90.cuh, gather_paged_v_tile) beside K in TMA boxes; larger ones load both in TMA boxes of
// paged_box_rows rows. H200, run 44d (decode_dev prefill-pages, causal fp16, the README's five paged-prefill
// shapes, us, boxes -> V gathered; contiguous in brackets): pages of 16: (4,32,8,512,4096,128) 361 -> 254 [213],
// (1,32,8,2048,16384,128) 1321 -> 1051 [919], (8,32,8,256,2048,128) 198 -> 147 [116], (2,16,16,1024,8192,64)
// 286 -> 188 [171], (4,16,4,512,4096,256) 311 -> 270 [201]; pages of 32 1.03-1.17x slower gathered (D = 64 1.03x),
// pages of 64 and 256 1.16-1.43x.
constexpr int kHopperGatherPageRows = 32;
inline int sm90_paged_box_rows(int head_dim, int page_size) { return paged_box_rows(page_size, sm90_block_n(head_dim)); }
// Bytes of a swizzle row (TMA box width and swizzle mode; 128, or 64 on the D = 32, 96 and 160 instances).
inline int sm90_row_bytes(int head_dim, bool fp8 = false) {
  if (fp8) return HopperFp8Config::kRowBytes;
  return with_hopper_head_dim(head_dim, [](auto d) { return HopperConfig<decltype(d)::value>::kRowBytes; });
}
inline size_t sm90_smem_bytes(int head_dim, bool fp8 = false, int wgs = 0) {
  if (fp8) return HopperFp8Config::kSmemBytes;
  return with_hopper_instance(head_dim, wgs, [](auto d, auto w) { return HopperConfig<decltype(d)::value, 2, decltype(w)::value>::kSmemBytes; });
}

// The kernel's TMA tensor maps of Q, K, V: dims (head_dim, seqlen, heads, batch), boxes of one swizzle
// row (64 columns; 32 at D = 32) x kBlockM (Q) or kBlockN (K, V) rows. Encoded by sm90/tensor_maps.cpp, kept in FlashFwdPlan.
// FP8: v is the map of the transposed copy Vᵀ (dims (keys padded to kFp8KeyPad, head_dim, heads_kv, batch),
// boxes of kBlockN keys x 128 rows), encoded at run time (its workspace is allocated per call).
// o: O's map for TMA stores (KernelArgs::o_tma; D = 64 instances, O not packed), boxes of 64 columns x
// kOStoreRows rows (one consumer warp's rows), in the 128-byte swizzle its staging rows already have.
struct HopperMaps {
  CUtensorMap q, k, v, o;
};
constexpr int kOStoreRows = 16;
// FP8: Vᵀ's key count is padded to a multiple of this (the P permutation works in groups of 32 keys).
constexpr int kFp8KeyPad = 32;

}  // namespace flashcore::cuda::detail
