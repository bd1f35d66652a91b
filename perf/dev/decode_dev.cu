// Development harness of the decode kernel (src/backends/cuda/decode/), through the plan's C++ interface
// (flash_fwd_plan / flash_fwd_run) of libflashcore.a:
//
//   decode_dev check     decode cases (GQA, Lq 1..64, causal, variants, every sequence layout: varlen Q/K,
//                        cache lengths, paged K/V with page sizes 16..256, empty sequences, odd head dims)
//                        against an fp64 loop written here from flashcore.hpp's definitions (not from
//                        core/sequences.hpp); outputs poisoned first; every case run twice, bitwise equal
//   decode_dev sanitize  a few small cases once each (for compute-sanitizer)
//   decode_dev time      the issue's decode shapes: decode kernel vs the other kernels; CUDA graph of 20
//                        calls, median of 15 replays; us and GB/s of the bytes read and written
//   decode_dev sweep     splits x stages x rows per block on the issue's shapes
//   decode_dev deep      ring depth 3..8 x splits 1..8 (deep rings: one block per SM) on the issue's shapes
//   decode_dev cross     Auto's decode rule: decode vs the other kernels over Lq x Lk x GQA
//   decode_dev cross64   the same at D=64
//   decode_dev rule      Auto's boundaries (kDecodeTable): decode vs the other kernels
//   decode_dev paged     paged K/V (page 16..256; pages shuffled, in order, or 2 MB groups shuffled) and
//                        varlen timing against the fixed layout; a plain gather read of the same pages
//   decode_dev pages     the issue's shapes contiguous and in pages of 16/32/64: the plan's choice, and the
//                        splits of one and of two blocks per SM forced; three rounds
//   decode_dev prefill-pages  paged prefill on the Hopper kernel (seqlen_q > 64): K and V tiles in TMA boxes
//                        (launch_override.paged_copies 1), and V gathered by the producer warpgroup's cp.async (2),
//                        checked against the fp64 loop (head dims 32..256, pages of 16..256, cache lengths,
//                        variable lengths, variants), then timed against the contiguous cache on the README's
//                        paged-prefill shapes, pages of 16/32/64/256, three rounds
//   decode_dev lowbase   one or two (b, kv head) pairs (fewer blocks than SMs): the plan, and ring depths 3..8
//   decode_dev merge     split rows with their pieces merged by the last block (tickets) and by the combine
//                        kernel (launch_override.combine), graph-timed and back-to-back eager; three rounds
//                        (DECODE_DEV_ROUNDS). A captured call merges by the combine kernel either way
//   decode_dev mixed     16 caches of 1..8192 keys (contiguous, pages of 16/64/256): the balanced
//                        schedule's waves against the fixed grid; equal lengths through seqlens_k too
//   decode_dev fit       the balanced schedule's one-wave fit: the rule, never and always on batches near the slots
//   decode_dev tail      balanced calls captured against eager, and on a grid cut to the blocks the schedule uses
//   decode_dev rows      the issue's decode rows, contiguous and in pages of 16 and 64, the plan's choice (for A/Bs)
//   decode_dev peak      the device's streaming-read bandwidth (what 100 % of a decode shape can be): plain
//                        16-byte loads, and TMA bulk copies into shared memory
//   decode_dev timeline  where one call's time goes, block by block (src/backends/cuda/common/dev_timeline.cuh):
//                        DECODE_DEV_SHAPE=B,Hq,Hkv,Lq,Lk,D (DECODE_DEV_PAGE=16.. for paged K/V); three calls,
//                        each summed up (start spread, first tile, loop ends, the merge), the first as CSV
//                        when DECODE_DEV_CSV names a file. Needs the decode instance of that head dim built
//                        with -DFLASHCORE_DEV_TIMELINE (EXTRA_OBJS of build_decode_dev.sh)
//
// Build (CPU machine, after `cmake --build build/cuda-sm90 --target flashcore`): perf/dev/build_decode_dev.sh
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

#include "backends/cuda/common/ptx.cuh"
#include "backends/cuda/flash_fwd.h"
#include "backends/cuda/sm90/ptx_sm90.cuh"
#include "core/numeric.hpp"
#include "dev_common.cuh"

using namespace flashcore::cuda;
namespace num = flashcore::numeric;


static float to_f(uint16_t b, bool bf16) { return bf16 ? num::bf16_to_float(b) : num::half_to_float(b); }
static uint16_t from_f(float f, bool bf16) { return bf16 ? num::float_to_bf16(f) : num::float_to_half(f); }

// One decode case. Layout flags: varlen_q (packed Q/O), varlen_k (packed K/V), cache (seqlens_k),
// page (paged K/V with this page size; 0 = not paged). lq/lk: per-sequence lengths (bounds: seqlen_q/k).
struct Case {
  std::string name;
  int B, Hq, Hkv, D;
  std::vector<int> lq, lk;  // per sequence
  bool causal = false, bf16 = false;
  bool varlen_q = false, varlen_k = false, cache = false;
  int page = 0;
  int page_order = 0;  // 0: pages shuffled over the pool, 1: in order, 2: 2 MB groups of pages shuffled
  int wl = -1, wr = -1;
  float softcap = 0.f;
  bool alibi = false, sinks = false;
  bool lse = true;
  FlashVariant variant = FlashVariant::Auto;
  bool use_ov = false;  // run with this launch override
  FlashFwdLaunchOverride ov{};
};

struct Dev {
  std::vector<void*> ptrs;
  template <class T>
  T* put(const std::vector<T>& h) {
    void* d = nullptr;
    CK(cudaMalloc(&d, std::max<size_t>(16, h.size() * sizeof(T))));
    if (!h.empty()) CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    ptrs.push_back(d);
    return static_cast<T*>(d);
  }
  ~Dev() {
    for (void* p : ptrs) cudaFree(p);
  }
};

// Host data of a case: canonical element access by (sequence, position, head, dim).
struct Data {
  Case c;
  int seqlen_q, seqlen_k, total_q = 0, total_k = 0, num_pages = 0, pages_per_seq = 0;
  std::vector<int> cu_q, cu_k, seqlens_k, block_table;
  std::vector<int> kv_rows;  // rows of K/V per sequence in storage (>= lk with a cache)
  std::vector<uint16_t> q, k, v;
  std::vector<float> slopes, sinks;
  long long q_seq, q_batch, k_seq, k_batch;  // element strides (heads contiguous: head stride D)
  size_t q_elems, kv_elems;

  long long q_off(int b, int i, int h) const {
    return (c.varlen_q ? (long long)(cu_q[b] + i) * q_seq : b * q_batch + (long long)i * q_seq) + (long long)h * c.D;
  }
  long long kv_off(int b, int j, int h) const {
    if (c.page) {
      const int page = block_table[(size_t)b * pages_per_seq + j / c.page];
      return page * k_batch + (long long)(j % c.page) * k_seq + (long long)h * c.D;
    }
    if (c.varlen_k) return (long long)(cu_k[b] + j) * k_seq + (long long)h * c.D;
    return b * k_batch + (long long)j * k_seq + (long long)h * c.D;
  }
  long long lse_idx(int b, int h, int i) const {
    return c.varlen_q ? (long long)h * total_q + cu_q[b] + i : ((long long)b * c.Hq + h) * seqlen_q + i;
  }
};

