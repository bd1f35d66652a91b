// Development harness for flashcore::cuda::flash_fwd (src/backends/cuda/flash_fwd.cu).
//
//   flash_dev check     correctness over a shape list (odd lengths, GQA/MQA, causal, Lq != Lk, strides,
//                       both dtypes, both variants, forced split-KV) vs the fp64 oracle and its naive
//                       same-precision mode (src/verify/oracle.cpp, compiled in); poisoned outputs;
//                       determinism (3 runs, bitwise)
//   flash_dev time      CUDA-graph timing (20 calls per graph, median of replays) of the perf shapes
//   flash_dev headdims  every head dim class (8..256): correctness, then (4,16,2048,D) timing per launch shape
//   flash_dev sweep     launch-config sweep (block_m, stages, split) on the small shapes
//   flash_dev sweep-mid launch-config sweep of D=64 problems between the main job and the large ones
//   flash_dev sweep-short launch-config sweep of the short D = 64 rows of issue 19 (forced mma.sync path)
//   flash_dev wide-ab   the forced all-warps path on the wide kernel's rows: one round of a two-build A/B
//   flash_dev d64-ab    the wide kernel's D = 64 rows at ring depths 2-4: one round of a two-build A/B
//   flash_dev d32-l4    D = 32 rows: the table's wide kernel against the 16-row kernel's 64-row blocks at 2 and 3
//                       stages (for a build whose SM holds an L4's shared memory: the carveout knob)
//   flash_dev sanitize  a few small cases once each (for compute-sanitizer)
//   flash_dev decline   prints the decline reasons for some unsupported problems
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../../src/backends/cuda/flash_fwd.h"
#include "../../src/verify/oracle.hpp"
#include "dev_common.cuh"

using namespace flashcore::cuda;


static float bits_to_float(uint16_t b, bool bf16) {
  if (bf16) { uint32_t u = uint32_t(b) << 16; float f; memcpy(&f, &u, 4); return f; }
  __half_raw r; r.x = b; return __half2float(__half(r));
}
static uint16_t float_to_bits(float f, bool bf16) {
  if (bf16) { __nv_bfloat16 h = __float2bfloat16(f); uint16_t b; memcpy(&b, &h, 2); return b; }
  __half h = __float2half(f); uint16_t b; memcpy(&b, &h, 2); return b;
}

enum Layout { BSHD = 0, BHSD = 1, BSHD_PADDED = 2 };
static const char* layout_name(int l) { return l == 0 ? "BSHD" : l == 1 ? "BHSD" : "BSHDpad"; }

struct Case {
  int B, Hq, Hkv, Lq, Lk, D;
  bool causal, bf16;
  int layout;
};

// A [B][S][H][D] tensor with strides per layout, device buffer + host float copy (canonical b,h,s,d).
struct Tensor {
  int B, S, H, D;
  long long sb, ss, sh;  // element strides
  size_t elems;          // allocation size in elements
  uint16_t* dev = nullptr;
  std::vector<uint16_t> host;
  void init(int B_, int S_, int H_, int D_, int layout) {
    B = B_; S = S_; H = H_; D = D_;
    if (layout == BHSD) { ss = D; sh = (long long)S * D; sb = sh * H; }
    else { long long pad = layout == BSHD_PADDED ? 8 : 0; sh = D; ss = (long long)H * D + pad; sb = ss * S + 16; }
    elems = (size_t)sb * B;
    host.assign(elems, 0xFFFF);
    CK(cudaMalloc(&dev, elems * 2 + 16));
  }
  size_t idx(int b, int s, int h, int d) const { return (size_t)(b * sb + s * ss + h * sh + d); }
  float at(int b, int s, int h, int d, bool bf16) const { return bits_to_float(host[idx(b, s, h, d)], bf16); }
  void fill_random(std::mt19937& rng, float lo, float hi, bool bf16) {
    std::uniform_real_distribution<float> u(lo, hi);
    for (int b = 0; b < B; ++b) for (int s = 0; s < S; ++s) for (int h = 0; h < H; ++h) for (int d = 0; d < D; ++d)
      host[idx(b, s, h, d)] = float_to_bits(u(rng), bf16);
    CK(cudaMemcpy(dev, host.data(), elems * 2, cudaMemcpyHostToDevice));
  }
  void free_dev() { if (dev) cudaFree(dev); dev = nullptr; }
};

