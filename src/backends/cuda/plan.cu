// The launch plan of the tuned kernels: the launch table, every kernel limit checked once, the kernel
// and launch shape chosen once (flash_fwd_plan), then launched without further checks (flash_fwd_run).
// Host code only; the kernels are in sm80/ and sm90/ (seam: kernels.h).
#include "backends/cuda/flash_fwd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "backends/cuda/common/mask.cuh"
#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/common/tail_split.cuh"
#include "backends/cuda/common/variant_mask.cuh"
#include "backends/cuda/decode/config.cuh"
#include "backends/cuda/kernels.h"
#include "backends/cuda/launch_scratch.h"
#include "backends/cuda/limits.h"
#include "backends/cuda/sm80/config.cuh"
#include "backends/cuda/sm90/config.h"
#include "core/internal.hpp"

namespace flashcore::cuda {

namespace detail {
cudaError_t raise_smem_limit(const void* kernel, int device, size_t bytes) {
  static std::mutex m;
  static std::map<std::pair<const void*, int>, size_t> raised;
  std::lock_guard<std::mutex> lock(m);
  size_t& cur = raised[{kernel, device}];
  if (bytes > cur) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e != cudaSuccess) return e;
    cur = bytes;
  }
  return cudaSuccess;
}

bool dependent_launch_loads(const void* kernel, int device) {
#if CUDART_VERSION >= 12030
  static const bool driver_ok = [] {
    int v = 0;
    return cudaDriverGetVersion(&v) == cudaSuccess && v >= 12030;  // no device work: nothing to clear
  }();
  if (!driver_ok) return false;
  static std::mutex m;
  static std::map<std::pair<const void*, int>, bool> known;
  std::lock_guard<std::mutex> lock(m);
  const auto it = known.find({kernel, device});
  if (it != known.end()) return it->second;
  cudaFuncAttributes fa{};
  const cudaError_t e = cudaFuncGetAttributes(&fa, kernel);
  if (e != cudaSuccess) cudaGetLastError();  // its own error only (an ordinary launch follows)
  const bool ok = e == cudaSuccess && fa.ptxVersion >= 90;
  known[{kernel, device}] = ok;
  return ok;
#else
  (void)kernel, (void)device;
  return false;
#endif
}

#ifndef FLASHCORE_HAVE_HOPPER_KERNELS  // the Hopper kernel is not in this build: nothing to load or launch
bool sm90_kernel_loads(int) { return false; }
cudaError_t launch_sm90(const FlashFwdPlan&, const KernelArgs&, cudaStream_t) { return cudaErrorInvalidDeviceFunction; }
#endif
}  // namespace detail

