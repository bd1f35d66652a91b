// The launch plan of the tuned kernels: every kernel limit checked once, the kernel and launch shape
// chosen once (flash_fwd_plan), then launched without further checks (run.cu, flash_fwd_run). Here: the
// limits every kernel shares, the mma.sync kernels' launch table and launch shape, and the choice between
// the kernel families; the Hopper kernel's plan is sm90/plan_sm90.cu, the decode kernel's
// decode/plan_decode.cu. Host code only; the kernels are in sm80/, sm90/ and decode/ (seam: kernels.h).
#include "backends/cuda/flash_fwd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "backends/cuda/common/mask.cuh"
#include "backends/cuda/common/sequences.cuh"
#include "backends/cuda/common/variant_mask.cuh"
#include "backends/cuda/decode/config.cuh"
#include "backends/cuda/kernels.h"
#include "backends/cuda/launch_scratch.h"
#include "backends/cuda/limits.h"
#include "backends/cuda/plan_internal.h"
#include "backends/cuda/sm80/config.cuh"
#include "core/internal.hpp"

namespace flashcore::cuda {

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
    {64, 1ll << 13, 32, 2, 2, true, FlashVariant::WarpSpecialized, true},   // (1,8,1024,64) H100: Hopper 14.8 us, WS 17.1 (run 62c); WS 14.4 with the producer's KVTileCopy (run 59a: stages 3 14.4, 4 23.2; AW bm64 g2 17.2)
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
// (sm90/config.h, hopper_head_dim: 80 -> 96, 112 -> 128, 144 -> 160, 176 -> 192), padded with zeros by TMA.
// Numbers: perf/results/2026-11-25_h100_headdims-hopper.md (and _h200_).

size_t smem_bytes(int head_dim, int block_m, int key_split_warps, int stages) {
  return detail::with_native_head_dim(head_dim, [&](auto d) {
    return TileConfig<decltype(d)::value>::smem_bytes(block_m, key_split_warps, stages);
  });
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
  auto smem_at = [&](int stages) { return smem_bytes(p.head_dim, plan->block_m, plan->key_split_warps, stages); };
  auto smem = [&] { return smem_at(plan->stages); };
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
  // Residency: the launch table's rings were measured on Hopper, whose SM (228 KB) holds as many blocks as
  // the registers allow. A 100 KB SM (sm_86/89) often holds one: the D = 64 wide kernel at 3 stages (64 KB),
  // four warps an SM where it is built for eight (two blocks, __launch_bounds__). So where the SM's shared
  // memory holds fewer blocks than 255-register threads would (register_cap_blocks_per_sm), take the
  // deepest shallower ring (no shallower than the kernel needs) that holds more: e.g. an L4 runs D = 64's
  // wide rows at 2 stages (48 KB, two blocks). An H100 (228 KB) keeps the table's rings on every suite shape.
  // On an H100 whose SM's shared memory is cut to an L4's 100 KB (run 62c, d64-ab, a driver carveout): the D = 64
  // wide rows at 3 stages (one block) 1.18-1.37x the time of 2 stages (two blocks), which match full residency
  // (0.99-1.00x). At two blocks an SM the depths 2, 3 and 4 are within 1.3 % (run 61a). A launch override's
  // stages stay as asked.
  if (!(ov && ov->stages)) {
    const int want = detail::register_cap_blocks_per_sm(plan->threads);
    const int min_stages = wide ? detail::wide_min_stages(native_d) : 2;
    auto blocks = [&](int stages) { return detail::smem_blocks_per_sm(dev, smem_at(stages)); };
    int stages = plan->stages;
    while (stages > min_stages && blocks(stages) < want) --stages;
    if (blocks(stages) > blocks(plan->stages)) {
      plan->stages = stages;
      plan->smem = smem();
    }
  }
  if (plan->max_splits > 1) {
    const size_t rows = (size_t)p.batch * p.heads_q * p.seqlen_q;
    plan->split_lse_offset = detail::scratch_align_up(rows * plan->max_splits * native_d * sizeof(float));  // D-float rows
    plan->split_partial_bytes = plan->split_lse_offset + detail::scratch_align_up(rows * plan->max_splits * sizeof(float));
    plan->split_counter_bytes = detail::scratch_align_up((size_t)p.batch * p.heads_q * plan->n_mblocks * sizeof(int));
  }
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
    if (ov->work_fit < -1 || ov->work_fit > 1) return "launch_override.work_fit not in [-1, 1]";
    if (ov->combine < 0 || ov->combine > 1) return "launch_override.combine not in [0, 1]";
    if (ov->split_cluster < -1 || ov->split_cluster > 0)
      return "launch_override.split_cluster not in [-1, 0]: " + std::to_string(ov->split_cluster);
    if (ov->paged_copies < 0 || ov->paged_copies > 2) return "launch_override.paged_copies not in [0, 2]";
    if (ov->o_stores < 0 || ov->o_stores > 2) return "launch_override.o_stores not in [0, 2]";
    if (ov->hopper_wgs != 0 && ov->hopper_wgs != 2 && ov->hopper_wgs != 3)
      return "launch_override.hopper_wgs not in {0, 2, 3}: " + std::to_string(ov->hopper_wgs);
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
         (item_tickets ? " tickets" : "") + (paged_gather ? " paged_gather" : "") + (o_tma ? " o_tma" : "") +
         (tail_items > 0 ? " tail=" + std::to_string(tail_items) + "x" + std::to_string(tail_splits) : "");
  else if (work_slots > 0)
    s += " balanced slots=" + std::to_string(work_slots) +
         " waves=" + (work_waves ? std::to_string(work_waves) : std::string("1-2")) + " blocks=" + std::to_string(work_blocks) +
         (work_fit ? std::string(" fit=") + (work_fit > 0 ? "always" : "never") : std::string());
  else
    s += " splits=" + std::to_string(max_splits) + (split_combine ? " combine" : "") + (split_cluster ? " cluster" : "");
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
    why = detail::plan_fp8(p, dev, variant, &out);
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
  const std::string decode_why = detail::decode_limits(p, dev);  // "" when the decode kernel can run p (seqlen_q <= 64 included)
  const bool short_sequences = detail::has_sequences(p) && variant == FlashVariant::Auto && decode_why.empty();
  std::string paged_hopper_why;  // why the Hopper kernel does not take Auto's paged prefill
  const bool paged_on_hopper =
      paged && variant == FlashVariant::Auto && !decode_why.empty() && (paged_hopper_why = detail::hopper_limits(p, dev, &out, variant)).empty();
  if (!paged_on_hopper && (variant == FlashVariant::Decode || (paged && variant != FlashVariant::Hopper) || short_sequences)) {
    if (!decode_why.empty())
      return paged && variant == FlashVariant::Auto
                 ? "paged K/V runs on the decode kernel (seqlen_q <= " + std::to_string(detail::kMaxDecodeSeqlenQ) +
                       ") or the Hopper kernel (paged prefill; else the reference runs it): " + decode_why + "; " +
                       paged_hopper_why
                 : decode_why;
    detail::plan_decode(p, dev, detail::decode_row_any(p), &out);
    if (plan != nullptr) *plan = out;
    return {};
  }
  if (variant == FlashVariant::Auto && p.launch_override == nullptr) {
    const detail::DecodeLaunchRow* drow = detail::decode_row(p);
    if (drow != nullptr && decode_why.empty()) {
      detail::plan_decode(p, dev, *drow, &out);
      if (plan != nullptr) *plan = out;
      return {};
    }
  }
  if (variant == FlashVariant::Hopper) {
    why = detail::hopper_limits(p, dev, &out, variant);
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
                       detail::hopper_limits(p, dev, &out, variant).empty());
  if (hopper) {
    detail::plan_hopper(p, dev, &out);
  } else {
    plan_sm80(p, dev, *row, variant, &out);
  }
  if (plan != nullptr) *plan = out;
  return {};
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
