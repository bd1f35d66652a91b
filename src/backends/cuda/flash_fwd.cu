// FlashCore forward attention: launcher, launch table, support checks. Kernel: flash_fwd_kernel.cuh.
#include "flash_fwd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "flash_fwd_hopper.h"
#include "flash_fwd_kernel.cuh"

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
}  // namespace detail

namespace {

using detail::kBlockN;
using detail::KernelArgs;
using detail::TileConfig;

// ------------------------------------------------------------------------------------------------
// Launch table: the one place launch configuration lives. Keyed by head dim and problem size
// (rows = batch · heads_q · seqlen_q). First matching row wins. Measurements: perf/dev/NOTES.md.
// ------------------------------------------------------------------------------------------------
struct LaunchRow {
  int head_dim;
  long long max_rows;  // row applies if rows <= max_rows
  int block_m;         // query rows per block: 16 per row warp (R = block_m / 16)
  int key_split_warps;       // G: compute warps per row warp, each on every G-th key tile (R x G warps)
  int stages;          // K/V ring depth (reduced if the device's shared memory is short)
  bool split_kv;       // split the key range across blocks when the grid would not fill half the GPU
  FlashVariant variant;  // what Auto runs (AllWarps rows become Hopper where that kernel is available)
  bool hopper;           // Auto runs the Hopper kernel (TMA + wgmma) on compute capability 9.0 when it
                         // is available and accepts the layout, else the row's mma.sync kernel (v8)
};
constexpr long long kAnyRows = 1ll << 62;
constexpr LaunchRow kLaunchTable[] = {
    // D   rows <=     block_m  G  stages split  Auto                            Hopper
    {64, 1ll << 12, 32, 4, 2, true, FlashVariant::AllWarps, false},         // (1,8,512,64): 8.9 us, H200
    {64, 1ll << 13, 32, 2, 2, true, FlashVariant::WarpSpecialized, false},  // (1,8,1024,64): 16.5 us (AW 26.5)
    {64, 1ll << 14, 64, 1, 3, true, FlashVariant::WarpSpecialized, true},   // (1,8,2048,64): Hopper 28.3 us, WS 43.4
    {64, kAnyRows, 128, 1, 3, true, FlashVariant::AllWarps, true},    // Hopper (4,16,1024,64) 59.0 us; wide 64.1 us
    {128, 1ll << 14, 64, 2, 2, true, FlashVariant::AllWarps, true},    // (1,8,2048,128): Hopper 33.4 us, 89.0
    {128, kAnyRows, 128, 1, 2, true, FlashVariant::AllWarps, true},   // Hopper (2,16,4096,128) 528 TF/s; wide 318
};
// AllWarps with block_m 128, one KV group and no split-KV runs the wide-warp kernel (4 warps x 32 query
// rows, flash_fwd_wide_kernel); every other configuration runs the 16-row kernel.
using detail::kMaxSplits;

struct LaunchPlan {
  int block_m = 64, key_split_warps = 1, stages = 2, tiles_per_split = 1 << 30, max_splits = 1, n_mblocks = 1;
  FlashVariant variant = FlashVariant::AllWarps;
  bool wide = false;  // wide-warp kernel (32 rows per warp)
  bool hopper = false;  // Hopper wgmma kernel (fixed shape, flash_fwd_hopper.cu)
  size_t smem = 0;
  int threads() const {
    if (wide) return 32 * detail::kWideWarps;
    return 32 * ((block_m / detail::kWarpRows) * key_split_warps + (variant == FlashVariant::WarpSpecialized ? 1 : 0));
  }
};

size_t smem_bytes(int head_dim, int block_m, int key_split_warps, int stages) {
  return head_dim == 64 ? TileConfig<64>::smem_bytes(block_m, key_split_warps, stages)
                        : TileConfig<128>::smem_bytes(block_m, key_split_warps, stages);
}

// Number of 64-key tiles query block `mb` must visit (causal skips tiles above the diagonal).
int tiles_of_mblock(const FlashFwdParams& p, int block_m, int mb) {
  int n_end = p.seqlen_k;
  if (p.causal) n_end = std::min<long long>(n_end, (long long)(mb + 1) * block_m + p.seqlen_k - p.seqlen_q);
  return n_end > 0 ? (n_end + kBlockN - 1) / kBlockN : 0;
}

// The Hopper kernel lives in its own translation unit, compiled for sm_90a only.
#ifdef FLASHCORE_HAVE_HOPPER_KERNELS
bool hopper_available(int device) { return detail::hopper_kernel_available(device); }
cudaError_t launch_hopper_kernel(const KernelArgs& args, int device, cudaStream_t stream) {
  return detail::launch_hopper(args, device, stream);
}
size_t hopper_smem(int head_dim) { return detail::hopper_smem_bytes(head_dim); }
int hopper_rows(int head_dim) { return detail::hopper_block_m(head_dim); }
std::string hopper_reason(const FlashFwdParams& p) { return detail::hopper_unsupported_reason(p); }
#else
std::string hopper_reason(const FlashFwdParams&) { return "the Hopper kernel was not built"; }
size_t hopper_smem(int) { return 0; }
int hopper_rows(int) { return 128; }
bool hopper_available(int) { return false; }
cudaError_t launch_hopper_kernel(const KernelArgs&, int, cudaStream_t) { return cudaErrorInvalidDeviceFunction; }
#endif

// hopper_ok(): may Auto use the Hopper kernel on this device (asked only for a table row that wants it).
template <typename HopperOk>
LaunchPlan plan_launch(const FlashFwdParams& p, int num_sms, size_t smem_optin, FlashVariant variant,
                       HopperOk hopper_ok) {
  const long long rows = (long long)p.batch * p.heads_q * p.seqlen_q;
  const LaunchRow* row = nullptr;
  for (const LaunchRow& r : kLaunchTable)
    if (r.head_dim == p.head_dim && rows <= r.max_rows) { row = &r; break; }
  LaunchPlan plan;
  if (variant == FlashVariant::Hopper || (variant == FlashVariant::Auto && row->hopper &&
                                          p.launch_override == nullptr && hopper_ok())) {
    plan.hopper = true;
    plan.variant = FlashVariant::Hopper;
    plan.block_m = hopper_rows(p.head_dim);
    plan.key_split_warps = 1;
    plan.smem = hopper_smem(p.head_dim);
    plan.n_mblocks = (p.seqlen_q + plan.block_m - 1) / plan.block_m;
    return plan;
  }
  plan.block_m = row->block_m;
  plan.key_split_warps = row->key_split_warps;
  plan.stages = row->stages;
  bool split = row->split_kv;
  const FlashFwdLaunchOverride* ov = p.launch_override;
  if (ov && ov->block_m) plan.block_m = ov->block_m;
  if (ov && ov->key_split_warps) plan.key_split_warps = ov->key_split_warps;
  if (ov && ov->stages) plan.stages = ov->stages;
  if (ov && ov->kv_tiles_per_split < 0) split = false;
  plan.variant = variant == FlashVariant::Auto ? row->variant : variant;
  // Warps: at most 8 compute warps; warp-specialized at most 4 (+1 producer, register cap, BlockShape).
  const int max_warps = plan.variant == FlashVariant::WarpSpecialized ? detail::BlockShape<64, true>::kMaxComputeWarps
                                                                       : detail::BlockShape<64, false>::kMaxComputeWarps;
  auto warps = [&] { return plan.block_m / detail::kWarpRows * plan.key_split_warps; };
  while (warps() > max_warps) {
    if (plan.key_split_warps > 1) plan.key_split_warps /= 2; else plan.block_m /= 2;
  }
  // Fit the device's shared memory: fewer stages first, then fewer KV groups, then fewer rows.
  auto smem = [&] { return smem_bytes(p.head_dim, plan.block_m, plan.key_split_warps, plan.stages); };
  while (plan.stages > 2 && smem() > smem_optin) --plan.stages;
  while (plan.key_split_warps > 1 && smem() > smem_optin) plan.key_split_warps /= 2;
  while (plan.block_m > 16 && smem() > smem_optin) plan.block_m /= 2;
  plan.smem = smem();
  plan.n_mblocks = (p.seqlen_q + plan.block_m - 1) / plan.block_m;

  // Split-KV across blocks (pieces merged by the last block; costs two L2 round trips and a fence):
  // only when the un-split grid fills less than half the GPU. Piece size = total tile work / SMs.
  const long long base_blocks = (long long)plan.n_mblocks * p.heads_q * p.batch;
  int max_tiles = 0;
  long long work = 0;
  for (int mb = 0; mb < plan.n_mblocks; ++mb) {
    const int t = tiles_of_mblock(p, plan.block_m, mb);
    max_tiles = std::max(max_tiles, t);
    work += t;
  }
  work *= (long long)p.heads_q * p.batch;
  int tps = 1 << 30;
  if (ov && ov->kv_tiles_per_split > 0) {
    tps = ov->kv_tiles_per_split;
  } else if (split && 2 * base_blocks <= num_sms && max_tiles > 1) {
    tps = (int)std::max<long long>(plan.key_split_warps, (work + num_sms - 1) / num_sms);
  }
  if (max_tiles > 0 && tps < max_tiles) {
    tps = std::max(tps, (max_tiles + kMaxSplits - 1) / kMaxSplits);
    plan.tiles_per_split = tps;
    plan.max_splits = (max_tiles + tps - 1) / tps;
    if (plan.max_splits <= 1) plan.tiles_per_split = 1 << 30, plan.max_splits = 1;
  }
  plan.wide = plan.variant == FlashVariant::AllWarps && plan.key_split_warps == 1 && plan.block_m == detail::kWideBlockM &&
              plan.max_splits == 1;
  return plan;
}

// ------------------------------------------------------------------------------------------------
// Split-KV scratch, cached per (device, stream): calls on one stream are ordered, so they can share
// it. Two buffers: the tickets (zeroed once; every launch leaves them zero) and the fp32 partials.
// ------------------------------------------------------------------------------------------------
struct Scratch { int* counters = nullptr; size_t counter_bytes = 0; char* partial = nullptr; size_t partial_bytes = 0; };
std::mutex g_scratch_mutex;
std::map<std::pair<int, cudaStream_t>, Scratch> g_scratch;

size_t align_up(size_t x) { return (x + 255) & ~size_t(255); }

// Returns false when the scratch cannot be had (e.g. while capturing a graph).
bool get_scratch(int device, cudaStream_t stream, size_t counter_bytes, size_t partial_bytes, int** counters, char** partial) {
  std::lock_guard<std::mutex> lock(g_scratch_mutex);
  Scratch& s = g_scratch[{device, stream}];
  if (s.counter_bytes < counter_bytes || s.partial_bytes < partial_bytes) {
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &cap) != cudaSuccess || cap != cudaStreamCaptureStatusNone) return false;
    if (cudaStreamSynchronize(stream) != cudaSuccess) return false;
    if (s.counter_bytes < counter_bytes) {
      if (s.counters) cudaFree(s.counters);
      s.counters = nullptr; s.counter_bytes = 0;
      void* ptr = nullptr;
      if (cudaMalloc(&ptr, counter_bytes) != cudaSuccess) { cudaGetLastError(); return false; }
      if (cudaMemset(ptr, 0, counter_bytes) != cudaSuccess) { cudaFree(ptr); return false; }
      s.counters = static_cast<int*>(ptr); s.counter_bytes = counter_bytes;
    }
    if (s.partial_bytes < partial_bytes) {
      if (s.partial) cudaFree(s.partial);
      s.partial = nullptr; s.partial_bytes = 0;
      void* ptr = nullptr;
      if (cudaMalloc(&ptr, partial_bytes) != cudaSuccess) { cudaGetLastError(); return false; }
      s.partial = static_cast<char*>(ptr); s.partial_bytes = partial_bytes;
    }
  }
  *counters = s.counters;
  *partial = s.partial;
  return true;
}