namespace {

using detail::kBlockN;
using detail::kMaxSplits;
using detail::TileConfig;

// ------------------------------------------------------------------------------------------------
// Launch table: the one place launch configuration lives. Keyed by head dim and problem size
// (rows = batch · heads_q · seqlen_q). First matching row wins. Measurements: perf/dev/NOTES.md.
// ------------------------------------------------------------------------------------------------
struct LaunchRow {
  int head_dim;
  long long max_rows;    // row applies if rows <= max_rows
  int block_m;           // query rows per block: 16 per row warp (R = block_m / 16)
  int key_split_warps;   // G: compute warps per row warp, each on every G-th key tile (R x G warps)
  int stages;            // K/V ring depth (reduced if the device's shared memory is short)
  bool split_kv;         // split the key range across blocks when the grid would not fill half the GPU
  FlashVariant variant;  // what Auto runs (AllWarps rows become Hopper where that kernel is available)
  bool hopper;           // Auto runs the Hopper kernel (TMA + wgmma) on compute capability 9.0 when it
                         // is available and accepts the layout, else the row's mma.sync kernel (v8)
};
constexpr long long kAnyRows = 1ll << 62;
constexpr LaunchRow kLaunchTable[] = {
    // D   rows <=     block_m  G  stages split  Auto                            Hopper
    {32, 1ll << 12, 64, 1, 3, true, FlashVariant::AllWarps, false},   // small problems: not measured (as D=64's main job)
    {32, 1ll << 14, 64, 1, 3, true, FlashVariant::AllWarps, true},    // (1,8,2048,32) H100: Hopper 24.0-24.4 us, this row's 16-row kernel 38.1-38.6 (run 62k)
    {32, kAnyRows, 128, 1, 3, true, FlashVariant::AllWarps, true},    // the wide kernel runs 4 stages (its two-tile steps: the plan raises it, wide_min_stages). H100, persistent Hopper-64 (run 63i, one call) vs this row's wide kernel: (4,16,2048,32) 161 vs 179 us, causal 97 vs 120; (2,16,4096,32) 306-314 vs 345-349; (4,16,1024,32) 47.1-49.3 vs 47.5-50.5 (62k, before the persistent grid: wide ahead at 1024). Hopper-32 (3 warpgroups; hopper_instance) since run 26b: (4,16,2048,32) 140.0, (2,16,4096,32) 254.0
    {64, 1ll << 12, 32, 4, 2, true, FlashVariant::AllWarps, false},         // (1,8,512,64): 8.9 us, H200
    {64, 1ll << 13, 32, 2, 2, true, FlashVariant::WarpSpecialized, true},   // (1,8,1024,64) H100: Hopper 14.8 us, WS 17.1 (run 62c)
    {64, 1ll << 14, 64, 1, 3, true, FlashVariant::WarpSpecialized, true},   // (1,8,2048,64): Hopper 24.3 us (62c), WS 43.4
    {64, kAnyRows, 128, 1, 3, true, FlashVariant::AllWarps, true},    // Hopper (4,16,1024,64) 55.0 us (62c); wide 64.1 us
    {96, 1ll << 14, 64, 2, 2, true, FlashVariant::AllWarps, true},    // small problems: not measured (as D=128)
    {96, kAnyRows, 128, 1, 2, true, FlashVariant::AllWarps, true},    // (4,16,2048,96) H100: Hopper-128 260 us, wide 370 (80: 259 / 371); H200 run 38a, forced Hopper: on its own D = 96 instance 197.6 us (fp16), on the D = 128 one 212.1
    {128, 1ll << 14, 64, 2, 2, true, FlashVariant::AllWarps, true},    // (1,8,2048,128): Hopper 33.4 us, 89.0
    {128, kAnyRows, 128, 1, 2, true, FlashVariant::AllWarps, true},   // Hopper (2,16,4096,128) 528 TF/s; wide 318
    {192, kAnyRows, 128, 1, 2, true, FlashVariant::AllWarps, true},   // (4,16,2048,192) H100: Hopper 398 us (96-key tiles; 64: 433), 8 warps 944
    {256, kAnyRows, 128, 1, 2, true, FlashVariant::AllWarps, true},   // (4,16,2048,256) H100: Hopper 541 us, 8 warps 1018 (bm64 1435)
};
// Keyed by the native head dim a problem runs on (sm80/config.cuh: native_head_dim; 80 -> 96 and so on).
// AllWarps with block_m 128, one KV group and no split-KV runs the wide-warp kernel (4 warps x 32 query
// rows, sm80/flash_fwd_wide.cuh) where it is built (D <= 128); every other mma.sync configuration runs
// the 16-row kernel. A Hopper row runs on the Hopper kernel compiled for the head dim or the next one
// (sm90/config.h, hopper_head_dim: 80 -> 96, 112 -> 128, 160 -> 192), padded with zeros by TMA.
// Numbers: perf/results/2026-11-25_h100_headdims-hopper.md (and _h200_).

size_t smem_bytes(int head_dim, int block_m, int key_split_warps, int stages) {
  return detail::with_native_head_dim(head_dim, [&](auto d) {
    return TileConfig<decltype(d)::value>::smem_bytes(block_m, key_split_warps, stages);
  });
}


// Which Hopper instance runs p (sm90/config.h): the compiled head dim next up from head_dim, with its
// consumer warpgroups. Two exceptions by shape, both about 192-row blocks (three warpgroups):
// - D = 32 (Auto only): its 192-row blocks leave SMs idle on problems of fewer items than SMs, where the
//   D = 64 instance's 128-row blocks (columns 32..63 zero-filled) make more items. Forced
//   (cuda-flash-hopper) runs the D = 32 instance whatever the size. H100, run 26b, µs: (1,8,2048,32), 88
//   items of 192 rows: 27.1 on the D = 32 instance, 24.6 on D = 64; (4,16,1024,32), 384 items: 43.3
//   against 50.4, causal 34.1 against 35.4; (4,16,2048,32) 140.0 against 165.3.
// - D = 64 (Auto and forced: the same kernel, its tile shape): the three-warpgroup instance where it has
//   at least as many items as SMs, non-causal or causal from 2048 query rows, without pages or variants
//   (not built there), and where rounding the queries up to 192 rows adds at most 1/8 to rounding them
//   to 128 (512 and 1024 queries add 1/8 and measured 0.98-1.00x; 128, 256 or 640 would add 1/5 to 1/2,
//   not measured). H200, run 37a, forced Hopper, µs two -> three warpgroups (before its lazy max):
//   non-causal (8,16,2048,64) 334 -> 294, (1,16,16384,64) 2593 -> 2332, (2,16,4096,64) 318 -> 304,
//   (4,16,2048,64) 170.5 -> 163.9, (4,16,1024,64) 51.1 -> 50.2, (16,16,512,64) 58.9 -> 58.6; causal
//   (1,16,16384,64) 1321 -> 1195, (2,16,4096,64) 183 -> 177; (1,8,2048,64) (88 items of 192 rows) 24.5
//   -> 30.2 (not taken). Causal below 4096 with the lazy max (run 37e, cuda-flash, µs): 2048 rows
//   (4,16,2048,64) 100.1 -> 96.7, (8,16,2048,64) 198.5 -> 185.3, (4,32,2048,64) 0.93-0.94x, (2,16,3000,64)
//   0.90x; 1024 rows (4,16,1024,64) 36.4 -> 39.7, (8,16,1024,64) 1.11x and (16,16,512,64) 1.11-1.12x
//   slower (not taken: the diagonal is a larger share of a 192-row item, and 192 does not divide them).
constexpr int kHopperWg3MinCausalRows = 2048;
}  // namespace

HopperInstance hopper_instance(const FlashFwdParams& p, const DeviceLimits& dev, FlashVariant variant) {
  if (p.fp8) return {detail::kHopperFp8HeadDim, detail::HopperFp8Config::kConsumerWGs};
  const int d = detail::hopper_head_dim(p.head_dim);
  constexpr int kRows3 = detail::HopperConfig<64, 2, 3>::kBlockM, kRows2 = detail::HopperConfig<64>::kBlockM;
  static_assert(detail::HopperConfig<32>::kBlockM == kRows3, "D = 32 has three warpgroups too");
  auto padded = [&](int rows) { return (long long)(p.seqlen_q + rows - 1) / rows * rows; };  // queries rounded up
  const bool fill = (long long)p.batch * p.heads_q * (padded(kRows3) / kRows3) >= dev.sm_count;  // 192-row items fill the SMs
  if (d == 32) {
    if (variant == FlashVariant::Auto && !fill) return {64, detail::hopper_default_wgs(64)};
  } else if (d == 64 && fill && p.block_table == nullptr && !detail::has_variants(p) &&
             (!p.causal || p.seqlen_q >= kHopperWg3MinCausalRows) && padded(kRows3) * 8 <= padded(kRows2) * 9) {
    return {64, 3};
  }
  return {d, detail::hopper_default_wgs(d)};
}

