// The tuned CUDA kernels behind the Backend interface. One backend per variant, so each can be forced
// and benchmarked by name; "cuda-flash" picks the faster kernel per shape. supports() makes the plan
// (plan.cu: every check, the kernel, its launch shape), run() launches it. "cuda-flash" also has the
// backward pass (flash_bwd.h, backward/plan_bwd.cu): supports_backward() plans it, run_backward() runs
// it; "cuda-flash-hopper" and "cuda-flash-allwarps" force its Hopper or mma.sync dK/dV kernel.
#include "backends/cuda/flash_bwd.h"
#include "backends/cuda/flash_fwd.h"
#include "core/internal.hpp"
#include "core/sequences.hpp"

namespace flashcore::cuda {

namespace {

FlashFwdParams make_params(const Problem& p, const Tensors& t) {
  FlashFwdParams f{};
  f.q = t.q;
  f.k = t.k;
  f.v = t.v;
  f.o = t.o;
  f.lse = t.lse;
  f.batch = p.batch;
  f.heads_q = p.heads_q;
  f.heads_kv = p.heads_kv;
  f.seqlen_q = p.seqlen_q;
  f.seqlen_k = p.seqlen_k;
  f.head_dim = p.head_dim;
  f.q_batch_stride = p.q.batch, f.q_seq_stride = p.q.seq, f.q_head_stride = p.q.head;
  f.k_batch_stride = p.k.batch, f.k_seq_stride = p.k.seq, f.k_head_stride = p.k.head;
  f.v_batch_stride = p.v.batch, f.v_seq_stride = p.v.seq, f.v_head_stride = p.v.head;
  f.o_batch_stride = p.o.batch, f.o_seq_stride = p.o.seq, f.o_head_stride = p.o.head;
  f.scale = p.effective_scale();
  f.causal = p.causal;
  f.bf16 = p.o_dtype() == DType::BF16;
  f.fp8 = p.dtype == DType::E4M3;
  f.descale_q = p.descale_q, f.descale_k = p.descale_k, f.descale_v = p.descale_v;
  f.window_left = p.window_left;
  f.window_right = p.window_right;
  f.softcap = p.softcap;
  f.alibi_slopes = t.alibi_slopes;
  f.sinks = t.sinks;
  const numeric::Sequences seq = numeric::Sequences::of(p, t);  // the arrays the layout uses
  f.cu_seqlens_q = seq.cu_seqlens_q;
  f.cu_seqlens_k = seq.cu_seqlens_k;
  f.seqlens_k = seq.seqlens_k;
  f.block_table = seq.block_table;
  f.total_q = seq.total_q;
  f.total_k = seq.cu_seqlens_k != nullptr ? p.total_k : 0;
  f.page_size = seq.page_size;
  f.pages_per_seq = seq.pages_per_seq;
  f.num_pages = seq.block_table != nullptr ? p.num_pages : 0;
  return f;
}

// The backward's parameters: the forward's (make_params) and the gradients, dO with O's strides,
// dQ with Q's, dK with K's, dV with V's (flashcore.hpp, Gradients).
FlashBwdParams make_bwd_params(const Problem& p, const Tensors& t, const Gradients& g) {
  FlashBwdParams b{};
  b.fwd = make_params(p, t);
  const FlashFwdParams& f = b.fwd;
  b.d_o = g.d_o, b.dq = g.dq, b.dk = g.dk, b.dv = g.dv, b.dsinks = g.dsinks;
  b.do_batch_stride = f.o_batch_stride, b.do_seq_stride = f.o_seq_stride, b.do_head_stride = f.o_head_stride;
  b.dq_batch_stride = f.q_batch_stride, b.dq_seq_stride = f.q_seq_stride, b.dq_head_stride = f.q_head_stride;
  b.dk_batch_stride = f.k_batch_stride, b.dk_seq_stride = f.k_seq_stride, b.dk_head_stride = f.k_head_stride;
  b.dv_batch_stride = f.v_batch_stride, b.dv_seq_stride = f.v_seq_stride, b.dv_head_stride = f.v_head_stride;
  return b;
}

// The plan of one call, as the registry hands it from supports() to run().
struct CudaPlan final : Plan {
  FlashFwdParams params;
  FlashFwdPlan launch;
  std::string describe() const override { return launch.describe(); }
};
// The same for the backward (supports_backward() to run_backward()).
struct CudaBwdPlan final : Plan {
  FlashBwdParams params;
  FlashBwdPlan launch;
  std::string describe() const override { return launch.describe(); }
};

// The device the tuned kernels run on, or why not (no device, compute capability below 8.0).
std::string tuned_device(DeviceLimits* dev) {
  std::string why;
  if (!device_limits(dev, &why)) return why;
  if (dev->cc_major < 8)
    return "device " + dev->name + " has compute capability " + std::to_string(dev->cc_major) + "." +
           std::to_string(dev->cc_minor) + "; this kernel needs 8.0 or newer";
  return {};
}

class FlashBackend final : public Backend {
 public:
  FlashBackend(std::string name, int priority, FlashVariant variant, std::string what)
      : name_(std::move(name)), priority_(priority), variant_(variant), what_(std::move(what)) {}