static Data make_data(const Case& c, uint64_t seed, bool host_values = true) {
  Data d;
  d.c = c;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const int B = c.B;
  d.seqlen_q = *std::max_element(c.lq.begin(), c.lq.end());
  d.seqlen_k = *std::max_element(c.lk.begin(), c.lk.end());
  d.seqlen_q = std::max(1, d.seqlen_q);
  d.seqlen_k = std::max(1, d.seqlen_k);
  d.kv_rows.resize(B);
  for (int b = 0; b < B; ++b) d.kv_rows[b] = c.cache ? c.lk[b] + (int)(rng() % 37) : c.lk[b];
  if (c.cache) d.seqlens_k = c.lk;
  const int max_rows = *std::max_element(d.kv_rows.begin(), d.kv_rows.end());
  // seqlen_k: the longest sequence; for an unpacked, unpaged K/V the tensor's length (cache lengths <= it).
  if (!c.page && !c.varlen_k) d.seqlen_k = std::max(1, max_rows);
  const long long rowq = (long long)c.Hq * c.D, rowk = (long long)c.Hkv * c.D;
  d.q_seq = rowq;
  d.k_seq = rowk;
  if (c.varlen_q) {
    d.cu_q.assign(B + 1, 0);
    for (int b = 0; b < B; ++b) d.cu_q[b + 1] = d.cu_q[b] + c.lq[b];
    d.total_q = d.cu_q[B];
    d.q_batch = 0;
    d.q_elems = (size_t)std::max(1, d.total_q) * rowq;
  } else {
    d.q_batch = (long long)d.seqlen_q * rowq;
    d.q_elems = (size_t)B * d.q_batch;
  }
  if (c.page) {
    d.pages_per_seq = (std::max(max_rows, d.seqlen_k) + c.page - 1) / c.page;
    d.num_pages = B * d.pages_per_seq + 3;
    std::vector<int> perm(d.num_pages);
    for (int i = 0; i < d.num_pages; ++i) perm[i] = i;
    if (c.page_order == 0) std::shuffle(perm.begin(), perm.end(), rng);
    if (c.page_order == 2) {  // groups of pages spanning 2 MB shuffled, pages in order inside a group
      const long long page_bytes = (long long)c.page * c.Hkv * c.D * 2;
      const int per = (int)std::max(1ll, (2ll << 20) / page_bytes);
      std::vector<int> groups((d.num_pages + per - 1) / per);
      for (size_t g = 0; g < groups.size(); ++g) groups[g] = (int)g;
      std::shuffle(groups.begin(), groups.end(), rng);
      perm.clear();
      for (int g : groups)
        for (int i = g * per; i < std::min(d.num_pages, (g + 1) * per); ++i) perm.push_back(i);
    }
    d.block_table.resize((size_t)B * d.pages_per_seq);
    for (size_t i = 0; i < d.block_table.size(); ++i) d.block_table[i] = perm[i];
    d.k_batch = (long long)c.page * rowk;
    d.kv_elems = (size_t)d.num_pages * d.k_batch;
  } else if (c.varlen_k) {
    d.cu_k.assign(B + 1, 0);
    for (int b = 0; b < B; ++b) d.cu_k[b + 1] = d.cu_k[b] + d.kv_rows[b];
    d.total_k = d.cu_k[B];
    d.k_batch = 0;
    d.kv_elems = (size_t)std::max(1, d.total_k) * rowk;
  } else {
    d.k_batch = (long long)d.seqlen_k * rowk;
    d.kv_elems = (size_t)B * d.k_batch;
  }
  if (host_values) {  // else setup() fills the device buffers (timing)
    d.q.resize(d.q_elems);
    d.k.resize(d.kv_elems);
    d.v.resize(d.kv_elems);
    for (auto& x : d.q) x = from_f(u(rng), c.bf16);
    for (auto& x : d.k) x = from_f(u(rng), c.bf16);
    for (auto& x : d.v) x = from_f(u(rng), c.bf16);
  }
  if (c.alibi)
    for (int h = 0; h < c.Hq; ++h) d.slopes.push_back(std::pow(2.f, -8.f * (h + 1) / c.Hq));
  if (c.sinks)
    for (int h = 0; h < c.Hq; ++h) d.sinks.push_back(u(rng) * 2.f);
  return d;
}

// fp64 attention of every (sequence, head, query) from flashcore.hpp's definitions.
static void oracle(const Data& d, std::vector<double>& o, std::vector<double>& lse) {
  const Case& c = d.c;
  const double scale = 1.0 / std::sqrt((double)c.D);
  const int G = c.Hq / c.Hkv;
  o.assign(d.q_elems, 0.0);
  lse.assign(c.varlen_q ? (size_t)c.Hq * d.total_q : (size_t)c.B * c.Hq * d.seqlen_q, 0.0);
  std::vector<double> x;
  for (int b = 0; b < c.B; ++b) {
    const int Lq = c.lq[b], Lk = c.lk[b];
    const long long diag = (long long)Lk - Lq;
    for (int h = 0; h < c.Hq; ++h)
      for (int i = 0; i < Lq; ++i) {
        const long long dk = i + diag;
        const int right = c.causal ? 0 : c.wr;
        x.assign(Lk, -INFINITY);
        double mx = c.sinks ? d.sinks[h] : -INFINITY;
        for (int j = 0; j < Lk; ++j) {
          if (right >= 0 && j > dk + right) continue;
          if (c.wl >= 0 && j < dk - c.wl) continue;
          double s = 0;
          for (int e = 0; e < c.D; ++e)
            s += (double)to_f(d.q[d.q_off(b, i, h) + e], c.bf16) * to_f(d.k[d.kv_off(b, j, h / G) + e], c.bf16);
          s *= scale;
          if (c.softcap > 0) s = c.softcap * std::tanh(s / c.softcap);
          if (c.alibi) s -= d.slopes[h] * std::fabs((double)(j - dk));
          x[j] = s;
          mx = std::max(mx, s);
        }
        double sum = 0;
        if (mx != -INFINITY) {
          for (int j = 0; j < Lk; ++j)
            if (x[j] != -INFINITY) sum += std::exp(x[j] - mx);
          if (c.sinks) sum += std::exp(d.sinks[h] - mx);
        }
        for (int e = 0; e < c.D; ++e) {
          double acc = 0;
          for (int j = 0; j < Lk; ++j)
            if (x[j] != -INFINITY) acc += std::exp(x[j] - mx) * to_f(d.v[d.kv_off(b, j, h / G) + e], c.bf16);
          o[d.q_off(b, i, h) + e] = sum > 0 ? acc / sum : 0.0;
        }
        lse[d.lse_idx(b, h, i)] = sum > 0 ? mx + std::log(sum) : (c.sinks ? d.sinks[h] : -INFINITY);
      }
  }
}

// Uniform [-1, 1) values from a hash of the index, on the device (timing inputs).
__global__ void fill_kernel(uint16_t* x, size_t n, uint32_t seed, bool bf16) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    const float f = (h >> 8) * (2.f / 16777216.f) - 1.f;
    x[i] = bf16 ? num::float_to_bf16(f) : num::float_to_half(f);
  }
}

struct Run {
  Dev dev;
  FlashFwdParams p{};
  uint16_t* o = nullptr;
  float* lse = nullptr;
  size_t lse_n = 0;
};

static uint16_t* device_values(Dev& dev, size_t n, uint32_t seed, bool bf16) {
  void* ptr = nullptr;
  CK(cudaMalloc(&ptr, std::max<size_t>(16, n * 2)));
  dev.ptrs.push_back(ptr);
  fill_kernel<<<1024, 256>>>(static_cast<uint16_t*>(ptr), n, seed, bf16);
  CK(cudaGetLastError());
  return static_cast<uint16_t*>(ptr);
}

static void setup(const Data& d, Run& r, const FlashFwdLaunchOverride* ov = nullptr) {
  const Case& c = d.c;
  FlashFwdParams& p = r.p;
  const bool host = !d.q.empty();
  p.q = host ? r.dev.put(d.q) : device_values(r.dev, d.q_elems, 1, c.bf16);
  p.k = host ? r.dev.put(d.k) : device_values(r.dev, d.kv_elems, 2, c.bf16);
  p.v = host ? r.dev.put(d.v) : device_values(r.dev, d.kv_elems, 3, c.bf16);
  r.o = r.dev.put(std::vector<uint16_t>(d.q_elems, 0x7fff));  // NaN poison
  p.o = r.o;
  r.lse_n = c.varlen_q ? (size_t)c.Hq * d.total_q : (size_t)c.B * c.Hq * d.seqlen_q;
  if (c.lse) r.lse = r.dev.put(std::vector<float>(r.lse_n, NAN));
  p.lse = r.lse;
  p.batch = c.B, p.heads_q = c.Hq, p.heads_kv = c.Hkv, p.seqlen_q = d.seqlen_q, p.seqlen_k = d.seqlen_k, p.head_dim = c.D;
  p.q_batch_stride = p.o_batch_stride = d.q_batch;
  p.q_seq_stride = p.o_seq_stride = d.q_seq;
  p.q_head_stride = p.o_head_stride = c.D;
  p.k_batch_stride = p.v_batch_stride = d.k_batch;
  p.k_seq_stride = p.v_seq_stride = d.k_seq;
  p.k_head_stride = p.v_head_stride = c.D;
  p.scale = 1.f / std::sqrt((float)c.D);
  p.causal = c.causal;
  p.bf16 = c.bf16;
  p.window_left = c.wl, p.window_right = c.wr;
  p.softcap = c.softcap;
  if (c.alibi) p.alibi_slopes = r.dev.put(d.slopes);
  if (c.sinks) p.sinks = r.dev.put(d.sinks);
  if (c.varlen_q) p.cu_seqlens_q = r.dev.put(d.cu_q), p.total_q = d.total_q;
  if (c.varlen_k) p.cu_seqlens_k = r.dev.put(d.cu_k);
  if (c.cache) p.seqlens_k = r.dev.put(d.seqlens_k);
  if (c.page) {
    p.block_table = r.dev.put(d.block_table);
    p.page_size = c.page, p.pages_per_seq = d.pages_per_seq, p.num_pages = d.num_pages;
  }
  p.launch_override = ov;
}

static DeviceLimits g_dev;

static std::string plan_of(const FlashFwdParams& p, FlashVariant v, FlashFwdPlan* plan) {
  return flash_fwd_plan(p, g_dev, v, plan);
}