namespace {

// The Hopper kernel's own conditions; on success the instance is plan->hopper_dim and plan->hopper_wgs
// (hopper_instance) and its TMA descriptors are in plan->tensor_maps.
std::string hopper_limits(const FlashFwdParams& p, const DeviceLimits& dev, FlashFwdPlan* plan, FlashVariant variant) {
  if (p.head_dim % 8 != 0 || detail::hopper_head_dim(p.head_dim) == 0)
    return "the Hopper kernel needs head_dim a multiple of 8 up to 256, not " + std::to_string(p.head_dim);
  if (dev.cc_major != 9 || dev.cc_minor != 0)
    return "the Hopper kernel needs compute capability 9.0 (wgmma, sm_90a); device has " + std::to_string(dev.cc_major) +
           "." + std::to_string(dev.cc_minor);
  if (!dev.hopper_kernel_loads)
#ifdef FLASHCORE_HAVE_HOPPER_KERNELS
    return "the Hopper kernel's sm_90a image does not load on this device";
#else
    return "the Hopper kernel was not built (sm_90 is not among the CUDA architectures of this build)";
#endif
  const HopperInstance in = hopper_instance(p, dev, variant);
  const size_t need = detail::sm90_smem_bytes(in.dim, p.fp8, in.wgs);
  if (need > dev.smem_optin_per_block)
    return "the Hopper kernel needs " + std::to_string(need) + " bytes of shared memory per block, device allows " +
           std::to_string(dev.smem_optin_per_block);
  plan->hopper_dim = in.dim;
  plan->hopper_wgs = in.wgs;
  return detail::sm90_tensor_maps(p, plan->tensor_maps, in.dim, in.wgs);
}

// The Hopper kernel's persistent schedule (common/work_list.h): one block per SM, or one per item when
// there are fewer; with more items than blocks, the blocks draw them from a ticket counter (flash_fwd_run).
// Causal items differ in cost (the last query block sees every key), so they go heaviest first across
// groups of (batch, head) pairs: as few groups as keep a group's K/V within kHopperL2Budget (half the
// 50 MB L2 of an H100 or H200), of equal size. A model of the dynamic schedule (perf/dev/schedule_model.py:
// blocks take the next item when free) puts the last block's finish within 1-5 % of the mean on the
// suite's causal shapes, where pair by pair (the non-persistent grid's order) is up to 27 % off and
// unequal groups up to 12 %. Other items go pair by pair: the blocks at work share few pairs' K/V.
//
// The tail split (common/tail_split.cuh): where the items are equal (fixed-length, non-causal, no variants
// or pages, 16-bit) and the last round is at most half full (r = items mod blocks <= blocks / 2), the last
// r items run as k = min(blocks / r, key tiles, kMaxSplits) >= 2 pieces each. H200, run 38c, forced Hopper,
// (4,H,2048,64) fp16 on the three-warpgroup instance (11 items of 192 rows a head): H = 12 (4.0 rounds)
// 109.2 µs, 16 (5.33) 159.7, 17 (5.67) 160.0, 20 (6.67) 185.3, 33 (11.0) 298.4: 26.8 µs a round, rounded up.
constexpr double kHopperL2Budget = 25.0 * (1 << 20);
// Key tiles a block runs (rounds x tiles an item), at most, for a captured launch of equal items to take the
// static order (hopper_schedule). H200, run 43f, graph-timed, static order / tickets: (4,16,1024,64) 24 tiles
// 0.963, (16,16,512,64) 24: 0.977, (8,16,1024,128) 64: 0.928 (run 43e: 0.986); (2,16,4096,128) 256: 1.064
// (run 43e: 1.001; with tickets in both builds it varied 414-466 us from round to round in run 43g).
constexpr long long kHopperStaticCapturedTiles = 64;
}  // namespace

void hopper_schedule(const FlashFwdParams& p, const DeviceLimits& dev, FlashFwdPlan* out) {
  // Paged K/V: the V tiles of small pages gathered by the producer warpgroup (sm90/config.h, kHopperGatherPageRows),
  // or as forced.
  const int copies = p.launch_override != nullptr ? p.launch_override->paged_copies : 0;
  out->paged_gather = detail::paged_kv(p) && (copies == 2 || (copies == 0 && p.page_size < detail::kHopperGatherPageRows));
  const long long pairs = (long long)p.batch * p.heads_q, items = pairs * out->n_mblocks;
  out->work_blocks = (int)std::min<long long>(items, std::max(1, dev.sm_count));
  out->item_tickets = items > out->work_blocks;
  const bool equal_items = !p.causal && !p.fp8 && !detail::has_variants(p) && !detail::has_sequences(p);
  out->pair_groups = (int)pairs;
  out->tail_items = 0, out->tail_splits = 1, out->tail_tiles = out->tail_extra = 0;
  out->split_counter_bytes = out->split_partial_bytes = out->split_lse_offset = 0;
  const long long rem = out->work_blocks > 0 ? items % out->work_blocks : 0;
  const int key_tiles = (p.seqlen_k + detail::sm90_block_n(out->hopper_dim) - 1) / detail::sm90_block_n(out->hopper_dim);
  // Items of one cost (fixed-length, non-causal, no variants, 16-bit) in few key tiles a block: a captured
  // launch takes them in the static order (flash_fwd_run), without the tickets' memset node (1.6-1.9 us).
  // Over more tiles the node is a smaller share than the tickets' balance may be worth: on an H200 (run 43f,
  // graph-timed) (2,16,4096,128) (8 rounds of 32 tiles) ran 421-436 us with tickets, 448-452 in the static order.
  const long long rounds = out->work_blocks > 0 ? (items + out->work_blocks - 1) / out->work_blocks : 0;
  out->static_when_captured = out->item_tickets && equal_items && rounds * key_tiles <= kHopperStaticCapturedTiles;  // (not with a tail split: below)
  if (out->item_tickets && rem > 0 && 2 * rem <= out->work_blocks && equal_items) {
    const int k = (int)std::min<long long>({(long long)detail::kMaxSplits, out->work_blocks / rem, (long long)key_tiles});
    if (k >= 2) {
      out->tail_items = (int)rem, out->tail_splits = k;
      out->static_when_captured = false;  // the pieces' merge needs its counters
      out->tail_tiles = key_tiles / k, out->tail_extra = key_tiles % k;
      out->split_counter_bytes = detail::tail_counter_bytes(out->tail_items, out->block_m);
      out->split_lse_offset = detail::tail_o_bytes(out->tail_items, k, out->block_m, out->hopper_dim);
      out->split_partial_bytes = out->split_lse_offset + detail::tail_lse_bytes(out->tail_items, k, out->block_m);
    }
  }
  if (p.causal) {
    const double kv_per_pair = 2.0 * p.seqlen_k * p.head_dim * (p.fp8 ? 1 : 2) / (p.heads_q / p.heads_kv);
    const long long per_group = std::max<long long>(1, std::min<long long>(pairs, (long long)(kHopperL2Budget / kv_per_pair)));
    out->pair_groups = (int)((pairs + per_group - 1) / per_group);
  }
}

