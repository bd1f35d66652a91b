// Launch configuration of the tuned kernels, checked without a GPU: every promised problem
// (fp16/bf16, head_dim a multiple of 8 up to 128, any lengths, causal, GQA) fits an sm_89 (L4-class)
// device's 99 KB opt-in shared memory per block, head dims up to 256 fit an H100's 227 KB, and
// problems outside the promise are declined with a reason naming the field.
#include <gtest/gtest.h>

#include "backends/cuda/flash_fwd.h"

using flashcore::cuda::FlashFwdParams;

namespace {

FlashFwdParams params(int b, int hq, int hkv, int lq, int lk, int d, bool bf16, bool causal) {
  FlashFwdParams p{};
  alignas(16) static unsigned char dummy[16];
  p.q = p.k = p.v = dummy;
  p.o = dummy;
  p.batch = b, p.heads_q = hq, p.heads_kv = hkv, p.seqlen_q = lq, p.seqlen_k = lk, p.head_dim = d;
  p.q_head_stride = p.o_head_stride = d;
  p.q_seq_stride = p.o_seq_stride = static_cast<long long>(hq) * d;
  p.q_batch_stride = p.o_batch_stride = p.q_seq_stride * lq;
  p.k_head_stride = p.v_head_stride = d;
  p.k_seq_stride = p.v_seq_stride = static_cast<long long>(hkv) * d;
  p.k_batch_stride = p.v_batch_stride = p.k_seq_stride * lk;
  p.scale = 0.125f;
  p.bf16 = bf16, p.causal = causal;
  return p;
}

constexpr size_t kL4SmemOptin = 99 * 1024;

}  // namespace

TEST(CudaConfig, PromisedProblemsFitSm89SharedMemory) {
  const int lens[][2] = {{1, 1}, {17, 17}, {77, 77}, {113, 203}, {203, 113}, {512, 512}, {4097, 4097}, {16384, 16384}};
  for (int d : {8, 32, 40, 64, 80, 96, 112, 128, 160, 192, 256})
    for (bool bf16 : {false, true})
      for (bool causal : {false, true})
        for (auto& l : lens)
          for (int b : {1, 4})
            for (int h : {1, 8, 32}) {
              const auto p = params(b, h, h > 1 ? h / 2 : 1, l[0], l[1], d, bf16, causal);
              if (d <= 128)
                EXPECT_EQ(flashcore::cuda::flash_fwd_unsupported_reason(p, 8, 9, kL4SmemOptin), "")
                    << "D" << d << " L" << l[0] << "x" << l[1] << " B" << b << " H" << h;
              else  // two 64-key K/V stages of 192 or 256 columns do not fit 99 KB: declined, saying so
                EXPECT_NE(flashcore::cuda::flash_fwd_unsupported_reason(p, 8, 9, kL4SmemOptin).find("shared memory"),
                          std::string::npos);
              EXPECT_EQ(flashcore::cuda::flash_fwd_unsupported_reason(p, 9, 0, 227 * 1024), "") << "D" << d;
              EXPECT_EQ(flashcore::cuda::flash_fwd_unsupported_reason(p, 8, 0, 163 * 1024), "") << "D" << d;  // A100
            }
}

TEST(CudaConfig, DeclinesWithReasons) {
  auto reason = [](FlashFwdParams p, int major = 9) {
    return flashcore::cuda::flash_fwd_unsupported_reason(p, major, 0, 227 * 1024);
  };
  for (int d : {0, 4, 36, 100, 264}) {  // not a multiple of 8 in [8, 256]
    const std::string why = reason(params(1, 8, 8, 64, 64, d, false, false));
    EXPECT_NE(why.find("head_dim " + std::to_string(d)), std::string::npos) << why;
  }
  // Kernels built for fewer head dims say so: the Hopper kernel (64, 128), warp-specialized (<= 128).
  const auto forced = [](int d, flashcore::cuda::FlashVariant v) {
    return flashcore::cuda::flash_fwd_unsupported_reason(params(1, 8, 8, 64, 64, d, false, false), 9, 0, 227 * 1024, v);
  };
  EXPECT_NE(forced(96, flashcore::cuda::FlashVariant::Hopper).find("head_dim 64 and 128"), std::string::npos);
  EXPECT_NE(forced(192, flashcore::cuda::FlashVariant::WarpSpecialized).find("head_dim <= 128"), std::string::npos);
  EXPECT_EQ(forced(192, flashcore::cuda::FlashVariant::AllWarps), "");
  EXPECT_NE(reason(params(1, 8, 8, 64, 64, 64, false, false), 7).find("7"), std::string::npos);
  FlashFwdParams misaligned = params(1, 8, 8, 64, 64, 64, false, false);
  misaligned.q_seq_stride = 8 * 64 + 4;  // not a multiple of 8 elements
  EXPECT_NE(reason(misaligned).find("q"), std::string::npos);
  FlashFwdParams unaligned_ptr = params(1, 8, 8, 64, 64, 64, false, false);
  unaligned_ptr.k = static_cast<const unsigned char*>(unaligned_ptr.k) + 2;
  EXPECT_NE(reason(unaligned_ptr).find("k"), std::string::npos);
  // A device with too little shared memory is declined, naming shared memory.
  EXPECT_NE(flashcore::cuda::flash_fwd_unsupported_reason(params(1, 8, 8, 64, 64, 128, false, false), 8, 0, 8 * 1024)
                .find("shared memory"),
            std::string::npos);
}

