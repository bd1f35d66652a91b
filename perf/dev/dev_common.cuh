// What the development harnesses (perf/dev/decode_dev.cu, fp8_dev.cu, hopper_dev.cu) share: the CUDA
// error check, the development timeline's host side, the CUDA-graph timing of a plan, two poisoned runs
// of a plan (checks), the (B, S, H, D) parameters and a hashed input fill.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cuda/flash_fwd.h"

#define CK(x)                                                                                            \
  do {                                                                                                   \
    cudaError_t e_ = (x);                                                                                \
    if (e_ != cudaSuccess) {                                                                             \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, #x);   \
      exit(2);                                                                                           \
    }                                                                                                    \
  } while (0)

// The development timeline's host side (src/backends/cuda/common/dev_timeline.cuh), defined only in a kernel
// instance built with FLASHCORE_DEV_TIMELINE and linked before the library (weak: null otherwise).
extern "C" __attribute__((weak)) cudaError_t flashcore_dev_timeline_clear();
extern "C" __attribute__((weak)) cudaError_t flashcore_dev_timeline_read(unsigned long long* host, size_t count, int* blocks,
                                                                         int* warps, int* items, int* fields);

// One call of a plan on the timeline: an unrecorded call first (so that the clear is not in the timeline),
// the clear, the recorded call; its records into rec, their layout (blocks, warps, items, fields) into *nb ..
// *nf. Only with an instance built with the timeline linked (the two functions above not null).
inline void timeline_call(const flashcore::cuda::FlashFwdParams& p, const flashcore::cuda::FlashFwdPlan& plan,
                          std::vector<unsigned long long>& rec, int* nb, int* nw, int* ni, int* nf) {
  CK(flashcore::cuda::flash_fwd_run(p, plan, nullptr));
  CK(cudaDeviceSynchronize());
  CK(flashcore_dev_timeline_clear());
  CK(flashcore::cuda::flash_fwd_run(p, plan, nullptr));
  CK(cudaDeviceSynchronize());
  CK(flashcore_dev_timeline_read(rec.data(), rec.size(), nb, nw, ni, nf));
}

// The median over 15 rounds of the time between events around round() (which enqueues `calls` calls on st),
// per call (us).
template <class F>
inline double median_us_per_call(cudaStream_t st, int calls, F&& round) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ts;
  for (int r = 0; r < 15; ++r) {
    CK(cudaEventRecord(e0, st));
    round();
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return ts[ts.size() / 2] * 1000.0 / calls;
}

// Timing: a CUDA graph of 20 back-to-back calls, median replay / 20 (us). One call runs first, outside
// the capture, so that any scratch is allocated before it.
inline double time_plan(const flashcore::cuda::FlashFwdParams& p, const flashcore::cuda::FlashFwdPlan& plan) {
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CK(flashcore::cuda::flash_fwd_run(p, plan, st));
  CK(cudaStreamSynchronize(st));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 20; ++i) CK(flashcore::cuda::flash_fwd_run(p, plan, st));
  CK(cudaStreamEndCapture(st, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, st));
  CK(cudaStreamSynchronize(st));
  const double us = median_us_per_call(st, 20, [&] { CK(cudaGraphLaunch(exec, st)); });
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(st);
  return us;
}

// Timing without a graph: 20 back-to-back calls on a stream (each launch enqueued by the host), median of
// 15 rounds / 20 (us); what an application that does not capture its calls sees.
inline double time_plan_eager(const flashcore::cuda::FlashFwdParams& p, const flashcore::cuda::FlashFwdPlan& plan) {
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int i = 0; i < 3; ++i) CK(flashcore::cuda::flash_fwd_run(p, plan, st));
  CK(cudaStreamSynchronize(st));
  const double us = median_us_per_call(st, 20, [&] {
    for (int i = 0; i < 20; ++i) CK(flashcore::cuda::flash_fwd_run(p, plan, st));
  });
  cudaStreamDestroy(st);
  return us;
}

// Contiguous (B, S, H, D) Q, O (Hq heads) and K, V (Hkv heads), scale 1/sqrt(D): the layout the harnesses
// check and time. The caller sets causal, dtype flags and the rest.
inline flashcore::cuda::FlashFwdParams bshd_params(int B, int Hq, int Hkv, int Lq, int Lk, int D, const void* q,
                                                   const void* k, const void* v, void* o, float* lse) {
  flashcore::cuda::FlashFwdParams p{};
  p.q = q, p.k = k, p.v = v, p.o = o, p.lse = lse;
  p.batch = B, p.heads_q = Hq, p.heads_kv = Hkv, p.seqlen_q = Lq, p.seqlen_k = Lk, p.head_dim = D;
  p.q_batch_stride = (long long)Lq * Hq * D, p.q_seq_stride = (long long)Hq * D, p.q_head_stride = D;
  p.k_batch_stride = (long long)Lk * Hkv * D, p.k_seq_stride = (long long)Hkv * D, p.k_head_stride = D;
  p.v_batch_stride = p.k_batch_stride, p.v_seq_stride = p.k_seq_stride, p.v_head_stride = D;
  p.o_batch_stride = p.q_batch_stride, p.o_seq_stride = p.q_seq_stride, p.o_head_stride = D;
  p.scale = 1.f / std::sqrt((float)D);
  return p;
}