namespace {

// FP8 (e4m3) inputs: the Hopper kernel's FP8 instance (D = 128; smaller head dims zero-padded by TMA),
// fixed-length layouts without variants for now (the reference runs the rest). Its plan adds the
// transposed V's workspace (sm90/fp8.cuh).
std::string plan_fp8(const FlashFwdParams& p, const DeviceLimits& dev, FlashVariant variant, FlashFwdPlan* out) {
  if (variant != FlashVariant::Auto && variant != FlashVariant::Hopper)
    return "fp8_e4m3 inputs run on the Hopper kernel only (cuda-flash or cuda-flash-hopper, compute capability 9.0)";
  if (p.head_dim > detail::kHopperFp8HeadDim)
    return "fp8_e4m3 inputs: the Hopper kernel takes head_dim up to " + std::to_string(detail::kHopperFp8HeadDim) +
           ", not " + std::to_string(p.head_dim) + " (the reference runs it)";
  if (detail::has_variants(p))
    return "fp8_e4m3 inputs: the Hopper kernel has no attention variants (window, softcap, ALiBi, sinks) yet (the "
           "reference runs them)";
  if (detail::has_sequences(p))
    return "fp8_e4m3 inputs: the Hopper kernel takes fixed-length batches only, no varlen, cache lengths or pages yet "
           "(the reference runs them)";
  std::string why = hopper_limits(p, dev, out, variant);
  if (!why.empty()) return why;
  out->kernel = FlashKernel::Hopper;
  out->block_m = detail::sm90_block_m(p.head_dim, true);
  out->key_split_warps = 1;
  out->smem = detail::sm90_smem_bytes(p.head_dim, true);
  out->n_mblocks = (p.seqlen_q + out->block_m - 1) / out->block_m;
  out->fp8_keys_pad = (p.seqlen_k + detail::kFp8KeyPad - 1) / detail::kFp8KeyPad * detail::kFp8KeyPad;
  out->fp8_vt_bytes = (size_t)p.batch * p.heads_kv * p.head_dim * out->fp8_keys_pad;
  hopper_schedule(p, dev, out);
  return {};
}

// The mma.sync launch shape of a table row (or the override), fitted to the device, and split-KV.
void plan_sm80(const FlashFwdParams& p, const DeviceLimits& dev, const LaunchRow& row, FlashVariant variant,
               FlashFwdPlan* plan) {
  plan->block_m = row.block_m;
  plan->key_split_warps = row.key_split_warps;
  plan->stages = row.stages;
  bool split = row.split_kv;
  const FlashFwdLaunchOverride* ov = p.launch_override;
  if (ov && ov->block_m) plan->block_m = ov->block_m;
  if (ov && ov->key_split_warps) plan->key_split_warps = ov->key_split_warps;
  if (ov && ov->stages) plan->stages = std::min(ov->stages, detail::kMaxStages);
  if (ov && ov->kv_tiles_per_split < 0) split = false;
  const FlashVariant v = variant == FlashVariant::Auto ? row.variant : variant;
  // The variants run on the 16-row all-warps kernel only (sm80_kernel_built); with sinks, no split-KV
  // (the sink joins the denominator once, and the split merge does not add it).
  const bool variants = detail::has_variants(p);
  const bool ws = v == FlashVariant::WarpSpecialized && !variants;
  if (p.sinks != nullptr) split = false;
  const int native_d = detail::native_head_dim(p.head_dim);
  if (!detail::sm80_splits_keys(native_d)) {  // one KV group, no split-KV (TileConfig::kSplitsKeys)
    plan->key_split_warps = 1;
    split = false;
  }
  // Warps: at most 8 compute warps; warp-specialized at most 4 (+1 producer, register cap, BlockShape).
  const int max_warps = ws ? detail::BlockShape<64, true>::kMaxComputeWarps : detail::BlockShape<64, false>::kMaxComputeWarps;
  auto warps = [&] { return plan->block_m / detail::kWarpRows * plan->key_split_warps; };
  while (warps() > max_warps) {
    if (plan->key_split_warps > 1) plan->key_split_warps /= 2; else plan->block_m /= 2;
  }
  // Fit the device's shared memory: fewer stages first, then fewer KV groups, then fewer rows.
  auto smem = [&] { return smem_bytes(p.head_dim, plan->block_m, plan->key_split_warps, plan->stages); };
  while (plan->stages > 2 && smem() > dev.smem_optin_per_block) --plan->stages;
  while (plan->key_split_warps > 1 && smem() > dev.smem_optin_per_block) plan->key_split_warps /= 2;
  while (plan->block_m > 16 && smem() > dev.smem_optin_per_block) plan->block_m /= 2;
  plan->smem = smem();
  plan->n_mblocks = (p.seqlen_q + plan->block_m - 1) / plan->block_m;

  // Split-KV across blocks (pieces merged by the last block; costs two L2 round trips and a fence):
  // only when the un-split grid fills less than half the GPU. Piece size = total tile work / SMs.
  // Tiles of a query block: [first_tile, tiles) of the problem's mask policy (as the kernel counts).
  const detail::CausalMask causal_mask(p);
  const detail::VariantMask variant_mask(p);
  auto block_tiles = [&](int mb) {
    const int r0 = mb * plan->block_m, r1 = r0 + plan->block_m;
    return variants ? std::max(0, variant_mask.tiles(r1, kBlockN) - variant_mask.first_tile(r0, kBlockN))
                    : causal_mask.tiles(r1, kBlockN);
  };
  const long long base_blocks = (long long)plan->n_mblocks * p.heads_q * p.batch;
  int max_tiles = 0;
  long long work = 0;
  for (int mb = 0; mb < plan->n_mblocks; ++mb) {
    const int t = block_tiles(mb);
    max_tiles = std::max(max_tiles, t);
    work += t;
  }
  work *= (long long)p.heads_q * p.batch;
  int tps = 1 << 30;
  if (ov && ov->kv_tiles_per_split > 0 && detail::sm80_splits_keys(native_d)) {
    tps = ov->kv_tiles_per_split;
  } else if (split && 2 * base_blocks <= dev.sm_count && max_tiles > 1) {
    tps = (int)std::max<long long>(plan->key_split_warps, (work + dev.sm_count - 1) / dev.sm_count);
  }
  if (max_tiles > 0 && tps < max_tiles) {
    tps = std::max(tps, (max_tiles + kMaxSplits - 1) / kMaxSplits);
    plan->tiles_per_split = tps;
    plan->max_splits = (max_tiles + tps - 1) / tps;
    if (plan->max_splits <= 1) plan->tiles_per_split = 1 << 30, plan->max_splits = 1;
  }
  bool wide = v == FlashVariant::AllWarps && plan->key_split_warps == 1 && plan->block_m == detail::kWideBlockM &&
              plan->max_splits == 1 && detail::sm80_kernel_built(FlashKernel::Wide, native_d, variants);
  // The wide kernel's steps of two tiles (D = 32: sm80/config.cuh, kWideTilesPerStep) need a ring of two
  // steps; where that does not fit the device's shared memory, the 16-row kernel runs the row.
  if (wide && plan->stages < detail::wide_min_stages(native_d)) {
    const int row_stages = plan->stages;
    plan->stages = detail::wide_min_stages(native_d);
    if (smem() > dev.smem_optin_per_block) plan->stages = row_stages, wide = false;
    plan->smem = smem();
  }
  plan->kernel = wide ? FlashKernel::Wide : ws ? FlashKernel::Rows16WarpSpecialized : FlashKernel::Rows16;
  plan->threads = wide ? 32 * detail::kWideWarps
                       : 32 * ((plan->block_m / detail::kWarpRows) * plan->key_split_warps + (ws ? 1 : 0));
  if (plan->max_splits > 1) {
    const size_t rows = (size_t)p.batch * p.heads_q * p.seqlen_q;
    plan->split_lse_offset = detail::scratch_align_up(rows * plan->max_splits * native_d * sizeof(float));  // D-float rows
    plan->split_partial_bytes = plan->split_lse_offset + detail::scratch_align_up(rows * plan->max_splits * sizeof(float));
    plan->split_counter_bytes = detail::scratch_align_up((size_t)p.batch * p.heads_q * plan->n_mblocks * sizeof(int));
  }
}

// ------------------------------------------------------------------------------------------------
// The decode kernel (decode/): GQA-packed rows, split-KV over the keys, every sequence layout.
// ------------------------------------------------------------------------------------------------
using detail::DecodeConfig;

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

// The decode kernel's own conditions: "" or why not.
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

// Launch shape of the decode kernel: rows per block, ring depth, key splits and their workspace.
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
  // memory allow (an SM has the opt-in per-block size plus 1 KB, and every block reserves 1 KB).
  const int per_sm = std::max<int>(1, std::min<long long>({(long long)kDecodeWaveBlocksPerSm,
                                                           (long long)decode_blocks_per_sm_regs(p.head_dim),
                                                           (long long)((dev.smem_optin_per_block + 1024) / (plan->smem + 1024))}));
  const long long slots = (long long)per_sm * dev.sm_count;
  const long long base = (long long)p.batch * p.heads_kv * plan->n_mblocks;
  const int tiles = (p.seqlen_k + detail::kDecodeBlockN - 1) / detail::kDecodeBlockN;
  long long splits = std::max<long long>(1, slots / base);
  if (detail::decode_head_dim(p.head_dim) >= 128 && per_sm > 1 && base <= dev.sm_count) {
    const long long one = dev.sm_count / base;  // pieces a (b, hk, row block) with one block per SM
    if ((double)(one * base) / dev.sm_count >= kDecodeOneBlockFill * (double)(splits * base) / slots) splits = one;
  }
  // Sequence arrays take the balanced schedule (below), except with a forced split count or more than
  // kDecodeBalanceMaxBatch sequences. (Its block counts are scanned as 32-bit halves: base · 64 splits below
  // 2^31.) Sequences of equal lengths (no length arrays: contiguous, or paged K/V alone) take the fixed grid, the
  // same pieces without the schedule's scans in every block: on an H200 paged (8,32,8,1,8192,128) had its
  // first tile 6.6 us after a block started with the schedule, 5.4 without (contiguous 4.0), and the paged
  // decode rows ran 2.8-3.5 % faster (perf/dev/NOTES.md, fortieth session).
  const bool balanced = detail::has_sequence_lengths(p) && !(ov && (ov->splits || ov->combine)) &&
                        p.batch <= kDecodeBalanceMaxBatch &&
                        base * detail::kMaxDecodeSplits < (1ll << 31);
  // The fixed grid may cut a (b, kv head, row block) into more than the kMaxDecodeSplits pieces the kernel
  // merges itself: the combine kernel merges them (decode/combine.cuh), so that one or two (b, kv head) pairs
  // fill the SMs. The balanced schedule keeps 64.
  const int cap = balanced ? detail::kMaxDecodeSplits : detail::kMaxDecodeCombineSplits;
  splits = std::min<long long>({splits, std::max(1, tiles / kDecodeMinTilesPerSplit), (long long)cap});
  if (ov && ov->splits) splits = std::min(ov->splits, std::max(1, tiles));
  plan->max_splits = (int)splits;
  plan->tiles_per_split = 1 << 30;
  plan->work_slots = plan->work_waves = plan->work_blocks = 0;
  size_t ws_rows = (size_t)base / plan->n_mblocks * plan->max_splits * rows;  // fixed grid: (b, hk, split, row)
  if (balanced) {
    // Balanced schedule: at most waves · work_slots + base work items (decode/schedule.cuh); workspace
    // rows by block index.
    plan->work_slots = (int)slots;
    plan->work_waves = ov && ov->work_waves ? ov->work_waves : 0;
    plan->work_blocks = (int)(slots * std::max(2, plan->work_waves) + base);
    plan->max_splits = std::min(detail::kMaxDecodeSplits, std::max(1, tiles));  // the most one sequence can get
    ws_rows = (size_t)plan->work_blocks * plan->block_m;
  }
  plan->split_combine = plan->max_splits > 1 && (plan->max_splits > detail::kMaxDecodeSplits || (ov && ov->combine));
  plan->dependent_launch = dev.cc_major >= 9;
  // A captured call of up to 16 packed rows a (b, kv head) merges its pieces by the combine kernel (flash_fwd_run):
  // measured there (Lq 1-4), 0.8-3.7 us faster; with more rows the combine kernel's blocks (one a row) outnumber
  // the work, not measured: those keep the tickets.
  plan->combine_when_captured = plan->max_splits > 1 && !plan->split_combine && !balanced &&
                                rows <= kDecodeCapturedCombineRows;
  if (plan->max_splits > 1) {
    const int d = detail::decode_head_dim(p.head_dim);
    plan->split_lse_offset = detail::scratch_align_up(ws_rows * d * sizeof(float));
    plan->split_partial_bytes = plan->split_lse_offset + detail::scratch_align_up(ws_rows * sizeof(float));
    // Tickets only where the last block merges: a captured call zeroes them in a memset node of its own
    // (launch_scratch.h), 1.6-1.9 us a call on an H200 (perf/dev/graph_nodes_dev.cu).
    if (!plan->split_combine) plan->split_counter_bytes = detail::scratch_align_up((size_t)base * sizeof(int));
  }
}

