// Launch configuration of the tuned kernels, checked without a GPU: every promised problem
// (fp16/bf16, head_dim a multiple of 8 up to 128, any lengths, causal, GQA) fits an sm_89 (L4-class)
// device's 99 KB opt-in shared memory per block, head dims up to 256 fit an H100's 227 KB, and
// problems outside the promise are declined with a reason naming the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/cuda/flash_bwd.h"
#include "backends/cuda/flash_fwd.h"
#include "backends/cuda/limits.h"
#include "backends/cuda/common/tail_split.cuh"
#include "backends/cuda/common/work_list.h"
#include "backends/cuda/sm80/config.cuh"
#include "backends/cuda/sm90/config.h"

using flashcore::cuda::FlashFwdParams;

namespace {

FlashFwdParams params(int b, int hq, int hkv, int lq, int lk, int d, bool bf16, bool causal) {
  FlashFwdParams p{};
  alignas(128) static unsigned char dummy[64];
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
  // Kernels built for fewer head dims say so: warp-specialized (<= 128). The Hopper kernel takes every
  // head dim the others do (32, 64, 128, 192, 256 compiled, the rest zero-padded): what it declines here
  // (no GPU, or no sm_90a image) is not the head dim.
  const auto forced = [](int d, flashcore::cuda::FlashVariant v) {
    return flashcore::cuda::flash_fwd_unsupported_reason(params(1, 8, 8, 64, 64, d, false, false), 9, 0, 227 * 1024, v);
  };
  for (int d : {8, 40, 96, 160, 192, 200, 256})
    EXPECT_EQ(forced(d, flashcore::cuda::FlashVariant::Hopper).find("head_dim"), std::string::npos) << d;
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

// The Hopper kernel's compiled head dims: every multiple of 8 up to 256 runs on the next one; 8..32 on
// the D = 32 instance, whose rows are 64 bytes (TMA boxes of 32 columns, the 64-byte swizzle), 72..96 on
// the D = 96 instance (three 32-column panels in the 64-byte swizzle), 136..160 on the D = 160 instance
// (five), the rest on 128-byte rows. Its O
// staging holds rows of 64 elements (common/swizzle.cuh), and every instance fits an H100's 227 KB.
TEST(CudaConfig, HopperHeadDimsAndSwizzleRows) {
  using namespace flashcore::cuda::detail;
  for (int d = 8; d <= 256; d += 8) {
    const int compiled = hopper_head_dim(d);
    EXPECT_GE(compiled, d);
    EXPECT_EQ(sm90_row_bytes(d), compiled == 32 || compiled == 96 || compiled == 160 ? 64 : 128) << d;
    EXPECT_EQ(compiled == 32, d <= 32) << d;
    EXPECT_EQ(compiled == 96, d > 64 && d <= 96) << d;
    EXPECT_EQ(compiled == 160, d > 128 && d <= 160) << d;
    EXPECT_EQ(compiled == 192, d > 160 && d <= 192) << d;
    EXPECT_LE(sm90_smem_bytes(d), size_t(227 * 1024)) << d;
  }
  using C32 = HopperConfig<32>;
  EXPECT_EQ(C32::kPanels, 1);
  EXPECT_EQ(C32::kKSteps, 2);  // S = Q·Kᵀ in two k16 steps, both in the one 64-byte row
  EXPECT_EQ(C32::kStepsPerPanel, 2);
  EXPECT_EQ(C32::kTileBytes, uint32_t(C32::kBlockN * 64));
  EXPECT_EQ(C32::kOStageBytes, uint32_t(C32::kBlockM * 64 * 2));
  using C96 = HopperConfig<96>;
  EXPECT_EQ(C96::kPanels, 3);   // three 32-column panels of 64 bytes: no padding column in shared memory
  EXPECT_EQ(C96::kKSteps, 6);   // S = Q·Kᵀ in six k16 steps, two a panel
  EXPECT_EQ(C96::kOAcc, 48);    // P·V is m64n96
  EXPECT_EQ(C96::kTileBytes, uint32_t(C96::kBlockN * 96 * 2));
  EXPECT_EQ(C96::kStages, 2);
  EXPECT_TRUE(C96::kOwnOStage);
  using C160 = HopperConfig<160>;
  EXPECT_EQ(C160::kPanels, 5);   // five 32-column panels of 64 bytes
  EXPECT_EQ(C160::kKSteps, 10);  // S = Q·Kᵀ in ten k16 steps (D = 192's instance took 12)
  EXPECT_EQ(C160::kOAcc, 80);    // P·V is m64n160
  EXPECT_EQ(C160::kBlockN, 96);  // D = 192's key tiles (registers: sm90/config.h)
  EXPECT_EQ(C160::kTileBytes, uint32_t(C160::kBlockN * 160 * 2));
  EXPECT_EQ(C160::kStages, 2);
  EXPECT_TRUE(C160::kOwnOStage);
  EXPECT_EQ(sm90_row_bytes(128, /*fp8=*/true), 128);
  // The instance a plan takes (compiled head dim, consumer warpgroups). D = 32: Auto keeps the D = 32
  // instance's 192-row blocks for problems of at least as many items as SMs, else D = 64's 128-row
  // blocks; forced, the D = 32 instance always.
  flashcore::cuda::DeviceLimits h100;
  h100.cc_major = 9, h100.sm_count = 132, h100.smem_optin_per_block = 227 * 1024;
  using flashcore::cuda::FlashVariant;
  using Inst = std::pair<int, int>;
  const auto inst = [&](const FlashFwdParams& p, FlashVariant v = FlashVariant::Auto) {
    const flashcore::cuda::HopperInstance i = flashcore::cuda::hopper_instance(p, h100, v);
    return Inst(i.dim, i.wgs);
  };
  const FlashFwdParams small = params(1, 8, 8, 2048, 2048, 32, false, false);  // 8 x 11 = 88 items
  const FlashFwdParams big = params(4, 16, 16, 1024, 1024, 24, true, true);    // 64 x 6 = 384 items
  EXPECT_EQ(inst(small), Inst(64, 2));
  EXPECT_EQ(inst(small, FlashVariant::Hopper), Inst(32, 3));
  EXPECT_EQ(inst(big), Inst(32, 3));
  EXPECT_EQ(inst(params(1, 12, 12, 2112, 2112, 32, false, false)), Inst(32, 3));  // 132
  EXPECT_EQ(inst(params(1, 12, 12, 1920, 1920, 32, false, false)), Inst(64, 2));  // 120
  EXPECT_EQ(inst(params(1, 8, 8, 64, 64, 40, false, false)), Inst(64, 2));
  EXPECT_EQ(inst(params(1, 8, 8, 64, 64, 96, false, false)), Inst(96, 2));
  EXPECT_EQ(inst(params(1, 8, 8, 64, 64, 80, false, false)), Inst(96, 2));
  EXPECT_EQ(inst(params(1, 8, 8, 64, 64, 104, false, false)), Inst(128, 2));
  EXPECT_EQ(inst(params(4, 16, 16, 2048, 2048, 96, true, false)), Inst(96, 2));  // no three-warpgroup D = 96
  EXPECT_EQ(inst(params(2, 16, 16, 4096, 4096, 128, false, false)), Inst(128, 2));
  // D = 136..160: the D = 160 instance where every row of Q, K and V starts on a 32-byte boundary, else D = 192's
  // (sm90/plan_sm90.cu: a 64-byte box row 16 bytes off a boundary reads three sectors for two).
  EXPECT_EQ(inst(params(4, 16, 16, 2048, 2048, 160, false, false)), Inst(160, 2));
  EXPECT_EQ(inst(params(4, 16, 16, 2048, 2048, 144, true, true)), Inst(160, 2));
  EXPECT_EQ(inst(params(4, 16, 16, 2048, 2048, 136, false, false)), Inst(192, 2));  // 272-byte rows
  EXPECT_EQ(inst(params(4, 16, 16, 2048, 2048, 152, false, true)), Inst(192, 2));   // 304-byte rows
  EXPECT_EQ(inst(params(4, 16, 16, 2048, 2048, 168, false, false)), Inst(192, 2));
  {
    FlashFwdParams p = params(4, 16, 16, 2048, 2048, 160, false, false);
    p.k_seq_stride = 16 * 160 + 8;  // K's rows 16 bytes off
    EXPECT_EQ(inst(p), Inst(192, 2));
    p = params(4, 16, 16, 2048, 2048, 160, false, false);
    alignas(128) static unsigned char shifted[64];
    p.v = shifted + 16;  // V 16 bytes past a 32-byte boundary
    EXPECT_EQ(inst(p), Inst(192, 2));
    p.v = shifted + 32;
    EXPECT_EQ(inst(p), Inst(160, 2));
  }
  // D = 64 (and 40..56): three warpgroups where 192-row items fill the SMs, non-causal, or causal from 2048
  // query rows, and 192-row blocks pad the queries by at most 1/8 more than 128-row ones; forced too (the
  // same kernel's tile shape). Not with pages or variants (not built).
  const FlashFwdParams wide = params(4, 16, 16, 2048, 2048, 64, true, false);  // 64 x 11 = 704 items
  EXPECT_EQ(inst(wide), Inst(64, 3));
  EXPECT_EQ(inst(wide, FlashVariant::Hopper), Inst(64, 3));
  EXPECT_EQ(inst(params(4, 16, 16, 2048, 2048, 64, true, true)), Inst(64, 3));   // causal, 2048 rows
  EXPECT_EQ(inst(params(8, 16, 16, 2047, 2047, 64, true, true)), Inst(64, 2));   // causal, 2047 rows
  EXPECT_EQ(inst(params(8, 16, 16, 1024, 1024, 64, false, true)), Inst(64, 2));  // causal, 1024 rows: 768 items
  EXPECT_EQ(inst(params(1, 8, 8, 2048, 2048, 64, false, false)), Inst(64, 2));   // 88 items
  EXPECT_EQ(inst(params(1, 12, 12, 2112, 2112, 56, false, false)), Inst(64, 3)); // 132 items
  EXPECT_EQ(inst(params(1, 12, 12, 1920, 1920, 64, false, false)), Inst(64, 2)); // 120
  EXPECT_EQ(inst(params(16, 16, 16, 512, 512, 64, false, false)), Inst(64, 3));  // 576 rows for 512
  EXPECT_EQ(inst(params(64, 16, 16, 128, 128, 64, false, false)), Inst(64, 2));  // 192 rows for 128
  EXPECT_EQ(inst(params(32, 16, 16, 640, 640, 64, false, false)), Inst(64, 2));  // 768 rows for 640
  EXPECT_EQ(inst(params(32, 16, 16, 576, 576, 64, false, false)), Inst(64, 3));  // 576 rows for 640
  FlashFwdParams soft = wide, window = wide, alibi = wide, sinks = wide;
  soft.softcap = 30.f;
  window.window_left = 255;
  alignas(16) static float per_head[16] = {};
  alibi.alibi_slopes = per_head;
  sinks.sinks = per_head;
  for (const FlashFwdParams& v : {soft, window, alibi, sinks}) EXPECT_EQ(inst(v), Inst(64, 2));
  FlashFwdParams pages = wide;
  alignas(16) static int table[16] = {};
  pages.block_table = table, pages.page_size = 256, pages.num_pages = 16, pages.pages_per_seq = 8;
  EXPECT_EQ(inst(pages), Inst(64, 2));
  FlashFwdParams fp8 = wide;
  fp8.fp8 = true;
  EXPECT_EQ(inst(fp8), Inst(128, 2));
  // launch_override.hopper_wgs forces the D = 64 instance's warpgroups either way (an A/B of the rule above:
  // perf/dev/hopper_dev.cu wgs); where the asked-for instance is not built, the plan is declined naming the field.
  {
    flashcore::cuda::FlashFwdLaunchOverride two{}, three{};
    two.hopper_wgs = 2, three.hopper_wgs = 3;
    FlashFwdParams p = params(16, 16, 16, 512, 512, 64, false, false);  // Auto: three (above)
    p.launch_override = &two;
    EXPECT_EQ(inst(p), Inst(64, 2));
    p = params(16, 16, 16, 512, 512, 64, false, true);  // causal, 512 rows: Auto two
    p.launch_override = &three;
    EXPECT_EQ(inst(p), Inst(64, 3));
    p = params(1, 8, 8, 100, 100, 40, false, false);  // D = 40 on the D = 64 instance, one item: three if asked
    p.launch_override = &three;
    EXPECT_EQ(inst(p, FlashVariant::Hopper), Inst(64, 3));
    h100.hopper_kernel_loads = true;
    const auto declined = [&](FlashFwdParams q, const flashcore::cuda::FlashFwdLaunchOverride* ov) {
      q.launch_override = ov;
      flashcore::cuda::FlashFwdPlan plan;
      return flashcore::cuda::flash_fwd_plan(q, h100, FlashVariant::Hopper, &plan);
    };
    for (const FlashFwdParams& q : {pages, soft, window, alibi, sinks})  // three not built with pages or variants
      EXPECT_NE(declined(q, &three).find("launch_override.hopper_wgs = 3"), std::string::npos) << declined(q, &three);
    EXPECT_NE(declined(params(2, 16, 16, 4096, 4096, 128, false, false), &two).find("launch_override.hopper_wgs = 2"),
              std::string::npos);  // D = 128: one instance
    EXPECT_NE(declined(fp8, &two).find("launch_override.hopper_wgs = 2"), std::string::npos);
    for (int bad : {1, 4, -1}) {
      flashcore::cuda::FlashFwdLaunchOverride ov{};
      ov.hopper_wgs = bad;
      EXPECT_NE(declined(wide, &ov).find("launch_override.hopper_wgs not in {0, 2, 3}"), std::string::npos) << bad;
    }
    h100.hopper_kernel_loads = false;
  }
  // The shapes that follow: 192 query rows a block, its shared memory within an H100's.
  EXPECT_EQ(sm90_block_m(64, false, 3), 192);
  EXPECT_EQ(sm90_block_m(64), 128);
  EXPECT_EQ(sm90_block_m(32), 192);
  EXPECT_LE(sm90_smem_bytes(64, false, 3), size_t(227 * 1024));
  EXPECT_TRUE(hopper_instance_built(64, 3));
  EXPECT_FALSE(hopper_instance_built(128, 3));
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
  // D = 32: the wide kernel's steps of two tiles need a ring of at least four, even where the launch
  // override asks for two stages; D = 64 (one tile a step) keeps the row's.
  using flashcore::cuda::FlashFwdLaunchOverride;
  FlashFwdLaunchOverride two_stages;
  two_stages.stages = 2;
  const FlashFwdLaunchOverride* const overrides[] = {nullptr, &two_stages};
  for (const FlashFwdLaunchOverride* ov : overrides) {
    FlashFwdParams d32 = params(4, 16, 16, 4096, 4096, 32, false, false);
    d32.launch_override = ov;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(d32, l4, FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.kernel, FlashKernel::Wide);
    EXPECT_EQ(plan.stages, flashcore::cuda::detail::wide_min_stages(32));
    EXPECT_EQ(plan.smem, flashcore::cuda::detail::TileConfig<32>::smem_bytes(128, 1, plan.stages));
    EXPECT_LE(plan.smem, kL4SmemOptin);
    FlashFwdParams d64 = params(4, 16, 16, 4096, 4096, 64, false, false);
    d64.launch_override = ov;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(d64, l4, FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.kernel, FlashKernel::Wide);
    EXPECT_EQ(plan.stages, 2);  // asked for (ov), or the ring that lets an L4's SM hold two blocks (below)
  }
  // Residency (register_cap_blocks_per_sm): a 128-thread block of 255-register threads leaves room for two an
  // SM, and the wide kernel is built for two. D = 64's row asks for 3 stages (64 KB a block): an H100 (228 KB an
  // SM) and an A100 (164 KB) hold two such blocks and keep them; an L4's SM (100 KB) holds one, so its plan
  // takes 2 stages (48 KB, two blocks). An explicit override keeps its stages. D = 128 (Q alone is 32 KB) holds
  // one block at any depth on an L4, so the row's ring stays. The 16-row kernel the same way: its D = 64
  // 64-row blocks (4 warps, 56 KB at the row's 3 stages) get 2 stages on an L4; its warp-specialized blocks
  // (5 warps: one an SM by registers at the cap) keep the row's.
  {
    using flashcore::cuda::detail::register_cap_blocks_per_sm;
    using flashcore::cuda::detail::smem_blocks_per_sm;
    EXPECT_EQ(register_cap_blocks_per_sm(128), 2);
    EXPECT_EQ(register_cap_blocks_per_sm(160), 1);
    EXPECT_EQ(register_cap_blocks_per_sm(256), 1);
    DeviceLimits h100 = l4, a100 = l4;
    h100.cc_major = 9, h100.cc_minor = 0, h100.sm_count = 132, h100.smem_optin_per_block = 227 * 1024;
    a100.cc_major = 8, a100.cc_minor = 0, a100.sm_count = 108, a100.smem_optin_per_block = 163 * 1024;
    const FlashFwdParams d64 = params(4, 16, 16, 4096, 4096, 64, true, false);
    for (const DeviceLimits* dev : {&h100, &a100}) {
      ASSERT_EQ(flashcore::cuda::flash_fwd_plan(d64, *dev, FlashVariant::AllWarps, &plan), "");
      EXPECT_EQ(plan.kernel, FlashKernel::Wide);
      EXPECT_EQ(plan.stages, 3) << dev->smem_optin_per_block;
      EXPECT_GE(smem_blocks_per_sm(*dev, plan.smem), 2);
    }
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(d64, l4, FlashVariant::AllWarps, &plan), "");
    EXPECT_EQ(plan.kernel, FlashKernel::Wide);
    EXPECT_EQ(plan.stages, 2);
    EXPECT_EQ(plan.smem, flashcore::cuda::detail::TileConfig<64>::smem_bytes(128, 1, 2));
    EXPECT_EQ(smem_blocks_per_sm(l4, plan.smem), 2);
    EXPECT_EQ(smem_blocks_per_sm(l4, flashcore::cuda::detail::TileConfig<64>::smem_bytes(128, 1, 3)), 1);
    FlashFwdLaunchOverride three_stages;
    three_stages.stages = 3;
    FlashFwdParams d64_three = d64;
    d64_three.launch_override = &three_stages;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(d64_three, l4, FlashVariant::AllWarps, &plan), "");
    EXPECT_EQ(plan.kernel, FlashKernel::Wide);
    EXPECT_EQ(plan.stages, 3);
    FlashFwdParams d128 = params(2, 16, 16, 4096, 4096, 128, false, false);
    FlashFwdPlan on_h100;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(d128, h100, FlashVariant::AllWarps, &on_h100), "");
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(d128, l4, FlashVariant::AllWarps, &plan), "");
    EXPECT_EQ(plan.kernel, FlashKernel::Wide);
    EXPECT_EQ(plan.stages, on_h100.stages);
    EXPECT_EQ(smem_blocks_per_sm(l4, plan.smem), 1);
    // (1,8,2048,64): the 16-row kernel's 64-row blocks, 3 stages in the table.
    const FlashFwdParams mid = params(1, 8, 8, 2048, 2048, 64, false, false);
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(mid, h100, FlashVariant::AllWarps, &on_h100), "");
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(mid, l4, FlashVariant::AllWarps, &plan), "");
    EXPECT_EQ(on_h100.kernel, FlashKernel::Rows16);
    EXPECT_EQ(on_h100.threads, 128);
    EXPECT_EQ(on_h100.stages, 3);
    EXPECT_EQ(plan.kernel, FlashKernel::Rows16);
    EXPECT_EQ(plan.stages, 2);
    EXPECT_EQ(smem_blocks_per_sm(l4, plan.smem), 2);
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(mid, h100, FlashVariant::WarpSpecialized, &on_h100), "");
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(mid, l4, FlashVariant::WarpSpecialized, &plan), "");
    EXPECT_EQ(plan.kernel, FlashKernel::Rows16WarpSpecialized);
    EXPECT_EQ(plan.threads, 160);
    EXPECT_EQ(plan.stages, on_h100.stages);
  }
  // One head, one short query block against many keys: too few blocks for the GPU, so the key range
  // is split, with a workspace for the partials and tickets (the 16-row kernel, forced: Auto runs such
  // problems on the decode kernel, tested below).
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(1, 1, 1, 16, 8192, 128, true, false), l4, FlashVariant::AllWarps, &plan), "");
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