// The plan is made once per call, for a device: kernel, launch shape and workspace follow from the
// launch table and the device's limits, and every limit is checked before anything is launched.
TEST(CudaConfig, PlanFollowsTheDevice) {
  using flashcore::cuda::DeviceLimits;
  using flashcore::cuda::FlashFwdPlan;
  using flashcore::cuda::FlashKernel;
  using flashcore::cuda::FlashVariant;
  DeviceLimits l4;  // sm_89, 58 SMs, 99 KB per block
  l4.cc_major = 8, l4.cc_minor = 9, l4.sm_count = 58, l4.smem_optin_per_block = kL4SmemOptin;
  FlashFwdPlan plan;
  // A large D=64 problem: the wide-warp kernel (128 rows, 4 warps), no split.
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(4, 16, 16, 4096, 4096, 64, false, false), l4, FlashVariant::Auto, &plan), "");
  EXPECT_EQ(plan.kernel, FlashKernel::Wide);
  EXPECT_EQ(plan.block_m, 128);
  EXPECT_EQ(plan.threads, 128);
  EXPECT_EQ(plan.max_splits, 1);
  EXPECT_EQ(plan.n_mblocks, 4096 / 128);
  EXPECT_EQ(plan.split_partial_bytes, 0u);
  EXPECT_LE(plan.smem, kL4SmemOptin);
  EXPECT_NE(plan.describe().find("sm80-wide"), std::string::npos) << plan.describe();
  // One head, one short query block against many keys: too few blocks for the GPU, so the key range
  // is split, with a workspace for the partials and tickets.
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(1, 1, 1, 16, 8192, 128, true, false), l4, FlashVariant::Auto, &plan), "");
  EXPECT_GT(plan.max_splits, 1);
  EXPECT_LE(plan.max_splits, 8);
  EXPECT_GT(plan.split_partial_bytes, 0u);
  EXPECT_GT(plan.split_counter_bytes, 0u);
  EXPECT_NE(plan.kernel, FlashKernel::Wide);
  // A compute capability 9.0 device whose Hopper image does not load: Auto plans an mma.sync kernel,
  // forcing the Hopper variant is declined with that reason.
  DeviceLimits h100 = l4;
  h100.cc_major = 9, h100.cc_minor = 0, h100.sm_count = 132, h100.smem_optin_per_block = 227 * 1024;
  h100.hopper_kernel_loads = false;
  const auto big = params(2, 16, 16, 4096, 4096, 128, false, true);
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(big, h100, FlashVariant::Auto, &plan), "");
  EXPECT_NE(plan.kernel, FlashKernel::Hopper);
  const std::string why = flashcore::cuda::flash_fwd_plan(big, h100, FlashVariant::Hopper, &plan);
  EXPECT_NE(why.find("Hopper"), std::string::npos) << why;
  // Forcing the warp-specialized kernel plans it, with its producer warp in the thread count.
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(big, h100, FlashVariant::WarpSpecialized, &plan), "");
  EXPECT_EQ(plan.kernel, FlashKernel::Rows16WarpSpecialized);
  EXPECT_EQ(plan.threads, 32 * (plan.block_m / 16 * plan.key_split_warps + 1));
  // A declined problem leaves the caller's plan untouched.
  FlashFwdPlan untouched;
  untouched.block_m = 12345;
  EXPECT_NE(flashcore::cuda::flash_fwd_plan(params(1, 8, 8, 64, 64, 100, false, false), h100, FlashVariant::Auto, &untouched), "");
  EXPECT_EQ(untouched.block_m, 12345);
}

