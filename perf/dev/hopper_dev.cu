// Development harness of the 16-bit Hopper forward kernel (src/backends/cuda/sm90/), against the CUDA
// configuration's library (perf/dev/build_hopper_dev.sh). Made for A/B runs of a kernel change: link it
// against two libraries and run both in one device call.
//
//   hopper_dev check    correctness of the Hopper kernel (forced) over a case list (odd lengths, GQA,
//                       causal with Lq != Lk, head dims between the compiled ones, LSE) against an fp64
//                       loop of its own; outputs poisoned first; two runs bitwise equal. Per element
//                       |O - O64| <= 2u·max|v| + u_out·|O64| (u: P's rounding to the input type, 2^-8 bf16,
//                       2^-11 fp16); LSE within 1e-4·max(1, |LSE|). Then again with the persistent grid
//                       cut to 1, 3 or 7 blocks (every block walks many items), with the ticket counter and
//                       in the static order; every case also as two graphs captured on one stream and
//                       replayed at once on two others (bitwise equal). The project's tests are the real gate.
//   hopper_dev time     CUDA-graph timing (20 calls, median of 15 replays) of the forward suite's shapes
//                       (D = 64 and 128), fp16 and bf16, the Hopper kernel forced and the plan Auto picks.
//                       HOPPER_DEV_D=64: that head dim only; HOPPER_DEV_CAUSAL=1: causal shapes only;
//                       HOPPER_DEV_GROUP=n|all: the persistent schedule's pair groups forced (n groups);
//                       HOPPER_DEV_BLOCKS=items: a block per item; =static: no ticket counter.
//                       HOPPER_DEV_VARIANT=allwarps|warpspec: that mma.sync kernel forced instead of the Hopper one.
//   hopper_dev ostores  O stored by the consumer warps against by TMA (launch_override.o_stores 1 and 2; the
//                       Hopper kernel forced), graph-timed, alternating four rounds, on the short D = 64 rows
//                       and two long ones, fp16 (HOPPER_DEV_BF16=1: bf16), both maskings: min and median of each.
//   hopper_dev wgs      the D = 64 instance with two consumer warpgroups against three (launch_override.hopper_wgs
//                       2 and 3, each with the O stores its plan takes; the Hopper kernel forced), graph-timed,
//                       alternating four rounds, D = 64 rows of 512..16384 queries, fp16 (HOPPER_DEV_BF16=1: bf16),
//                       both maskings: min and median of each, and which the plan takes unforced.
//   hopper_dev profile  two calls of (2,16,4096,64) and (1,16,16384,128) bf16 (for ncu); profile-short:
//                       of (16,16,512,64), whose blocks see 4 key tiles each; profile-shape: of
//                       HOPPER_DEV_SHAPE="B,H,L,D" (non-causal; HOPPER_DEV_CAUSAL=1 causal)
//   hopper_dev timeline the item timeline (src/backends/cuda/common/dev_timeline.cuh) of three calls of
//                       HOPPER_DEV_SHAPE (fp16; HOPPER_DEV_BF16=1 bf16; HOPPER_DEV_CAUSAL=1 causal) with the
//                       plan Auto picks (HOPPER_DEV_TAIL=0: without its tail split), as CSV on stdout
//                       (perf/dev/timeline_summary.py reads it). Needs a kernel instance built with
//                       -DFLASHCORE_DEV_TIMELINE linked before the library (build_hopper_dev.sh EXTRA_OBJS).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../src/backends/cuda/flash_fwd.h"
#include "../../src/core/numeric.hpp"
#include "dev_common.cuh"

using namespace flashcore::cuda;
namespace num = flashcore::numeric;

struct Case {
  int B, Hq, Hkv, Lq, Lk, D;
  bool causal, bf16;
  bool lse = true;
};

static FlashFwdParams make_params(const Case& c, const void* q, const void* k, const void* v, void* o, float* lse) {
  FlashFwdParams p = bshd_params(c.B, c.Hq, c.Hkv, c.Lq, c.Lk, c.D, q, k, v, o, lse);
  p.causal = c.causal;
  p.bf16 = c.bf16;
  return p;
}

static float to_float(uint16_t x, bool bf16) { return bf16 ? num::bf16_to_float(x) : num::half_to_float(x); }
static uint16_t from_float(float x, bool bf16) { return bf16 ? num::float_to_bf16(x) : num::float_to_half(x); }