// ------------------------------------------------------------------------------------------------
// The decode kernel (src/backends/cuda/decode/): few query rows against long keys, and every problem
// with sequence arrays.
// ------------------------------------------------------------------------------------------------
namespace {

flashcore::cuda::DeviceLimits h100_limits() {
  flashcore::cuda::DeviceLimits d;
  d.cc_major = 9, d.cc_minor = 0, d.sm_count = 132, d.smem_optin_per_block = 227 * 1024;
  return d;
}
flashcore::cuda::DeviceLimits l4_limits() {
  flashcore::cuda::DeviceLimits d;
  d.cc_major = 8, d.cc_minor = 9, d.sm_count = 58, d.smem_optin_per_block = kL4SmemOptin;
  return d;
}

// Sequence arrays only need to be non-null for the plan (it never reads them).
alignas(16) int g_seq_dummy[16];

}  // namespace

// The decode shapes (fp16, GQA, D=128) run on the decode kernel, with the split counts of the
// rule (one wave at D=128 of one block per SM of an H100, splits = 132 / (batch · heads_kv · row blocks),
// where that fills the SMs within 5 % of two blocks per SM; else two per SM; D=64: two per SM).
TEST(CudaConfig, DecodeShapesRunOnTheDecodeKernel) {
  using flashcore::cuda::FlashFwdPlan;
  using flashcore::cuda::FlashKernel;
  using flashcore::cuda::FlashVariant;
  const auto h100 = h100_limits();
  struct Shape { int b, hq, hkv, lq, lk, splits; };
  const Shape shapes[] = {{8, 32, 8, 1, 8192, 2}, {1, 32, 8, 1, 32768, 16}, {64, 32, 8, 1, 2048, 1},
                          {16, 64, 8, 1, 4096, 1}, {8, 32, 8, 4, 8192, 2}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(std::to_string(s.b) + "," + std::to_string(s.hq) + "," + std::to_string(s.hkv) + "," +
                 std::to_string(s.lq) + "," + std::to_string(s.lk));
    FlashFwdPlan plan, again;
    const auto p = params(s.b, s.hq, s.hkv, s.lq, s.lk, 128, false, s.lq > 1);
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(p, h100, FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.kernel, FlashKernel::Decode);
    EXPECT_NE(plan.describe().find("decode-splitkv"), std::string::npos) << plan.describe();
    EXPECT_EQ(plan.block_m, 16);  // group x Lq = 4 or 8 or 16 packed rows: one row tile
    EXPECT_EQ(plan.n_mblocks, 1);
    EXPECT_EQ(plan.threads, 128);
    EXPECT_EQ(plan.max_splits, s.splits);
    EXPECT_LE(plan.smem, 113u * 1024);  // two blocks per SM
    // Two pieces: a thread block cluster, where this build has the decode kernel's sm_90 image.
    EXPECT_EQ(plan.split_cluster, s.splits == 2 && flashcore::cuda::decode_cluster_merge_built() ? 2 : 0) << plan.describe();
    EXPECT_EQ(plan.split_partial_bytes > 0, s.splits > 1 && plan.split_cluster == 0);
    // Deterministic: the same problem gets the same plan (split count, workspace).
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(p, h100, FlashVariant::Auto, &again), "");
    EXPECT_EQ(again.describe(), plan.describe());
    EXPECT_EQ(again.split_partial_bytes, plan.split_partial_bytes);
  }
  // One block per SM only where it fills the SMs as well as two: 50 (b, hk) pairs get 5 pieces (250 of 264
  // slots) rather than 2 (100 of 132 SMs); D=64 keeps two per SM (4 pieces of (8,32,8,1,8192)).
  FlashFwdPlan plan;
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(10, 20, 5, 1, 8192, 128, false, false), h100, FlashVariant::Auto, &plan), "");
  EXPECT_EQ(plan.max_splits, 5);
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(8, 32, 8, 1, 8192, 64, false, false), h100, FlashVariant::Auto, &plan), "");
  EXPECT_EQ(plan.kernel, FlashKernel::Decode);
  EXPECT_EQ(plan.max_splits, 4);
  // More packed rows than one block holds: row blocks of 64 rows (group 8 x 64 queries = 8 blocks).
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(2, 64, 8, 64, 4096, 128, false, true), h100, FlashVariant::Decode, &plan), "");
  EXPECT_EQ(plan.kernel, FlashKernel::Decode);
  EXPECT_EQ(plan.block_m, 64);
  EXPECT_EQ(plan.key_split_warps, 1);
  EXPECT_EQ(plan.n_mblocks, 8);
  // Auto's rule (decode/plan_decode.cu, kDecodeTable): GQA and long keys on the decode kernel; short keys, and many
  // rows without GQA, on the others (measured there).
  struct Rule { int b, hq, hkv, lq, lk, d; bool decode; };
  const Rule rules[] = {{4, 32, 8, 1, 512, 128, true},   {4, 32, 8, 1, 128, 128, false}, {4, 32, 8, 16, 2048, 128, true},
                        {4, 8, 8, 1, 8192, 128, true},   {4, 8, 8, 64, 8192, 128, true},  {4, 8, 8, 64, 2048, 128, false},
                        {4, 8, 8, 1, 2048, 64, false},   {4, 8, 8, 1, 512, 256, true},
                        {4, 64, 8, 1, 512, 64, true},    {4, 32, 8, 1, 512, 64, false},   {4, 64, 8, 16, 2048, 64, true},
                        {4, 64, 8, 32, 8192, 128, false}};
  for (const Rule& r : rules) {
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(r.b, r.hq, r.hkv, r.lq, r.lk, r.d, false, r.lq > 1), h100,
                                              FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.kernel == FlashKernel::Decode, r.decode)
        << r.b << "," << r.hq << "," << r.hkv << "," << r.lq << "," << r.lk << "," << r.d << ": " << plan.describe();
  }
  // At most one piece per 64-key tile: 100 keys in 2 pieces, 512 in 8, on an otherwise empty GPU.
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(1, 8, 8, 1, 100, 128, false, false), h100, FlashVariant::Decode, &plan), "");
  EXPECT_EQ(plan.max_splits, 2);
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(1, 8, 8, 1, 512, 128, false, false), h100, FlashVariant::Decode, &plan), "");
  EXPECT_EQ(plan.max_splits, 8);
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(1, 8, 8, 1, 64, 128, false, false), h100, FlashVariant::Decode, &plan), "");
  EXPECT_EQ(plan.max_splits, 1);
  EXPECT_EQ(plan.split_partial_bytes, 0u);
  // One or two (b, kv head) pairs with long caches: more pieces than the kernel merges itself (64), merged by
  // the combine kernel (decode/combine.cuh): one wave of 132 blocks at D = 128, 256 (of 264 slots) at D = 64;
  // at most one piece a tile; a forced split count up to 256.
  struct Many { int b, hq, hkv, lk, d, splits; bool combine; };
  const Many many[] = {{1, 8, 1, 65536, 128, 132, true}, {1, 32, 2, 32768, 128, 66, true}, {1, 8, 1, 65536, 64, 256, true},
                       {1, 8, 1, 65536, 256, 132, true}, {1, 8, 1, 2048, 128, 32, false}, {2, 16, 2, 65536, 128, 33, false}};
  for (const Many& m : many) {
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(m.b, m.hq, m.hkv, 1, m.lk, m.d, false, false), h100, FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.kernel, FlashKernel::Decode);
    EXPECT_EQ(plan.max_splits, m.splits) << plan.describe();
    EXPECT_EQ(plan.split_combine, m.combine) << plan.describe();
    EXPECT_EQ(plan.describe().find(" combine") != std::string::npos, m.combine) << plan.describe();
    // Tickets only where the last block merges (a captured call zeroes them in a memset node of its own).
    EXPECT_EQ(plan.split_counter_bytes == 0, m.combine) << plan.describe();
    EXPECT_GT(plan.split_partial_bytes, 0u);
    EXPECT_TRUE(plan.dependent_launch);  // compute capability 9.0: programmatic dependent launches
    EXPECT_EQ(plan.combine_when_captured, !m.combine);  // up to 64 pieces of at most 16 rows: combined when captured
  }
  {
    // A captured fixed-grid split merges by the combine kernel up to 16 packed rows a (b, kv head), except where
    // the pieces are a thread block cluster (two pieces at D = 128 on compute capability 9.0: no tickets anyway);
    // launch_override.split_cluster = -1 gives those back to the combine kernel.
    struct Captured { int b, hq, hkv, lq, lk; bool combine; int cluster; };
    const Captured cap[] = {{8, 32, 8, 1, 8192, false, 2}, {8, 32, 8, 4, 8192, false, 2}, {2, 16, 2, 2, 5000, true, 0},
                            {2, 16, 2, 3, 5000, false, 0}, {64, 32, 8, 1, 2048, false, 0}};
    const bool clusters = flashcore::cuda::decode_cluster_merge_built();
    for (const Captured& c : cap) {
      FlashFwdParams cp = params(c.b, c.hq, c.hkv, c.lq, c.lk, 128, false, c.lq > 1);
      ASSERT_EQ(flashcore::cuda::flash_fwd_plan(cp, h100, FlashVariant::Decode, &plan), "");
      EXPECT_EQ(plan.combine_when_captured, c.combine || (c.cluster > 0 && !clusters))
          << c.b << "," << c.hq << "," << c.lq << ": " << plan.describe();
      EXPECT_EQ(plan.split_cluster, clusters ? c.cluster : 0) << plan.describe();
      flashcore::cuda::FlashFwdLaunchOverride tickets{};
      tickets.split_cluster = -1;
      cp.launch_override = &tickets;
      ASSERT_EQ(flashcore::cuda::flash_fwd_plan(cp, h100, FlashVariant::Decode, &plan), "");
      EXPECT_EQ(plan.split_cluster, 0) << plan.describe();
      EXPECT_EQ(plan.combine_when_captured, c.combine || c.cluster > 0) << plan.describe();
    }
    // The balanced schedule too: its pieces are where the block scans put them, so the combine kernel reads each
    // item's first block and piece count from a map after the partials (2 ints an item), which the plan sizes; eager
    // calls keep the tickets.
    FlashFwdParams mixed = params(16, 32, 8, 1, 8192, 128, false, false);
    mixed.seqlens_k = g_seq_dummy;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(mixed, h100, FlashVariant::Decode, &plan), "");
    EXPECT_GT(plan.work_slots, 0);
    EXPECT_TRUE(plan.combine_when_captured);
    EXPECT_GT(plan.split_counter_bytes, 0u);
    EXPECT_GT(plan.split_map_offset, plan.split_lse_offset);
    EXPECT_GE(plan.split_partial_bytes, plan.split_map_offset + size_t(16 * 8 * 2) * sizeof(int));
    FlashFwdParams many_rows = params(16, 32, 8, 5, 8192, 128, false, true);  // 20 packed rows: tickets captured too
    many_rows.seqlens_k = g_seq_dummy;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(many_rows, h100, FlashVariant::Decode, &plan), "");
    EXPECT_GT(plan.work_slots, 0);
    EXPECT_FALSE(plan.combine_when_captured);
    EXPECT_EQ(plan.split_map_offset, 0u);
    // ... and where the combine kernel's blocks (a packed row of the call each) would be more than one wave of 4 an
    // SM: 16 sequences x 32 heads = 512 <= 528 on 132 SMs, 17 x 32 = 544 not.
    FlashFwdParams wide = params(17, 32, 8, 1, 8192, 128, false, false);
    wide.seqlens_k = g_seq_dummy;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(wide, h100, FlashVariant::Decode, &plan), "");
    EXPECT_GT(plan.work_slots, 0);
    EXPECT_FALSE(plan.combine_when_captured);
    // The graph test's two fit cases (tests/gpu/test_gpu.cpp, kFitLengths): 9 x 32 x 1 = 288 rows combined, so no memset
    // node; 9 x 32 x 2 = 576 with tickets.
    for (int lq : {1, 2}) {
      FlashFwdParams fit = params(9, 32, 8, lq, 2048, 128, lq > 1, false);
      fit.seqlens_k = g_seq_dummy;
      ASSERT_EQ(flashcore::cuda::flash_fwd_plan(fit, h100, FlashVariant::Auto, &plan), "");
      EXPECT_GT(plan.work_slots, 0);
      EXPECT_EQ(plan.combine_when_captured, lq == 1) << plan.describe();
    }
  }
  {
    // launch_override.combine: the combine kernel merges any fixed-grid split (no tickets); the balanced
    // schedule is not taken then (its pieces have no fixed place the combine kernel could find).
    FlashFwdParams forced = params(8, 32, 8, 1, 8192, 128, false, false);
    flashcore::cuda::FlashFwdLaunchOverride ov{};
    ov.combine = 1;
    forced.launch_override = &ov;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(forced, h100, FlashVariant::Decode, &plan), "");
    EXPECT_EQ(plan.max_splits, 2) << plan.describe();
    EXPECT_TRUE(plan.split_combine);
    EXPECT_EQ(plan.split_counter_bytes, 0u);
    FlashFwdParams cached = params(8, 32, 8, 1, 8192, 128, false, false);
    cached.seqlens_k = g_seq_dummy;  // cache lengths: the balanced schedule without the override
    cached.launch_override = &ov;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(cached, h100, FlashVariant::Decode, &plan), "");
    EXPECT_EQ(plan.work_slots, 0) << plan.describe();
    EXPECT_EQ(plan.max_splits, 2) << plan.describe();
    EXPECT_TRUE(plan.split_combine);
    ov.combine = 2;
    EXPECT_NE(flashcore::cuda::flash_fwd_plan(forced, h100, FlashVariant::Decode, &plan).find("launch_override.combine not in [0, 1]"),
              std::string::npos);
    for (int copies : {3, -1}) {
      ov.combine = 0, ov.paged_copies = copies;
      EXPECT_NE(flashcore::cuda::flash_fwd_plan(forced, h100, FlashVariant::Decode, &plan).find("launch_override.paged_copies not in [0, 2]"),
                std::string::npos) << copies;
    }
  }
  // The split merge through a thread block cluster (decode/merge.cuh, merge_cluster_pieces): the fixed grid's two
  // pieces of one row block at D = 128 on compute capability 9.0, named in the plan; no tickets, partials or combine
  // kernel, so no workspace. Not on an sm_89 device (no clusters), not at other head dims or piece counts (larger
  // clusters measured slower), not on the balanced schedule (its pieces are not consecutive blocks of one item).
  // Only where this build has the decode kernel's sm_90 image (an sm_80-89 image never sees a cluster).
  if (flashcore::cuda::decode_cluster_merge_built()) {
    FlashFwdParams two = params(8, 32, 8, 1, 8192, 128, false, false);
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(two, h100, FlashVariant::Decode, &plan), "");
    EXPECT_EQ(plan.max_splits, 2) << plan.describe();
    EXPECT_EQ(plan.split_cluster, 2) << plan.describe();
    EXPECT_NE(plan.describe().find("splits=2 cluster"), std::string::npos) << plan.describe();
    EXPECT_EQ(plan.split_counter_bytes, 0u);
    EXPECT_EQ(plan.split_partial_bytes, 0u);
    EXPECT_FALSE(plan.split_combine);
    // 32 and 64 packed rows a block (two and four row tiles) too: the GPU test's shapes of those.
    for (int lq : {4, 8}) {
      ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(8, 64, 8, lq, 8192, 128, false, true), h100, FlashVariant::Decode, &plan), "");
      EXPECT_EQ(plan.block_m, 8 * lq) << plan.describe();
      EXPECT_EQ(plan.split_cluster, 2) << plan.describe();
      EXPECT_EQ(plan.split_partial_bytes, 0u) << plan.describe();
    }
    flashcore::cuda::DeviceLimits sm89 = h100;  // the same SMs without clusters
    sm89.cc_major = 8, sm89.cc_minor = 9;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(two, sm89, FlashVariant::Decode, &plan), "");
    EXPECT_EQ(plan.max_splits, 2) << plan.describe();
    EXPECT_EQ(plan.split_cluster, 0) << plan.describe();
    EXPECT_GT(plan.split_partial_bytes, 0u);
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(8, 32, 8, 1, 8192, 64, false, false), h100, FlashVariant::Decode, &plan), "");
    EXPECT_EQ(plan.split_cluster, 0) << plan.describe();
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(1, 32, 8, 1, 32768, 128, false, false), h100, FlashVariant::Decode, &plan), "");
    EXPECT_EQ(plan.max_splits, 16) << plan.describe();
    EXPECT_EQ(plan.split_cluster, 0) << plan.describe();
    EXPECT_GT(plan.split_counter_bytes, 0u);
    FlashFwdParams cached = two;
    cached.seqlens_k = g_seq_dummy;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(cached, h100, FlashVariant::Decode, &plan), "");
    EXPECT_GT(plan.work_slots, 0) << plan.describe();
    EXPECT_EQ(plan.split_cluster, 0) << plan.describe();
    flashcore::cuda::FlashFwdLaunchOverride ov{};
    ov.splits = 2;  // cache lengths on the fixed grid: a piece may see no keys, and still takes part in the cluster
    cached.launch_override = &ov;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(cached, h100, FlashVariant::Decode, &plan), "");
    EXPECT_EQ(plan.work_slots, 0) << plan.describe();
    EXPECT_EQ(plan.split_cluster, 2) << plan.describe();
    ov = {};
    ov.split_cluster = -1;
    two.launch_override = &ov;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(two, h100, FlashVariant::Decode, &plan), "");
    EXPECT_EQ(plan.split_cluster, 0) << plan.describe();
    EXPECT_GT(plan.split_counter_bytes, 0u);
    for (int bad : {1, -2}) {
      ov.split_cluster = bad;
      EXPECT_NE(flashcore::cuda::flash_fwd_plan(two, h100, FlashVariant::Decode, &plan).find("launch_override.split_cluster not in [-1, 0]"),
                std::string::npos) << bad;
    }
  }
  {
    FlashFwdParams forced = params(1, 8, 8, 1, 16384, 128, false, false);
    flashcore::cuda::FlashFwdLaunchOverride ov{};
    ov.splits = 200;
    forced.launch_override = &ov;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(forced, h100, FlashVariant::Decode, &plan), "");
    EXPECT_EQ(plan.max_splits, 200);
    EXPECT_TRUE(plan.split_combine);
    ov.splits = 257;
    EXPECT_NE(flashcore::cuda::flash_fwd_plan(forced, h100, FlashVariant::Decode, &plan).find("launch_override.splits not in [0, 256]"),
              std::string::npos);
  }
  // Prefill stays on the other kernels.
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(2, 16, 4, 512, 4096, 128, false, true), h100, FlashVariant::Auto, &plan), "");
  EXPECT_NE(plan.kernel, FlashKernel::Decode);
  EXPECT_NE(flashcore::cuda::flash_fwd_plan(params(2, 16, 4, 65, 4096, 128, false, true), h100, FlashVariant::Decode, &plan)
                .find("seqlen_q <= 64"),
            std::string::npos);
}