// Head dims that are not a kernel's own run on the next one's kernel (80 on 96, 40 on 64): the plan
// takes that head dim's launch table row, shared memory and split-KV workspace. Above 128 there is
// one KV group and no split-KV (the 16-row kernel's registers hold the O accumulator and nothing more).
TEST(CudaConfig, PlanRunsEachHeadDimOnItsNativeKernel) {
  using flashcore::cuda::DeviceLimits;
  using flashcore::cuda::FlashFwdPlan;
  using flashcore::cuda::FlashKernel;
  using flashcore::cuda::FlashVariant;
  DeviceLimits l4;
  l4.cc_major = 8, l4.cc_minor = 9, l4.sm_count = 58, l4.smem_optin_per_block = kL4SmemOptin;
  DeviceLimits h100 = l4;
  h100.cc_major = 9, h100.cc_minor = 0, h100.sm_count = 132, h100.smem_optin_per_block = 227 * 1024;
  FlashFwdPlan p80, p96;
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(4, 16, 16, 4096, 4096, 80, false, false), l4, FlashVariant::Auto, &p80), "");
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(4, 16, 16, 4096, 4096, 96, false, false), l4, FlashVariant::Auto, &p96), "");
  EXPECT_EQ(p80.describe(), p96.describe());
  EXPECT_EQ(p80.smem, p96.smem);
  EXPECT_LE(p80.smem, kL4SmemOptin);
  // Split-KV partial rows are the native head dim's width: 40 plans the workspace of 64.
  FlashFwdPlan p40, p64;
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(1, 1, 1, 16, 8192, 40, true, false), l4, FlashVariant::Auto, &p40), "");
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(1, 1, 1, 16, 8192, 64, true, false), l4, FlashVariant::Auto, &p64), "");
  EXPECT_GT(p40.max_splits, 1);
  EXPECT_EQ(p40.split_partial_bytes, p64.split_partial_bytes);
  // 256: one KV group, no split even for a one-block grid, even when asked for.
  FlashFwdPlan p256;
  flashcore::cuda::FlashFwdLaunchOverride ov{};
  ov.key_split_warps = 4;
  ov.kv_tiles_per_split = 2;
  auto small = params(1, 1, 1, 16, 8192, 256, true, false);
  small.launch_override = &ov;
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(small, h100, FlashVariant::Auto, &p256), "");
  EXPECT_EQ(p256.kernel, FlashKernel::Rows16);
  EXPECT_EQ(p256.key_split_warps, 1);
  EXPECT_EQ(p256.max_splits, 1);
  EXPECT_EQ(p256.split_partial_bytes, 0u);
  EXPECT_LE(p256.smem, 227u * 1024);
  // The wide-warp kernel is built up to 128: a 128-row all-warps plan at 192 is the 16-row kernel.
  FlashFwdPlan p192;
  ov = {};
  ov.block_m = 128;
  auto big192 = params(4, 16, 16, 4096, 4096, 192, false, false);
  big192.launch_override = &ov;
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(big192, h100, FlashVariant::AllWarps, &p192), "");
  EXPECT_EQ(p192.kernel, FlashKernel::Rows16);
  EXPECT_EQ(p192.block_m, 128);
  EXPECT_EQ(p192.threads, 256);
}

#include "backends/cuda/kernels.h"

// The Hopper kernel reads Q, K, V through TMA tensor maps: layouts TMA cannot describe are declined
// before any launch, naming the tensor and the stride (the other kernels still run them).
TEST(CudaConfig, HopperDeclinesLayoutsTmaCannotRead) {
  const auto hopper_unsupported_reason = [](const FlashFwdParams& p) {
    return flashcore::cuda::detail::sm90_tensor_maps(p, nullptr);
  };
  const auto has = [](const std::string& s, const char* what) { return s.find(what) != std::string::npos; };
  FlashFwdParams zero_seq = params(1, 8, 2, 64, 96, 128, false, false);
  zero_seq.k_seq_stride = 0;  // every key row the same memory: not a TMA layout
  const std::string r1 = hopper_unsupported_reason(zero_seq);
  EXPECT_TRUE(has(r1, "k") && has(r1, "seq_stride") && has(r1, "got 0")) << r1;
  FlashFwdParams negative_head = params(2, 4, 4, 33, 33, 64, true, true);
  negative_head.v_head_stride = -64;
  const std::string r2 = hopper_unsupported_reason(negative_head);
  EXPECT_TRUE(has(r2, "v") && has(r2, "head_stride") && has(r2, "-64")) << r2;
  // A stride of an extent-1 dimension is never stepped: batch 1 with batch stride 0 is not declined for it.
  FlashFwdParams one_batch = params(1, 8, 8, 64, 64, 64, false, false);
  one_batch.q_batch_stride = one_batch.k_batch_stride = one_batch.v_batch_stride = 0;
  const std::string r3 = hopper_unsupported_reason(one_batch);
  EXPECT_FALSE(has(r3, "batch_stride")) << r3;
  // Without a driver (CPU machine) the remaining reason is the missing encoder, never a crash.
  EXPECT_TRUE(r3.empty() || has(r3, "cuTensorMapEncodeTiled")) << r3;
  // Asking again, or in another order, gives each problem its own answer.
  EXPECT_EQ(hopper_unsupported_reason(zero_seq), r1);
  EXPECT_EQ(hopper_unsupported_reason(one_batch), r3);
  EXPECT_EQ(hopper_unsupported_reason(negative_head), r2);
  FlashFwdParams moved = negative_head;
  moved.v_head_stride = 64;  // the same problem made valid: no longer declined for the stride
  EXPECT_FALSE(has(hopper_unsupported_reason(moved), "head_stride"));
}