// blocks > 0: the persistent grid forced to that many blocks (each walks many items: the K/V ring and the
// Q region handed on across items), drawing them from the ticket counter or in the static order.
static bool check_case(const Case& c, std::mt19937& rng, const DeviceLimits& dev, int blocks = 0, bool tickets = false) {
  const size_t nq = (size_t)c.B * c.Lq * c.Hq * c.D, nk = (size_t)c.B * c.Lk * c.Hkv * c.D;
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<uint16_t> hq(nq), hk(nk), hv(nk);
  for (auto& x : hq) x = from_float(nd(rng) * 1.5f, c.bf16);
  for (auto& x : hk) x = from_float(nd(rng) * 1.5f, c.bf16);
  // V with a per-key offset so that a key permutation shows.
  for (size_t i = 0; i < nk; ++i) hv[i] = from_float(nd(rng) + 0.5f * std::sin(0.37f * float(i / c.D)), c.bf16);
  uint16_t *dq, *dk, *dv, *dout;
  float* dlse;
  const size_t nl = (size_t)c.B * c.Hq * c.Lq;
  CK(cudaMalloc(&dq, nq * 2));
  CK(cudaMalloc(&dk, nk * 2));
  CK(cudaMalloc(&dv, nk * 2));
  CK(cudaMalloc(&dout, nq * 2));
  CK(cudaMalloc(&dlse, sizeof(float) * nl));
  CK(cudaMemcpy(dq, hq.data(), nq * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dk, hk.data(), nk * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dv, hv.data(), nk * 2, cudaMemcpyHostToDevice));
  const FlashFwdParams p = make_params(c, dq, dk, dv, dout, c.lse ? dlse : nullptr);
  FlashFwdPlan plan;
  const std::string why = flash_fwd_plan(p, dev, FlashVariant::Hopper, &plan);
  if (!why.empty()) {
    printf("DECLINED %s\n", why.c_str());
    return false;
  }
  if (blocks > 0) plan.work_blocks = blocks, plan.item_tickets = tickets;
  const TwoRuns runs = run_twice_poisoned(p, plan, dout, nq, dlse, nl);
  const std::vector<uint16_t>& o1 = runs.o;
  const std::vector<float>& l1 = runs.lse;
  const bool deterministic = runs.deterministic;
  const bool graphs = graphs_replayed_at_once_match(p, plan, dout, nq, o1);
  const int G = c.Hq / c.Hkv;
  const double scale = 1.0 / std::sqrt((double)c.D), u = c.bf16 ? 1.0 / 256 : 1.0 / 2048;
  double worst = 0, lse_worst = 0;
  long bad = 0;
  std::vector<double> s(c.Lk);
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.Hq; ++h)
      for (int i = 0; i < c.Lq; ++i) {
        const int hkv = h / G;
        const int hi = c.causal ? std::max(0, std::min(c.Lk, i + c.Lk - c.Lq + 1)) : c.Lk;
        auto kv = [&](const std::vector<uint16_t>& x, int j, int d) {
          return (double)to_float(x[(((size_t)b * c.Lk + j) * c.Hkv + hkv) * c.D + d], c.bf16);
        };
        double m = -INFINITY, vmax = 0;
        for (int j = 0; j < hi; ++j) {
          double dot = 0;
          for (int d = 0; d < c.D; ++d) dot += (double)to_float(hq[(((size_t)b * c.Lq + i) * c.Hq + h) * c.D + d], c.bf16) * kv(hk, j, d);
          s[j] = dot * scale;
          m = std::max(m, s[j]);
          for (int d = 0; d < c.D; ++d) vmax = std::max(vmax, std::fabs(kv(hv, j, d)));
        }
        double l = 0;
        for (int j = 0; j < hi; ++j) l += std::exp(s[j] - m);
        for (int d = 0; d < c.D; ++d) {
          double o = 0;
          for (int j = 0; j < hi; ++j) o += std::exp(s[j] - m) * kv(hv, j, d);
          o = hi > 0 ? o / l : 0.0;
          const double got = to_float(o1[(((size_t)b * c.Lq + i) * c.Hq + h) * c.D + d], c.bf16);
          const double bound = 2 * u * vmax + u * std::fabs(o) + 1e-6;
          const double e = std::fabs(got - o);
          if (!(e <= bound)) ++bad;
          worst = std::max(worst, e / bound);
        }
        if (c.lse) {
          const float got = l1[((size_t)b * c.Hq + h) * c.Lq + i];
          if (hi > 0) {
            const double lse = m + std::log(l);
            lse_worst = std::max(lse_worst, std::fabs(got - lse) / (1e-4 * std::max(1.0, std::fabs(lse))));
            if (!std::isfinite(got)) lse_worst = INFINITY;
          } else if (!(std::isinf(got) && got < 0)) {
            lse_worst = INFINITY;
          }
        }
      }
  const bool ok = bad == 0 && lse_worst <= 1.0 && deterministic && graphs;
  printf("%s (%d,%d,%d,%d,%d,%d) causal=%d %s lse=%d: worst/bound %.3f lse err/bound %.3f bad %ld deterministic %d graphs %d  [%s]\n",
         ok ? "ok  " : "FAIL", c.B, c.Hq, c.Hkv, c.Lq, c.Lk, c.D, c.causal, c.bf16 ? "bf16" : "fp16", c.lse, worst, lse_worst,
         bad, deterministic, graphs, plan.describe().c_str());
  cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dlse);
  return ok;
}

