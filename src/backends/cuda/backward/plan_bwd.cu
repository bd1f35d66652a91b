// The backward's plan and run step (flash_bwd.h): every limit of the backward kernels checked once
// (flash_bwd_plan), then the delta, dK/dV and dQ kernels launched without further checks (flash_bwd_run).
// Host code only; the kernels are in backward/ (bwd_delta.cuh, bwd_dkdv.cuh, bwd_dq.cuh), one
// translation unit per head dim (instances/).
#include "backends/cuda/flash_bwd.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "backends/cuda/backward/bwd_config.cuh"
#include "backends/cuda/backward/launch_bwd.cuh"
#include "backends/cuda/backward/sm90/config.h"
#include "backends/cuda/kernels.h"  // sm90_bwd_tensor_maps
#include "backends/cuda/limits.h"

namespace flashcore::cuda {

namespace {

using detail::BwdConfig;
using detail::kBwdBlockM;
using detail::kBwdBlockN;

// Dynamic shared memory per block of the two main kernels of head dim d (built head dims only).
void bwd_smem(int d, size_t* dkdv, size_t* dq) {
  switch (d) {
    case 32: *dkdv = BwdConfig<32>::kSmemDkdv, *dq = BwdConfig<32>::kSmemDq; return;
    case 64: *dkdv = BwdConfig<64>::kSmemDkdv, *dq = BwdConfig<64>::kSmemDq; return;
    case 96: *dkdv = BwdConfig<96>::kSmemDkdv, *dq = BwdConfig<96>::kSmemDq; return;
    default: *dkdv = BwdConfig<128>::kSmemDkdv, *dq = BwdConfig<128>::kSmemDq; return;
  }
}

// Workspace rows: one per query row of every (sequence, query head), each sequence padded to
// kBwdBlockM rows (BwdArgs, bwd_sequences.cuh: bwd_ws_row). The workspace is delta and lse2 (one float a
// row each) and, on the atomic path, the dQ accumulator (acc_dim floats a row).
void workspace_layout(const FlashFwdParams& p, int seqlen_q_rounded, FlashBwdPlan* plan) {
  if (p.cu_seqlens_q != nullptr) {  // packed Q: sequence b from (cu_seqlens_q[b] + 64·b) rounded down to 64
    plan->ws_batch_stride = 0;
    plan->ws_head_stride = ((long long)p.total_q + (long long)kBwdBlockM * (p.batch + 1) - 1) / kBwdBlockM * kBwdBlockM;
  } else {
    plan->ws_head_stride = seqlen_q_rounded;
    plan->ws_batch_stride = (long long)p.heads_q * seqlen_q_rounded;
  }
}
size_t workspace_rows(const FlashFwdParams& p, const FlashBwdPlan& plan) {
  return plan.varlen_q ? (size_t)p.heads_q * (size_t)plan.ws_head_stride : (size_t)p.batch * (size_t)plan.ws_batch_stride;
}
// acc_dim: the dQ accumulator's columns (0 on the deterministic path).
size_t workspace_bytes(const FlashFwdParams& p, const FlashBwdPlan& plan, int acc_dim) {
  return sizeof(float) * workspace_rows(p, plan) * (2 + (size_t)acc_dim);
}

// The sequence layouts the backward kernels do not have: "" or the field that is set. (They run varlen
// Q and K/V and cache lengths, bwd_sequences.cuh; the attention variants: windows, soft-capping and ALiBi
// through the VariantMask kernels, sinks through the forward's LSE and the dsinks kernel.)
std::string unsupported_features(const FlashBwdParams& b) {
  const FlashFwdParams& p = b.fwd;
  if (p.block_table != nullptr || p.page_size != 0 || p.pages_per_seq != 0)
    return "block_table (paged K/V) is set: paged K/V has no backward pass";
  if ((p.cu_seqlens_q != nullptr) != (p.total_q > 0))
    return "cu_seqlens_q and total_q " + std::to_string(p.total_q) + " disagree (varlen Q needs both)";
  if ((p.cu_seqlens_k != nullptr) != (p.total_k > 0))
    return "cu_seqlens_k and total_k " + std::to_string(p.total_k) + " disagree (varlen K/V needs both)";
  return {};
}

// The mma.sync dK/dV kernel's launch shape (also what the atomic path's allocation fallback runs).
void sm80_dkdv_shape(const FlashFwdParams& p, FlashBwdPlan* plan) {
  plan->hopper = false;
  plan->block_n = kBwdBlockN;
  plan->threads = detail::kBwdThreads;
  size_t dq = 0;
  bwd_smem(p.head_dim, &plan->smem_dkdv, &dq);
  plan->grid_dkdv = dim3((unsigned)((p.seqlen_k + kBwdBlockN - 1) / kBwdBlockN), (unsigned)p.heads_kv, (unsigned)p.batch);
}

// The Hopper dK/dV kernel's own conditions ("" or why not); on success its shape and TMA descriptors in *plan.
std::string hopper_bwd(const FlashBwdParams& b, const DeviceLimits& dev, FlashBwdPlan* plan) {
  const FlashFwdParams& p = b.fwd;
  if (!detail::bwd_hopper_built(p.head_dim))
    return "the Hopper backward runs head_dim 64, 96 and 128, not " + std::to_string(p.head_dim);
  if (b.deterministic) return "the Hopper backward has the atomic dQ path only (deterministic runs the mma.sync kernels)";
  if (dev.cc_major != 9 || dev.cc_minor != 0)
    return "the Hopper backward needs compute capability 9.0 (wgmma, sm_90a); device has " + std::to_string(dev.cc_major) +
           "." + std::to_string(dev.cc_minor);
#ifndef FLASHCORE_HAVE_HOPPER_KERNELS
  return "the Hopper backward was not built (sm_90 is not among the CUDA architectures of this build)";
#else
  if (!dev.hopper_kernel_loads) return "the Hopper kernels' sm_90a image does not load on this device";
  const size_t need = detail::bwd_sm90_smem_bytes(p.head_dim);
  if (need > dev.smem_optin_per_block)
    return "the Hopper backward needs " + std::to_string(need) + " bytes of shared memory per block, device allows " +
           std::to_string(dev.smem_optin_per_block);
  const std::string why = detail::sm90_bwd_tensor_maps(b, plan->tensor_maps);
  if (!why.empty()) return why;
  const int bn = detail::BwdHopperConfig<64>::kBlockN;
  static_assert(detail::BwdHopperConfig<64>::kBlockN == detail::BwdHopperConfig<128>::kBlockN, "one block size");
  plan->hopper = true;
  plan->map_inputs[0] = b.fwd.q, plan->map_inputs[1] = b.fwd.k, plan->map_inputs[2] = b.fwd.v;
  plan->map_inputs[3] = b.d_o;
  plan->atomic_dq = true;  // its only path (head dim 96 too, which has no atomic mma.sync kernel)
  plan->acc_dim = detail::bwd_hopper_head_dim(p.head_dim);
  plan->block_n = bn;
  plan->threads = detail::BwdHopperConfig<64>::kThreads;
  plan->smem_dkdv = need;
  plan->grid_dkdv = dim3((unsigned)((p.seqlen_k + bn - 1) / bn), (unsigned)p.heads_kv, (unsigned)p.batch);
  // Causal blocks go heavy-first inside groups of (KV head, batch) pairs whose Q, dO (2 bytes an element
  // each) and fp32 dQ accumulator (4) take at most 24 MB, about half an H100's L2 (common/scheduler.cuh).
  const double pair_bytes = 8.0 * (p.heads_q / p.heads_kv) * (double)p.seqlen_q * p.head_dim;
  plan->heavy_group = (int)std::max(1.0, std::min((double)p.heads_kv * p.batch, 24.0 * (1 << 20) / pair_bytes));
  return {};
#endif
}

}  // namespace

std::string FlashBwdPlan::describe() const {
  std::string seq;
  for (const auto& [on, name] : {std::pair<bool, const char*>{varlen_q, "varlen_q"}, {varlen_k, "varlen_k"},
                                 {cache_lengths, "cache_lengths"}})
    if (on) seq += (seq.empty() ? " sequences=" : "+") + std::string(name);
  return std::string(hopper ? "sm90-bwd" : "sm80-bwd") + " D=" + std::to_string(head_dim) +
         (atomic_dq ? " dq_path=atomic" : " dq_path=deterministic") + (variants ? " mask=variants" : "") +
         (dsinks ? " dsinks" : "") + seq + " block=" + std::to_string(block_m) + "x" +
         std::to_string(block_n) + " threads=" + std::to_string(threads) + " smem dkdv=" + std::to_string(smem_dkdv) +
         " dq=" + std::to_string(smem_dq) + " workspace=" + std::to_string(workspace_bytes) +
         (hopper ? " heavy_group=" + std::to_string(heavy_group) : std::string());
}

namespace {

// The kernels of the VariantMask policy: windows, soft-capping, ALiBi (sinks alone change no score).
bool bwd_variant_mask(const FlashFwdParams& p) {
  return p.window_left >= 0 || p.window_right >= 0 || p.softcap > 0.f || p.alibi_slopes != nullptr;
}

}  // namespace

std::string flash_bwd_plan(const FlashBwdParams& b, const DeviceLimits& dev, FlashBwdPlan* plan, FlashVariant variant) {
  const FlashFwdParams& p = b.fwd;
  if (variant != FlashVariant::Auto && variant != FlashVariant::AllWarps && variant != FlashVariant::Hopper)
    return "has no backward pass of its own (the tuned backward runs as cuda-flash, cuda-flash-allwarps (mma.sync) "
           "or cuda-flash-hopper)";
  // What every tuned kernel needs (sizes, scale, compute capability, the q, k, v, o pointers and strides).
  std::string why = detail::common_limits(p, dev);
  if (!why.empty()) return why;
  if (!detail::bwd_head_dim_built(p.head_dim))
    return "head_dim " + std::to_string(p.head_dim) + ": the backward kernels are built for 32, 64, 96 and 128 only";
  why = unsupported_features(b);
  if (!why.empty()) return why;
  const long long q_tiles = (p.seqlen_q + (long long)kBwdBlockM - 1) / kBwdBlockM;
  const long long q_rounded = q_tiles * kBwdBlockM;
  // Kernel indices are int: the padded query rows and a dK/dV block's (head, query tile) iterations.
  if (q_rounded > INT_MAX || q_tiles * (p.heads_q / p.heads_kv) > INT_MAX)
    return "seqlen_q " + std::to_string(p.seqlen_q) + " is too large for the backward kernels' int indices";
  // What the backward adds: the LSE, dO and the gradients.
  if (p.lse == nullptr) return "lse pointer is null (the backward needs the forward's LSE)";
  if (b.dsinks != nullptr && p.sinks == nullptr)
    return "dsinks is set but sinks is null (the sinks' gradient needs the forward's sinks)";
  if ((reinterpret_cast<uintptr_t>(p.lse) & 3u) != 0) return "lse pointer is not 4-byte aligned";
  why = detail::pointer_limits({{b.d_o, "d_o"}, {b.dq, "dq"}, {b.dk, "dk"}, {b.dv, "dv"}});
  if (!why.empty()) return why;
  why = detail::stride_limits(
      {{b.do_batch_stride, "do_batch_stride"}, {b.do_seq_stride, "do_seq_stride"}, {b.do_head_stride, "do_head_stride"},
       {b.dq_batch_stride, "dq_batch_stride"}, {b.dq_seq_stride, "dq_seq_stride"}, {b.dq_head_stride, "dq_head_stride"},
       {b.dk_batch_stride, "dk_batch_stride"}, {b.dk_seq_stride, "dk_seq_stride"}, {b.dk_head_stride, "dk_head_stride"},
       {b.dv_batch_stride, "dv_batch_stride"}, {b.dv_seq_stride, "dv_seq_stride"}, {b.dv_head_stride, "dv_head_stride"}});
  if (!why.empty()) return why;

  FlashBwdPlan out;
  out.device = dev.index;
  out.head_dim = p.head_dim;
  out.block_m = kBwdBlockM;
  out.delta_threads = detail::kBwdDeltaThreads;
  out.seqlen_q_rounded = (int)q_rounded;
  out.atomic_dq = !b.deterministic && detail::bwd_atomic_dq_built(p.head_dim);
  out.variants = bwd_variant_mask(p);
  out.dsinks = b.dsinks != nullptr;
  out.varlen_q = p.cu_seqlens_q != nullptr;
  out.varlen_k = p.cu_seqlens_k != nullptr;
  out.cache_lengths = p.seqlens_k != nullptr;
  workspace_layout(p, out.seqlen_q_rounded, &out);
  out.acc_dim = p.head_dim;
  bwd_smem(p.head_dim, &out.smem_dkdv, &out.smem_dq);
  const size_t need = out.smem_dkdv > out.smem_dq ? out.smem_dkdv : out.smem_dq;
  if (need > dev.smem_optin_per_block)
    return "the backward kernels need " + std::to_string(need) + " bytes of shared memory per block at head_dim " +
           std::to_string(p.head_dim) + ", device allows " + std::to_string(dev.smem_optin_per_block);
  constexpr int kDeltaRows = detail::kBwdDeltaThreads / detail::kBwdDeltaThreadsPerRow;  // divides kBwdBlockM
  static_assert(kBwdBlockM % kDeltaRows == 0, "delta blocks tile the padded rows");
  out.grid_delta = dim3((unsigned)(q_rounded / kDeltaRows), (unsigned)p.heads_q, (unsigned)p.batch);
  out.grid_dq = dim3((unsigned)q_tiles, (unsigned)p.heads_q, (unsigned)p.batch);
  sm80_dkdv_shape(p, &out);
  if (variant != FlashVariant::AllWarps) {
    FlashBwdPlan hopper = out;
    const std::string hopper_why = hopper_bwd(b, dev, &hopper);
    if (hopper_why.empty()) out = hopper;
    else if (variant == FlashVariant::Hopper) return hopper_why;
  }
  out.workspace_bytes = workspace_bytes(p, out, out.atomic_dq ? out.acc_dim : 0);
  if (plan != nullptr) *plan = out;
  return {};
}

namespace {

// The kernels of the plan's head dim, mask policy and layout (instances/: kSeq, the sequence layouts).
template <bool kVariants, bool kSeq>
cudaError_t launch_head_dim(const FlashBwdPlan& plan, const detail::BwdArgs& args, cudaStream_t stream) {
  switch (plan.head_dim) {
    case 32: return detail::launch_bwd_head_dim<32, kVariants, kSeq>(plan, args, stream);
    case 64: return detail::launch_bwd_head_dim<64, kVariants, kSeq>(plan, args, stream);
    case 96: return detail::launch_bwd_head_dim<96, kVariants, kSeq>(plan, args, stream);
    case 128: return detail::launch_bwd_head_dim<128, kVariants, kSeq>(plan, args, stream);
    default: return cudaErrorInvalidValue;  // the plan never gets here
  }
}

}  // namespace

cudaError_t flash_bwd_run(const FlashBwdParams& b, const FlashBwdPlan& plan, cudaStream_t stream) {
  const FlashFwdParams& p = b.fwd;
  // The Hopper dK/dV kernel reads Q, K, V and dO through the plan's maps: other inputs are an error (a plan reused).
  if (plan.hopper && (p.q != plan.map_inputs[0] || p.k != plan.map_inputs[1] || p.v != plan.map_inputs[2] ||
                      b.d_o != plan.map_inputs[3]))
    return cudaErrorInvalidValue;
  detail::BwdArgs args{};
  args.p = b;
  args.scale_log2 = p.scale * 1.4426950408889634f;
  args.group = p.heads_q / p.heads_kv;
  args.ws_batch_stride = plan.ws_batch_stride;
  args.ws_head_stride = plan.ws_head_stride;
  args.seqlen_q_rounded = plan.seqlen_q_rounded;
  args.heavy_group = plan.heavy_group;
  args.acc_dim = plan.acc_dim;
  void* ws = nullptr;
  cudaError_t e = cudaMallocAsync(&ws, plan.workspace_bytes, stream);
  if (e == cudaErrorMemoryAllocation && plan.atomic_dq) {
    // The atomic path's dQ accumulator (4·D bytes a row) does not fit: the deterministic path needs
    // 2 floats a row and no more shared memory than the plan checked (bwd_smem covers both kernels).
    cudaGetLastError();
    FlashBwdPlan fixed = plan;
    fixed.atomic_dq = false;
    sm80_dkdv_shape(p, &fixed);  // the Hopper kernel has the atomic path only
    fixed.workspace_bytes = workspace_bytes(p, fixed, 0);
    return flash_bwd_run(b, fixed, stream);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: leave no error behind for the next launch check
    return e;
  }
  // [delta][lse2][dq_accum], the first two a float per workspace row each (the rows a multiple of 64:
  // every part and every 64-row tile 16-byte aligned for cp.async).
  const size_t rows = workspace_rows(p, plan);
  args.delta = static_cast<float*>(ws);
  args.lse2 = args.delta + rows;
  args.dq_accum = plan.atomic_dq ? args.lse2 + rows : nullptr;
  e = detail::launch_bwd_delta(plan, args, stream);
  if (e == cudaSuccess) {
    const bool seq = plan.sequences();
    e = plan.variants ? (seq ? launch_head_dim<true, true>(plan, args, stream) : launch_head_dim<true, false>(plan, args, stream))
                      : (seq ? launch_head_dim<false, true>(plan, args, stream) : launch_head_dim<false, false>(plan, args, stream));
  }
  const cudaError_t f = cudaFreeAsync(ws, stream);  // after the kernels, in stream order
  return e != cudaSuccess ? e : f;
}

}  // namespace flashcore::cuda
