// The Hopper kernel's plan (host code): which instance runs a problem (head dim, consumer warpgroups),
// its own limits and TMA descriptors, its persistent schedule (tickets, pair groups, the tail split),
// and FP8 inputs. The choice between kernels is plan.cu's (flash_fwd_plan); the kernel is flash_fwd_sm90.cuh.
#include <algorithm>
#include <cstdint>
#include <string>

#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/common/tail_split.cuh"
#include "backends/cuda/common/variant_mask.cuh"
#include "backends/cuda/kernels.h"
#include "backends/cuda/plan_internal.h"
#include "backends/cuda/sm90/config.h"

namespace flashcore::cuda {

namespace {

// Which Hopper instance runs p (sm90/config.h): the compiled head dim next up from head_dim, with its
// consumer warpgroups. Two exceptions by shape, both about 192-row blocks (three warpgroups), and one by
// the rows' alignment:
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
// - D = 136..160: the D = 160 instance (64-byte rows of 32 columns) where every row of Q, K and V starts on a
//   32-byte boundary (pointers and element strides multiples of 32 bytes: head dims 144 and 160 in packed
//   layouts), else the D = 192 instance. A 64-byte box row that starts 16 bytes past a boundary touches
//   three 32-byte sectors for two; the 192 instance's 128-byte ones five for four. H100, run 64b
//   (cuda-flash, two rounds, min of medians, µs, 160 instance against 192): (4,16,2048,160) 278 against
//   309, (2,16,4096,160) 497-517 against 551-565, (8,16,1024,160) 155-162 against 177-181, (4,16,2048,144)
//   181-290 against 182-309 (0.92-0.99x); (4,16,2048,136) (272-byte rows) 263-456 against 218-357 (1.20-1.29x
//   slower: so 136 and 152 stay on 192).
bool rows_32_byte_aligned(const FlashFwdParams& p) {
  for (const void* ptr : {p.q, p.k, p.v})
    if (reinterpret_cast<uintptr_t>(ptr) % 32 != 0) return false;
  for (long long s : {p.q_batch_stride, p.q_seq_stride, p.q_head_stride, p.k_batch_stride, p.k_seq_stride,
                      p.k_head_stride, p.v_batch_stride, p.v_seq_stride, p.v_head_stride})
    if (s % 16 != 0) return false;  // 16-bit elements
  return true;
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

// The D = 64 instance's consumer warpgroups a launch override asks for (0: the plan's choice).
int hopper_wgs_forced(const FlashFwdParams& p) { return p.launch_override != nullptr ? p.launch_override->hopper_wgs : 0; }

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
  } else if (d == 64 && p.block_table == nullptr && !detail::has_variants(p)) {  // the three-warpgroup instance is built
    const int forced = hopper_wgs_forced(p);
    if (forced == 3 || (forced == 0 && fill && (!p.causal || p.seqlen_q >= kHopperWg3MinCausalRows) &&
                        padded(kRows3) * 8 <= padded(kRows2) * 9))
      return {64, 3};
  } else if (d == 160 && !rows_32_byte_aligned(p)) {
    return {192, detail::hopper_default_wgs(192)};
  }
  return {d, detail::hopper_default_wgs(d)};
}

// O by TMA stores where the instance can (the kernel's kOTma: D = 64, 16-bit), but not on the
// three-warpgroup instance without causal masking. H100, run 48g (hopper_dev ostores: both in one binary,
// four rounds alternating, medians, fp16 / bf16): causal 2-4 % faster ((16,16,512,64) 44.5 -> 43.2 /
// 44.7 -> 42.9 µs, (8,16,2048,64) 190.7 -> 186.9 / 186.0 -> 181.9), the one-item-a-block rows
// ((1,8,512,64), (1,8,1024,64)) 1 %; non-causal on three warpgroups -1.9 to +2.0 %, the long rows
// +0.7-1.1 % slower ((2,16,4096,64), (8,16,2048,64): their twelve warps' stores leave together).
bool hopper_o_tma_wanted(const FlashFwdParams& p, const HopperInstance& in) {
  if (in.dim != 64 || p.fp8) return false;
  const int o_stores = p.launch_override != nullptr ? p.launch_override->o_stores : 0;
  return o_stores == 2 || (o_stores == 0 && (p.causal || in.wgs != 3));
}

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

namespace detail {

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
  if (const int forced = hopper_wgs_forced(p); forced != 0 && (in.dim != 64 || in.wgs != forced))
    return "launch_override.hopper_wgs = " + std::to_string(forced) + ": this problem runs on the Hopper kernel's D = " +
           std::to_string(in.dim) + " instance with " + std::to_string(in.wgs) +
           " consumer warpgroups (2 or 3 only at D = 64 in 16 bits, 3 without pages and variants)";
  const size_t need = detail::sm90_smem_bytes(in.dim, p.fp8, in.wgs);
  if (need > dev.smem_optin_per_block)
    return "the Hopper kernel needs " + std::to_string(need) + " bytes of shared memory per block, device allows " +
           std::to_string(dev.smem_optin_per_block);
  plan->hopper_dim = in.dim;
  plan->hopper_wgs = in.wgs;
  plan->o_tma = false;
  plan->map_inputs[0] = p.q, plan->map_inputs[1] = p.k, plan->map_inputs[2] = p.fp8 ? nullptr : p.v;
  plan->map_inputs[3] = p.o;
  return detail::sm90_tensor_maps(p, plan->tensor_maps, in.dim, in.wgs,
                                  hopper_o_tma_wanted(p, in) ? &plan->o_tma : nullptr);
}

// The Hopper kernel's launch shape on the instance hopper_limits chose (FP8: its own instance), and its
// persistent schedule.
void plan_hopper(const FlashFwdParams& p, const DeviceLimits& dev, FlashFwdPlan* out) {
  out->kernel = FlashKernel::Hopper;
  out->block_m = sm90_block_m(out->hopper_dim, p.fp8, out->hopper_wgs);
  out->key_split_warps = 1;
  out->smem = sm90_smem_bytes(out->hopper_dim, p.fp8, out->hopper_wgs);
  out->n_mblocks = (p.seqlen_q + out->block_m - 1) / out->block_m;
  hopper_schedule(p, dev, out);
}

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
  plan_hopper(p, dev, out);
  out->fp8_keys_pad = (p.seqlen_k + detail::kFp8KeyPad - 1) / detail::kFp8KeyPad * detail::kFp8KeyPad;
  out->fp8_vt_bytes = (size_t)p.batch * p.heads_kv * p.head_dim * out->fp8_keys_pad;
  return {};
}

}  // namespace detail

}  // namespace flashcore::cuda