static std::vector<Case> check_cases() {
  return {
      {1, 1, 1, 192, 128, 64, false, true},
      {1, 2, 1, 130, 300, 64, false, false},
      {2, 4, 2, 37, 129, 64, true, true},
      {1, 3, 3, 200, 77, 64, true, false},   // causal with Lq > Lk: rows that see no key
      {2, 8, 2, 577, 513, 64, true, true},   // five query blocks of 128, the last partial
      {1, 2, 2, 385, 1000, 40, false, true},  // D = 40 on the D = 64 instance
      {1, 4, 4, 1, 2049, 64, false, false},  // one query
      {2, 2, 2, 513, 33, 64, false, false, false},  // no LSE
      {1, 8, 1, 1024, 1024, 64, true, true},
      {1, 4, 2, 300, 333, 128, true, true},  // D = 128 (2 consumer warpgroups)
      {1, 2, 1, 257, 500, 96, false, false},
  };
}

__global__ void fill_half_bits(uint16_t* x, size_t n, uint32_t seed, bool bf16) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float u = hash_uniform(i, seed);
    x[i] = bf16 ? num::float_to_bf16(u) : num::float_to_half(u);
  }
}

struct Timed {
  Case c;
  size_t n;
  uint16_t *q, *k, *v, *o;
  explicit Timed(const Case& cs) : c(cs), n((size_t)cs.B * cs.Lq * cs.Hq * cs.D) {
    for (uint16_t** b : {&q, &k, &v, &o}) CK(cudaMalloc(b, n * 2));
    fill_half_bits<<<1024, 256>>>(q, n, 1, c.bf16);
    fill_half_bits<<<1024, 256>>>(k, n, 2, c.bf16);
    fill_half_bits<<<1024, 256>>>(v, n, 3, c.bf16);
    CK(cudaDeviceSynchronize());
  }
  ~Timed() { cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o); }
  FlashFwdParams params() const { return make_params(c, q, k, v, o, nullptr); }
};