struct DeviceInfo { int cc_major = 0, cc_minor = 0, sms = 0; size_t smem_optin = 0; bool ok = false; };
DeviceInfo device_info(int device) {
  static std::mutex m;
  static std::map<int, DeviceInfo> cache;
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(device);
  if (it != cache.end()) return it->second;
  DeviceInfo d;
  int optin = 0;
  if (cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&d.cc_minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) == cudaSuccess) {
    d.smem_optin = (size_t)optin;
    d.ok = true;
    cache[device] = d;
  }
  return d;
}

// kKind: 0 AllWarps, 1 WarpSpecialized, 2 wide-warp kernel.
template <int D, typename Elem, int kKind>
cudaError_t launch(const KernelArgs& args, const LaunchPlan& plan, int device, cudaStream_t stream) {
  void (*kernel)(KernelArgs) = kKind == 2 ? detail::flash_fwd_wide_kernel<D, Elem>
                                          : detail::flash_fwd_kernel<D, Elem, kKind == 1>;
  const cudaError_t e = detail::raise_smem_limit(reinterpret_cast<const void*>(kernel), device, plan.smem);
  if (e != cudaSuccess) return e;
  dim3 grid((unsigned)(plan.n_mblocks * plan.max_splits), (unsigned)args.p.heads_q, (unsigned)args.p.batch);
  kernel<<<grid, plan.threads(), plan.smem, stream>>>(args);
  return cudaGetLastError();
}