// Every head dim runs on the decode kernel of the next built size (64, 128, 256), within the device's
// shared memory; above 128 it does not fit an sm_89 (99 KB), and is declined naming shared memory.
TEST(CudaConfig, DecodeHeadDimsAndDevices) {
  using flashcore::cuda::FlashFwdPlan;
  using flashcore::cuda::FlashKernel;
  using flashcore::cuda::FlashVariant;
  for (int d = 8; d <= 256; d += 8) {
    FlashFwdPlan plan;
    const auto p = params(4, 16, 4, 1, 4096, d, true, false);
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(p, h100_limits(), FlashVariant::Decode, &plan), "") << d;
    EXPECT_EQ(plan.kernel, FlashKernel::Decode);
    EXPECT_LE(plan.smem, 227u * 1024);
    const std::string l4 = flashcore::cuda::flash_fwd_plan(p, l4_limits(), FlashVariant::Decode, &plan);
    if (d <= 128) {
      EXPECT_EQ(l4, "") << d;
      EXPECT_LE(plan.smem, kL4SmemOptin);
    } else {
      EXPECT_NE(l4.find("shared memory"), std::string::npos) << l4;
    }
  }
  // Head dims that round up to the same kernel plan the same workspace.
  FlashFwdPlan p40, p64;
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(1, 8, 1, 1, 8192, 40, false, false), h100_limits(), FlashVariant::Decode, &p40), "");
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(1, 8, 1, 1, 8192, 64, false, false), h100_limits(), FlashVariant::Decode, &p64), "");
  EXPECT_EQ(p40.describe(), p64.describe());
  EXPECT_EQ(p40.split_partial_bytes, p64.split_partial_bytes);
}