struct Problem {
  Case c;
  Tensor q, k, v, o;
  float* lse = nullptr;
  void init(const Case& c_, std::mt19937& rng) {
    c = c_;
    q.init(c.B, c.Lq, c.Hq, c.D, c.layout);
    k.init(c.B, c.Lk, c.Hkv, c.D, c.layout);
    v.init(c.B, c.Lk, c.Hkv, c.D, c.layout);
    o.init(c.B, c.Lq, c.Hq, c.D, c.layout);
    q.fill_random(rng, -1.5f, 1.5f, c.bf16);
    k.fill_random(rng, -1.5f, 1.5f, c.bf16);
    v.fill_random(rng, -1.f, 1.f, c.bf16);
    CK(cudaMalloc(&lse, sizeof(float) * (size_t)c.B * c.Hq * c.Lq));
  }
  FlashFwdParams params() const {
    FlashFwdParams p{};
    p.q = q.dev; p.k = k.dev; p.v = v.dev; p.o = o.dev; p.lse = lse;
    p.batch = c.B; p.heads_q = c.Hq; p.heads_kv = c.Hkv; p.seqlen_q = c.Lq; p.seqlen_k = c.Lk; p.head_dim = c.D;
    p.q_batch_stride = q.sb; p.q_seq_stride = q.ss; p.q_head_stride = q.sh;
    p.k_batch_stride = k.sb; p.k_seq_stride = k.ss; p.k_head_stride = k.sh;
    p.v_batch_stride = v.sb; p.v_seq_stride = v.ss; p.v_head_stride = v.sh;
    p.o_batch_stride = o.sb; p.o_seq_stride = o.ss; p.o_head_stride = o.sh;
    p.scale = 1.0f / std::sqrt((float)c.D);
    p.causal = c.causal; p.bf16 = c.bf16;
    return p;
  }
  void poison() {
    CK(cudaMemset(o.dev, 0xFF, o.elems * 2));
    CK(cudaMemset(lse, 0xFF, sizeof(float) * (size_t)c.B * c.Hq * c.Lq));
  }
  void free_all() { q.free_dev(); k.free_dev(); v.free_dev(); o.free_dev(); cudaFree(lse); }
  // The same problem for the oracle of src/verify (host copies, the kernel's scale).
  flashcore::Problem verify_problem() const {
    flashcore::Problem p;
    p.batch = c.B; p.heads_q = c.Hq; p.heads_kv = c.Hkv; p.seqlen_q = c.Lq; p.seqlen_k = c.Lk; p.head_dim = c.D;
    p.dtype = c.bf16 ? flashcore::DType::BF16 : flashcore::DType::F16;
    p.causal = c.causal;
    p.scale = params().scale;
    p.q = {q.sb, q.ss, q.sh}; p.k = {k.sb, k.ss, k.sh}; p.v = {v.sb, v.ss, v.sh}; p.o = {o.sb, o.ss, o.sh};
    return p;
  }
};

// Reference of sampled rows: fp64 exact and the naive same-precision computation (P rounded to the
// input type before P.V, O rounded to it), both by the oracle of src/verify on all host threads.
struct Reference {
  flashcore::verify::RowsResult exact, naive;
  bool empty(size_t n) const { return std::isinf(exact.lse[n]) && exact.lse[n] < 0; }  // the row sees no key
};

static Reference reference_rows(const Problem& P, const std::vector<flashcore::verify::Row>& rows) {
  const flashcore::Problem p = P.verify_problem();
  const int nt = (int)std::max(1u, std::thread::hardware_concurrency());
  using flashcore::verify::Precision;
  return {flashcore::verify::attention_rows(p, P.q.host.data(), P.k.host.data(), P.v.host.data(), rows, Precision::Exact, nt),
          flashcore::verify::attention_rows(p, P.q.host.data(), P.k.host.data(), P.v.host.data(), rows, Precision::Same, nt)};
}

static std::vector<flashcore::verify::Row> pick_rows(const Case& c, int max_rows_per_head, std::mt19937& rng) {
  std::vector<flashcore::verify::Row> rows;
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.Hq; ++h) {
      if (c.Lq <= max_rows_per_head) {
        for (int i = 0; i < c.Lq; ++i) rows.push_back({b, h, i});
      } else {
        rows.push_back({b, h, 0});
        rows.push_back({b, h, c.Lq - 1});
        std::uniform_int_distribution<int> u(0, c.Lq - 1);
        for (int n = 2; n < max_rows_per_head; ++n) rows.push_back({b, h, u(rng)});
      }
    }
  return rows;
}

struct ErrStats {
  double max_ours = 0, max_naive = 0, max_ours_vs_naive = 0, max_lse = 0, l2_num = 0, l2_den = 0;
  long bad = 0;  // NaN / unwritten / nonzero-for-empty / wrong -inf LSE / clobbered padding
};