  // The fixed-variant backends exist to be forced and benchmarked; "cuda-flash" (Auto) is the
  // one automatic selection uses.
  bool automatic() const override { return variant_ == FlashVariant::Auto; }

  std::string name() const override { return name_; }
  int priority() const override { return priority_; }
  MemoryLocation location() const override { return MemoryLocation::Device; }
  BackendKind kind() const override { return BackendKind::Tuned; }
  std::string description() const override { return what_; }

  Support supports(const Query& q) const override {
    DeviceLimits dev;
    std::string why = tuned_device(&dev);
    if (!why.empty()) return Support::no(why);
    if (q.problem->dtype == DType::F32) return Support::no("dtype fp32 is not supported (fp16, bf16 and fp8_e4m3 only)");
    auto plan = std::make_shared<CudaPlan>();
    plan->params = make_params(*q.problem, *q.tensors);
    why = flash_fwd_plan(plan->params, dev, variant_, &plan->launch);
    if (!why.empty()) return Support::no(why);
    return Support::yes(std::move(plan));
  }

  void run(const Query& q, const Options& opts) const override {
    const auto stream = static_cast<cudaStream_t>(opts.stream);
    const auto* plan = dynamic_cast<const CudaPlan*>(q.plan);
    const cudaError_t err = plan != nullptr ? flash_fwd_run(plan->params, plan->launch, stream)
                                            : flash_fwd(make_params(*q.problem, *q.tensors), stream, variant_);
    if (err != cudaSuccess) throw Error("backend", name_ + ": kernel launch failed: " + cudaGetErrorString(err));
  }

  // The backward pass (backward/: delta, dK/dV and dQ or conversion kernels): "cuda-flash" picks the
  // dK/dV kernel (Hopper where it runs), "cuda-flash-hopper" and "cuda-flash-allwarps" force the
  // Hopper or the mma.sync one (flash_bwd_plan declines for the other variants).
  Support supports_backward(const Query& q) const override {
    DeviceLimits dev;
    std::string why = tuned_device(&dev);
    if (!why.empty()) return Support::no(why);
    if (q.problem->dtype == DType::F32) return Support::no("dtype fp32 is not supported (fp16 and bf16 only)");
    if (q.problem->dtype == DType::E4M3) return Support::no("dtype fp8_e4m3 has no backward pass");
    auto plan = std::make_shared<CudaBwdPlan>();
    plan->params = make_bwd_params(*q.problem, *q.tensors, *q.gradients);
    plan->params.deterministic = q.deterministic;
    why = flash_bwd_plan(plan->params, dev, &plan->launch, variant_);
    if (!why.empty()) return Support::no(why);
    return Support::yes(std::move(plan));
  }

  void run_backward(const Query& q, const Options& opts) const override {
    const auto stream = static_cast<cudaStream_t>(opts.stream);
    CudaBwdPlan fresh;
    const auto* plan = dynamic_cast<const CudaBwdPlan*>(q.plan);
    if (plan == nullptr) {  // run without a plan from supports_backward(): make one
      const Support s = supports_backward(q);
      if (!s.ok) throw Error("backend", name_ + ": backward not supported: " + s.reason);
      fresh = *static_cast<const CudaBwdPlan*>(s.plan.get());
      plan = &fresh;
    }
    const cudaError_t err = flash_bwd_run(plan->params, plan->launch, stream);
    if (err != cudaSuccess) throw Error("backend", name_ + ": backward launch failed: " + cudaGetErrorString(err));
  }

 private:
  std::string name_;
  int priority_;
  FlashVariant variant_;
  std::string what_;
};

}  // namespace

std::vector<std::unique_ptr<Backend>> make_flash_backends() {
  std::vector<std::unique_ptr<Backend>> out;
  out.push_back(std::make_unique<FlashBackend>(
      "cuda-flash", 100, FlashVariant::Auto,
      "tuned flash-attention forward (sm_80+), fp16/bf16 (fp8_e4m3 on compute capability 9.0); faster kernel per shape (mma.sync; "
      "TMA + wgmma on compute capability 9.0 for larger problems; a split-KV decode kernel for few "
      "queries against long keys and for paged K/V up to 64 queries; varlen and cache lengths on all)"));
  out.push_back(std::make_unique<FlashBackend>("cuda-flash-allwarps", 90, FlashVariant::AllWarps,
                                               "tuned kernel, every warp loads and computes"));
  out.push_back(std::make_unique<FlashBackend>("cuda-flash-warpspec", 89, FlashVariant::WarpSpecialized,
                                               "tuned kernel, producer warp(s) load, consumer warps compute"));
  out.push_back(std::make_unique<FlashBackend>("cuda-flash-hopper", 88, FlashVariant::Hopper,
                                               "Hopper kernel: TMA producer warpgroup, wgmma consumer warpgroups "
                                               "(sm_90a, compute capability 9.0); cuda-flash runs it where it is faster"));
  return out;
}

}  // namespace flashcore::cuda