static void time_shapes(const DeviceLimits& dev) {
  struct S { int B, H, L, D; bool causal; };
  const S shapes[] = {{1, 8, 512, 64, false},    {1, 8, 512, 64, true},     {1, 8, 1024, 64, false},
                      {1, 8, 1024, 64, true},    {1, 8, 2048, 64, false},   {1, 8, 2048, 64, true},
                      {4, 16, 1024, 64, false},  {4, 16, 1024, 64, true},   {16, 16, 512, 64, false},
                      {2, 16, 4096, 64, false},  {2, 16, 4096, 64, true},   {1, 16, 16384, 64, false},
                      {8, 16, 2048, 64, false},  {2, 16, 4096, 128, false}, {2, 16, 4096, 128, true},
                      {1, 16, 16384, 128, false}, {4, 16, 2048, 192, false}, {4, 16, 2048, 256, false},
                      {1, 8, 2048, 32, false},   {4, 16, 1024, 32, false},  {4, 16, 2048, 32, false},
                      {4, 16, 2048, 32, true},   {2, 16, 4096, 32, false},  {1, 16, 16384, 128, true},
                      {8, 16, 2048, 128, true},  {8, 32, 2048, 128, true}};
  const char* only = std::getenv("HOPPER_DEV_D");  // e.g. 32: time only that head dim
  const char* causal_only = std::getenv("HOPPER_DEV_CAUSAL");  // set: the causal shapes only
  // The persistent schedule's pair groups forced (a number of groups, or "all": one group of every pair).
  const char* group = std::getenv("HOPPER_DEV_GROUP");
  // HOPPER_DEV_BLOCKS=items: one block per item (not persistent); =static: the plan's grid without tickets.
  const char* blocks = std::getenv("HOPPER_DEV_BLOCKS");
  // HOPPER_DEV_VARIANT=allwarps|warpspec: the first column's kernel is that mma.sync variant instead of the Hopper kernel.
  const char* forced = std::getenv("HOPPER_DEV_VARIANT");
  const std::string fv = forced != nullptr ? forced : "hopper";
  const FlashVariant first = fv == "allwarps" ? FlashVariant::AllWarps
                             : fv == "warpspec" ? FlashVariant::WarpSpecialized : FlashVariant::Hopper;
  printf("device %s, %d SMs\n", dev.name.c_str(), dev.sm_count);
  printf("| B,H,L,D | causal | dtype | %s us | %s TF/s | auto us | auto plan |\n|---|---|---|--:|--:|--:|---|\n", fv.c_str(),
         fv.c_str());
  for (const S& sh : shapes)
    for (int bf16 = 0; bf16 < 2; ++bf16) {
      if (only != nullptr && std::atoi(only) != sh.D) continue;
      if (causal_only != nullptr && !sh.causal) continue;
      const Timed t(Case{sh.B, sh.H, sh.H, sh.L, sh.L, sh.D, sh.causal, bf16 != 0});
      const FlashFwdParams p = t.params();
      FlashFwdPlan hp, ap;
      std::string why = flash_fwd_plan(p, dev, first, &hp);
      if (why.empty()) why = flash_fwd_plan(p, dev, FlashVariant::Auto, &ap);
      if (!why.empty()) {
        printf("declined: %s\n", why.c_str());
        continue;
      }
      if (first == FlashVariant::Hopper) {  // the persistent schedule's knobs (the mma.sync kernels have none)
        if (group != nullptr) hp.pair_groups = std::string(group) == "all" ? 1 : std::max(1, std::atoi(group));
        if (blocks != nullptr && std::string(blocks) == "items") hp.work_blocks = hp.n_mblocks * sh.B * sh.H, hp.item_tickets = false;
        if (blocks != nullptr && std::string(blocks) == "static") hp.item_tickets = false;
      }
      const double hus = time_plan(p, hp), aus = time_plan(p, ap);
      const double flops = 4.0 * sh.B * sh.H * (double)sh.L * sh.L * sh.D * (sh.causal ? 0.5 : 1.0);
      printf("| %d,%d,%d,%d | %s | %s | %.1f | %.0f | %.1f | %s |\n", sh.B, sh.H, sh.L, sh.D, sh.causal ? "yes" : "no",
             bf16 ? "bf16" : "fp16", hus, flops / hus * 1e-6, aus, (ap.describe() + " | " + fv + ": " + hp.describe()).c_str());
    }
}

// The case of HOPPER_DEV_SHAPE="B,H,L,D" (causal with HOPPER_DEV_CAUSAL set); exits when it is missing.
static Case case_from_env(const char* mode, bool bf16) {
  const char* shape = std::getenv("HOPPER_DEV_SHAPE");
  int b = 0, h = 0, l = 0, d = 0;
  if (shape == nullptr || std::sscanf(shape, "%d,%d,%d,%d", &b, &h, &l, &d) != 4) {
    fprintf(stderr, "%s: set HOPPER_DEV_SHAPE=B,H,L,D\n", mode);
    exit(2);
  }
  return Case{b, h, h, l, l, d, std::getenv("HOPPER_DEV_CAUSAL") != nullptr, bf16};
}