static ErrStats compare(const Problem& P, const Reference& ref) {
  const Case& c = P.c;
  std::vector<uint16_t> o(P.o.elems);
  std::vector<float> lse((size_t)c.B * c.Hq * c.Lq);
  CK(cudaMemcpy(o.data(), P.o.dev, P.o.elems * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(lse.data(), P.lse, lse.size() * 4, cudaMemcpyDeviceToHost));
  ErrStats e;
  for (size_t n = 0; n < ref.exact.rows.size(); ++n) {
    const flashcore::verify::Row& r = ref.exact.rows[n];
    const double* o64 = &ref.exact.o[n * c.D];
    const double* onaive = &ref.naive.o[n * c.D];
    const bool empty = ref.empty(n);
    for (int d = 0; d < c.D; ++d) {
      const float got = bits_to_float(o[P.o.idx(r.b, r.i, r.h, d)], c.bf16);
      if (!std::isfinite(got)) { ++e.bad; continue; }
      if (empty) { if (got != 0.f) ++e.bad; continue; }
      e.max_ours = std::max(e.max_ours, std::fabs(got - o64[d]));
      e.max_naive = std::max(e.max_naive, std::fabs(onaive[d] - o64[d]));
      e.max_ours_vs_naive = std::max(e.max_ours_vs_naive, std::fabs(got - onaive[d]));
      e.l2_num += (got - o64[d]) * (got - o64[d]);
      e.l2_den += o64[d] * o64[d];
    }
    const float gl = lse[((size_t)r.b * c.Hq + r.h) * c.Lq + r.i];
    if (empty) { if (!(std::isinf(gl) && gl < 0)) ++e.bad; }
    else if (!std::isfinite(gl)) ++e.bad;
    else e.max_lse = std::max(e.max_lse, std::fabs(gl - ref.exact.lse[n]));
  }
  // Padding between rows (BSHDpad) and after each batch must still hold the poison.
  if (c.layout == BSHD_PADDED) {
    for (int b = 0; b < c.B; ++b)
      for (int s = 0; s < c.Lq; ++s)
        for (long long x = (long long)c.Hq * c.D; x < P.o.ss; ++x)
          if (o[(size_t)(b * P.o.sb + s * P.o.ss + x)] != 0xFFFF) ++e.bad;
  }
  return e;
}

static bool same_output(const Problem& P, std::vector<uint16_t>& o_prev, std::vector<float>& l_prev, bool first) {
  std::vector<uint16_t> o(P.o.elems);
  std::vector<float> lse((size_t)P.c.B * P.c.Hq * P.c.Lq);
  CK(cudaMemcpy(o.data(), P.o.dev, P.o.elems * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(lse.data(), P.lse, lse.size() * 4, cudaMemcpyDeviceToHost));
  bool same = true;
  if (!first) same = memcmp(o.data(), o_prev.data(), o.size() * 2) == 0 && memcmp(lse.data(), l_prev.data(), lse.size() * 4) == 0;
  o_prev.swap(o); l_prev.swap(lse);
  return same;
}

struct RunCfg { FlashVariant variant; FlashFwdLaunchOverride ov; const char* name; };

static const char* variant_name(FlashVariant v) {
  return v == FlashVariant::Auto ? "auto" : v == FlashVariant::AllWarps ? "allwarps"
         : v == FlashVariant::Hopper ? "hopper" : "warpspec";
}
// A launch configuration's name in the sweeps' output: "<variant> bm<block_m> g<G> s<stages>[ tps<tiles a split>]".
static std::string config_name(FlashVariant v, const FlashFwdLaunchOverride& ov, bool with_tps) {
  char name[96];
  snprintf(name, sizeof name, "%s bm%d g%d s%d", variant_name(v), ov.block_m, ov.key_split_warps, ov.stages);
  return with_tps ? std::string(name) + " tps" + std::to_string(ov.kv_tiles_per_split) : std::string(name);
}

static int g_fail = 0;
static bool has_override(const FlashFwdLaunchOverride& o) {
  return o.block_m || o.key_split_warps || o.stages || o.kv_tiles_per_split;
}

static void check_case(const Case& c, std::mt19937& rng, bool sanitize_mode) {
  Problem P;
  P.init(c, rng);
  const std::vector<flashcore::verify::Row> rows = pick_rows(c, sanitize_mode ? 8 : 1100, rng);
  Reference ref;
  if (!sanitize_mode) ref = reference_rows(P, rows);
  std::vector<RunCfg> runs = {
      {FlashVariant::AllWarps, {}, "allwarps"},
      {FlashVariant::WarpSpecialized, {}, "warpspec"},
      {FlashVariant::AllWarps, {0, 0, 0, 1}, "allwarps-split1"},
      {FlashVariant::WarpSpecialized, {0, 0, 0, 1}, "warpspec-split1"},
      {FlashVariant::AllWarps, {128, 1, 0, -1}, "allwarps-bm128-g1"},
      {FlashVariant::AllWarps, {128, 1, 3, -1}, "allwarps-bm128-g1-s3"},  // wide-warp kernel, 3-stage ring
      {FlashVariant::WarpSpecialized, {32, 2, 4, 2}, "warpspec-bm32-g2-s4-split2"},
      {FlashVariant::AllWarps, {16, 4, 2, 3}, "allwarps-bm16-g4-s2-split3"},
      {FlashVariant::AllWarps, {16, 8, 3, -1}, "allwarps-bm16-g8-s3"},
      {FlashVariant::WarpSpecialized, {16, 4, 2, -1}, "warpspec-bm16-g4-s2"},
  };
  FlashFwdParams p = P.params();
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const std::string why = flash_fwd_unsupported_reason(p, prop.major, prop.minor, prop.sharedMemPerBlockOptin);
  if (!why.empty()) { printf("UNSUPPORTED %s\n", why.c_str()); ++g_fail; P.free_all(); return; }
  const std::string why_h = flash_fwd_unsupported_reason(p, prop.major, prop.minor, prop.sharedMemPerBlockOptin,
                                                         FlashVariant::Hopper);
  if (why_h.empty()) runs.push_back({FlashVariant::Hopper, {}, "hopper"});
  else printf("SKIP hopper: %s\n", why_h.c_str());
  for (const RunCfg& rc : runs) {
    p.launch_override = has_override(rc.ov) ? &rc.ov : nullptr;
    const std::string why_v = flash_fwd_unsupported_reason(p, prop.major, prop.minor, prop.sharedMemPerBlockOptin, rc.variant);
    if (!why_v.empty()) { printf("SKIP %s D%d: %s\n", rc.name, c.D, why_v.c_str()); continue; }
    std::vector<uint16_t> o_prev; std::vector<float> l_prev;
    bool det = true;
    ErrStats e;
    const int reps = sanitize_mode ? 1 : 3;
    for (int rep = 0; rep < reps; ++rep) {
      P.poison();
      CK(flash_fwd(p, 0, rc.variant));
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      if (rep == 0 && !sanitize_mode) e = compare(P, ref);
      if (!sanitize_mode) det = same_output(P, o_prev, l_prev, rep == 0) && det;
    }
    if (sanitize_mode) { printf("ran %s B%d Hq%d Hkv%d Lq%d Lk%d D%d %s %s\n", rc.name, c.B, c.Hq, c.Hkv, c.Lq, c.Lk, c.D, c.causal ? "causal" : "full", c.bf16 ? "bf16" : "fp16"); continue; }
    const double rel = e.l2_den > 0 ? std::sqrt(e.l2_num / e.l2_den) : 0.0;
    const double tol_rel = c.bf16 ? 1e-2 : 2e-3;
    const double tol_abs = 3 * e.max_naive + (c.bf16 ? 8e-3 : 1e-3);
    const bool ok = e.bad == 0 && det && rel < tol_rel && e.max_ours <= tol_abs && e.max_lse < 2e-3;
    if (!ok) ++g_fail;
    printf("%s B%d Hq%d Hkv%d Lq%5d Lk%5d D%3d %-6s %-4s %-7s %-24s maxerr %.2e (naive %.2e, vs naive %.2e) rel %.2e lse %.2e bad %ld det %s\n",
           ok ? "PASS" : "FAIL", c.B, c.Hq, c.Hkv, c.Lq, c.Lk, c.D, c.causal ? "causal" : "full", c.bf16 ? "bf16" : "fp16",
           layout_name(c.layout), rc.name, e.max_ours, e.max_naive, e.max_ours_vs_naive, rel, e.max_lse, e.bad, det ? "yes" : "NO");
    fflush(stdout);
  }
  P.free_all();
}

// ------------------------------------------------------------------------------------------------
// Timing: a CUDA graph of 20 back-to-back calls, replayed; median replay time / 20.
// ------------------------------------------------------------------------------------------------
static double time_graph(const FlashFwdParams& p, FlashVariant variant, double* spread) {
  static cudaStream_t st = nullptr;  // one stream: the split-KV scratch is cached per stream
  if (!st) CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CK(flash_fwd(p, st, variant));  // warm up: module load, scratch allocation
  CK(cudaStreamSynchronize(st));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 20; ++i) CK(flash_fwd(p, st, variant));
  CK(cudaStreamEndCapture(st, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  CK(cudaGraphLaunch(exec, st));
  CK(cudaEventRecord(e0, st));
  CK(cudaGraphLaunch(exec, st));
  CK(cudaEventRecord(e1, st));
  CK(cudaEventSynchronize(e1));
  float ms1 = 0;
  CK(cudaEventElapsedTime(&ms1, e0, e1));
  const int reps = std::max(5, std::min(100, (int)(300.0 / std::max(ms1, 1e-3f))));
  std::vector<float> t(reps);
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(exec, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&t[r], e0, e1));
  }
  std::sort(t.begin(), t.end());
  CK(cudaGetLastError());
  cudaEventDestroy(e0); cudaEventDestroy(e1);
  cudaGraphExecDestroy(exec); cudaGraphDestroy(graph);
  if (spread) *spread = (t[reps * 3 / 4] - t[reps / 4]) * 1000.0 / 20.0;
  return t[reps / 2] * 1000.0 / 20.0;  // us per call
}

__global__ void empty_kernel() {}

// Launch floor: a graph of 20 empty kernels (same method as time_graph).
static double time_empty_graph() {
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 20; ++i) empty_kernel<<<132, 128, 0, st>>>();
  CK(cudaStreamEndCapture(st, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<float> t(101);
  for (auto& x : t) {
    CK(cudaEventRecord(e0, st)); CK(cudaGraphLaunch(exec, st)); CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1)); CK(cudaEventElapsedTime(&x, e0, e1));
  }
  std::sort(t.begin(), t.end());
  return t[50] * 1000.0 / 20.0;
}