// The decode table's row for p, or nullptr when Auto keeps it on the other kernels.
const DecodeLaunchRow* decode_row(const FlashFwdParams& p) {
  const int d = detail::decode_head_dim(p.head_dim);
  const int group = p.heads_q / p.heads_kv;
  const long long rows = (long long)group * p.seqlen_q;
  if (p.seqlen_q > detail::kMaxDecodeSeqlenQ) return nullptr;
  for (const DecodeLaunchRow& r : kDecodeTable)
    if (r.head_dim == d && rows <= r.max_rows && group >= r.min_group && p.seqlen_k >= r.min_seqlen_k) return &r;
  return nullptr;
}
// The row a problem that must run on the decode kernel uses (forced, or sequence arrays): its head dim's.
const DecodeLaunchRow& decode_row_any(const FlashFwdParams& p) {
  const int d = detail::decode_head_dim(p.head_dim);
  for (const DecodeLaunchRow& r : kDecodeTable)
    if (r.head_dim == d) return r;
  return kDecodeTable[0];
}

}  // namespace

std::string detail::pointer_limits(std::initializer_list<NamedPointer> pointers) {
  for (const NamedPointer& x : pointers) {
    if (x.ptr == nullptr) return std::string(x.name) + " pointer is null";
    if ((reinterpret_cast<uintptr_t>(x.ptr) & 15u) != 0) return std::string(x.name) + " pointer is not 16-byte aligned";
  }
  return {};
}