// Sequence arrays. Paged K/V: the decode kernel reads it (cuda-flash plans it there for seqlen_q <= 64,
// variants included) and the Hopper kernel (paged prefill above 64; forced by name, any length); the
// other kernels forced by name decline, naming why.
// Varlen Q/K and cache lengths: cuda-flash runs up to 64 queries on the decode kernel, longer ones
// (varlen prefill) on the prefill kernels, and every kernel forced by name takes them.
TEST(CudaConfig, SequenceArraysPlan) {
  using flashcore::cuda::FlashFwdParams;
  using flashcore::cuda::FlashFwdPlan;
  using flashcore::cuda::FlashKernel;
  using flashcore::cuda::FlashVariant;
  const auto h100 = h100_limits();
  auto paged = [](FlashFwdParams p, int page) {
    p.block_table = g_seq_dummy, p.seqlens_k = g_seq_dummy;
    p.page_size = page, p.pages_per_seq = (p.seqlen_k + page - 1) / page;
    p.num_pages = p.batch * p.pages_per_seq;
    p.k_batch_stride = p.v_batch_stride = p.k_seq_stride * page;
    return p;
  };
  auto varlen = [](FlashFwdParams p) {
    p.cu_seqlens_q = p.cu_seqlens_k = g_seq_dummy;
    p.total_q = p.total_k = p.batch * p.seqlen_q;
    return p;
  };
  auto cache = [](FlashFwdParams p) {
    p.seqlens_k = g_seq_dummy;
    return p;
  };
  const FlashFwdParams decode_layouts[] = {paged(params(8, 32, 8, 1, 8192, 128, false, false), 16),
                                           paged(params(8, 32, 8, 4, 8192, 64, true, true), 256),
                                           varlen(params(8, 32, 8, 64, 2048, 128, true, false)),
                                           varlen(params(3, 8, 8, 1, 100, 96, false, false)),
                                           cache(params(4, 16, 4, 16, 3000, 64, true, false))};
  for (const FlashFwdParams& p : decode_layouts) {
    for (const auto& dev : {h100, l4_limits()}) {
      FlashFwdPlan plan;
      ASSERT_EQ(flashcore::cuda::flash_fwd_plan(p, dev, FlashVariant::Auto, &plan), "");
      EXPECT_EQ(plan.kernel, FlashKernel::Decode);
      ASSERT_EQ(flashcore::cuda::flash_fwd_plan(p, dev, FlashVariant::Decode, &plan), "");
    }
    for (FlashVariant v : {FlashVariant::AllWarps, FlashVariant::WarpSpecialized, FlashVariant::Hopper}) {
      FlashFwdPlan plan;
      const std::string why = flashcore::cuda::flash_fwd_plan(p, h100, v, &plan);
      if (p.block_table != nullptr && v != FlashVariant::Hopper) {
        EXPECT_NE(why.find("paged K/V (block_table) is read by the decode kernel (seqlen_q <= 64) and the Hopper kernel only"),
                  std::string::npos)
            << why;
      } else if (v == FlashVariant::Hopper) {
        EXPECT_EQ(why.find("sequence"), std::string::npos) << why;  // declined for its own reasons here
      } else {
        EXPECT_EQ(why, "");
        EXPECT_NE(plan.kernel, FlashKernel::Decode);
      }
    }
  }
  // Sequence arrays on the decode kernel: the balanced schedule (decode/schedule.cuh) over one or two
  // waves of blocks (2 per SM of an H100 at D=128: 264 per wave), its grid bounded by two waves + the
  // (b, hk, row block) items, workspace rows by block index; a forced split count or more than 128
  // sequences: the fixed grid.
  {
    FlashFwdPlan plan;
    const FlashFwdParams mixed = cache(params(16, 32, 8, 1, 8192, 128, false, false));
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(mixed, h100, FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.kernel, FlashKernel::Decode);
    EXPECT_EQ(plan.work_slots, 2 * 132);
    EXPECT_EQ(plan.work_waves, 0);
    EXPECT_EQ(plan.work_blocks, 2 * 2 * 132 + 16 * 8);
    EXPECT_EQ(plan.max_splits, 64);
    EXPECT_FALSE(plan.split_combine);  // the balanced schedule's pieces are merged in the kernel
    EXPECT_NE(plan.describe().find("balanced slots=264 waves=1-2 blocks=656"), std::string::npos) << plan.describe();
    FlashFwdPlan one;  // one long cache with lengths: the schedule, 64 pieces at most
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(cache(params(1, 8, 1, 1, 65536, 128, false, false)), h100, FlashVariant::Auto, &one), "");
    EXPECT_GT(one.work_slots, 0);
    EXPECT_EQ(one.max_splits, 64);
    EXPECT_FALSE(one.split_combine);
    // Partials by block index (656 blocks of 16 rows: O and the LSE), then the captured combine kernel's map of the
    // 16 x 8 items (2 ints each: 1024 bytes).
    EXPECT_EQ(plan.split_partial_bytes, size_t(656) * 16 * (128 + 1) * sizeof(float) + 1024);
    flashcore::cuda::FlashFwdLaunchOverride ov{};
    ov.work_waves = 4;
    FlashFwdParams waves = mixed;
    waves.launch_override = &ov;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(waves, h100, FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.work_waves, 4);
    EXPECT_EQ(plan.work_blocks, 4 * 2 * 132 + 16 * 8);
    ov = {};
    ov.splits = 3;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(waves, h100, FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.work_slots, 0);
    EXPECT_EQ(plan.max_splits, 3);
    ov = {};
    ov.work_waves = 9;
    EXPECT_NE(flashcore::cuda::flash_fwd_plan(waves, h100, FlashVariant::Auto, &plan).find("launch_override.work_waves not in [0, 8]"),
              std::string::npos);
    // The one-wave fit (decode/schedule.cuh) is the kernel's choice from the lengths; the override reaches it
    // through the plan, and the plan names it.
    for (int fit : {-1, 1}) {
      ov = {};
      ov.work_fit = fit;
      ASSERT_EQ(flashcore::cuda::flash_fwd_plan(waves, h100, FlashVariant::Auto, &plan), "");
      EXPECT_EQ(plan.work_fit, fit);
      EXPECT_NE(plan.describe().find(fit > 0 ? " fit=always" : " fit=never"), std::string::npos) << plan.describe();
    }
    ov = {};
    ov.work_fit = 2;
    EXPECT_NE(flashcore::cuda::flash_fwd_plan(waves, h100, FlashVariant::Auto, &plan).find("launch_override.work_fit not in [-1, 1]"),
              std::string::npos);
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(cache(params(128, 32, 8, 1, 512, 128, false, false)), h100,
                                              FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.work_slots, 2 * 132);  // its largest batch: one sequence per thread
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(cache(params(129, 32, 8, 1, 512, 128, false, false)), h100,
                                              FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.kernel, FlashKernel::Decode);
    EXPECT_EQ(plan.work_slots, 0);
    // The schedule scans its block counts in 21-bit fields: a grid of 2^21 blocks or more (2 waves of 264 +
    // B · Hkv items) takes the fixed grid. 128 x 16379 KV heads: 2096512 + 528 blocks; 16380: 2^21 + 16.
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(cache(params(128, 16379, 16379, 1, 512, 128, false, false)), h100,
                                              FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.work_slots, 2 * 132);
    EXPECT_EQ(plan.work_blocks, 2 * 2 * 132 + 128 * 16379);
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(cache(params(128, 16380, 16380, 1, 512, 128, false, false)), h100,
                                              FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.kernel, FlashKernel::Decode);
    EXPECT_EQ(plan.work_slots, 0);
    // Without sequence arrays: the fixed grid, as before.
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(params(16, 32, 8, 1, 8192, 128, false, false), h100, FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.work_slots, 0);
    // Paged K/V without length arrays (every sequence seqlen_k keys): the fixed grid's one wave of equal
    // pieces, no schedule to compute; with cache lengths: the balanced schedule.
    FlashFwdParams pages_only = paged(params(8, 32, 8, 1, 8192, 128, false, false), 16);
    pages_only.seqlens_k = nullptr;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(pages_only, h100, FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.kernel, FlashKernel::Decode);
    EXPECT_EQ(plan.work_slots, 0);
    EXPECT_EQ(plan.max_splits, 2);  // one block per SM whatever the page size: 132 slots over 8 x 8 (b, hk)
    FlashFwdParams pages64 = paged(params(8, 32, 8, 1, 8192, 128, false, false), 64);
    pages64.seqlens_k = nullptr;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(pages64, h100, FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.max_splits, 2);
    // D = 64 keeps two blocks per SM: 264 slots over 8 x 8.
    FlashFwdParams pages_d64 = paged(params(8, 32, 8, 1, 8192, 64, false, false), 16);
    pages_d64.seqlens_k = nullptr;
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(pages_d64, h100, FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.max_splits, 4);
    ASSERT_EQ(flashcore::cuda::flash_fwd_plan(paged(params(8, 32, 8, 1, 8192, 128, false, false), 16), h100,
                                              FlashVariant::Auto, &plan), "");
    EXPECT_EQ(plan.work_slots, 2 * 132);
  }
  // With the variants (window, softcap, ALiBi, sinks): the decode kernel too.
  FlashFwdParams variants = paged(params(4, 16, 4, 2, 4096, 128, true, false), 64);
  variants.window_left = 100, variants.softcap = 30.f;
  variants.alibi_slopes = variants.sinks = reinterpret_cast<const float*>(g_seq_dummy);
  FlashFwdPlan plan;
  ASSERT_EQ(flashcore::cuda::flash_fwd_plan(variants, h100, FlashVariant::Auto, &plan), "");
  EXPECT_EQ(plan.kernel, FlashKernel::Decode);
  // Varlen prefill and prefill against cache lengths: the prefill kernels, variants included.
  FlashFwdParams prefill_variants = varlen(params(2, 8, 8, 200, 200, 64, true, false));
  prefill_variants.window_left = 50, prefill_variants.softcap = 20.f;
  for (const FlashFwdParams& p : {varlen(params(2, 8, 8, 200, 200, 64, true, false)),
                                  cache(params(4, 16, 4, 300, 3000, 128, true, false)), prefill_variants}) {
    for (const auto& dev : {h100, l4_limits()}) {
      ASSERT_EQ(flashcore::cuda::flash_fwd_plan(p, dev, FlashVariant::Auto, &plan), "");
      EXPECT_NE(plan.kernel, FlashKernel::Decode) << plan.describe();
    }
  }
  // Paged prefill: the Hopper kernel's; where it does not run (no sm_90a image here, an L4, a page
  // size that is not a power of two) declined, saying why both kernels decline (the reference runs it).
  for (const auto& dev : {h100, l4_limits()}) {
    const std::string why = flashcore::cuda::flash_fwd_plan(paged(params(2, 8, 8, 200, 2000, 64, true, false), 64), dev,
                                                            FlashVariant::Auto, nullptr);
    EXPECT_NE(why.find("paged K/V runs on the decode kernel (seqlen_q <= 64) or the Hopper kernel"), std::string::npos) << why;
    EXPECT_NE(why.find("the decode kernel takes seqlen_q <= 64, not 200"), std::string::npos) << why;
    EXPECT_NE(why.find("the Hopper kernel"), why.rfind("the Hopper kernel")) << why;  // its own reason follows
  }
  auto h100_hopper = h100;
  h100_hopper.hopper_kernel_loads = true;  // as on an H100 (encoding the TMA maps needs the driver: not checked here)
  const std::string why48 = flashcore::cuda::flash_fwd_plan(paged(params(2, 8, 8, 200, 2000, 64, true, false), 48),
                                                            h100_hopper, FlashVariant::Auto, nullptr);
  EXPECT_NE(why48.find("power-of-two page_size >= 16 and num_pages >= 1, got page_size 48"), std::string::npos) << why48;
  const std::string why64 = flashcore::cuda::flash_fwd_plan(paged(params(2, 8, 8, 200, 2000, 64, true, false), 64),
                                                            h100_hopper, FlashVariant::Auto, nullptr);
  EXPECT_EQ(why64.find("page_size"), std::string::npos) << why64;  // accepted, or declined by the driver only
}