struct Shape { int B, H, L, D; };

static void time_case(const Shape& s, bool causal, bool bf16, const RunCfg& rc, std::mt19937& rng, const char* tag) {
  Case c{s.B, s.H, s.H, s.L, s.L, s.D, causal, bf16, BHSD};
  Problem P;
  P.init(c, rng);
  FlashFwdParams p = P.params();
  p.launch_override = has_override(rc.ov) ? &rc.ov : nullptr;
  // quick sampled correctness check of exactly this configuration
  std::vector<flashcore::verify::Row> rows;
  std::uniform_int_distribution<int> u(0, s.L - 1);
  for (int h = 0; h < std::min(2, s.H); ++h)
    for (int n = 0; n < 6; ++n) rows.push_back({0, h, n == 0 ? s.L - 1 : u(rng)});
  const Reference ref = reference_rows(P, rows);
  P.poison();
  CK(flash_fwd(p, 0, rc.variant));
  CK(cudaDeviceSynchronize());
  ErrStats e = compare(P, ref);
  const bool ok = e.bad == 0 && e.max_ours <= 3 * e.max_naive + (bf16 ? 8e-3 : 1e-3);
  if (!ok) ++g_fail;
  double spread = 0;
  const double us = time_graph(p, rc.variant, &spread);
  const double flops = 4.0 * s.B * s.H * (double)s.L * s.L * s.D * (causal ? 0.5 : 1.0);
  printf("%-6s B%d H%2d L%5d D%3d %-4s %-6s %-30s %9.2f us (iqr %.2f)  %6.1f TF/s  check %s (maxerr %.1e)\n", tag, s.B, s.H, s.L, s.D,
         bf16 ? "bf16" : "fp16", causal ? "causal" : "full", rc.name, us, spread, flops / us * 1e-6, ok ? "ok" : "FAIL", e.max_ours);
  fflush(stdout);
  P.free_all();
}