std::string detail::stride_limits(std::initializer_list<NamedStride> strides) {
  for (const NamedStride& s : strides)
    if (s.value % 8 != 0) return std::string(s.name) + " " + std::to_string(s.value) + " is not a multiple of 8 elements";
  return {};
}

// limits.h: the limits every tuned kernel shares, the backward kernels too.
std::string detail::common_limits(const FlashFwdParams& p, const DeviceLimits& dev) {
  if (dev.cc_major < 8)
    return "compute capability " + std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor) +
           " < 8.0 (needs mma.sync bf16, cp.async)";
  if (p.head_dim < 8 || p.head_dim > 256 || p.head_dim % 8 != 0)
    return "head_dim " + std::to_string(p.head_dim) + " is not a multiple of 8 in [8, 256] (16-byte rows)";
  if (p.batch < 1 || p.batch > 65535) return "batch " + std::to_string(p.batch) + " not in [1, 65535]";
  if (p.heads_q < 1 || p.heads_q > 65535) return "heads_q " + std::to_string(p.heads_q) + " not in [1, 65535]";
  if (p.heads_kv < 1 || p.heads_q % p.heads_kv != 0)
    return "heads_kv " + std::to_string(p.heads_kv) + " does not divide heads_q " + std::to_string(p.heads_q);
  if (p.seqlen_q < 1) return "seqlen_q " + std::to_string(p.seqlen_q) + " < 1";
  if (p.seqlen_k < 1) return "seqlen_k " + std::to_string(p.seqlen_k) + " < 1";
  if (!(p.scale > 0.f) || !std::isfinite(p.scale)) return "scale must be finite and > 0";
  if (p.window_left < -1 || p.window_right < -1) return "window sides must be -1 (unbounded) or >= 0";
  if (p.causal && p.window_right > 0) return "window_right must be -1 or 0 with causal";
  if (!(p.softcap >= 0.f) || !std::isfinite(p.softcap)) return "softcap must be finite and >= 0";
  std::string why = detail::pointer_limits({{p.q, "q"}, {p.k, "k"}, {p.v, "v"}, {p.o, "o"}});
  if (!why.empty()) return why;
  why = detail::stride_limits(
      {{p.q_batch_stride, "q_batch_stride"}, {p.q_seq_stride, "q_seq_stride"}, {p.q_head_stride, "q_head_stride"},
       {p.k_batch_stride, "k_batch_stride"}, {p.k_seq_stride, "k_seq_stride"}, {p.k_head_stride, "k_head_stride"},
       {p.v_batch_stride, "v_batch_stride"}, {p.v_seq_stride, "v_seq_stride"}, {p.v_head_stride, "v_head_stride"},
       {p.o_batch_stride, "o_batch_stride"}, {p.o_seq_stride, "o_seq_stride"}, {p.o_head_stride, "o_head_stride"}});
  if (!why.empty()) return why;
  if (const FlashFwdLaunchOverride* ov = p.launch_override) {
    if (ov->block_m && (ov->block_m % 16 || ov->block_m < 16 || ov->block_m > 128))
      return "launch_override.block_m not in {16,32,...,128}";
    if (ov->stages && (ov->stages < 2 || ov->stages > detail::kMaxDecodeStages))
      return "launch_override.stages not in [2, 8]";
    if (ov->splits < 0 || ov->splits > detail::kMaxDecodeCombineSplits) return "launch_override.splits not in [0, 256]";
    if (ov->work_waves < 0 || ov->work_waves > 8) return "launch_override.work_waves not in [0, 8]";
    if (ov->combine < 0 || ov->combine > 1) return "launch_override.combine not in [0, 1]";
    if (ov->paged_copies < 0 || ov->paged_copies > 2) return "launch_override.paged_copies not in [0, 2]";
    if (ov->key_split_warps && (ov->key_split_warps < 1 || ov->key_split_warps > 8))
      return "launch_override.key_split_warps not in [1, 8]";
  }
  const size_t need = smem_bytes(p.head_dim, 16, 1, 2);  // the smallest mma.sync configuration
  if (need > dev.smem_optin_per_block)
    return "needs " + std::to_string(need) + " bytes of shared memory per block, device allows " +
           std::to_string(dev.smem_optin_per_block);
  return {};
}

const char* to_string(FlashKernel kernel) {
  switch (kernel) {
    case FlashKernel::Rows16: return "sm80-rows16";
    case FlashKernel::Rows16WarpSpecialized: return "sm80-rows16-warpspec";
    case FlashKernel::Wide: return "sm80-wide";
    case FlashKernel::Hopper: return "sm90-tma-wgmma";
    case FlashKernel::Decode: return "decode-splitkv";
  }
  return "invalid";
}