// A value in [-1, 1) from an element index and a seed: inputs filled on the device for timing.
__host__ __device__ inline float hash_uniform(size_t i, uint32_t seed) {
  uint32_t h = (uint32_t)i * 2654435761u ^ seed;
  h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
  return (h & 0xffffff) / 16777216.f * 2.f - 1.f;
}

// Two runs of a plan with a 16-bit O (n_o elements at d_o) and an LSE (n_lse floats at d_lse), each into
// outputs poisoned with 0xff bytes first (NaN in fp16, bf16 and fp32: an element a run does not write
// fails the check): the first run's O and LSE, and whether the second run's O is bitwise the same.
struct TwoRuns {
  std::vector<uint16_t> o;
  std::vector<float> lse;
  bool deterministic;
};
inline TwoRuns run_twice_poisoned(const flashcore::cuda::FlashFwdParams& p, const flashcore::cuda::FlashFwdPlan& plan,
                                  uint16_t* d_o, size_t n_o, float* d_lse, size_t n_lse) {
  TwoRuns r{std::vector<uint16_t>(n_o), std::vector<float>(n_lse), false};
  std::vector<uint16_t> again(n_o);
  for (int run = 0; run < 2; ++run) {
    CK(cudaMemset(d_o, 0xff, n_o * 2));
    CK(cudaMemset(d_lse, 0xff, sizeof(float) * n_lse));
    CK(flashcore::cuda::flash_fwd_run(p, plan, nullptr));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(run ? again.data() : r.o.data(), d_o, n_o * 2, cudaMemcpyDeviceToHost));
    if (run == 0) CK(cudaMemcpy(r.lse.data(), d_lse, sizeof(float) * n_lse, cudaMemcpyDeviceToHost));
  }
  r.deterministic = std::memcmp(r.o.data(), again.data(), n_o * 2) == 0;
  return r;
}

// Two graphs captured on one stream (the forward into d_o, and into a second output), replayed at once
// on two other streams: both outputs bitwise equal to `eager` (the plan's work items are drawn from a
// counter of each graph's own, not from the capture stream's).
inline bool graphs_replayed_at_once_match(const flashcore::cuda::FlashFwdParams& p, const flashcore::cuda::FlashFwdPlan& plan,
                                          uint16_t* d_o, size_t n_o, const std::vector<uint16_t>& eager) {
  uint16_t* d_o2 = nullptr;
  CK(cudaMalloc(&d_o2, n_o * 2));
  flashcore::cuda::FlashFwdParams pa = p, pb = p;
  pa.lse = pb.lse = nullptr;
  pb.o = d_o2;
  cudaStream_t s0, s1, s2;
  CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CK(flashcore::cuda::flash_fwd_run(pa, plan, s0));  // the stream's scratch exists before the captures
  CK(cudaStreamSynchronize(s0));
  cudaGraph_t g[2];
  cudaGraphExec_t x[2];
  for (int i = 0; i < 2; ++i) {
    CK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeRelaxed));
    CK(flashcore::cuda::flash_fwd_run(i ? pb : pa, plan, s0));
    CK(cudaStreamEndCapture(s0, &g[i]));
    CK(cudaGraphInstantiate(&x[i], g[i], 0));
  }
  bool ok = true;
  std::vector<uint16_t> got(n_o);
  for (int rep = 0; rep < 3 && ok; ++rep) {
    CK(cudaMemset(d_o, 0xff, n_o * 2));
    CK(cudaMemset(d_o2, 0xff, n_o * 2));
    CK(cudaDeviceSynchronize());
    CK(cudaGraphLaunch(x[0], s1));
    CK(cudaGraphLaunch(x[1], s2));
    CK(cudaDeviceSynchronize());
    for (uint16_t* d : {d_o, d_o2}) {
      CK(cudaMemcpy(got.data(), d, n_o * 2, cudaMemcpyDeviceToHost));
      ok = ok && std::memcmp(got.data(), eager.data(), n_o * 2) == 0;
    }
  }
  for (int i = 0; i < 2; ++i) {
    CK(cudaGraphExecDestroy(x[i]));
    CK(cudaGraphDestroy(g[i]));
  }
  for (cudaStream_t s : {s0, s1, s2}) CK(cudaStreamDestroy(s));
  CK(cudaFree(d_o2));
  return ok;
}