template <int D, typename Elem>
cudaError_t launch_variant(const KernelArgs& args, const LaunchPlan& plan, int device, cudaStream_t stream) {
  if (plan.hopper) return launch_hopper_kernel(args, device, stream);
  if (plan.wide) return launch<D, Elem, 2>(args, plan, device, stream);
  return plan.variant == FlashVariant::WarpSpecialized ? launch<D, Elem, 1>(args, plan, device, stream)
                                                       : launch<D, Elem, 0>(args, plan, device, stream);
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }

}  // namespace

std::string flash_fwd_unsupported_reason(const FlashFwdParams& p, int cc_major, int cc_minor,
                                         size_t smem_optin_per_block, FlashVariant variant) {
  if (cc_major < 8)
    return "compute capability " + std::to_string(cc_major) + "." + std::to_string(cc_minor) + " < 8.0 (needs mma.sync bf16, cp.async)";
  if (p.head_dim != 64 && p.head_dim != 128) return "head_dim " + std::to_string(p.head_dim) + " not in {64, 128}";
  if (p.batch < 1 || p.batch > 65535) return "batch " + std::to_string(p.batch) + " not in [1, 65535]";
  if (p.heads_q < 1 || p.heads_q > 65535) return "heads_q " + std::to_string(p.heads_q) + " not in [1, 65535]";
  if (p.heads_kv < 1 || p.heads_q % p.heads_kv != 0)
    return "heads_kv " + std::to_string(p.heads_kv) + " does not divide heads_q " + std::to_string(p.heads_q);
  if (p.seqlen_q < 1) return "seqlen_q " + std::to_string(p.seqlen_q) + " < 1";
  if (p.seqlen_k < 1) return "seqlen_k " + std::to_string(p.seqlen_k) + " < 1";
  if (!(p.scale > 0.f) || !std::isfinite(p.scale)) return "scale must be finite and > 0";
  const struct { const void* ptr; const char* name; } ptrs[] = {{p.q, "q"}, {p.k, "k"}, {p.v, "v"}, {p.o, "o"}};
  for (const auto& x : ptrs) {
    if (x.ptr == nullptr) return std::string(x.name) + " pointer is null";
    if (!aligned16(x.ptr)) return std::string(x.name) + " pointer is not 16-byte aligned";
  }
  const struct { long long v; const char* name; } strides[] = {
      {p.q_batch_stride, "q_batch_stride"}, {p.q_seq_stride, "q_seq_stride"}, {p.q_head_stride, "q_head_stride"},
      {p.k_batch_stride, "k_batch_stride"}, {p.k_seq_stride, "k_seq_stride"}, {p.k_head_stride, "k_head_stride"},
      {p.v_batch_stride, "v_batch_stride"}, {p.v_seq_stride, "v_seq_stride"}, {p.v_head_stride, "v_head_stride"},
      {p.o_batch_stride, "o_batch_stride"}, {p.o_seq_stride, "o_seq_stride"}, {p.o_head_stride, "o_head_stride"}};
  for (const auto& s : strides)
    if (s.v % 8 != 0) return std::string(s.name) + " " + std::to_string(s.v) + " is not a multiple of 8 elements";
  const FlashFwdLaunchOverride* ov = p.launch_override;
  if (ov) {
    if (ov->block_m && (ov->block_m % 16 || ov->block_m < 16 || ov->block_m > 128)) return "launch_override.block_m not in {16,32,...,128}";
    if (ov->stages && (ov->stages < 2 || ov->stages > detail::kMaxStages)) return "launch_override.stages not in [2, 4]";
    if (ov->key_split_warps && (ov->key_split_warps < 1 || ov->key_split_warps > 8))
      return "launch_override.key_split_warps not in [1, 8]";
  }
  if (variant == FlashVariant::Hopper) {
    if (cc_major != 9 || cc_minor != 0)
      return "the Hopper kernel needs compute capability 9.0 (wgmma, sm_90a); device has " + std::to_string(cc_major) +
             "." + std::to_string(cc_minor);
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || !hopper_available(device))
#ifdef FLASHCORE_HAVE_HOPPER_KERNELS
      return "the Hopper kernel's sm_90a image does not load on this device";
#else
      return "the Hopper kernel was not built (sm_90 is not among the CUDA architectures of this build)";
#endif
    const size_t need_h = hopper_smem(p.head_dim);
    if (need_h > smem_optin_per_block)
      return "the Hopper kernel needs " + std::to_string(need_h) + " bytes of shared memory per block, device allows " +
             std::to_string(smem_optin_per_block);
    std::string why_tma = hopper_reason(p);
    if (!why_tma.empty()) return why_tma;
  }
  const size_t need = smem_bytes(p.head_dim, 16, 1, 2);
  if (need > smem_optin_per_block)
    return "needs " + std::to_string(need) + " bytes of shared memory per block, device allows " + std::to_string(smem_optin_per_block);
  return std::string();
}