// Backward params over a forward's: 16-byte aligned dummy gradients and the LSE, dO and dQ with Q's
// strides, dK and dV with K's (as flashcore gives them).
static flashcore::cuda::FlashBwdParams bwd_params(const FlashFwdParams& fwd) {
  alignas(16) static unsigned char grad[16];
  alignas(16) static float lse[1];
  flashcore::cuda::FlashBwdParams b{};
  b.fwd = fwd;
  b.fwd.lse = lse;
  b.d_o = grad, b.dq = grad, b.dk = grad, b.dv = grad;
  b.do_batch_stride = b.dq_batch_stride = fwd.q_batch_stride, b.dk_batch_stride = b.dv_batch_stride = fwd.k_batch_stride;
  b.do_seq_stride = b.dq_seq_stride = fwd.q_seq_stride, b.dk_seq_stride = b.dv_seq_stride = fwd.k_seq_stride;
  b.do_head_stride = b.dq_head_stride = fwd.q_head_stride, b.dk_head_stride = b.dv_head_stride = fwd.k_head_stride;
  return b;
}

// The pointer and stride checks both plans share (detail::pointer_limits, stride_limits) name the
// field, the forward's tensors and the backward's gradients alike.
TEST(CudaConfig, PointersAndStridesAreNamedInBothPlans) {
  flashcore::cuda::DeviceLimits h100;
  h100.cc_major = 9, h100.smem_optin_per_block = 227 * 1024;
  FlashFwdParams fwd = params(1, 8, 8, 64, 64, 64, true, false);
  fwd.q_seq_stride = 8 * 64 + 4;
  EXPECT_EQ(flashcore::cuda::flash_fwd_unsupported_reason(fwd, 9, 0, h100.smem_optin_per_block),
            "q_seq_stride 516 is not a multiple of 8 elements");
  fwd = params(1, 8, 8, 64, 64, 64, true, false);
  fwd.k = static_cast<const unsigned char*>(fwd.k) + 2;
  EXPECT_EQ(flashcore::cuda::flash_fwd_unsupported_reason(fwd, 9, 0, h100.smem_optin_per_block),
            "k pointer is not 16-byte aligned");

  const flashcore::cuda::FlashBwdParams b = bwd_params(params(1, 8, 8, 64, 64, 64, true, false));
  flashcore::cuda::FlashBwdPlan plan;
  EXPECT_EQ(flashcore::cuda::flash_bwd_plan(b, h100, &plan), "");
  flashcore::cuda::FlashBwdParams bad = b;
  bad.d_o = nullptr;
  EXPECT_EQ(flashcore::cuda::flash_bwd_plan(bad, h100, &plan), "d_o pointer is null");
  bad = b;
  bad.dq = static_cast<unsigned char*>(b.dq) + 2;
  EXPECT_EQ(flashcore::cuda::flash_bwd_plan(bad, h100, &plan), "dq pointer is not 16-byte aligned");
  bad = b;
  bad.dk_seq_stride = 8 * 64 + 4;
  EXPECT_EQ(flashcore::cuda::flash_bwd_plan(bad, h100, &plan), "dk_seq_stride 516 is not a multiple of 8 elements");
}

// The backward's two paths: by default dQ goes through an fp32 accumulator in the workspace (summed
// with atomics in the dK/dV kernel, converted by the grid_dq kernel); FlashBwdParams::deterministic
// takes the dQ kernel and a workspace of delta and lse2 only. The plan's words name the path (dq_path=).
TEST(CudaConfig, BackwardPlansNameTheirDqPath) {
  flashcore::cuda::DeviceLimits h100;
  h100.cc_major = 9, h100.smem_optin_per_block = 227 * 1024;
  flashcore::cuda::FlashBwdParams b = bwd_params(params(3, 8, 2, 100, 130, 64, false, true));
  const size_t rows = 3 * 8 * 128;  // batch x heads_q x seqlen_q rounded up to 64
  flashcore::cuda::FlashBwdPlan atomic, fixed;
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(b, h100, &atomic), "");
  EXPECT_TRUE(atomic.atomic_dq);
  EXPECT_EQ(atomic.workspace_bytes, sizeof(float) * rows * (2 + 64));
  EXPECT_NE(atomic.describe().find("dq_path=atomic"), std::string::npos) << atomic.describe();
  b.deterministic = true;
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(b, h100, &fixed), "");
  EXPECT_FALSE(fixed.atomic_dq);
  EXPECT_EQ(fixed.workspace_bytes, sizeof(float) * rows * 2);
  EXPECT_NE(fixed.describe().find("dq_path=deterministic"), std::string::npos) << fixed.describe();
  // On the mma.sync kernels (these limits do not load the Hopper image) the grids do not depend on the
  // path: the conversion runs on the dQ kernel's grid.
  EXPECT_EQ(atomic.grid_dq.x, 2u);
  EXPECT_EQ(atomic.grid_dq.y, 8u);
  EXPECT_EQ(atomic.grid_dq.z, 3u);
  EXPECT_EQ(fixed.grid_dkdv.x, atomic.grid_dkdv.x);
  // Head dim 96 has the deterministic path only (its atomic dK/dV kernel spilled): asked or not.
  b = bwd_params(params(3, 8, 2, 100, 130, 96, false, true));  // deterministic false
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(b, h100, &fixed), "");
  EXPECT_FALSE(fixed.atomic_dq);
  EXPECT_EQ(fixed.workspace_bytes, sizeof(float) * rows * 2);
}