static int check_case(const Case& c, uint64_t seed, bool quiet = false) {
  const Data d = make_data(c, seed);
  Run r;
  setup(d, r, c.use_ov ? &d.c.ov : nullptr);
  FlashFwdPlan plan;
  const std::string why = plan_of(r.p, c.variant, &plan);
  if (!why.empty()) {
    printf("DECLINED %-40s %s\n", c.name.c_str(), why.c_str());
    return 1;
  }
  CK(flash_fwd_run(r.p, plan, nullptr));
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> o1(d.q_elems), o2(d.q_elems);
  std::vector<float> l1(r.lse_n), l2(r.lse_n);
  CK(cudaMemcpy(o1.data(), r.o, o1.size() * 2, cudaMemcpyDeviceToHost));
  if (r.lse) CK(cudaMemcpy(l1.data(), r.lse, l1.size() * 4, cudaMemcpyDeviceToHost));
  CK(flash_fwd_run(r.p, plan, nullptr));
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(o2.data(), r.o, o2.size() * 2, cudaMemcpyDeviceToHost));
  if (r.lse) CK(cudaMemcpy(l2.data(), r.lse, l2.size() * 4, cudaMemcpyDeviceToHost));
  const bool same = o1 == o2 && (!r.lse || memcmp(l1.data(), l2.data(), l1.size() * 4) == 0);
  if (quiet) return 0;
  std::vector<double> ro, rl;
  oracle(d, ro, rl);
  const double atol = c.bf16 ? 1.6e-2 : 2.5e-3, rtol = c.bf16 ? 1.6e-2 : 4e-3;
  double max_err = 0, max_lse_err = 0;
  long long bad = 0, checked = 0;
  for (int b = 0; b < c.B; ++b)
    for (int i = 0; i < c.lq[b]; ++i)
      for (int h = 0; h < c.Hq; ++h) {
        for (int e = 0; e < c.D; ++e) {
          const long long idx = d.q_off(b, i, h) + e;
          const double got = to_f(o1[idx], c.bf16), want = ro[idx];
          const double err = std::fabs(got - want);
          ++checked;
          if (!(err <= atol + rtol * std::fabs(want))) {
            if (bad < 3) printf("   o mismatch b%d i%d h%d e%d got %g want %g\n", b, i, h, e, got, want);
            ++bad;
          }
          if (err > max_err || std::isnan(got)) max_err = std::isnan(got) ? INFINITY : err;
        }
        if (r.lse) {
          const long long li = d.lse_idx(b, h, i);
          const double got = l1[li], want = rl[li];
          const bool ok = (std::isinf(want) && got == want) || std::fabs(got - want) <= 2e-3 * (1 + std::fabs(want));
          if (!ok) {
            if (bad < 3) printf("   lse mismatch b%d i%d h%d got %g want %g\n", b, i, h, got, want);
            ++bad;
          }
          if (!std::isinf(want)) max_lse_err = std::max(max_lse_err, std::fabs(got - want));
        }
      }
  const bool pass = bad == 0 && same;
  printf("%s %-44s %-52s max|dO| %.2e max|dLSE| %.2e %s\n", pass ? "PASS" : "FAIL", c.name.c_str(),
         plan.describe().c_str(), max_err, max_lse_err, same ? "deterministic" : "NOT DETERMINISTIC");
  return pass ? 0 : 1;
}

static std::vector<int> rep(int n, int v) { return std::vector<int>(n, v); }
// The cache lengths of the suite's mixed batch (perf/run_decode.sh, MIXED): 16 sequences of 1..8192 keys.
static const std::vector<int> kMixedLengths = {1, 7, 33, 100, 250, 511, 777, 1024, 1500, 2048, 3000, 4096, 5000, 6144, 7000, 8192};
// That batch as a case: Lq 1, 32 query heads on 8 KV heads, D 128, through cache lengths; page > 0: K/V in pages of
// that many rows, " page <n>" added to the name.
static Case mixed_case(const std::string& name, int page = 0) {
  Case c{name + (page ? " page " + std::to_string(page) : std::string()), 16, 32, 8, 128, rep(16, 1), kMixedLengths};
  c.cache = true, c.page = page;
  return c;
}
// Rounds of a timing mode: DECODE_DEV_ROUNDS, else `fallback`.
static int env_rounds(int fallback) {
  const char* r = std::getenv("DECODE_DEV_ROUNDS");
  return r ? std::atoi(r) : fallback;
}

static std::vector<Case> check_cases() {
  std::vector<Case> cs;
  auto add = [&](Case c) { cs.push_back(c); };
  // Fixed lengths: GQA groups, Lq, head dims, causal, dtypes.
  for (bool bf16 : {false, true})
    for (int D : {64, 128}) {
      add({"fixed g4 lq1 lk1000", 2, 8, 2, D, rep(2, 1), rep(2, 1000), false, bf16});
      add({"fixed g8 lq3 lk777 causal", 2, 16, 2, D, rep(2, 3), rep(2, 777), true, bf16});
      add({"fixed g1 lq16 lk300 causal", 1, 4, 4, D, rep(1, 16), rep(1, 300), true, bf16});
      add({"fixed g4 lq64 lk200 causal", 1, 8, 2, D, rep(1, 64), rep(1, 200), true, bf16});
      add({"fixed g4 lq5 lk3 causal (masked rows)", 2, 8, 2, D, rep(2, 5), rep(2, 3), true, bf16});
      add({"fixed g6 lq7 lk5000", 1, 12, 2, D, rep(1, 7), rep(1, 5000), false, bf16});
      add({"fixed mqa g32 lq2 lk4100 causal", 1, 32, 1, D, rep(1, 2), rep(1, 4100), true, bf16});
    }
  for (int D : {8, 40, 96, 112, 136, 192, 256}) add({"fixed g4 lq2 lk900 causal D" + std::to_string(D), 1, 8, 2, D, rep(1, 2), rep(1, 900), true, false});
  // Variants.
  {
    Case c{"window 100 causal g4 lq4 lk2000", 2, 8, 2, 128, rep(2, 4), rep(2, 2000), true, false};
    c.wl = 100, c.wr = 0;
    add(c);
    c.name = "window 64/32 g4 lq8 lk1000", c.causal = false, c.wl = 64, c.wr = 32, c.lq = rep(2, 8), c.lk = rep(2, 1000);
    add(c);
    c = {"softcap 30 g4 lq1 lk3000", 2, 8, 2, 64, rep(2, 1), rep(2, 3000), false, true};
    c.softcap = 30.f;
    add(c);
    c = {"alibi causal g4 lq4 lk1500", 2, 8, 2, 128, rep(2, 4), rep(2, 1500), true, false};
    c.alibi = true;
    add(c);
    c = {"sinks g4 lq2 lk2500 (split)", 1, 8, 2, 128, rep(1, 2), rep(1, 2500), false, false};
    c.sinks = true;
    add(c);
    c.name = "sinks causal lq5 lk3 (masked rows: LSE = sink)", c.causal = true, c.lq = rep(1, 5), c.lk = rep(1, 3);
    add(c);
    c = {"all four g4 lq3 lk4000 causal", 2, 8, 2, 128, rep(2, 3), rep(2, 4000), true, true};
    c.wl = 700, c.wr = 0, c.softcap = 20.f, c.alibi = true, c.sinks = true;
    add(c);
  }
  // Sequence layouts.
  const std::vector<int> lq_var = {1, 0, 4, 2, 64, 3}, lk_var = {1000, 77, 0, 4096, 300, 2049};
  for (bool causal : {false, true}) {
    Case c{"varlen q+k", 6, 8, 2, 128, lq_var, lk_var, causal};
    c.varlen_q = c.varlen_k = true;
    add(c);
    c = {"varlen q, cache lengths", 6, 8, 2, 64, lq_var, lk_var, causal, true};
    c.varlen_q = true, c.cache = true;
    add(c);
    c = {"cache lengths, fixed q lq1", 6, 8, 2, 128, rep(6, 1), lk_var, causal};
    c.cache = true;
    add(c);
    c = {"varlen k + cache lengths", 6, 8, 2, 128, rep(6, 2), lk_var, causal};
    c.varlen_k = true, c.cache = true;
    add(c);
    for (int page : {16, 32, 48, 64, 128, 256}) {
      c = {"paged " + std::to_string(page) + " cache lengths", 6, 8, 2, 128, rep(6, 1), lk_var, causal, page == 48};
      c.page = page, c.cache = true;
      add(c);
    }
    c = {"paged 16 varlen q lq<=64", 6, 16, 2, 64, lq_var, lk_var, causal};
    c.page = 16, c.varlen_q = true, c.cache = true;
    add(c);
    c = {"paged 64 window+sinks", 6, 8, 2, 128, lq_var, lk_var, causal};
    c.page = 64, c.cache = true, c.varlen_q = true, c.wl = 200, c.wr = causal ? 0 : 10, c.sinks = true;
    add(c);
  }
  {  // The balanced schedule (decode/schedule.cuh): 128 sequences (its largest batch), 33 and 97 (the block's last
     // warps partly filled), lengths 0..3000, some long ones cut into many pieces; 300 (the fixed grid with sequence
     // arrays); a mixed batch with 1, 2 and 8 waves, and the fixed grid forced.
    for (int batch : {33, 97, 128, 300}) {
      std::mt19937 g(42);
      std::vector<int> lq(batch), lk(batch);
      for (int b = 0; b < batch; ++b) lq[b] = 1 + (int)(g() % 4), lk[b] = b % 50 == 7 ? 3000 : (int)(g() % 400);
      lk[3] = 0;
      const std::string name = (batch <= 128 ? "balanced " : "fixed grid ") + std::to_string(batch) + " caches, ";
      Case c{name + "varlen q", batch, 8, 2, 128, lq, lk, true};
      c.varlen_q = true, c.cache = true;
      add(c);
      c.name = name + "paged 16", c.page = 16;
      add(c);
    }
    Case m = mixed_case("balanced mixed 1..8192 lq1");
    for (int waves : {1, 2, 8}) {
      m.use_ov = true, m.ov = {}, m.ov.work_waves = waves;
      m.name = "balanced mixed 1..8192 lq1, waves " + std::to_string(waves);
      add(m);
    }
    m.ov = {}, m.ov.splits = 2, m.name = "mixed 1..8192 lq1, fixed grid (2 splits)";
    add(m);
    m.ov = {}, m.ov.work_waves = 8, m.page = 64, m.sinks = true, m.name = "balanced mixed paged 64 sinks, waves 8";
    add(m);
    // The one-wave fit (decode/schedule.cuh): forced on small batches (pieces a row block sees fewer tiles than the
    // fit's count, empty caches, varlen q with causal rows, pages), and as the rule takes it (9 caches of about 8192
    // keys: one wave's pieces overflow it, lengths near equal).
    m = mixed_case("fit forced, mixed 1..8192 lq1");
    m.use_ov = true, m.ov.work_fit = 1;
    add(m);
    Case f{"fit forced, 6 caches varlen q causal, paged 16", 6, 16, 2, 128, lq_var, lk_var, true};
    f.varlen_q = true, f.cache = true, f.page = 16, f.use_ov = true, f.ov.work_fit = 1;
    add(f);
    f.name = "fit forced, 6 caches lq<=64 window+sinks", f.page = 0, f.wl = 300, f.wr = 0, f.sinks = true;
    add(f);
    std::mt19937 g(9);
    std::vector<int> near(9);
    for (int& l : near) l = 7400 + (int)(g() % 793);
    Case n{"fit by the rule, 9 caches of 7400..8192", 9, 32, 8, 128, rep(9, 1), near};
    n.cache = true;
    add(n);
    n.name = "fit by the rule, 9 caches of 7400..8192, paged 64", n.page = 64;
    add(n);
  }
  for (bool causal : {false, true}) {  // 32 packed rows: two row tiles x two key groups
    Case c{"varlen q g4 lq<=8 (32 rows), paged 32", 6, 8, 2, 128, {1, 8, 5, 0, 2, 7}, lk_var, causal};
    c.varlen_q = true, c.page = 32, c.cache = true;
    add(c);
  }
  {
    Case c{"all empty k", 3, 8, 2, 128, rep(3, 2), rep(3, 0), false};
    c.cache = true;
    add(c);
    c = {"all empty q", 3, 8, 2, 128, {0, 0, 0}, rep(3, 100), false};
    c.varlen_q = true;
    add(c);
    c = {"no lse, forced decode lq1", 2, 8, 8, 128, rep(2, 1), rep(2, 1500)};
    c.lse = false, c.variant = FlashVariant::Decode;
    add(c);
  }
  return cs;
}