// Forced all-warps, fp16, causal and not: each shape at each launch override ({} = the launch table's row), for the
// A/B modes that compare ring depths or kernels between builds.
template <size_t NS, size_t NO>
static void time_overrides(const Shape (&shapes)[NS], const FlashFwdLaunchOverride (&ovs)[NO], std::mt19937& rng,
                           const char* tag) {
  const FlashVariant AW = FlashVariant::AllWarps;
  for (const Shape& s : shapes)
    for (int causal = 0; causal < 2; ++causal)
      for (const FlashFwdLaunchOverride& ov : ovs)
        time_case(s, causal, false, RunCfg{AW, ov, has_override(ov) ? config_name(AW, ov, true).c_str() : "allwarps table"},
                  rng, tag);
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s (cc %d.%d, %d SMs, smem optin %zu)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount,
         (size_t)prop.sharedMemPerBlockOptin);
  std::mt19937 rng(12345);
  if (mode == "check" || mode == "sanitize") {
    const bool san = mode == "sanitize";
    std::vector<Case> cases;
    const int Ds[] = {64, 128};
    for (int bf = 0; bf < 2; ++bf)
      for (int causal = 0; causal < 2; ++causal)
        for (int D : Ds) {
          if (san) {
            cases.push_back({1, 2, 1, 77, 130, D, (bool)causal, (bool)bf, BSHD_PADDED});
            continue;
          }
          cases.push_back({1, 2, 2, 1, 1, D, (bool)causal, (bool)bf, BSHD});
          cases.push_back({1, 2, 2, 17, 17, D, (bool)causal, (bool)bf, BHSD});
          cases.push_back({2, 4, 2, 77, 77, D, (bool)causal, (bool)bf, BSHD_PADDED});
          cases.push_back({2, 3, 3, 113, 203, D, (bool)causal, (bool)bf, BSHD});
          cases.push_back({2, 3, 3, 203, 113, D, (bool)causal, (bool)bf, BHSD});
          cases.push_back({1, 4, 1, 1000, 1000, D, (bool)causal, (bool)bf, BSHD_PADDED});  // MQA
          cases.push_back({1, 2, 2, 1, 1000, D, (bool)causal, (bool)bf, BSHD});
          cases.push_back({1, 2, 2, 1000, 1, D, (bool)causal, (bool)bf, BSHD});
          if (D == 64) cases.push_back({1, 8, 8, 512, 512, D, (bool)causal, (bool)bf, BHSD});  // main job
          cases.push_back({1, 2, 2, 4097, 4097, D, (bool)causal, (bool)bf, BSHD});
        }
    for (const Case& c : cases) check_case(c, rng, san);
  } else if (mode == "headdims") {
    // Every head dim class on the mma.sync kernels: correctness (odd lengths, GQA, layouts, both dtypes),
    // then (4,16,2048,D) fp16 timing with the launch table (auto) and candidate launch shapes.
    for (int D : {8, 32, 40, 80, 96, 112, 160, 192, 256})
      for (int causal = 0; causal < 2; ++causal) {
        check_case({2, 6, 2, 113, 203, D, (bool)causal, causal == 1, BSHD_PADDED}, rng, false);
        check_case({1, 4, 1, 1000, 1000, D, (bool)causal, false, BHSD}, rng, false);
      }
  }
  if (mode == "headdims" || mode == "headdims-time") {
    const bool sweep = mode == "headdims";  // headdims-time: the launch table's choice (auto) only
    const FlashVariant AW = FlashVariant::AllWarps, WS = FlashVariant::WarpSpecialized;
    for (int D : {32, 64, 80, 96, 128, 160, 192, 256})
      for (int causal = 0; causal < 2; ++causal) {
        const Shape s{4, 16, 2048, D};
        time_case(s, causal, false, RunCfg{FlashVariant::Auto, {}, "auto"}, rng, "HD");
        const struct { FlashVariant v; FlashFwdLaunchOverride ov; } cfgs[] = {
            {AW, {128, 1, 2, -1}}, {AW, {128, 1, 3, -1}}, {AW, {64, 1, 2, -1}}, {AW, {64, 1, 3, -1}},
            {AW, {64, 2, 2, -1}}, {WS, {64, 1, 3, -1}},
        };
        for (const auto& c : cfgs) {
          if (!sweep) break;  // headdims-time: the table's choice only
          if (D > 128 && c.v == WS) continue;  // built up to 128
          time_case(s, causal, false, RunCfg{c.v, c.ov, config_name(c.v, c.ov, false).c_str()}, rng, "HD");
        }
      }
  } else if (mode == "time") {
    printf("FLOOR  graph of 20 empty kernels (132x128): %.2f us per kernel\n", time_empty_graph());
    const Shape shapes[] = {{1, 8, 512, 64}, {4, 16, 1024, 64}, {2, 16, 4096, 128}, {1, 16, 16384, 128}};
    for (const Shape& s : shapes)
      for (int bf = 0; bf < 2; ++bf)
        for (int causal = 0; causal < 2; ++causal) {
          if (s.L == 16384 && bf) continue;  // keep the run short: fp16 only for the largest shape
          for (FlashVariant v : {FlashVariant::Auto, FlashVariant::AllWarps, FlashVariant::WarpSpecialized})
            time_case(s, causal, bf, RunCfg{v, {}, variant_name(v)}, rng, "TIME");
        }
  } else if (mode == "time-big") {
    // The large shapes (fp16) with the launch table (Auto), the main job, and wide-warp stage variants
    // (AllWarps bm128 g1 no-split = wide-warp kernel since v6). Same binary layout old/new: A/B in one run.
    const Shape shapes[] = {{1, 8, 512, 64}, {4, 16, 1024, 64}, {2, 16, 4096, 64}, {2, 16, 4096, 128}, {1, 16, 16384, 128}};
    for (const Shape& s : shapes)
      for (int causal = 0; causal < 2; ++causal) {
        time_case(s, causal, false, RunCfg{FlashVariant::Auto, {}, "auto"}, rng, "BIG");
        time_case(s, causal, false, RunCfg{FlashVariant::Hopper, {}, "hopper"}, rng, "BIG");
      }
    time_case({2, 16, 4096, 128}, false, true, RunCfg{FlashVariant::Auto, {}, "auto"}, rng, "BIG");
    time_case({2, 16, 4096, 128}, false, true, RunCfg{FlashVariant::Hopper, {}, "hopper"}, rng, "BIG");
    time_case({2, 16, 4096, 64}, false, true, RunCfg{FlashVariant::Auto, {}, "auto"}, rng, "BIG");
    const FlashVariant AW = FlashVariant::AllWarps;
    // v6 launch-table rows (wide-warp mma.sync kernel) for the A/B against Auto (Hopper kernel since v7)
    const struct { Shape s; FlashFwdLaunchOverride ov; } cfgs[] = {
        {{1, 8, 512, 64}, {32, 4, 2, 0}},
        {{4, 16, 1024, 64}, {128, 1, 3, -1}}, {{2, 16, 4096, 64}, {128, 1, 3, -1}},
        {{2, 16, 4096, 128}, {128, 1, 2, -1}}, {{1, 16, 16384, 128}, {128, 1, 2, -1}},
    };
    for (const auto& c : cfgs)
      for (int causal = 0; causal < 2; ++causal) {
        time_case(c.s, causal, false, RunCfg{AW, c.ov, config_name(AW, c.ov, true).c_str()}, rng, "BIGCFG");
      }
  } else if (mode == "hopper-mid") {
    // Where does the Hopper kernel (no split-KV, 128-row blocks) overtake the launch table's mma.sync rows?
    const Shape shapes[] = {{1, 8, 1024, 64},  {1, 8, 2048, 64},  {16, 16, 512, 64}, {1, 16, 4096, 64},
                            {1, 8, 512, 128},  {1, 8, 1024, 128}, {1, 8, 2048, 128}, {2, 16, 1024, 128},
                            {1, 16, 2048, 128}, {4, 16, 512, 128}};
    for (const Shape& s : shapes)
      for (int causal = 0; causal < 2; ++causal) {
        time_case(s, causal, false, RunCfg{FlashVariant::Auto, {}, "auto"}, rng, "MID");
        time_case(s, causal, false, RunCfg{FlashVariant::Hopper, {}, "hopper"}, rng, "MID");
      }
  } else if (mode == "sweep") {
    struct SweepCfg { Shape s; FlashVariant v; FlashFwdLaunchOverride ov; };
    const FlashVariant AW = FlashVariant::AllWarps, WS = FlashVariant::WarpSpecialized;
    const SweepCfg cfgs[] = {
        {{1, 8, 512, 64}, AW, {32, 4, 2, -1}}, {{1, 8, 512, 64}, AW, {32, 2, 2, -1}},
        {{1, 8, 512, 64}, AW, {64, 2, 2, -1}}, {{1, 8, 512, 64}, AW, {64, 1, 3, -1}},
        {{1, 8, 512, 64}, AW, {16, 8, 2, -1}}, {{1, 8, 512, 64}, AW, {128, 1, 2, 2}},
        {{1, 8, 512, 64}, WS, {32, 2, 2, -1}}, {{1, 8, 512, 64}, WS, {16, 4, 2, -1}},
        {{4, 16, 1024, 64}, AW, {128, 1, 3, -1}}, {{4, 16, 1024, 64}, AW, {64, 1, 3, -1}},
        {{4, 16, 1024, 64}, AW, {128, 1, 2, -1}}, {{4, 16, 1024, 64}, WS, {64, 1, 3, -1}},
        {{2, 16, 4096, 128}, AW, {128, 1, 3, -1}}, {{2, 16, 4096, 128}, AW, {128, 1, 2, -1}},
        {{2, 16, 4096, 128}, AW, {64, 1, 3, -1}}, {{2, 16, 4096, 128}, WS, {64, 1, 3, -1}},
    };
    for (const SweepCfg& c : cfgs)
      for (int causal = 0; causal < 2; ++causal) {
        time_case(c.s, causal, false, RunCfg{c.v, c.ov, config_name(c.v, c.ov, true).c_str()}, rng, "SWEEP");
      }
  } else if (mode == "sweep-mid") {
    // D=64 between the main job and the large problems: 8k-130k rows (the launch table's middle rows).
    const FlashVariant AW = FlashVariant::AllWarps, WS = FlashVariant::WarpSpecialized;
    const Shape shapes[] = {{1, 8, 1024, 64}, {1, 8, 2048, 64}, {16, 16, 512, 64}, {2, 16, 4096, 64}};
    const struct { FlashVariant v; FlashFwdLaunchOverride ov; } cfgs[] = {
        {AW, {32, 4, 2, -1}}, {WS, {32, 4, 2, -1}}, {WS, {32, 2, 2, -1}}, {AW, {32, 2, 2, -1}},
        {AW, {64, 2, 2, -1}}, {AW, {64, 1, 3, -1}}, {WS, {64, 1, 3, -1}}, {AW, {128, 1, 3, -1}},
    };
    for (const Shape& s : shapes)
      for (const auto& c : cfgs)
        for (int causal = 0; causal < 2; ++causal) {
          time_case(s, causal, false, RunCfg{c.v, c.ov, config_name(c.v, c.ov, false).c_str()}, rng, "SWEEP");
        }
  } else if (mode == "sweep-short") {
    // Issue 19: the forced mma.sync path's short D = 64 rows, furthest from 1.15x FlashAttention-2 (run 58a:
    // (1,8,1024,64) 0.96-0.98x, (16,16,512,64) 0.99-1.01x, (4,16,1024,64) 1.02-1.07x), over launch shapes
    // the table has not been swept on since the kernels changed (the sweep-mid table is from v5). fp16.
    // tps -1: no split-KV; 0: the plan's split rule; > 0: that many tiles a split.
    const FlashVariant AW = FlashVariant::AllWarps, WS = FlashVariant::WarpSpecialized;
    const Shape shapes[] = {{1, 8, 1024, 64}, {16, 16, 512, 64}, {4, 16, 1024, 64}};
    const struct { FlashVariant v; FlashFwdLaunchOverride ov; } cfgs[] = {
        {WS, {32, 2, 2, 0}},  {WS, {32, 2, 3, 0}},  {WS, {32, 2, 4, 0}},  {WS, {32, 1, 3, 0}},
        {WS, {32, 1, 4, 0}},  {WS, {64, 1, 2, 0}},  {WS, {64, 1, 3, 0}},  {WS, {64, 1, 4, 0}},
        {WS, {16, 4, 2, 0}},  {WS, {16, 4, 3, 0}},  {WS, {16, 2, 3, 0}},  {WS, {64, 1, 3, 8}},
        {AW, {32, 2, 2, 0}},  {AW, {32, 2, 3, 0}},  {AW, {32, 4, 2, 0}},  {AW, {32, 4, 3, 0}},
        {AW, {64, 1, 3, 0}},  {AW, {64, 1, 4, 0}},  {AW, {64, 2, 2, 0}},  {AW, {64, 2, 3, 0}},
        {AW, {128, 1, 2, 0}}, {AW, {128, 1, 3, 0}}, {AW, {128, 1, 4, 0}}, {AW, {128, 1, 3, 8}},
        {AW, {64, 1, 3, 8}},  {AW, {128, 1, 2, 4}},
    };
    for (const Shape& s : shapes)
      for (int causal = 0; causal < 2; ++causal) {
        time_case(s, causal, false, RunCfg{AW, {}, "allwarps table"}, rng, "SHORT");
        time_case(s, causal, false, RunCfg{WS, {}, "warpspec table"}, rng, "SHORT");
        for (const auto& c : cfgs) {
          time_case(s, causal, false, RunCfg{c.v, c.ov, config_name(c.v, c.ov, true).c_str()}, rng, "SHORT");
        }
      }
  } else if (mode == "wide-ab") {
    // The forced all-warps path (the launch table's rows, the wide kernel on all but the smallest) on run 56c's
    // rows, fp16: one round of an A/B between two builds of this harness (flashcore_bench's --quick rows).
    const Shape shapes[] = {{2, 16, 4096, 128}, {1, 16, 16384, 128}, {8, 32, 2048, 128}, {4, 16, 1024, 64},
                            {16, 16, 512, 64},  {2, 16, 4096, 64},   {4, 16, 2048, 96},  {4, 16, 2048, 32}};
    for (const Shape& s : shapes)
      for (int causal = 0; causal < 2; ++causal)
        time_case(s, causal, false, RunCfg{FlashVariant::AllWarps, {}, "allwarps"}, rng, "WIDEAB");
  } else if (mode == "d64-ab") {
    // The forced all-warps path on the wide kernel's D = 64 rows (the table's ring depth, then 2, 3 and 4), fp16:
    // one round of an A/B between two builds (the ping-pong experiment: perf/dev/NOTES.md, sixtieth session).
    const Shape shapes[] = {{16, 16, 512, 64}, {4, 16, 1024, 64}, {2, 16, 4096, 64}, {1, 16, 16384, 64}, {8, 16, 2048, 64}};
    const FlashFwdLaunchOverride ovs[] = {{}, {128, 1, 2, -1}, {128, 1, 3, -1}, {128, 1, 4, -1}};
    time_overrides(shapes, ovs, rng, "D64AB");
  } else if (mode == "d32-l4") {
    // D = 32, forced all-warps, fp16: the table's row (the wide kernel's two-tile steps, 4 stages, 80 KB: one block
    // an SM on a 100 KB SM) against the 16-row kernel's 64-row blocks (2 stages 40 KB: two blocks there; 3 stages
    // 56 KB: one), and the wide kernel forced at 4 stages. Run it in a build with -DFLASHCORE_DEV_SMEM_CARVEOUT=43
    // (an L4's shared memory an SM on an H100) and in main's, one round each (perf/dev/NOTES.md, sixty-second
    // session, Next).
    const Shape shapes[] = {{4, 16, 2048, 32}, {2, 16, 4096, 32}, {4, 16, 1024, 32}, {1, 8, 2048, 32}};
    const FlashFwdLaunchOverride ovs[] = {{}, {128, 1, 4, -1}, {64, 1, 2, -1}, {64, 1, 3, -1}};
    time_overrides(shapes, ovs, rng, "D32L4");
  } else if (mode == "probe") {
    // Where does the main job's time go? Vary the key length (tiles per block) and the head count
    // (blocks) around (1, 8, 512, 64), default launch table.
    for (int Lk : {64, 128, 256, 512, 1024, 2048}) {
      Case c{1, 8, 8, 512, Lk, 64, false, false, BHSD};
      Problem P; P.init(c, rng);
      FlashFwdParams p = P.params();
      double sp = 0;
      printf("PROBE  B1 H8 Lq512 Lk%5d D64 fp16: %8.2f us\n", Lk, time_graph(p, FlashVariant::Auto, &sp));
      P.free_all();
    }
    for (int H : {1, 2, 4, 8, 16, 32}) {
      Case c{1, H, H, 512, 512, 64, false, false, BHSD};
      Problem P; P.init(c, rng);
      FlashFwdParams p = P.params();
      double sp = 0;
      printf("PROBE  B1 H%2d Lq512 Lk512 D64 fp16: %8.2f us\n", H, time_graph(p, FlashVariant::Auto, &sp));
      P.free_all();
    }
    fflush(stdout);
  } else if (mode == "one") {  // for ncu: the main job, default config, 3 launches
    Case c{1, 8, 8, 512, 512, 64, argc > 2, false, BHSD};
    Problem P; P.init(c, rng);
    FlashFwdParams p = P.params();
    for (int i = 0; i < 3; ++i) CK(flash_fwd(p, 0, FlashVariant::Auto));
    CK(cudaDeviceSynchronize());
    P.free_all();
  } else if (mode == "one-big") {  // for ncu: (2,16,4096,128) fp16 full (Auto: Hopper kernel), 3 launches
    Case c{2, 16, 16, 4096, 4096, 128, argc > 2, false, BHSD};
    Problem P; P.init(c, rng);
    FlashFwdParams p = P.params();
    for (int i = 0; i < 3; ++i) CK(flash_fwd(p, 0, FlashVariant::Auto));
    CK(cudaDeviceSynchronize());
    P.free_all();
  } else if (mode == "decline") {
    FlashFwdParams p{};
    p.batch = 1; p.heads_q = 8; p.heads_kv = 3; p.seqlen_q = 10; p.seqlen_k = 10; p.head_dim = 36; p.scale = 0.1f;
    printf("D36: %s\n", flash_fwd_unsupported_reason(p, 9, 0, 232448).c_str());
    p.head_dim = 64;
    printf("Hkv3: %s\n", flash_fwd_unsupported_reason(p, 9, 0, 232448).c_str());
    printf("sm75: %s\n", flash_fwd_unsupported_reason(p, 7, 5, 65536).c_str());
  }
  printf("%s: %d failure(s)\n", mode.c_str(), g_fail);
  return g_fail ? 1 : 0;
}