// Which dK/dV kernel the backward plan takes: cuda-flash (Auto) the Hopper one (backward/sm90/) where it
// can run, cuda-flash-hopper forces it and says why not, cuda-flash-allwarps forces mma.sync, the other
// variants have no backward. The Hopper reasons come in a fixed order (head dim, path, device, build,
// TMA), so each is checked here whatever this build has; without a driver (CI) the TMA encoder is the last.
TEST(CudaConfig, BackwardPlansChooseTheirDkdvKernel) {
  using flashcore::cuda::FlashVariant;
  flashcore::cuda::DeviceLimits h100 = h100_limits();
  h100.hopper_kernel_loads = true;
  const auto has = [](const std::string& s, const char* what) { return s.find(what) != std::string::npos; };
  flashcore::cuda::FlashBwdParams b = bwd_params(params(2, 8, 2, 300, 333, 64, true, true));
  flashcore::cuda::FlashBwdPlan plan;

  const std::string forced = flashcore::cuda::flash_bwd_plan(b, h100, &plan, FlashVariant::Hopper);
  EXPECT_TRUE(forced.empty() || has(forced, "cuTensorMapEncodeTiled") || has(forced, "was not built")) << forced;
  if (forced.empty()) {  // a driver and the sm_90a kernels: 128 keys a block, 3 warpgroups
    EXPECT_TRUE(plan.hopper);
    EXPECT_EQ(plan.threads, 384);
    EXPECT_EQ(plan.grid_dkdv.x, 3u);  // 333 keys / 128
    EXPECT_TRUE(has(plan.describe(), "sm90-bwd D=64 dq_path=atomic")) << plan.describe();
  }
  // Auto never fails for the Hopper kernel's reasons: it runs mma.sync instead.
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(b, h100, &plan), "");
  EXPECT_EQ(plan.hopper, forced.empty());
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(b, h100, &plan, FlashVariant::AllWarps), "");
  EXPECT_FALSE(plan.hopper);
  EXPECT_EQ(plan.threads, 128);
  EXPECT_EQ(plan.grid_dkdv.x, 6u);  // 333 keys / 64
  EXPECT_TRUE(has(plan.describe(), "sm80-bwd D=64 dq_path=atomic")) << plan.describe();

  const std::string no_bwd = flashcore::cuda::flash_bwd_plan(b, h100, &plan, FlashVariant::WarpSpecialized);
  EXPECT_TRUE(has(no_bwd, "has no backward pass of its own")) << no_bwd;
  b.deterministic = true;
  const std::string det = flashcore::cuda::flash_bwd_plan(b, h100, &plan, FlashVariant::Hopper);
  EXPECT_TRUE(has(det, "atomic dQ path only")) << det;
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(b, h100, &plan), "");  // deterministic: mma.sync
  EXPECT_FALSE(plan.hopper);
  EXPECT_FALSE(plan.atomic_dq);
  const std::string d32 =
      flashcore::cuda::flash_bwd_plan(bwd_params(params(1, 4, 4, 100, 100, 32, false, false)), h100, &plan,
                                      FlashVariant::Hopper);
  EXPECT_TRUE(has(d32, "runs head_dim 64, 96 and 128, not 32")) << d32;
  // Head dim 96 runs on the D = 128 kernel: its accumulator rows are 128 floats wide.
  const flashcore::cuda::FlashBwdParams b96 = bwd_params(params(1, 4, 4, 100, 100, 96, false, false));
  const std::string d96 = flashcore::cuda::flash_bwd_plan(b96, h100, &plan, FlashVariant::Hopper);
  EXPECT_TRUE(d96.empty() || has(d96, "cuTensorMapEncodeTiled") || has(d96, "was not built")) << d96;
  if (d96.empty()) {
    EXPECT_TRUE(plan.atomic_dq);
    EXPECT_EQ(plan.acc_dim, 128);
    EXPECT_EQ(plan.workspace_bytes, sizeof(float) * 4 * 128 * (2 + 128));
  }
  const std::string l4 = flashcore::cuda::flash_bwd_plan(bwd_params(params(1, 4, 4, 100, 100, 128, false, false)),
                                                         l4_limits(), &plan, FlashVariant::Hopper);
  EXPECT_TRUE(has(l4, "compute capability 9.0") && has(l4, "8.9")) << l4;
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(bwd_params(params(1, 4, 4, 100, 100, 128, false, false)), l4_limits(),
                                            &plan),
            "");
  EXPECT_FALSE(plan.hopper);
}

// The attention variants in the tuned backward: windows, soft-capping and ALiBi take the VariantMask
// kernels (the plan says mask=variants), sinks alone the plain ones plus the dsinks kernel, on both dK/dV
// kernels and both paths; sequence layouts are still declined by name.
TEST(CudaConfig, BackwardPlansRunTheAttentionVariants) {
  using flashcore::cuda::FlashVariant;
  flashcore::cuda::DeviceLimits h100 = h100_limits();
  h100.hopper_kernel_loads = true;
  const auto has = [](const std::string& s, const char* what) { return s.find(what) != std::string::npos; };
  static float slopes[8] = {}, sinks[8] = {}, dsinks[8] = {};
  flashcore::cuda::FlashBwdPlan plan;
  flashcore::cuda::FlashBwdParams win = bwd_params(params(2, 8, 2, 300, 333, 128, true, true));
  win.fwd.window_left = 64;
  for (FlashVariant v : {FlashVariant::Auto, FlashVariant::AllWarps}) {
    ASSERT_EQ(flashcore::cuda::flash_bwd_plan(win, h100, &plan, v), "");
    EXPECT_TRUE(plan.variants);
    EXPECT_FALSE(plan.dsinks);
    EXPECT_TRUE(has(plan.describe(), "mask=variants")) << plan.describe();
  }
  const std::string forced = flashcore::cuda::flash_bwd_plan(win, h100, &plan, FlashVariant::Hopper);
  EXPECT_TRUE(forced.empty() || has(forced, "cuTensorMapEncodeTiled") || has(forced, "was not built")) << forced;
  win.deterministic = true;
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(win, h100, &plan), "");
  EXPECT_TRUE(plan.variants && !plan.hopper && !plan.atomic_dq) << plan.describe();

  flashcore::cuda::FlashBwdParams each = bwd_params(params(1, 8, 8, 100, 100, 64, false, false));
  each.fwd.softcap = 30.f;
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(each, h100, &plan, FlashVariant::AllWarps), "");
  EXPECT_TRUE(plan.variants);
  each.fwd.softcap = 0.f;
  each.fwd.alibi_slopes = slopes;
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(each, h100, &plan, FlashVariant::AllWarps), "");
  EXPECT_TRUE(plan.variants);
  each.fwd.alibi_slopes = nullptr;
  each.fwd.window_right = 0;
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(each, h100, &plan, FlashVariant::AllWarps), "");
  EXPECT_TRUE(plan.variants);
  each.fwd.window_right = -1;
  each.fwd.sinks = sinks;  // sinks alone change no score: the plain kernels, and their gradient if asked
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(each, h100, &plan, FlashVariant::AllWarps), "");
  EXPECT_FALSE(plan.variants);
  EXPECT_FALSE(plan.dsinks);
  each.dsinks = dsinks;
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(each, h100, &plan, FlashVariant::AllWarps), "");
  EXPECT_FALSE(plan.variants);
  EXPECT_TRUE(plan.dsinks);
  EXPECT_TRUE(has(plan.describe(), " dsinks")) << plan.describe();
  each.fwd.sinks = nullptr;  // a gradient of sinks the call does not have
  EXPECT_TRUE(has(flashcore::cuda::flash_bwd_plan(each, h100, &plan, FlashVariant::AllWarps), "dsinks is set but sinks is null"));

}

// The sequence layouts (varlen Q and K/V, cache lengths) run on the tuned backward; the plan names them
// and sizes the workspace of packed Q by its total rows (each sequence padded to 64), not batch x the
// longest. Paged K/V has no backward: declined with the field named.
TEST(CudaConfig, BackwardPlansRunSequenceLayouts) {
  using flashcore::cuda::FlashVariant;
  const flashcore::cuda::DeviceLimits h100 = h100_limits();
  const auto has = [](const std::string& s, const char* what) { return s.find(what) != std::string::npos; };
  static const int lens[2] = {50, 100}, cu[3] = {0, 50, 150};
  flashcore::cuda::FlashBwdPlan plan;
  flashcore::cuda::FlashBwdParams cache = bwd_params(params(2, 8, 8, 100, 100, 64, false, false));
  cache.fwd.seqlens_k = lens;
  for (FlashVariant v : {FlashVariant::Auto, FlashVariant::AllWarps}) {
    ASSERT_EQ(flashcore::cuda::flash_bwd_plan(cache, h100, &plan, v), "");
    EXPECT_TRUE(plan.cache_lengths && !plan.varlen_q && !plan.varlen_k);
    EXPECT_FALSE(plan.variants);  // the plain mask's sequence kernels (bwd_sequences.cuh)
    EXPECT_TRUE(has(plan.describe(), " sequences=cache_lengths ")) << plan.describe();
  }
  // Packed Q and K/V: 2 sequences of 50 and 100 rows, bounds 4000 (a loose bound sizes the grid only).
  flashcore::cuda::FlashBwdParams packed = bwd_params(params(2, 8, 2, 4000, 4000, 128, true, true));
  packed.fwd.cu_seqlens_q = cu, packed.fwd.total_q = 150;
  packed.fwd.cu_seqlens_k = cu, packed.fwd.total_k = 150;
  ASSERT_EQ(flashcore::cuda::flash_bwd_plan(packed, h100, &plan, FlashVariant::AllWarps), "");
  EXPECT_TRUE(plan.varlen_q && plan.varlen_k && !plan.cache_lengths);
  EXPECT_TRUE(has(plan.describe(), " sequences=varlen_q+varlen_k ")) << plan.describe();
  // Rows per head: 150 + 64 x 2 = 278, rounded up to 320; delta, lse2 and the dQ accumulator (128 columns).
  EXPECT_EQ(plan.ws_batch_stride, 0);
  EXPECT_EQ(plan.ws_head_stride, 320);
  EXPECT_EQ(plan.workspace_bytes, sizeof(float) * 8 * 320 * (2 + 128));
  packed.fwd.total_k = 0;  // cu_seqlens_k without its total
  EXPECT_TRUE(has(flashcore::cuda::flash_bwd_plan(packed, h100, &plan), "cu_seqlens_k and total_k 0 disagree"));
  flashcore::cuda::FlashBwdParams paged = bwd_params(params(2, 8, 8, 100, 100, 64, false, false));
  static const int table[2] = {0, 1};
  paged.fwd.block_table = table, paged.fwd.page_size = 128, paged.fwd.pages_per_seq = 1;
  EXPECT_TRUE(has(flashcore::cuda::flash_bwd_plan(paged, h100, &plan), "block_table (paged K/V) is set"));
}

// FP8 (e4m3) inputs: only the Hopper kernel's FP8 instance runs them, and every other case is declined
// by name (the reference runs it); the plan sizes the transposed V's workspace (keys padded to 32).
TEST(CudaConfig, Fp8PlansRunTheHopperKernelOrSayWhyNot) {
  using flashcore::cuda::FlashVariant;
  flashcore::cuda::DeviceLimits h100 = h100_limits();
  h100.hopper_kernel_loads = true;
  const auto has = [](const std::string& s, const char* what) { return s.find(what) != std::string::npos; };
  // 1-byte elements: strides as (B, S, H, D) with D = 128, Hq = 4, Hkv = 2.
  FlashFwdParams p = params(2, 4, 2, 300, 333, 128, true, true);
  p.fp8 = true;
  p.descale_q = 0.5f, p.descale_k = 2.f, p.descale_v = 0.25f;
  flashcore::cuda::FlashFwdPlan plan;
  for (FlashVariant v : {FlashVariant::Auto, FlashVariant::Hopper}) {
    const std::string why = flashcore::cuda::flash_fwd_plan(p, h100, v, &plan);
    // Without a driver (CI) the TMA maps cannot be encoded; without sm_90 the kernel is not built.
    EXPECT_TRUE(why.empty() || has(why, "cuTensorMapEncodeTiled") || has(why, "was not built")) << why;
    if (why.empty()) {
      EXPECT_EQ(plan.kernel, flashcore::cuda::FlashKernel::Hopper);
      EXPECT_EQ(plan.block_m, 128);
      EXPECT_EQ(plan.n_mblocks, 3);  // 300 queries / 128
      EXPECT_EQ(plan.fp8_keys_pad, 352);  // 333 keys rounded up to 32
      EXPECT_EQ(plan.fp8_vt_bytes, size_t(2) * 2 * 128 * 352);
      EXPECT_EQ(plan.work_blocks, 24);  // 3 query blocks x 4 heads x 2 batches, fewer than the 132 SMs
      EXPECT_EQ(plan.pair_groups, 1);   // causal: all 8 pairs' K/V fit the L2 budget
      EXPECT_FALSE(plan.item_tickets);  // as many blocks as items
      EXPECT_TRUE(has(plan.describe(), "sm90-tma-wgmma") && has(plan.describe(), "fp8_e4m3")) << plan.describe();
    }
  }
  for (FlashVariant v : {FlashVariant::AllWarps, FlashVariant::WarpSpecialized, FlashVariant::Decode}) {
    const std::string why = flashcore::cuda::flash_fwd_plan(p, h100, v, &plan);
    EXPECT_TRUE(has(why, "fp8_e4m3 inputs run on the Hopper kernel only")) << why;
  }
  EXPECT_TRUE(has(flashcore::cuda::flash_fwd_plan(p, l4_limits(), FlashVariant::Auto, &plan), "compute capability 9.0"));
  FlashFwdParams d192 = params(1, 2, 2, 100, 100, 192, true, false);
  d192.fp8 = true;
  EXPECT_TRUE(has(flashcore::cuda::flash_fwd_plan(d192, h100, FlashVariant::Auto, &plan), "head_dim up to 128, not 192"));
  FlashFwdParams window = p;
  window.window_left = 64;
  EXPECT_TRUE(has(flashcore::cuda::flash_fwd_plan(window, h100, FlashVariant::Auto, &plan), "no attention variants"));
  FlashFwdParams cache = p;
  static const int lens[2] = {100, 200};
  cache.seqlens_k = lens;
  EXPECT_TRUE(has(flashcore::cuda::flash_fwd_plan(cache, h100, FlashVariant::Auto, &plan), "fixed-length batches only"));
  // TMA reads 1-byte rows: strides must be multiples of 16 elements (here Hkv·D = 2·72 = 144 is, but
  // Hq·D with Hq = 1 and D = 72 is not).
  FlashFwdParams odd = params(1, 1, 1, 100, 100, 72, true, false);
  odd.fp8 = true;
  const std::string why = flashcore::cuda::flash_fwd_plan(odd, h100, FlashVariant::Hopper, &plan);
  EXPECT_TRUE(has(why, "multiple of 16 elements") || has(why, "cuTensorMapEncodeTiled") || has(why, "was not built"))
      << why;
}