static double bytes_of(const Data& d) {
  long long kv = 0, q = 0;
  const int G = d.c.Hq / d.c.Hkv;
  for (int b = 0; b < d.c.B; ++b) kv += d.c.lk[b], q += d.c.lq[b];
  return 2.0 * (2.0 * kv * d.c.Hkv * d.c.D + 2.0 * q * G * d.c.Hkv * d.c.D);  // K, V read; Q read, O written
}

static Case shape(int B, int Hq, int Hkv, int Lq, int Lk, int D, bool causal = false, bool bf16 = false) {
  char n[96];
  snprintf(n, sizeof n, "(%d,%d,%d,%d,%d,%d)%s%s", B, Hq, Hkv, Lq, Lk, D, causal ? " causal" : "", bf16 ? " bf16" : "");
  Case c{n, B, Hq, Hkv, D, rep(B, Lq), rep(B, Lk), causal, bf16};
  c.lse = true;
  return c;
}

// c with its K/V in pages of `page` rows (0: c as it is), named so.
static Case in_pages(Case c, int page) {
  if (page) c.page = page, c.name += " paged:" + std::to_string(page);
  return c;
}

static const std::vector<Case> issue_shapes() {
  return {shape(8, 32, 8, 1, 8192, 128), shape(1, 32, 8, 1, 32768, 128), shape(64, 32, 8, 1, 2048, 128),
          shape(16, 64, 8, 1, 4096, 128), shape(8, 32, 8, 4, 8192, 128)};
}

// Two device buffers of `bytes` each (K and V of a read test, filled with 1s and 2s) and a word to write.
struct ReadBuffers {
  void *a = nullptr, *b = nullptr, *out = nullptr;
  explicit ReadBuffers(size_t bytes) {
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMalloc(&out, 16));
    CK(cudaMemset(a, 1, bytes));
    CK(cudaMemset(b, 2, bytes));
  }
  ~ReadBuffers() { cudaFree(a), cudaFree(b), cudaFree(out); }
};

// Median over 12 event-timed batches of 10 back-to-back launches, µs per launch.
template <class Launch>
static double median_launch_us(Launch launch) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ts;
  for (int r = 0; r < 12; ++r) {
    CK(cudaEventRecord(e0));
    for (int i = 0; i < 10; ++i) launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ts.push_back(ms / 10);
  }
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2] * 1000;
}

// The device's streaming-read bandwidth: two buffers (K and V of a decode shape) read with 16-byte loads.
__global__ void stream_read_kernel(const uint4* a, const uint4* b, size_t n, uint32_t* out) {
  uint32_t acc = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint4 x = __ldcs(a + i), y = __ldcs(b + i);
    acc ^= x.x ^ x.y ^ x.z ^ x.w ^ y.x ^ y.y ^ y.z ^ y.w;
  }
  if (acc == 0x12345678u) out[0] = acc;  // keeps the loads
}

static void peak(size_t bytes_each) {
  ReadBuffers buf(bytes_each);
  for (int blocks_per_sm : {2, 4, 8, 16}) {
    const int grid = blocks_per_sm * g_dev.sm_count;
    const double us = median_launch_us([&] {
      stream_read_kernel<<<grid, 256>>>((const uint4*)buf.a, (const uint4*)buf.b, bytes_each / 16, (uint32_t*)buf.out);
    });
    printf("stream read 2 x %.0f MB, %d blocks/SM x 256 threads: %.1f us, %.0f GB/s\n", bytes_each / 1e6,
           blocks_per_sm, us, 2.0 * bytes_each / us * 1e-3);
  }
}

// The same two buffers through TMA bulk copies (sm_90 cp.async.bulk, global -> shared, no registers):
// one thread of each block keeps `stages` copies of `chunk` bytes in flight through a ring of shared-memory
// slots, each with its mbarrier (the bytes land; nothing reads them). Does a copy engine that needs no
// warps to keep loads in flight read faster than the plain loads above? It is the decode kernel's other
// way to load K/V on sm_90.
__global__ void bulk_read_kernel(const char* a, const char* b, size_t bytes_each, int chunk, int stages) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) unsigned long long bars[16];
  if (threadIdx.x != 0) return;
  const uint32_t ring0 = detail::smem_u32(ring), bar0 = detail::smem_u32(bars);
  for (int s = 0; s < stages; ++s) detail::mbar_init(bar0 + 8 * s, 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  const size_t per = bytes_each / chunk, total = 2 * per;
  auto wait = [&](int s, uint32_t parity) { detail::mbar_wait_parity(bar0 + 8 * s, parity); };
  size_t i = 0;
  for (size_t c = blockIdx.x; c < total; c += gridDim.x, ++i) {
    const int s = (int)(i % stages);
    if (i >= (size_t)stages) wait(s, (uint32_t)((i / stages - 1) & 1));
    const char* src = c < per ? a + c * chunk : b + (c - per) * chunk;
    const uint32_t bar = bar0 + 8 * s, dst = ring0 + (uint32_t)(s * chunk);
    detail::mbar_expect_tx(bar, (uint32_t)chunk);
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(chunk), "r"(bar)
                 : "memory");
  }
  for (size_t j = i > (size_t)stages ? i - stages : 0; j < i; ++j) wait((int)(j % stages), (uint32_t)((j / stages) & 1));
}