// Two launch overrides of the Hopper kernel (forced) against each other on D = 64 rows, both maskings, fp16
// (HOPPER_DEV_BF16=1: bf16): graph-timed, alternating four rounds, min and median of each, b's time over a's, and a
// last column of the caller's (`what`: the plans and the problem's params).
struct AbShape { int B, H, L, D; };
template <typename What>
static void ab_overrides(const DeviceLimits& dev, const std::vector<AbShape>& shapes, const FlashFwdLaunchOverride& ov_a,
                         const FlashFwdLaunchOverride& ov_b, const char* header, What what) {
  const bool bf16 = std::getenv("HOPPER_DEV_BF16") != nullptr;
  printf("device %s, %d SMs, %s\n", dev.name.c_str(), dev.sm_count, bf16 ? "bf16" : "fp16");
  printf("%s\n", header);
  for (const AbShape& sh : shapes)
    for (int causal = 0; causal < 2; ++causal) {
      const Timed t(Case{sh.B, sh.H, sh.H, sh.L, sh.L, sh.D, causal != 0, bf16});
      FlashFwdParams pa = t.params(), pb = t.params();
      pa.launch_override = &ov_a, pb.launch_override = &ov_b;
      FlashFwdPlan pla, plb;
      std::string why = flash_fwd_plan(pa, dev, FlashVariant::Hopper, &pla);
      if (why.empty()) why = flash_fwd_plan(pb, dev, FlashVariant::Hopper, &plb);
      if (!why.empty()) {
        printf("declined: %s\n", why.c_str());
        continue;
      }
      std::vector<double> a, b;
      for (int r = 0; r < 4; ++r) a.push_back(time_plan(pa, pla)), b.push_back(time_plan(pb, plb));
      std::sort(a.begin(), a.end()), std::sort(b.begin(), b.end());
      printf("| %d,%d,%d,%d | %s | %.1f, %.1f | %.1f, %.1f | %.3f | %s |\n", sh.B, sh.H, sh.L, sh.D, causal ? "yes" : "no",
             a[0], (a[1] + a[2]) / 2, b[0], (b[1] + b[2]) / 2, b[0] / a[0], what(t.params(), plb).c_str());
    }
}

// O stored by the consumer warps (a) against by TMA (b).
static void ostores(const DeviceLimits& dev) {
  FlashFwdLaunchOverride warps{}, tma{};
  warps.o_stores = 1, tma.o_stores = 2;
  ab_overrides(dev, {{16, 16, 512, 64}, {4, 16, 1024, 64}, {1, 8, 1024, 64}, {1, 8, 512, 64}, {2, 16, 4096, 64}, {8, 16, 2048, 64}},
               warps, tma,
               "| B,H,L,D | causal | warps' stores us (min, med) | TMA us (min, med) | TMA / warps (min) | TMA plan |\n"
               "|---|---|--:|--:|--:|---|",
               [](const FlashFwdParams&, const FlashFwdPlan& plb) { return plb.describe(); });
}

// The D = 64 instance with two consumer warpgroups (a) against three (b); the last column: what the plan takes
// unforced.
static void wgs(const DeviceLimits& dev) {
  FlashFwdLaunchOverride two{}, three{};
  two.hopper_wgs = 2, three.hopper_wgs = 3;
  ab_overrides(dev, {{16, 16, 512, 64}, {32, 16, 512, 64}, {4, 16, 1024, 64}, {8, 16, 1024, 64}, {16, 16, 1024, 64},
                     {4, 16, 2048, 64}, {8, 16, 2048, 64}, {2, 16, 4096, 64}, {1, 16, 16384, 64}},
               two, three,
               "| B,H,L,D | causal | 2 warpgroups us (min, med) | 3 warpgroups us (min, med) | 3 / 2 (min) | plan's choice |\n"
               "|---|---|--:|--:|--:|---|",
               [&dev](const FlashFwdParams& p, const FlashFwdPlan&) {
                 FlashFwdPlan auto_plan;
                 const std::string why = flash_fwd_plan(p, dev, FlashVariant::Hopper, &auto_plan);
                 return why.empty() ? std::to_string(auto_plan.hopper_wgs) + " warpgroups" : "declined: " + why;
               });
}

static void profile_once(const DeviceLimits& dev, const std::string& mode) {
  std::vector<Case> cases = mode == "profile-short" ? std::vector<Case>{Case{16, 16, 16, 512, 512, 64, false, true}}
                                                    : std::vector<Case>{Case{2, 16, 16, 4096, 4096, 64, false, true},
                                                                        Case{1, 16, 16, 16384, 16384, 128, false, true}};
  if (mode == "profile-shape") {
    cases = {case_from_env("profile-shape", true)};
  }
  for (const Case& c : cases) {
    const Timed t(c);
    const FlashFwdParams p = t.params();
    FlashFwdPlan plan;
    const std::string why = flash_fwd_plan(p, dev, FlashVariant::Hopper, &plan);
    if (!why.empty()) { printf("declined: %s\n", why.c_str()); exit(2); }
    for (int r = 0; r < 2; ++r) CK(flash_fwd_run(p, plan, nullptr));
    CK(cudaDeviceSynchronize());
  }
  printf("profiled %zu shape(s), bf16, two calls each\n", cases.size());
}