std::string FlashFwdPlan::describe() const {
  std::string s = std::string(to_string(kernel)) + " block_m=" + std::to_string(block_m);
  if (kernel == FlashKernel::Rows16 || kernel == FlashKernel::Rows16WarpSpecialized || kernel == FlashKernel::Decode)
    s += " key_split_warps=" + std::to_string(key_split_warps);
  if (kernel != FlashKernel::Hopper) s += " stages=" + std::to_string(stages);
  if (fp8_vt_bytes > 0) s += " fp8_e4m3 vt_bytes=" + std::to_string(fp8_vt_bytes);
  if (kernel == FlashKernel::Hopper)
    s += " instance=D" + std::to_string(hopper_dim) + "x" + std::to_string(hopper_wgs) + "wg" +
         " persistent blocks=" + std::to_string(work_blocks) + " pair_groups=" + std::to_string(pair_groups) +
         (item_tickets ? " tickets" : "") + (paged_gather ? " paged_gather" : "") +
         (tail_items > 0 ? " tail=" + std::to_string(tail_items) + "x" + std::to_string(tail_splits) : "");
  else if (work_slots > 0)
    s += " balanced slots=" + std::to_string(work_slots) +
         " waves=" + (work_waves ? std::to_string(work_waves) : std::string("1-2")) + " blocks=" + std::to_string(work_blocks);
  else
    s += " splits=" + std::to_string(max_splits) + (split_combine ? " combine" : "");
  return s;
}

bool device_limits(DeviceLimits* out, std::string* why) {
  DeviceInfo info;  // the library's one device cache (src/platform/cuda_runtime.cpp)
  if (!flashcore::detail::current_cuda_device(&info, why)) return false;
  DeviceLimits d;
  d.index = info.index;
  d.name = info.name;
  d.cc_major = info.cc_major;
  d.cc_minor = info.cc_minor;
  d.sm_count = info.sm_count;
  d.smem_optin_per_block = info.smem_optin_per_block;
  d.hopper_kernel_loads = d.cc_major == 9 && d.cc_minor == 0 && detail::sm90_kernel_loads(d.index);
  *out = d;
  return true;
}

std::string flash_fwd_plan(const FlashFwdParams& p, const DeviceLimits& dev, FlashVariant variant,
                           FlashFwdPlan* plan) {
  FlashFwdPlan out;
  out.device = dev.index;
  std::string why = detail::common_limits(p, dev);
  if (!why.empty()) return why;
  if (p.fp8) {
    why = plan_fp8(p, dev, variant, &out);
    if (why.empty() && plan != nullptr) *plan = out;
    return why;
  }
  // The decode kernel: forced, Auto's choice for paged K/V and the other sequence layouts up to
  // kMaxDecodeSeqlenQ queries, or for few query rows against many keys (kDecodeTable). Paged K/V
  // with more queries (paged prefill) runs on the Hopper kernel (its producer loads a tile page by
  // page); longer varlen/cache-length problems (prefill) run on the kernels below.
  const bool paged = detail::paged_kv(p);
  if (paged && variant != FlashVariant::Auto && variant != FlashVariant::Decode && variant != FlashVariant::Hopper)
    return "paged K/V (block_table) is read by the decode kernel (seqlen_q <= " +
           std::to_string(detail::kMaxDecodeSeqlenQ) + ") and the Hopper kernel only; cuda-flash runs it there";
  const std::string decode_why = decode_limits(p, dev);  // "" when the decode kernel can run p (seqlen_q <= 64 included)
  const bool short_sequences = detail::has_sequences(p) && variant == FlashVariant::Auto && decode_why.empty();
  std::string paged_hopper_why;  // why the Hopper kernel does not take Auto's paged prefill
  const bool paged_on_hopper =
      paged && variant == FlashVariant::Auto && !decode_why.empty() && (paged_hopper_why = hopper_limits(p, dev, &out, variant)).empty();
  if (!paged_on_hopper && (variant == FlashVariant::Decode || (paged && variant != FlashVariant::Hopper) || short_sequences)) {
    if (!decode_why.empty())
      return paged && variant == FlashVariant::Auto
                 ? "paged K/V runs on the decode kernel (seqlen_q <= " + std::to_string(detail::kMaxDecodeSeqlenQ) +
                       ") or the Hopper kernel (paged prefill; else the reference runs it): " + decode_why + "; " +
                       paged_hopper_why
                 : decode_why;
    plan_decode(p, dev, decode_row_any(p), &out);
    if (plan != nullptr) *plan = out;
    return {};
  }
  if (variant == FlashVariant::Auto && p.launch_override == nullptr) {
    const DecodeLaunchRow* drow = decode_row(p);
    if (drow != nullptr && decode_why.empty()) {
      plan_decode(p, dev, *drow, &out);
      if (plan != nullptr) *plan = out;
      return {};
    }
  }
  if (variant == FlashVariant::Hopper) {
    why = hopper_limits(p, dev, &out, variant);
    if (!why.empty()) return why;
  }
  const int native_d = detail::native_head_dim(p.head_dim);
  if (variant == FlashVariant::WarpSpecialized && !detail::sm80_kernel_built(FlashKernel::Rows16WarpSpecialized, native_d))
    return "the warp-specialized kernel is built for head_dim <= " + std::to_string(detail::kMaxRegisterHeadDim) +
           ", not " + std::to_string(p.head_dim);
  if (variant == FlashVariant::WarpSpecialized && detail::has_variants(p))
    return "the warp-specialized kernel is not built with the attention variants (window, softcap, ALiBi, sinks); "
           "cuda-flash runs them on the 16-row kernel";
  const long long rows = (long long)p.batch * p.heads_q * p.seqlen_q;
  const LaunchRow* row = nullptr;
  for (const LaunchRow& r : kLaunchTable)
    if (r.head_dim == native_d && rows <= r.max_rows) { row = &r; break; }
  // Auto takes the Hopper kernel where the table says so and the kernel accepts the problem.
  const bool hopper = variant == FlashVariant::Hopper || paged_on_hopper ||
                      (variant == FlashVariant::Auto && row->hopper && p.launch_override == nullptr &&
                       hopper_limits(p, dev, &out, variant).empty());
  if (hopper) {
    out.kernel = FlashKernel::Hopper;
    out.block_m = detail::sm90_block_m(out.hopper_dim, false, out.hopper_wgs);
    out.key_split_warps = 1;
    out.smem = detail::sm90_smem_bytes(out.hopper_dim, false, out.hopper_wgs);
    out.n_mblocks = (p.seqlen_q + out.block_m - 1) / out.block_m;
    hopper_schedule(p, dev, &out);
  } else {
    plan_sm80(p, dev, *row, variant, &out);
  }
  if (plan != nullptr) *plan = out;
  return {};
}