static void bulk_peak(size_t bytes_each) {
  ReadBuffers buf(bytes_each);
  CK(cudaFuncSetAttribute(bulk_read_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  struct Cfg {
    int chunk, stages, blocks_per_sm;
  };
  for (const Cfg c : {Cfg{4096, 8, 2}, Cfg{8192, 4, 2}, Cfg{8192, 8, 2}, Cfg{16384, 2, 2}, Cfg{16384, 3, 2},
                      Cfg{16384, 6, 1}, Cfg{16384, 4, 2}, Cfg{32768, 3, 2}, Cfg{32768, 6, 1}, Cfg{8192, 6, 4},
                      Cfg{16384, 3, 4}}) {
    const int grid = c.blocks_per_sm * g_dev.sm_count;
    const double us = median_launch_us([&] {
      bulk_read_kernel<<<grid, 32, (size_t)c.chunk * c.stages>>>((const char*)buf.a, (const char*)buf.b, bytes_each, c.chunk, c.stages);
    });
    printf("bulk read 2 x %.0f MB, %d blocks/SM, %d x %d KB in flight each: %.1f us, %.0f GB/s\n", bytes_each / 1e6,
           c.blocks_per_sm, c.stages, c.chunk / 1024, us, 2.0 * bytes_each / us * 1e-3);
  }
  CK(cudaGetLastError());
}

// The memory system alone on a paged read: K and V of every (sequence, KV head) read once, 256 bytes
// (D = 128) per key row, rows through the block table (table == nullptr: contiguous sequences), 64 rows
// per step of a block, 8 rows x 2 tensors in flight per thread. No math: what pages cost the loads.
__global__ void gather_read_kernel(const uint4* k, const uint4* v, const int* table, int pages_per_seq, int page,
                                   int hkv, int seqlen, int rows_per_block, uint32_t* out) {
  const int pieces = seqlen / rows_per_block;
  int id = blockIdx.x;
  const int piece = id % pieces;
  id /= pieces;
  const int hk = id % hkv, b = id / hkv;
  const int chunk = threadIdx.x & 15, r0 = threadIdx.x >> 4;
  const size_t row_u4 = (size_t)hkv * 16;
  uint32_t acc = 0;
  for (int j0 = piece * rows_per_block; j0 < (piece + 1) * rows_per_block; j0 += 64) {
    uint4 x[8], y[8];
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      const int j = j0 + r0 + 8 * n;
      const size_t row = table ? (size_t)__ldg(table + b * pages_per_seq + j / page) * page + j % page
                               : (size_t)b * seqlen + j;
      const size_t off = row * row_u4 + hk * 16 + chunk;
      x[n] = __ldcs(k + off);
      y[n] = __ldcs(v + off);
    }
#pragma unroll
    for (int n = 0; n < 8; ++n) acc ^= x[n].x ^ x[n].y ^ x[n].z ^ x[n].w ^ y[n].x ^ y[n].y ^ y[n].z ^ y[n].w;
  }
  if (acc == 0x12345678u) out[0] = acc;
}

// (8, 8 KV heads, 8192 keys, D = 128): K and V read contiguously and through pages of 16 / 64 / 256 in the
// three orders of Case::page_order; the kernel above, 16 blocks of 128 threads per SM resident.
static void gather_peak() {
  const int B = 8, Hkv = 8, L = 8192, rows_per_block = 512;
  const size_t rows = (size_t)B * L + 3 * 256;
  ReadBuffers buf(rows * Hkv * 128 * 2);
  const int grid = B * Hkv * (L / rows_per_block);
  for (int page : {0, 16, 64, 256})
    for (int order : {0, 1, 2}) {
      if (page == 0 && order > 0) continue;
      int* table = nullptr;
      int pps = 0;
      if (page) {
        Case c = shape(B, 32, Hkv, 1, L, 128);
        c.page = page, c.page_order = order;
        const Data d = make_data(c, 7, false);
        pps = d.pages_per_seq;
        CK(cudaMalloc(&table, d.block_table.size() * sizeof(int)));
        CK(cudaMemcpy(table, d.block_table.data(), d.block_table.size() * sizeof(int), cudaMemcpyHostToDevice));
      }
      const double us = median_launch_us([&] {
        gather_read_kernel<<<grid, 128>>>((const uint4*)buf.a, (const uint4*)buf.b, table, pps, page ? page : 1, Hkv,
                                          L, rows_per_block, (uint32_t*)buf.out);
      });
      const double moved = 2.0 * B * L * Hkv * 128 * 2;
      static const char* kOrder[] = {"shuffled", "in order", "2 MB groups shuffled"};
      printf("gather read K+V (8,8,8192,128), %s: %.1f us, %.0f GB/s\n",
             page ? ("page " + std::to_string(page) + " " + kOrder[order]).c_str() : "contiguous", us,
             moved / us * 1e-3);
      if (table) CK(cudaFree(table));
    }
}

// A timing problem: device buffers filled on the device, reused for every configuration timed on it.
struct Bench {
  Data d;
  Run r;
  explicit Bench(const Case& c) : d(make_data(c, 7, false)) {
    setup(d, r);
    CK(cudaDeviceSynchronize());
  }
};

static double time_cfg(Bench& bn, FlashVariant v, const char* label, const FlashFwdLaunchOverride* ov = nullptr) {
  bn.r.p.launch_override = ov;
  FlashFwdPlan plan;
  const std::string why = plan_of(bn.r.p, v, &plan);
  if (!why.empty()) {
    printf("%-34s %-10s declined: %s\n", bn.d.c.name.c_str(), label, why.c_str());
    return 0;
  }
  const double us = time_plan(bn.r.p, plan);
  printf("%-34s %-10s %9.1f us %7.0f GB/s  %s\n", bn.d.c.name.c_str(), label, us, bytes_of(bn.d) / us * 1e-3,
         plan.describe().c_str());
  fflush(stdout);
  return us;
}

// The decode kernel with one launch-override field forced to each value in turn ("<what> <value>").
static void time_forced(Bench& bn, const char* what, int FlashFwdLaunchOverride::*field, std::initializer_list<int> values) {
  for (int value : values) {
    FlashFwdLaunchOverride ov{};
    ov.*field = value;
    const std::string label = std::string(what) + " " + std::to_string(value);
    time_cfg(bn, FlashVariant::Decode, label.c_str(), &ov);
  }
}

// The decode kernel at each ring depth x split count (forced), and the fastest; with_auto: Auto's plan first.
static void sweep_stages_splits(const Case& c, std::vector<int> stages_list, std::vector<int> splits_list,
                                bool with_auto = false) {
  Bench bn(c);
  if (with_auto) time_cfg(bn, FlashVariant::Auto, "auto");
  double best = 1e30;
  std::string best_label;
  for (int stages : stages_list)
    for (int splits : splits_list) {
      FlashFwdLaunchOverride ov{};
      ov.stages = stages;
      ov.splits = splits;
      char label[32];
      snprintf(label, sizeof label, "s%d x%d", stages, splits);
      const double us = time_cfg(bn, FlashVariant::Decode, label, &ov);
      if (us > 0 && us < best) best = us, best_label = label;
    }
  printf("best %-34s %s %.1f us\n", c.name.c_str(), best_label.c_str(), best);
}

static void time_one(const Case& c, FlashVariant v, const char* label) {
  Bench bn(c);
  time_cfg(bn, v, label);
}

// p-quantile of v (sorted copy), µs.
static double quant(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, (size_t)(q * (v.size() - 1) + 0.5))];
}