static int timeline(const DeviceLimits& dev) {
  if (flashcore_dev_timeline_clear == nullptr || flashcore_dev_timeline_read == nullptr) {
    fprintf(stderr, "timeline: no instance built with -DFLASHCORE_DEV_TIMELINE is linked\n");
    return 2;
  }
  const char* shape = std::getenv("HOPPER_DEV_SHAPE");
  const Timed t(case_from_env("timeline", std::getenv("HOPPER_DEV_BF16") != nullptr));
  const FlashFwdParams p = t.params();
  FlashFwdPlan plan;
  const std::string why = flash_fwd_plan(p, dev, FlashVariant::Auto, &plan);
  if (!why.empty()) { fprintf(stderr, "declined: %s\n", why.c_str()); return 2; }
  const char* tail = std::getenv("HOPPER_DEV_TAIL");
  if (tail != nullptr && std::atoi(tail) == 0) plan.tail_items = 0, plan.tail_splits = 0;
  printf("# device %s, %d SMs; shape %s; plan %s; graph-timed %.1f us\n", dev.name.c_str(), dev.sm_count, shape,
         plan.describe().c_str(), time_plan(p, plan));
  printf("call,block,warp,n,w,piece,tiles,t_q,t_pv,t_end,t_k0,t_s0\n");
  std::vector<unsigned long long> rec(1 << 22);
  for (int call = 0; call < 3; ++call) {
    int nb, nw, ni, nf;
    timeline_call(p, plan, rec, &nb, &nw, &ni, &nf);
    for (int bl = 0; bl < nb; ++bl)
      for (int wp = 0; wp < nw; ++wp)
        for (int n = 0; n < ni; ++n) {
          const unsigned long long* r = &rec[(((size_t)bl * nw + wp) * ni + n) * nf];
          if ((r[0] >> 63) == 0) continue;
          printf("%d,%d,%d,%d,%u,%d,%u,%llu,%llu,%llu,%llu,%llu\n", call, bl, wp, n, (unsigned)(r[0] & 0xffffffffu),
                 (int)((r[0] >> 32) & 0xff) - 1, (unsigned)((r[0] >> 40) & 0x7fffff), r[1], r[2], r[3],
                 nf > 4 ? r[4] : 0ull, nf > 5 ? r[5] : 0ull);
        }
  }
  return 0;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  DeviceLimits dev;
  std::string why;
  if (!device_limits(&dev, &why)) {
    printf("no device: %s\n", why.c_str());
    return 2;
  }
  if (mode == "check") {
    std::mt19937 rng(12345);
    int failed = 0, n = 0;
    for (const Case& c : check_cases()) failed += !check_case(c, rng, dev), ++n;
    // The persistent grid with few blocks: every block walks several items (same cases, and larger ones).
    for (const Case& c : check_cases()) failed += !check_case(c, rng, dev, 3, n % 2 == 0), ++n;
    for (const Case& c : {Case{4, 8, 2, 1000, 1100, 64, true, true}, Case{2, 16, 4, 700, 650, 128, true, false},
                          Case{3, 4, 4, 333, 900, 192, false, true}, Case{2, 6, 3, 300, 200, 256, true, false}})
      for (int blocks : {1, 7, 0}) {
        failed += !check_case(c, rng, dev, blocks, true), ++n;
        if (blocks > 0) failed += !check_case(c, rng, dev, blocks, false), ++n;
      }
    printf("%d of %d cases failed\n", failed, n);
    return failed != 0;
  }
  if (mode == "time") {
    time_shapes(dev);
    return 0;
  }
  if (mode == "profile" || mode == "profile-short" || mode == "profile-shape") {
    profile_once(dev, mode);
    return 0;
  }
  if (mode == "timeline") return timeline(dev);
  if (mode == "ostores") {
    ostores(dev);
    return 0;
  }
  if (mode == "wgs") {
    wgs(dev);
    return 0;
  }
  fprintf(stderr, "usage: hopper_dev check|time|ostores|wgs|profile|profile-short|profile-shape|timeline\n");
  return 2;
}