cudaError_t flash_fwd(const FlashFwdParams& p, cudaStream_t stream, FlashVariant variant) {
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  const DeviceInfo dev = device_info(device);
  if (!dev.ok) return cudaErrorInvalidDevice;
  if (!flash_fwd_unsupported_reason(p, dev.cc_major, dev.cc_minor, dev.smem_optin, variant).empty())
    return cudaErrorInvalidValue;

  auto hopper_ok = [&] {
    return dev.cc_major == 9 && dev.cc_minor == 0 && hopper_available(device) && hopper_smem(p.head_dim) <= dev.smem_optin &&
           hopper_reason(p).empty();
  };
  LaunchPlan plan = plan_launch(p, dev.sms, dev.smem_optin, variant, hopper_ok);
  KernelArgs args{};
  args.p = p;
  args.p.launch_override = nullptr;
  args.scale_log2 = p.scale * 1.4426950408889634f;
  args.q_heads_per_kv = p.heads_q / p.heads_kv;
  args.block_m = plan.block_m;
  args.key_split_warps = plan.key_split_warps;
  args.n_mblocks = plan.n_mblocks;
  args.stages = plan.stages;
  args.tiles_per_split = plan.tiles_per_split;
  if (plan.max_splits > 1) {
    const size_t rows = (size_t)p.batch * p.heads_q * p.seqlen_q;
    const size_t o_bytes = align_up(rows * plan.max_splits * p.head_dim * sizeof(float));
    const size_t l_bytes = align_up(rows * plan.max_splits * sizeof(float));
    const size_t c_bytes = align_up((size_t)p.batch * p.heads_q * plan.n_mblocks * sizeof(int));
    int* counters = nullptr;
    char* partial = nullptr;
    if (get_scratch(device, stream, c_bytes, o_bytes + l_bytes, &counters, &partial)) {
      args.counters = counters;
      args.part_o = reinterpret_cast<float*>(partial);
      args.part_lse = reinterpret_cast<float*>(partial + o_bytes);
    } else {  // no scratch (graph capture): run un-split
      plan.max_splits = 1;
      plan.tiles_per_split = args.tiles_per_split = 1 << 30;
    }
  }
  if (p.head_dim == 64)
    return p.bf16 ? launch_variant<64, __nv_bfloat16>(args, plan, device, stream)
                  : launch_variant<64, __half>(args, plan, device, stream);
  return p.bf16 ? launch_variant<128, __nv_bfloat16>(args, plan, device, stream)
                : launch_variant<128, __half>(args, plan, device, stream);
}

}  // namespace flashcore::cuda