static int timeline_mode() {
  if (flashcore_dev_timeline_clear == nullptr || flashcore_dev_timeline_read == nullptr) {
    fprintf(stderr, "timeline: no decode instance built with -DFLASHCORE_DEV_TIMELINE is linked\n");
    return 2;
  }
  const char* env = std::getenv("DECODE_DEV_SHAPE");
  int B, Hq, Hkv, Lq, Lk, D;
  if (env == nullptr || sscanf(env, "%d,%d,%d,%d,%d,%d", &B, &Hq, &Hkv, &Lq, &Lk, &D) != 6) {
    fprintf(stderr, "timeline: DECODE_DEV_SHAPE=B,Hq,Hkv,Lq,Lk,D\n");
    return 2;
  }
  Case c = shape(B, Hq, Hkv, Lq, Lk, D);
  // DECODE_DEV_MIXED=1: the suite's mixed batch instead (B sequences, cache lengths 1..Lk spread as `decode_dev mixed`
  // and perf/run_decode.sh have them at B = 16, Lk = 8192), which runs the balanced schedule.
  if (const char* mx = std::getenv("DECODE_DEV_MIXED"); mx != nullptr && std::atoi(mx) != 0) {
    std::vector<int> lens(B);
    for (int i = 0; i < B; ++i) lens[i] = std::max(1, (int)((long long)kMixedLengths[i % 16] * Lk / 8192));
    c = Case{"mixed " + std::to_string(B) + " x 1.." + std::to_string(Lk), B, Hq, Hkv, D, rep(B, Lq), lens};
    c.cache = true;
  }
  // DECODE_DEV_CACHE=1: the shape's lengths through cache lengths (the balanced schedule where equal lengths alone
  // take the fixed grid); DECODE_DEV_SPLITS=n: the fixed grid of n pieces forced.
  if (const char* ch = std::getenv("DECODE_DEV_CACHE"); ch != nullptr && std::atoi(ch) != 0)
    c.cache = true, c.name += " cache";
  if (const char* pg = std::getenv("DECODE_DEV_PAGE")) c = in_pages(c, std::atoi(pg));
  FlashFwdLaunchOverride forced{};
  if (const char* sp = std::getenv("DECODE_DEV_SPLITS")) forced.splits = std::atoi(sp), c.name += " splits " + std::string(sp);
  Bench bn(c);
  if (forced.splits) bn.r.p.launch_override = &forced;
  FlashFwdPlan plan;
  const std::string why = plan_of(bn.r.p, FlashVariant::Auto, &plan);
  if (!why.empty()) {
    fprintf(stderr, "declined: %s\n", why.c_str());
    return 2;
  }
  printf("# device %s, %d SMs; %s; plan %s; graph-timed %.1f us a call\n", g_dev.name.c_str(), g_dev.sm_count,
         c.name.c_str(), plan.describe().c_str(), time_plan(bn.r.p, plan));
  std::vector<unsigned long long> rec(1 << 22);
  FILE* csv = std::getenv("DECODE_DEV_CSV") ? fopen(std::getenv("DECODE_DEV_CSV"), "w") : nullptr;
  if (csv) fprintf(csv, "block,sm,split,tiles,splits,kind,t_entry,t_first,t_loop,t_store,t_weights,t_merged,t_groups,t_finish,t_issued,t_work,t_table,t_copies,t_q\n");
  for (int call = 0; call < 3; ++call) {
    int nb, nw, ni, nf;
    timeline_call(bn.r.p, plan, rec, &nb, &nw, &ni, &nf);
    struct Blk { int sm, split, tiles, splits, kind; double entry, first, loop, store, weights, merged, groups, finish, issued, work, table, copies, q; };
    std::vector<Blk> bl;
    unsigned long long t0 = ~0ull;
    for (size_t slot = 0; slot < (size_t)nb * nw; ++slot) {
      const unsigned long long* r0 = &rec[(slot * ni + 0) * nf];
      if ((r0[0] >> 63) != 0) t0 = std::min(t0, r0[1]);
    }
    for (size_t slot = 0; slot < (size_t)nb * nw; ++slot) {
      const unsigned long long* r0 = &rec[(slot * ni + 0) * nf];
      const unsigned long long* r1 = &rec[(slot * ni + 1) * nf];
      const unsigned long long* r2 = &rec[(slot * ni + 2) * nf];
      if ((r0[0] >> 63) == 0 || (r1[0] >> 63) == 0) continue;
      const unsigned long long* r3 = &rec[(slot * ni + 3) * nf];
      const unsigned long long* r4 = &rec[(slot * ni + 4) * nf];
      const bool has2 = (r2[0] >> 63) != 0, has3 = (r3[0] >> 63) != 0 && (r4[0] >> 63) != 0;
      auto us = [&](unsigned long long t) { return t ? (double)(t - t0) * 1e-3 : 0.0; };
      Blk x{(int)((r1[0] >> 48) & 0xff), (int)(r1[0] & 0xffff), (int)((r1[0] >> 16) & 0xffff), (int)((r1[0] >> 32) & 0xff), (int)((r1[0] >> 40) & 0xff),
            us(r0[1]), us(r0[2]), us(r0[3]), us(r1[1]), us(r1[2]), us(r1[3]),
            has2 ? us(r2[1]) : 0, has2 ? us(r2[2]) : 0, has2 ? us(r2[3]) : 0,
            has3 ? us(r3[1]) : 0, has3 ? us(r3[2]) : 0, has3 ? us(r3[3]) : 0, has3 ? us(r4[1]) : 0};
      bl.push_back(x);
      if (csv && call == 0)
        fprintf(csv, "%zu,%d,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", slot, x.sm,
                x.split, x.tiles, x.splits, x.kind, x.entry, x.first, x.loop, x.store, x.weights, x.merged, x.groups,
                x.finish, x.issued, x.work, x.table, x.copies, x.q);
    }
    std::vector<double> entry, wait1, loop_end, per_tile, store, wmerge, pmerge, end, groups, finish, issued;
    std::vector<double> p_work, p_table, p_copies, p_q, p_first;  // the prologue's steps (records 3 and 4, when built)
    int merges = 0;
    for (const Blk& x : bl) {
      entry.push_back(x.entry);
      if (x.tiles > 0) wait1.push_back(x.first - x.entry), loop_end.push_back(x.loop);
      if (x.tiles > 0 && x.work > 0) {
        p_work.push_back(x.work - x.entry), p_table.push_back(x.table - x.work), p_copies.push_back(x.copies - x.table);
        p_q.push_back(x.q - x.copies), p_first.push_back(x.first - x.q);
      }
      if (x.tiles > 1) per_tile.push_back((x.loop - x.first) / (x.tiles - 1));
      store.push_back(x.store - x.loop);
      if (x.groups > 0) {
        groups.push_back(x.groups - x.loop);
        finish.push_back(x.finish - x.groups);
        issued.push_back(x.issued - x.finish);
      }
      end.push_back(x.kind == 3 ? x.merged : x.store);
      if (x.kind == 3) ++merges, wmerge.push_back(x.weights - x.store), pmerge.push_back(x.merged - x.weights);
    }
    printf("call %d: %zu blocks, span %.2f us (last end); entry p50 %.2f max %.2f; first tile after entry p50 %.2f "
           "p90 %.2f max %.2f\n", call, bl.size(), quant(end, 1.0), quant(entry, 0.5), quant(entry, 1.0),
           quant(wait1, 0.5), quant(wait1, 0.9), quant(wait1, 1.0));
    if (!p_work.empty())
      printf("  prologue p50 (p90): schedule %.2f (%.2f), Q issued + table %.2f (%.2f), copies issued %.2f (%.2f), Q landed "
             "%.2f (%.2f), first tile %.2f (%.2f) us\n", quant(p_work, 0.5), quant(p_work, 0.9), quant(p_table, 0.5),
             quant(p_table, 0.9), quant(p_copies, 0.5), quant(p_copies, 0.9), quant(p_q, 0.5), quant(p_q, 0.9),
             quant(p_first, 0.5), quant(p_first, 0.9));
    printf("  loop end min %.2f p10 %.2f p50 %.2f p90 %.2f max %.2f; us a tile p10 %.3f p50 %.3f p90 %.3f; "
           "store/ticket after loop p50 %.2f max %.2f\n", quant(loop_end, 0), quant(loop_end, 0.1), quant(loop_end, 0.5),
           quant(loop_end, 0.9), quant(loop_end, 1.0), quant(per_tile, 0.1), quant(per_tile, 0.5), quant(per_tile, 0.9),
           quant(store, 0.5), quant(store, 1.0));
    printf("  after the loop: key groups merged p50 %.2f max %.2f, rows finished p50 %.2f max %.2f, stores issued p50 "
           "%.2f max %.2f us\n", quant(groups, 0.5), quant(groups, 1.0), quant(finish, 0.5), quant(finish, 1.0),
           quant(issued, 0.5), quant(issued, 1.0));
    if (merges)
      printf("  %d merging blocks: weights p50 %.2f max %.2f us, sums p50 %.2f max %.2f us; last merge ends %.2f "
             "(%.2f after the last loop end)\n", merges, quant(wmerge, 0.5), quant(wmerge, 1.0), quant(pmerge, 0.5),
             quant(pmerge, 1.0), quant(end, 1.0), quant(end, 1.0) - quant(loop_end, 1.0));
  }
  if (csv) fclose(csv);
  return 0;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  std::string why;
  if (!device_limits(&g_dev, &why)) {
    fprintf(stderr, "no device: %s\n", why.c_str());
    return 2;
  }
  printf("device %s, %d SMs, cc %d.%d\n", g_dev.name.c_str(), g_dev.sm_count, g_dev.cc_major, g_dev.cc_minor);
  if (mode == "check") {
    int fails = 0, n = 0;
    for (const Case& c : check_cases()) fails += check_case(c, 1000 + n++);
    // Forced split counts and row blocks on one case each.
    printf("%d cases, %d failed\n", n, fails);
    return fails ? 1 : 0;
  }
  if (mode == "sanitize") {
    std::vector<Case> cs = check_cases();
    int n = 0;
    for (const Case& c : cs)
      if (n++ % 3 == 0) check_case(c, n, true);
    CK(cudaDeviceSynchronize());
    printf("sanitize: done\n");
    return 0;
  }
  if (mode == "time") {
    for (const Case& c : issue_shapes()) {
      Bench bn(c);
      time_cfg(bn, FlashVariant::Auto, "auto");
      time_cfg(bn, FlashVariant::Decode, "decode");
      time_cfg(bn, FlashVariant::Hopper, "hopper");
      time_cfg(bn, FlashVariant::AllWarps, "allwarps");
    }
    for (const Case& c : {shape(8, 32, 8, 1, 8192, 64), shape(8, 32, 8, 1, 8192, 128, false, true),
                          shape(8, 32, 8, 8, 8192, 128, true), shape(8, 32, 8, 16, 8192, 128, true),
                          shape(8, 32, 8, 64, 8192, 128, true), shape(8, 32, 8, 1, 8192, 256),
                          shape(4, 32, 8, 1, 128, 128), shape(4, 8, 8, 1, 512, 128)}) {
      Bench bn(c);
      time_cfg(bn, FlashVariant::Auto, "auto");
      time_cfg(bn, FlashVariant::Decode, "decode");
    }
    {  // variants on the decode kernel: window 256 + sinks, softcap, ALiBi (causal, (8,32,8,1,8192,128))
      Case c = shape(8, 32, 8, 1, 8192, 128, true);
      c.softcap = 30.f, c.name += " softcap";
      time_one(c, FlashVariant::Decode, "decode");
      c = shape(8, 32, 8, 1, 8192, 128, true);
      c.alibi = true, c.name += " alibi";
      time_one(c, FlashVariant::Decode, "decode");
      c = shape(8, 32, 8, 1, 8192, 128, true);
      c.wl = 1023, c.sinks = true, c.name += " window 1024 sinks";
      time_one(c, FlashVariant::Decode, "decode");
    }
    return 0;
  }
  if (mode == "timeline") return timeline_mode();
  if (mode == "deep") {  // one block per SM with a deeper ring (fewer splits, less merging) against the plan's
    for (const Case& c : {shape(8, 32, 8, 1, 8192, 128), shape(1, 32, 8, 1, 32768, 128), shape(64, 32, 8, 1, 2048, 128),
                          shape(16, 64, 8, 1, 4096, 128), shape(8, 32, 8, 4, 8192, 128), shape(8, 32, 8, 1, 8192, 64)})
      sweep_stages_splits(c, {3, 4, 6, 8}, {1, 2, 4, 8}, true);
    return 0;
  }
  if (mode == "sweep") {
    for (const Case& c : issue_shapes()) sweep_stages_splits(c, {3}, {2, 4, 8, 16, 33, 64});
    sweep_stages_splits(shape(8, 32, 8, 1, 8192, 64), {3, 4, 6}, {4, 6, 8});
    sweep_stages_splits(shape(8, 32, 8, 1, 8192, 256), {2, 3}, {2, 4});
    sweep_stages_splits(shape(8, 32, 8, 16, 8192, 128, true), {2, 3}, {2, 4, 8});
    return 0;
  }
  if (mode == "cross") {
    for (int lk : {128, 512, 2048, 8192})
      for (int lq : {1, 4, 16, 64})
        for (int g : {1, 4, 8}) {
          Bench bn(shape(4, 8 * g, 8, lq, lk, 128, lq > 1));
          time_cfg(bn, FlashVariant::Decode, "decode");
          time_cfg(bn, FlashVariant::Hopper, "hopper");
          time_cfg(bn, FlashVariant::AllWarps, "allwarps");
        }
    return 0;
  }
  if (mode == "peak") {
    peak(134217728);  // K or V of (8,32,8,1,8192,128)
    peak(268435456);
    bulk_peak(134217728);
    bulk_peak(268435456);
    return 0;
  }
  if (mode == "cross64") {
    for (int lk : {512, 2048, 8192})
      for (int lq : {1, 4, 16})
        for (int g : {1, 4, 8}) {
          Bench bn(shape(4, 8 * g, 8, lq, lk, 64, lq > 1));
          time_cfg(bn, FlashVariant::Decode, "decode");
          time_cfg(bn, FlashVariant::Hopper, "hopper");
          time_cfg(bn, FlashVariant::AllWarps, "allwarps");
        }
    return 0;
  }
  if (mode == "rule") {  // Auto's boundaries (decode/plan_decode.cu, kDecodeTable)
    for (const Case& c : {shape(4, 32, 8, 16, 2048, 128, true), shape(4, 64, 8, 16, 2048, 128, true),
                          shape(4, 32, 8, 4, 512, 128, true), shape(4, 8, 8, 16, 8192, 128, true),
                          shape(4, 8, 8, 64, 8192, 128, true), shape(4, 8, 8, 1, 2048, 128),
                          shape(4, 32, 8, 1, 512, 256), shape(4, 32, 8, 1, 2048, 256), shape(4, 8, 8, 1, 8192, 256),
                          shape(4, 32, 8, 16, 2048, 256, true)}) {
      Bench bn(c);
      time_cfg(bn, FlashVariant::Auto, "auto");
      time_cfg(bn, FlashVariant::Decode, "decode");
      time_cfg(bn, FlashVariant::Hopper, "hopper");
      time_cfg(bn, FlashVariant::AllWarps, "allwarps");
    }
    return 0;
  }
  if (mode == "paged") {
    // (8,32,8,1,8192,D) with cache lengths, K/V contiguous (page 0) or in pages of one order
    auto paged_case = [](int d, int page, int order) {
      static const char* kOrder[] = {"", " in order", " 2MB groups"};
      Case c = shape(8, 32, 8, 1, 8192, d);
      c.page = page, c.cache = true, c.page_order = order;
      c.name += " page " + std::to_string(page) + kOrder[order];
      return c;
    };
    for (int page : {0, 16, 32, 64, 128, 256})
      for (int order : {0, 1, 2})
        if (order == 0 || page == 16 || page == 64) time_one(paged_case(128, page, order), FlashVariant::Auto, "auto");
    for (int d : {64, 256})  // the other head dims' instances, contiguous against pages of 16 and 64
      for (int page : {0, 16, 64}) time_one(paged_case(d, page, 0), FlashVariant::Auto, "auto");
    for (int page : {0, 64}) {  // ring depth: does a deeper ring hide what pages cost?
      Bench bn(paged_case(128, page, 0));
      time_forced(bn, "stages", &FlashFwdLaunchOverride::stages, {2, 3, 4, 5, 6});
    }
    gather_peak();
    Case c = shape(8, 32, 8, 1, 8192, 128);
    c.varlen_k = true, c.name += " varlen k";
    time_one(c, FlashVariant::Auto, "auto");
    return 0;
  }
  if (mode == "prefill-pages") {
    int failed = 0, checked = 0;
    auto both = [&](Case c) {  // TMA boxes, then the gather
      c.variant = FlashVariant::Hopper, c.use_ov = true;
      for (int copies : {1, 2}) {
        Case k = c;
        k.ov.paged_copies = copies;
        k.name += copies == 1 ? " tma" : " v-gather";
        failed += check_case(k, 11 + checked++);
      }
    };
    const std::vector<int> lk_var = {700, 77, 1, 1500, 300, 1025};
    for (int D : {32, 64, 80, 96, 128, 192, 256})
      for (int page : {16, 32, 64}) {
        if (page == 32 && D != 128 && D != 192) continue;
        Case c{"prefill page " + std::to_string(page) + " D" + std::to_string(D) + " causal cache", 6, 4, 2, D, rep(6, 130), lk_var, true};
        c.page = page, c.cache = true;
        both(c);
      }
    for (int page : {16, 256}) {
      Case c{"prefill page " + std::to_string(page) + " (2,4,4,200,333,128) bf16", 2, 4, 4, 128, rep(2, 200), rep(2, 333), false, true};
      c.page = page;
      both(c);
      c = {"prefill page " + std::to_string(page) + " varlen q, cache, variants", 6, 8, 2, 128, {70, 1, 300, 65, 129, 90}, lk_var, true};
      c.page = page, c.varlen_q = true, c.cache = true, c.wl = 500, c.softcap = 30.f, c.alibi = true, c.sinks = true;
      both(c);
    }
    printf("prefill-pages check: %d cases, %d failed\n", checked, failed);
    for (int round = 0; round < 3; ++round)
      for (const Case& base : {shape(4, 32, 8, 512, 4096, 128, true), shape(1, 32, 8, 2048, 16384, 128, true),
                               shape(8, 32, 8, 256, 2048, 128, true), shape(2, 16, 16, 1024, 8192, 64, true),
                               shape(4, 16, 4, 512, 4096, 256, true)})
        for (int page : {0, 16, 32, 64, 256}) {
          const Case c = in_pages(base, page);
          Bench bn(c);
          if (!page) {
            time_cfg(bn, FlashVariant::Hopper, "contiguous");
            continue;
          }
          FlashFwdLaunchOverride ov{};
          ov.paged_copies = 1;
          time_cfg(bn, FlashVariant::Hopper, "tma", &ov);
          ov.paged_copies = 2;
          time_cfg(bn, FlashVariant::Hopper, "v-gather", &ov);
        }
    return failed ? 1 : 0;
  }
  if (mode == "pages") {  // pages of 16/32/64 against contiguous: the plan's choice, and one / two blocks per SM
    for (int round = 0; round < 3; ++round)
      for (const Case& base : issue_shapes())
        for (int page : {0, 16, 32, 64}) {
          const Case c = in_pages(base, page);
          Bench bn(c);
          time_cfg(bn, FlashVariant::Auto, "auto");
          const int items = c.B * c.Hkv;  // (b, hk) pairs: these shapes have <= 16 packed rows, one row block
          if (items > g_dev.sm_count) continue;
          FlashFwdLaunchOverride ov{};
          ov.splits = g_dev.sm_count / items;
          time_cfg(bn, FlashVariant::Decode, "1/SM", &ov);
          ov.splits = std::min(64, 2 * g_dev.sm_count / items);
          time_cfg(bn, FlashVariant::Decode, "2/SM", &ov);
        }
    return 0;
  }
  if (mode == "rows") {  // the issue's decode rows, contiguous and in pages of 16 and 64: the plan's choice only (A/B)
    for (const Case& base : issue_shapes())
      for (int page : {0, 16, 64}) {
        time_one(in_pages(base, page), FlashVariant::Auto, "auto");
      }
    return 0;
  }
  if (mode == "lowbase") {  // grids of fewer blocks than SMs (one or two (b, kv head) pairs): ring depth forced
    std::vector<Case> cs = {shape(1, 8, 1, 1, 65536, 128), shape(1, 8, 1, 1, 65536, 128), shape(1, 32, 2, 1, 32768, 128),
                            shape(1, 8, 1, 1, 16384, 128), shape(1, 8, 1, 1, 65536, 64), shape(1, 8, 1, 1, 32768, 256),
                            shape(1, 16, 1, 4, 65536, 128)};
    cs[1].page = 16, cs[1].name += " paged:16";
    for (int round = 0; round < 2; ++round)
      for (const Case& c : cs) {
        Bench bn(c);
        time_cfg(bn, FlashVariant::Auto, "auto");
        time_forced(bn, "stages", &FlashFwdLaunchOverride::stages, {3, 4, 5, 6, 8});
      }
    return 0;
  }
  if (mode == "mixed") {  // a batch of different cache lengths: the balanced schedule's waves vs the fixed grid
    for (int page : {0, 16, 64, 256}) {
      Bench bn(mixed_case("mixed 16 x 1..8192", page));
      FlashFwdLaunchOverride ov{};
      ov.splits = 2;  // the fixed grid (what the plan chose before the balanced schedule)
      time_cfg(bn, FlashVariant::Decode, "fixed x2", &ov);
      time_cfg(bn, FlashVariant::Decode, "auto");
      time_forced(bn, "waves", &FlashFwdLaunchOverride::work_waves, {1, 2, 4, 8});
    }
    for (int batch : {64, 128}) {  // many sequences (128: the most the balanced schedule takes)
      std::mt19937 g(batch);
      std::vector<int> lens(batch);
      for (int& l : lens) l = 1 + (int)(g() % 4096);
      Case c{"mixed " + std::to_string(batch) + " x 1..4096", batch, 32, 8, 128, rep(batch, 1), lens};
      c.cache = true;
      Bench bn(c);
      FlashFwdLaunchOverride ov{};
      ov.splits = 1;  // the fixed grid's choice at this batch (B · Hkv blocks fill the GPU)
      time_cfg(bn, FlashVariant::Decode, "fixed x1", &ov);
      time_cfg(bn, FlashVariant::Decode, "auto");
    }
    // Equal lengths (B caches of 8192 keys) through the sequence arrays: the balanced schedule against the fixed grid
    // of `splits` pieces. B = 9, 10 put B · Hkv near the slots: one wave's rounded-up pieces overflow it (9 x 8 pairs x
    // 4 pieces = 288 > 264 on an H100), so the schedule takes two waves; "waves 2" forces the tps before T (fifty-second
    // session), and the fixed grid of 3 splits is one wave of 216 (240) pieces.
    struct EqualLengths { int batch, page, splits, max_waves; };
    for (const EqualLengths& e : {EqualLengths{9, 0, 3, 2}, EqualLengths{10, 0, 3, 2}, EqualLengths{8, 0, 4, 4},
                                  EqualLengths{8, 64, 4, 4}}) {
      Case c = shape(e.batch, 32, 8, 1, 8192, 128);
      c.cache = true, c.page = e.page, c.name += e.page ? " cache, page " + std::to_string(e.page) : " cache";
      Bench bn(c);
      FlashFwdLaunchOverride ov{};
      ov.splits = e.splits;
      time_cfg(bn, FlashVariant::Decode, ("fixed x" + std::to_string(e.splits)).c_str(), &ov);
      time_cfg(bn, FlashVariant::Decode, "auto");
      for (int waves = 1; waves <= e.max_waves; waves *= 2)
        time_forced(bn, "waves", &FlashFwdLaunchOverride::work_waves, {waves});
    }
    return 0;
  }
  if (mode == "fit") {  // the balanced schedule's one-wave fit (decode/schedule.cuh): the rule, never, always
    // Batches through cache lengths whose one wave at tps1 overflows the slots (H100: 264): equal lengths (B x 8192,
    // 8 KV heads: 72..160 items), near-equal, and spreads the rule declines (fill below 0.9), where "fit 1" shows
    // what the fit would have given; the suite's mixed batch (the rule declines: fill 0.5).
    struct FitBatch { const char* name; int batch, lo, hi, page; };
    const int rounds = env_rounds(2);
    for (int round = 0; round < rounds; ++round)
      for (const FitBatch& fb : {FitBatch{"equal", 9, 8192, 8192, 0}, FitBatch{"equal", 10, 8192, 8192, 0},
                                 FitBatch{"equal", 12, 8192, 8192, 0}, FitBatch{"equal", 17, 8192, 8192, 0},
                                 FitBatch{"equal", 20, 8192, 8192, 0}, FitBatch{"equal", 9, 8192, 8192, 16},
                                 FitBatch{"equal", 12, 2048, 2048, 0}, FitBatch{"near", 9, 7400, 8192, 0},
                                 FitBatch{"near", 12, 7400, 8192, 64}, FitBatch{"spread", 9, 6144, 8192, 0},
                                 FitBatch{"spread", 12, 4096, 8192, 0}, FitBatch{"spread", 20, 1, 8192, 0}}) {
        std::mt19937 g(fb.batch * 7 + fb.lo);
        std::vector<int> lens(fb.batch);
        for (int& l : lens) l = fb.lo + (int)(g() % (fb.hi - fb.lo + 1));
        Case c{std::string(fb.name) + " " + std::to_string(fb.batch) + " x " + std::to_string(fb.lo) + ".." +
                   std::to_string(fb.hi) + (fb.page ? " page " + std::to_string(fb.page) : std::string()),
               fb.batch, 32, 8, 128, rep(fb.batch, 1), lens};
        c.cache = true, c.page = fb.page;
        Bench bn(c);
        time_cfg(bn, FlashVariant::Decode, "auto");
        time_forced(bn, "fit", &FlashFwdLaunchOverride::work_fit, {-1, 1});
      }
    for (int page : {0, 16}) {
      Bench bn(mixed_case("mixed 16 x 1..8192", page));
      time_cfg(bn, FlashVariant::Decode, "auto");
      time_forced(bn, "fit", &FlashFwdLaunchOverride::work_fit, {-1, 1});
    }
    return 0;
  }
  if (mode == "tail") {  // where a balanced call's time goes past its last working block: captured against eager, and
    // the grid cut to the blocks the schedule uses (the rest, past the last item, only compute the schedule and return)
    struct TailCase { Case c; int used; };
    Case eq = shape(8, 32, 8, 1, 8192, 128), nine = shape(9, 32, 8, 1, 8192, 128);
    eq.cache = true, eq.name += " cache", nine.cache = true, nine.name += " cache";
    const Case mixed = mixed_case("mixed 16 x 1..8192");
    const int slots = 2 * g_dev.sm_count;
    const int rounds = env_rounds(2);
    for (int round = 0; round < rounds; ++round)
      for (const TailCase& t : {TailCase{eq, 32 * 8}, TailCase{nine, 27 * 8}, TailCase{mixed, 2 * slots},
                                TailCase{in_pages(mixed, 16), 2 * slots}}) {
        Bench bn(t.c);
        for (int fixed : {0, 1}) {
          FlashFwdLaunchOverride ov{};
          if (fixed) {
            if (t.c.lk != rep(t.c.B, t.c.lk[0])) continue;  // the fixed grid's pieces: equal lengths only
            ov.splits = t.used / (t.c.B * t.c.Hkv);
          }
          bn.r.p.launch_override = &ov;
          FlashFwdPlan plan;
          const std::string why = plan_of(bn.r.p, FlashVariant::Decode, &plan);
          if (!why.empty()) continue;
          const double g = time_plan(bn.r.p, plan), e = time_plan_eager(bn.r.p, plan);
          double gt = 0, et = 0;
          if (!fixed && plan.work_blocks > t.used) {  // the same plan on a grid of the used blocks
            FlashFwdPlan cut = plan;
            cut.work_blocks = t.used;
            gt = time_plan(bn.r.p, cut), et = time_plan_eager(bn.r.p, cut);
          }
          printf("%-30s %-9s graph %7.1f eager %7.1f | grid %4d -> %4d: graph %7.1f eager %7.1f  %s\n", t.c.name.c_str(),
                 fixed ? "fixed" : "balanced", g, e, plan.work_blocks, t.used, gt, et, plan.describe().c_str());
          fflush(stdout);
        }
      }
    return 0;
  }
  if (mode == "merge") {  // split pieces merged by the last block (tickets) or by the combine kernel; graph and eager
    std::vector<Case> cs = {shape(8, 32, 8, 1, 8192, 128), shape(1, 32, 8, 1, 32768, 128), shape(8, 32, 8, 4, 8192, 128),
                            shape(8, 32, 8, 1, 8192, 64),  shape(4, 32, 8, 1, 8192, 256),  shape(2, 32, 8, 1, 16384, 128),
                            shape(8, 32, 8, 1, 8192, 128), shape(1, 32, 8, 1, 4096, 128),  shape(64, 32, 8, 1, 2048, 128)};
    cs[6] = in_pages(cs[6], 16);
    const int rounds = env_rounds(3);
    for (int round = 0; round < rounds; ++round)
      for (const Case& c : cs) {
        Bench bn(c);
        for (int combine : {0, 1}) {
          FlashFwdLaunchOverride ov{};
          ov.combine = combine;
          bn.r.p.launch_override = &ov;
          FlashFwdPlan plan;
          const std::string why = plan_of(bn.r.p, FlashVariant::Decode, &plan);
          if (!why.empty()) {
            printf("%-34s combine %d declined: %s\n", c.name.c_str(), combine, why.c_str());
            continue;
          }
          const double g = time_plan(bn.r.p, plan), e = time_plan_eager(bn.r.p, plan);
          printf("%-34s combine %d  graph %7.1f us  eager %7.1f us  %s\n", c.name.c_str(), combine, g, e,
                 plan.describe().c_str());
          fflush(stdout);
        }
      }
    return 0;
  }
  fprintf(stderr,
          "usage: decode_dev check|sanitize|time|sweep|deep|cross|cross64|rule|paged|pages|prefill-pages|lowbase|rows|"
          "mixed|fit|tail|merge|peak|timeline\n");
  return 2;
}