// The Hopper kernel's persistent schedule (common/work_list.h): over the blocks of a grid of any size,
// every work item is taken exactly once and maps to a distinct (batch, head, query block); inside a
// group of pairs the items go heaviest query block first; the snake gives a block the heaviest item of
// one round and the lightest of the next. Checked on the host: the kernel runs the same code.
TEST(CudaConfig, PersistentWorkListTakesEveryItemOnce) {
  using flashcore::cuda::detail::WorkItem;
  using flashcore::cuda::detail::WorkList;
  struct Case { int n_mblocks, heads, batch, q_per_kv, groups, blocks; };
  const Case cases[] = {{4, 16, 16, 1, 256, 132}, {8, 16, 4, 4, 1, 132}, {3, 5, 3, 5, 4, 7},   {1, 1, 1, 1, 1, 1},
                        {7, 3, 2, 1, 3, 132},     {128, 16, 1, 2, 6, 132}, {2, 8, 1, 8, 8, 16}, {5, 6, 7, 3, 9, 13}};
  for (const Case& c : cases) {
    const int pairs = c.heads * c.batch, total = c.n_mblocks * pairs;
    std::vector<int> seen(total, 0), cell(total, 0);
    for (int blk = 0; blk < c.blocks; ++blk) {
      const WorkList work(c.n_mblocks, c.heads, c.batch, c.q_per_kv, c.groups, c.blocks, blk);
      int prev = -1;
      for (int k = 0;; ++k) {
        const int w = work.item(k);
        if (w < 0) break;
        ASSERT_LT(w, total);
        EXPECT_GT(w, prev) << "rounds go forward";
        prev = w;
        ++seen[w];
        const WorkItem it = work.coord(w);
        ASSERT_TRUE(it.b >= 0 && it.b < c.batch && it.h >= 0 && it.h < c.heads && it.mblock >= 0 && it.mblock < c.n_mblocks)
            << w;
        EXPECT_EQ(it.hk, it.h / c.q_per_kv);
        ++cell[(it.b * c.heads + it.h) * c.n_mblocks + it.mblock];
      }
    }
    for (int w = 0; w < total; ++w) {
      EXPECT_EQ(seen[w], 1) << "item " << w << " of case " << c.n_mblocks << "," << c.heads << "," << c.batch;
      EXPECT_EQ(cell[w], 1) << "cell " << w;
    }
    // The order: groups of pairs/groups pairs (the first pairs % groups groups one more), one after
    // the other; inside a group from the last query block down, the group's pairs fastest.
    const WorkList work(c.n_mblocks, c.heads, c.batch, c.q_per_kv, c.groups, 1, 0);
    int w = 0, pair0 = 0;
    for (int gi = 0; gi < c.groups; ++gi) {
      const int g_pairs = pairs / c.groups + (gi < pairs % c.groups ? 1 : 0);
      for (int m = c.n_mblocks - 1; m >= 0; --m)
        for (int j = 0; j < g_pairs; ++j, ++w) {
          const WorkItem it = work.coord(w);
          EXPECT_EQ(it.b * c.heads + it.h, pair0 + j) << "item " << w;
          EXPECT_EQ(it.mblock, m) << "item " << w;
        }
      pair0 += g_pairs;
    }
    EXPECT_EQ(w, total);
  }
  // The snake: with 4 blocks, block 0 takes items 0, 7, 8, 15; block 3 takes 3, 4, 11, 12.
  const WorkList first(4, 4, 1, 1, 4, 4, 0), last(4, 4, 1, 1, 4, 4, 3);
  EXPECT_EQ(std::vector<int>({first.item(0), first.item(1), first.item(2), first.item(3), first.item(4)}),
            std::vector<int>({0, 7, 8, 15, -1}));
  EXPECT_EQ(std::vector<int>({last.item(0), last.item(1), last.item(2), last.item(3)}), std::vector<int>({3, 4, 11, 12}));
}

// The Hopper kernel's persistent grid (plan): one block per SM or per item when there are fewer, a
// ticket counter when there are more; causal problems go heaviest first across groups of (batch, head)
// pairs, as few equal groups as keep a group's K/V within the L2 budget; others pair by pair.
TEST(CudaConfig, HopperPlanIsPersistent) {
  flashcore::cuda::DeviceLimits h100 = h100_limits();
  h100.hopper_kernel_loads = true;
  struct Case { int b, h, l, d; bool causal; int blocks, groups; bool tickets; };
  // (2,16,4096,128) causal: 2 MiB of K/V per pair, 12 within 25 MiB: 3 groups of 32 pairs. (1,16,16384,128):
  // 8 MiB, 3 per group: 6 groups.
  const Case cases[] = {{2, 16, 4096, 128, false, 132, 32, true}, {2, 16, 4096, 128, true, 132, 3, true},
                        {1, 16, 16384, 128, true, 132, 6, true},  {1, 8, 512, 64, true, 32, 1, false},
                        {16, 16, 512, 64, false, 132, 256, true}};
  for (const Case& c : cases) {
    flashcore::cuda::FlashFwdPlan plan;
    const std::string why = flashcore::cuda::flash_fwd_plan(params(c.b, c.h, c.h, c.l, c.l, c.d, true, c.causal), h100,
                                                            flashcore::cuda::FlashVariant::Hopper, &plan);
    // Without a driver (CI) the TMA maps cannot be encoded; without sm_90 the kernel is not built.
    EXPECT_TRUE(why.empty() || why.find("cuTensorMapEncodeTiled") != std::string::npos ||
                why.find("was not built") != std::string::npos)
        << why;
    if (!why.empty()) continue;
    EXPECT_EQ(plan.work_blocks, c.blocks) << c.l << " " << c.d;
    EXPECT_EQ(plan.pair_groups, c.groups) << c.l << " " << c.d;
    EXPECT_EQ(plan.item_tickets, c.tickets) << c.l << " " << c.d;
    EXPECT_NE(plan.describe().find("persistent blocks="), std::string::npos) << plan.describe();
  }
}

// O stored by TMA (sm90/plan_sm90.cu hopper_o_tma_wanted, sm90/tensor_maps.cpp): asked for on the D = 64 instances
// on causal problems and on the two-warpgroup instance, not on the three-warpgroup one without causal
// masking (run 48g); launch_override.o_stores forces either way; never at other head dims or with FP8.
// Where the driver can encode maps, the plan takes it where O's map can be made (not with packed
// queries) and records the output that map holds.
TEST(CudaConfig, HopperStoresOByTmaWhereItGained) {
  using flashcore::cuda::FlashVariant;
  flashcore::cuda::DeviceLimits h100 = h100_limits();
  h100.hopper_kernel_loads = true;
  alignas(16) static unsigned char other_o[16];
  struct Case { FlashFwdParams p; int o_stores; bool wanted, o_tma; const char* what; };
  FlashFwdParams packed = params(2, 8, 8, 300, 300, 64, false, true);
  packed.cu_seqlens_q = packed.cu_seqlens_k = g_seq_dummy, packed.total_q = packed.total_k = 600;
  FlashFwdParams fp8 = params(2, 4, 2, 300, 333, 128, true, true);
  fp8.fp8 = true;
  fp8.descale_q = 0.5f, fp8.descale_k = 2.f, fp8.descale_v = 0.25f;
  FlashFwdParams moved = params(16, 16, 16, 512, 512, 64, false, true);
  moved.o = other_o;  // another output: the map is encoded for it, and the plan says so
  const Case cases[] = {
      {params(16, 16, 16, 512, 512, 64, false, true), 0, true, true, "causal, two warpgroups"},
      {params(16, 16, 16, 512, 512, 64, true, true), 0, true, true, "causal bf16"},
      {params(16, 16, 16, 512, 512, 64, false, false), 0, false, false, "three warpgroups, not causal"},
      {params(1, 8, 8, 512, 512, 64, false, false), 0, true, true, "two warpgroups (few items), not causal"},
      {params(4, 16, 16, 2048, 2048, 64, false, true), 0, true, true, "three warpgroups, causal"},
      {params(2, 8, 8, 100, 100, 40, false, true), 0, true, true, "D = 40 on the D = 64 instance"},
      {params(16, 16, 16, 512, 512, 64, false, false), 2, true, true, "forced on"},
      {params(16, 16, 16, 512, 512, 64, false, true), 1, false, false, "forced off"},
      {params(2, 16, 16, 1024, 1024, 128, false, true), 2, false, false, "D = 128 (forced)"},
      {fp8, 2, false, false, "FP8 (forced)"},
      {packed, 2, true, false, "packed queries (forced): no map for O"},
      {moved, 0, true, true, "another output"},
  };
  for (const Case& c : cases) {
    FlashFwdParams p = c.p;
    flashcore::cuda::FlashFwdLaunchOverride ov{};
    ov.o_stores = c.o_stores;
    if (c.o_stores != 0) p.launch_override = &ov;
    const auto in = flashcore::cuda::hopper_instance(p, h100, FlashVariant::Hopper);
    EXPECT_EQ(flashcore::cuda::hopper_o_tma_wanted(p, in), c.wanted)
        << c.what << ": instance D = " << in.dim << " x " << in.wgs;
    flashcore::cuda::FlashFwdPlan plan;
    const std::string why = flashcore::cuda::flash_fwd_plan(p, h100, FlashVariant::Hopper, &plan);
    // Without a driver (CI) the TMA maps cannot be encoded (only that is skipped: a map the driver refuses fails).
    EXPECT_TRUE(why.empty() || why.find("driver entry point not found") != std::string::npos) << c.what << ": " << why;
    if (!why.empty()) continue;
    EXPECT_EQ(plan.o_tma, c.o_tma) << c.what << ": " << plan.describe();
    EXPECT_EQ(plan.describe().find(" o_tma") != std::string::npos, c.o_tma) << c.what << ": " << plan.describe();
    EXPECT_EQ(plan.map_inputs[3], p.o) << c.what;
  }
  for (int o_stores : {3, -1}) {  // an override outside {0, 1, 2} is declined, naming the field
    FlashFwdParams p = params(16, 16, 16, 512, 512, 64, false, true);
    flashcore::cuda::FlashFwdLaunchOverride ov{};
    ov.o_stores = o_stores;
    p.launch_override = &ov;
    flashcore::cuda::FlashFwdPlan plan;
    EXPECT_NE(flashcore::cuda::flash_fwd_plan(p, h100, FlashVariant::Hopper, &plan).find("launch_override.o_stores not in [0, 2]"),
              std::string::npos) << o_stores;
  }
}