cudaError_t flash_fwd_run(const FlashFwdParams& p, const FlashFwdPlan& plan, cudaStream_t stream) {
  detail::KernelArgs args{};
  args.p = p;
  args.p.launch_override = nullptr;
  args.scale_log2 = p.scale * (p.fp8 ? p.descale_q * p.descale_k : 1.f) * 1.4426950408889634f;
  args.q_heads_per_kv = p.heads_q / p.heads_kv;
  args.block_m = plan.block_m;
  args.key_split_warps = plan.key_split_warps;
  args.n_mblocks = plan.n_mblocks;
  args.stages = plan.stages;
  args.tiles_per_split = plan.tiles_per_split;
  args.max_splits = plan.max_splits;
  args.split_combine = plan.split_combine ? 1 : 0;
  args.work_slots = plan.work_slots;
  args.work_waves = plan.work_waves;
  args.pair_groups = plan.pair_groups;
  args.tail_items = plan.tail_items;
  args.tail_splits = plan.tail_splits;
  const int n_items = p.batch * p.heads_q * plan.n_mblocks;  // the Hopper kernel's work items
  args.tail_first = n_items - args.tail_items;
  args.work_total = args.tail_first + args.tail_items * plan.tail_splits;
  args.tail_tiles = plan.tail_tiles;
  args.paged_gather = plan.kernel == FlashKernel::Hopper && plan.paged_gather ? 1 : 0;
  args.tail_extra = plan.tail_extra;
  auto launch = [&](const FlashFwdPlan& pl) {
    switch (pl.kernel) {
      case FlashKernel::Hopper: return detail::launch_sm90(pl, args, stream);
      case FlashKernel::Decode: return detail::launch_decode(pl, args, stream);
      default: return detail::launch_sm80(pl, args, stream);
    }
  };
  // Tickets and split-KV partials (launch_scratch.h): the stream's buffer for an eager launch, a buffer
  // of its own for a captured one, so graphs captured on one stream may be replayed at once. The Hopper
  // kernel's tickets are 2 ints (a captured graph's three extra nodes cost 2.4-3.4 µs a replay on an
  // H100, run 63m; the memset node 1.6-1.9 µs of it on an H200, run 43a), followed by the tail split's
  // counters and partials where the plan has one.
  const bool hopper = plan.kernel == FlashKernel::Hopper;
  if (hopper ? !plan.item_tickets : plan.max_splits <= 1) return launch(plan);
  const bool captured = (plan.combine_when_captured || plan.static_when_captured) && detail::stream_capturing(stream);
  // A captured decode split on the fixed grid (of few rows: plan.combine_when_captured) is merged by the
  // combine kernel, which needs no tickets, so the graph gets no memset node (1.6-1.9 us a replay on an H200;
  // the second kernel 0.3-0.5 us; run 43a, perf/dev/NOTES.md, forty-third session). Its merge is the last
  // block's, operation for operation (decode/combine.cuh): a captured call gives the eager call's bits.
  size_t counter_bytes = plan.split_counter_bytes;
  if (plan.combine_when_captured && captured) args.split_combine = 1, counter_bytes = 0;
  const bool tail = hopper && plan.tail_items > 0;
  // A captured Hopper launch of equal items in few tiles a block, without a tail split, takes them in the
  // static order (plan.static_when_captured; no tickets, so no allocation, memset and free nodes; the same
  // items computed the same way, the same bits): H200, graph-timed, (4,16,1024,64) 49.2 -> 47.3 us,
  // (16,16,512,64) 57.7 -> 56.3 (run 43f). Causal items keep the tickets: in the static order (4,16,2048,64)
  // ran 104 -> 116 us, (8,16,1024,128) 94 -> 102 (run 43e).
  if (hopper && !tail && plan.static_when_captured && captured) return launch(plan);
  detail::LaunchScratch scratch;
  const cudaError_t had = detail::acquire_launch_scratch(
      plan.device, stream, hopper && !tail ? 2 * sizeof(int) : counter_bytes, hopper && !tail ? 0 : plan.split_partial_bytes, &scratch);
  if (had != cudaSuccess) return had;  // the stream's earlier error: nothing launched
  if (!scratch.have()) {
    args.tail_items = 0, args.tail_first = args.work_total = n_items;  // no scratch: no tail split either
    if (hopper) return launch(plan);  // no tickets: the static order
    FlashFwdPlan unsplit = plan;      // no partials: un-split
    unsplit.max_splits = args.max_splits = 1;
    unsplit.split_combine = false, args.split_combine = 0;
    unsplit.work_slots = args.work_slots = 0;
    unsplit.tiles_per_split = args.tiles_per_split = 1 << 30;
    return launch(unsplit);
  }
  args.counters = scratch.counters;
  if (!hopper || tail) {
    args.part_o = reinterpret_cast<float*>(scratch.partial);
    args.part_lse = reinterpret_cast<float*>(scratch.partial + plan.split_lse_offset);
  }
  const cudaError_t e = launch(plan);
  const cudaError_t f = detail::release_launch_scratch(scratch, stream);
  return e != cudaSuccess ? e : f;
}

cudaError_t flash_fwd(const FlashFwdParams& p, cudaStream_t stream, FlashVariant variant) {
  DeviceLimits dev;
  if (!device_limits(&dev, nullptr)) return cudaErrorInvalidDevice;
  FlashFwdPlan plan;
  if (!flash_fwd_plan(p, dev, variant, &plan).empty()) return cudaErrorInvalidValue;
  return flash_fwd_run(p, plan, stream);
}

std::string flash_fwd_unsupported_reason(const FlashFwdParams& p, int cc_major, int cc_minor,
                                         size_t smem_optin_per_block, FlashVariant variant) {
  DeviceLimits dev;
  dev.cc_major = cc_major;
  dev.cc_minor = cc_minor;
  dev.smem_optin_per_block = smem_optin_per_block;
  if (variant == FlashVariant::Hopper && cc_major == 9 && cc_minor == 0) {
    int device = 0;
    dev.hopper_kernel_loads = cudaGetDevice(&device) == cudaSuccess && detail::sm90_kernel_loads(device);
    if (!dev.hopper_kernel_loads) cudaGetLastError();
  }
  return flash_fwd_plan(p, dev, variant, nullptr);
}

}  // namespace flashcore::cuda