// The Hopper kernels read their inputs through the plan's TMA maps, which hold the pointers the plan was made
// with: flash_fwd_run and flash_bwd_run decline a Hopper plan run with other Q, K, V (or dO) before any CUDA
// call, instead of reading the old tensors (the library plans per call; a harness that reuses a plan may
// change only the forward's output: map_inputs[3], O by the warps). No driver is needed: the plans are made by hand.
TEST(CudaConfig, HopperPlanRunWithOtherInputsIsDeclined) {
  alignas(16) static unsigned char q[16], k[16], v[16], o[16], d_o[16], other[16];
  FlashFwdParams p = params(1, 8, 8, 64, 64, 64, false, false);
  p.q = q, p.k = k, p.v = v, p.o = o;
  flashcore::cuda::FlashFwdPlan plan;
  plan.kernel = flashcore::cuda::FlashKernel::Hopper;
  plan.map_inputs[0] = q, plan.map_inputs[1] = k, plan.map_inputs[2] = v;
  for (int which = 0; which < 3; ++which) {
    FlashFwdParams r = p;
    (which == 0 ? r.q : which == 1 ? r.k : r.v) = other;
    EXPECT_EQ(flashcore::cuda::flash_fwd_run(r, plan, nullptr), cudaErrorInvalidValue) << "forward input " << which;
  }
  FlashFwdParams fp8 = p;  // FP8: V is transposed per run (no map of it in the plan), so only Q and K must match
  fp8.fp8 = true, fp8.q = other;
  plan.map_inputs[2] = nullptr;
  EXPECT_EQ(flashcore::cuda::flash_fwd_run(fp8, plan, nullptr), cudaErrorInvalidValue);
  flashcore::cuda::FlashBwdParams b = bwd_params(p);
  b.d_o = d_o;
  flashcore::cuda::FlashBwdPlan bplan;
  bplan.hopper = true;
  bplan.map_inputs[0] = q, bplan.map_inputs[1] = k, bplan.map_inputs[2] = v, bplan.map_inputs[3] = d_o;
  for (int which = 0; which < 4; ++which) {
    flashcore::cuda::FlashBwdParams r = b;
    (which == 0 ? r.fwd.q : which == 1 ? r.fwd.k : which == 2 ? r.fwd.v : r.d_o) = other;
    EXPECT_EQ(flashcore::cuda::flash_bwd_run(r, bplan, nullptr), cudaErrorInvalidValue) << "backward input " << which;
  }
}

// The Hopper schedule's tail split (common/tail_split.cuh, sm90/plan_sm90.cu hopper_schedule): where equal items
// leave the last round at most half full, the last items run as pieces of their key tiles; the work
// indices decode to every whole item once and to every tail item's pieces once each, and the pieces'
// tiles cover the item's without overlap.
TEST(CudaConfig, HopperTailSplit) {
  using flashcore::cuda::FlashFwdPlan;
  using flashcore::cuda::detail::TailSplit;
  flashcore::cuda::DeviceLimits h100 = h100_limits();
  h100.sm_count = 132;
  auto schedule = [&](const FlashFwdParams& p, int block_m, int dim) {
    FlashFwdPlan plan;
    plan.kernel = flashcore::cuda::FlashKernel::Hopper;
    plan.block_m = block_m;
    plan.hopper_dim = dim;
    plan.n_mblocks = (p.seqlen_q + block_m - 1) / block_m;
    flashcore::cuda::hopper_schedule(p, h100, &plan);
    return plan;
  };
  // (4,16,2048,64) on the three-warpgroup instance: 64 x 11 = 704 items = 5 x 132 + 44: 44 items in 3
  // pieces (132 / 44); causal: none (unequal items).
  FlashFwdPlan a = schedule(params(4, 16, 16, 2048, 2048, 64, false, false), 192, 64);
  EXPECT_EQ(a.tail_items, 44);
  EXPECT_EQ(a.tail_splits, 3);
  EXPECT_EQ(a.tail_tiles, 5);  // 16 key tiles of 128: pieces of 6, 5, 5
  EXPECT_EQ(a.tail_extra, 1);
  EXPECT_TRUE(a.item_tickets);
  EXPECT_EQ(a.split_counter_bytes, (2 + 44 * 12) * sizeof(int));  // two tickets, a counter per 16-row slice
  EXPECT_GE(a.split_partial_bytes, size_t(44) * 3 * 192 * (64 + 1) * sizeof(float));
  EXPECT_GE(a.split_lse_offset, size_t(44) * 3 * 192 * 64 * sizeof(float));
  EXPECT_FALSE(a.static_when_captured);  // 6 rounds of 16 key tiles: more than 64 tiles a block
  // (4,17,1024,64): 4 x 17 x 6 = 408 items, 3 rounds + 12 of 8 tiles: within 64 tiles, but a tail split
  const FlashFwdPlan tailed = schedule(params(4, 17, 17, 1024, 1024, 64, false, false), 192, 64);
  EXPECT_GT(tailed.tail_items, 0);
  EXPECT_FALSE(tailed.static_when_captured);
  // Captured, equal items in at most 64 key tiles a block take the static order: (16,16,512,64) 6 rounds of 4
  // tiles, (8,16,1024,128) 8 rounds of 8; not (2,16,4096,128) (8 of 32), causal items or a window.
  EXPECT_TRUE(schedule(params(16, 16, 16, 512, 512, 64, false, false), 192, 64).static_when_captured);
  EXPECT_TRUE(schedule(params(8, 16, 16, 1024, 1024, 128, false, false), 128, 128).static_when_captured);
  EXPECT_FALSE(schedule(params(2, 16, 16, 4096, 4096, 128, false, false), 128, 128).static_when_captured);
  const FlashFwdPlan causal = schedule(params(4, 16, 16, 2048, 2048, 64, false, true), 192, 64);
  EXPECT_EQ(causal.tail_items, 0);
  EXPECT_FALSE(schedule(params(16, 16, 16, 512, 512, 64, false, true), 192, 64).static_when_captured);
  FlashFwdParams windowed = params(16, 16, 16, 512, 512, 64, false, false);
  windowed.window_left = 100;
  EXPECT_FALSE(schedule(windowed, 192, 64).static_when_captured);
  // Paged K/V: the V tiles of pages of 16 rows gathered by the producer warpgroup, larger pages in TMA boxes; the
  // override forces either; never without a block table.
  EXPECT_FALSE(schedule(params(4, 32, 8, 512, 4096, 128, false, true), 128, 128).paged_gather);
  {
    FlashFwdParams unpaged = params(4, 32, 8, 512, 4096, 128, false, true);
    flashcore::cuda::FlashFwdLaunchOverride ov{};
    ov.paged_copies = 2;  // forced, but there are no pages
    unpaged.launch_override = &ov;
    EXPECT_FALSE(schedule(unpaged, 128, 128).paged_gather);
  }
  for (int page : {16, 32, 64, 256}) {
    FlashFwdParams paged = params(4, 32, 8, 512, 4096, 128, false, true);
    paged.block_table = g_seq_dummy, paged.page_size = page, paged.pages_per_seq = 4096 / page;
    paged.num_pages = 4 * paged.pages_per_seq;
    EXPECT_EQ(schedule(paged, 128, 128).paged_gather, page < 32) << page;
    flashcore::cuda::FlashFwdLaunchOverride ov{};
    paged.launch_override = &ov;
    ov.paged_copies = 1;
    EXPECT_FALSE(schedule(paged, 128, 128).paged_gather) << page;
    ov.paged_copies = 2;
    const FlashFwdPlan gathered = schedule(paged, 128, 128);
    EXPECT_TRUE(gathered.paged_gather) << page;
    EXPECT_NE(gathered.describe().find(" paged_gather"), std::string::npos) << gathered.describe();
  }
  // Whole rounds (4 x 12 x 11 = 528 = 4 x 132), a last round more than half full (4 x 17 x 11 = 748: 88 left)
  // and fewer items than SMs: none.
  EXPECT_EQ(schedule(params(4, 12, 12, 2048, 2048, 64, false, false), 192, 64).tail_items, 0);
  EXPECT_EQ(schedule(params(4, 17, 17, 2048, 2048, 64, false, false), 192, 64).tail_items, 0);
  EXPECT_EQ(schedule(params(1, 8, 8, 2048, 2048, 64, false, false), 128, 64).tail_items, 0);
  // Pieces: at most blocks / r, the key tiles and kMaxSplits. (2,10,2000,128): 320 items, 56 left: 2 pieces;
  // (2,5,1900,256) GQA: 150 items, 18 left: 7 pieces of 2100 / 64 -> 33 tiles; (1,75,250,128) with 300 keys:
  // 150 items, 18 left, 3 tiles: 3 pieces.
  FlashFwdPlan b = schedule(params(2, 10, 5, 2000, 1800, 128, true, false), 128, 128);
  EXPECT_EQ(b.tail_items, 56);
  EXPECT_EQ(b.tail_splits, 2);
  FlashFwdPlan c = schedule(params(2, 5, 1, 1900, 2100, 256, false, false), 128, 256);
  EXPECT_EQ(c.tail_items, 18);
  EXPECT_EQ(c.tail_splits, 7);
  FlashFwdPlan d = schedule(params(1, 75, 15, 250, 300, 128, false, false), 128, 128);
  EXPECT_EQ(d.tail_items, 18);
  EXPECT_EQ(d.tail_splits, 3);
  EXPECT_NE(d.describe().find("tail=18x3"), std::string::npos) << d.describe();
  // Not with variants, sequence arrays or FP8 (the kernels that run those have no split).
  FlashFwdParams w = params(4, 16, 16, 2048, 2048, 64, false, false);
  w.window_left = 100;
  EXPECT_EQ(schedule(w, 192, 64).tail_items, 0);
  FlashFwdParams f8 = params(4, 16, 16, 2048, 2048, 64, false, false);
  f8.fp8 = true;
  EXPECT_EQ(schedule(f8, 128, 128).tail_items, 0);
  // Work indices -> items and pieces; pieces -> tiles.
  for (const auto& [items, tail, splits] : {std::tuple<int, int, int>{704, 44, 3}, {150, 18, 7}, {320, 56, 2}, {9, 1, 8}}) {
    const TailSplit ts(items - tail, tail, splits);
    std::vector<int> whole(items, 0), pieces(items * splits, 0);
    for (int wi = 0; wi < items - tail + tail * splits; ++wi) {
      int item = -1;
      const int piece = ts.decode(wi, &item);
      ASSERT_TRUE(item >= 0 && item < items) << wi;
      if (piece < 0) {
        EXPECT_LT(item, items - tail);
        ++whole[item];
      } else {
        EXPECT_GE(item, items - tail);
        ASSERT_LT(piece, splits);
        ++pieces[item * splits + piece];
      }
    }
    for (int i = 0; i < items; ++i)
      for (int s = 0; s < (i < items - tail ? 1 : splits); ++s)
        EXPECT_EQ(i < items - tail ? whole[i] : pieces[i * splits + s], 1) << i << " " << s;
  }
  for (int n : {2, 3, 7, 16, 33})
    for (int splits = 2; splits <= std::min(n, 8); ++splits) {
      int next = 0;
      for (int piece = 0; piece < splits; ++piece) {
        int first = -1, count = -1;
        flashcore::cuda::detail::tail_piece_tiles(piece, n / splits, n % splits, &first, &count);
        EXPECT_EQ(first, next) << n << " " << splits << " " << piece;
        EXPECT_GE(count, 1);
        next = first + count;
      }
      EXPECT_EQ(next, n) << n << " " << splits;
    }
}
