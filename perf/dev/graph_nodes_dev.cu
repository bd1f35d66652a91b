// What a captured call's extra graph nodes cost, and what programmatic dependent launch (PDL) takes back:
// a stand-in "attention" kernel (one block per SM, each waiting `work_ns` on the global timer) captured 20
// times into a CUDA graph in each of these forms, median of 15 replays / 20, minus the bare kernel's time:
//
//   K              the kernel alone (the floor)
//   K pdl          launched with programmatic stream serialization (common/dependent_launch.cuh);
//                  griddepcontrol.wait then launch_dependents first in the kernel
//   a K f          a graph-owned allocation around it (cudaMallocAsync / cudaFreeAsync nodes)
//   a m K f        and a memset of 256 bytes (tickets) between: what a split decode call captures today
//   m K            the memset alone (a persistent buffer)
//   root a m, K f  the allocation and memset made root nodes (no dependency on the calls before), the kernel
//                  depending on them and on the stream's work
//   K C            the kernel and a small second kernel (8 blocks of 2 us: a combine step)
//   K C pdl        both launched with PDL
//   a m K C f      the split_combine call as captured today
//   eager K, eager K C: back-to-back launches, no graph
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -Isrc perf/dev/graph_nodes_dev.cu -o .gpu/bin/graph_nodes_dev
// Run:   graph_nodes_dev [work_us=20]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/common/dependent_launch.cuh"
#include "dev_common.cuh"

using flashcore::cuda::detail::launch_kernel;

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <bool kPdl>
__global__ void work_kernel(int* tickets, long long work_ns) {
  if (kPdl) {
    flashcore::cuda::detail::dependent_launch_wait();
    flashcore::cuda::detail::dependent_launch_allow();
  }
  const unsigned long long t0 = now_ns();
  while (now_ns() - t0 < (unsigned long long)work_ns) {
  }
  if (threadIdx.x == 0 && tickets != nullptr) atomicAdd(tickets + (blockIdx.x & 63), 1);
}

static void launch(bool pdl, void (*k)(int*, long long), int blocks, int* tickets, long long ns, cudaStream_t s) {
  CK(launch_kernel(k, dim3(blocks), dim3(128), 0, s, pdl, tickets, ns));
}

int main(int argc, char** argv) {
  const double work_us = argc > 1 ? atof(argv[1]) : 20.0;
  const long long ns = (long long)(work_us * 1000);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  int* persistent = nullptr;
  CK(cudaMalloc(&persistent, 4096));
  CK(cudaMemset(persistent, 0, 4096));
  const long long small_ns = 2000;

  // One call in each form (captured or eager on st).
  using Call = std::function<void()>;
  auto alloc = [&](int** p) { CK(cudaMallocAsync(reinterpret_cast<void**>(p), 1 << 20, st)); };
  auto root_alloc_memset = [&](int** p) {
    cudaStreamCaptureStatus cs;
    cudaGraph_t g;
    const cudaGraphNode_t* deps;
    size_t nd;
    CK(cudaStreamGetCaptureInfo(st, &cs, nullptr, &g, &deps, nullptr, &nd));
    cudaMemAllocNodeParams ap{};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = 1 << 20;
    cudaGraphNode_t an, mn;
    CK(cudaGraphAddMemAllocNode(&an, g, nullptr, 0, &ap));
    *p = static_cast<int*>(ap.dptr);
    cudaMemsetParams mp{};
    mp.dst = ap.dptr;
    mp.value = 0;
    mp.elementSize = 4;
    mp.width = 64;
    mp.height = 1;
    mp.pitch = 0;
    CK(cudaGraphAddMemsetNode(&mn, g, &an, 1, &mp));
    CK(cudaStreamUpdateCaptureDependencies(st, &mn, nullptr, 1, cudaStreamAddCaptureDependencies));
  };
  struct Form {
    std::string name;
    bool graph;
    Call call;
  };
  std::vector<Form> forms = {
      {"K", true, [&] { launch(false, work_kernel<false>, sms, nullptr, ns, st); }},
      {"K pdl", true, [&] { launch(true, work_kernel<true>, sms, nullptr, ns, st); }},
      {"a K f", true,
       [&] {
         int* p;
         alloc(&p);
         launch(false, work_kernel<false>, sms, p, ns, st);
         CK(cudaFreeAsync(p, st));
       }},
      {"a m K f", true,
       [&] {
         int* p;
         alloc(&p);
         CK(cudaMemsetAsync(p, 0, 256, st));
         launch(false, work_kernel<false>, sms, p, ns, st);
         CK(cudaFreeAsync(p, st));
       }},
      {"a m K(pdl) f", true,
       [&] {
         int* p;
         alloc(&p);
         CK(cudaMemsetAsync(p, 0, 256, st));
         launch(true, work_kernel<true>, sms, p, ns, st);
         CK(cudaFreeAsync(p, st));
       }},
      {"m K", true,
       [&] {
         CK(cudaMemsetAsync(persistent, 0, 256, st));
         launch(false, work_kernel<false>, sms, persistent, ns, st);
       }},
      {"root a m, K f", true,
       [&] {
         int* p;
         root_alloc_memset(&p);
         launch(false, work_kernel<false>, sms, p, ns, st);
         CK(cudaFreeAsync(p, st));
       }},
      {"root a m, K(pdl) f", true,
       [&] {
         int* p;
         root_alloc_memset(&p);
         launch(true, work_kernel<true>, sms, p, ns, st);
         CK(cudaFreeAsync(p, st));
       }},
      {"K C", true,
       [&] {
         launch(false, work_kernel<false>, sms, nullptr, ns, st);
         launch(false, work_kernel<false>, 8, nullptr, small_ns, st);
       }},
      {"K C pdl", true,
       [&] {
         launch(true, work_kernel<true>, sms, nullptr, ns, st);
         launch(true, work_kernel<true>, 8, nullptr, small_ns, st);
       }},
      {"a m K C f", true,
       [&] {
         int* p;
         alloc(&p);
         CK(cudaMemsetAsync(p, 0, 256, st));
         launch(false, work_kernel<false>, sms, p, ns, st);
         launch(false, work_kernel<false>, 8, p, small_ns, st);
         CK(cudaFreeAsync(p, st));
       }},
      {"a K C f pdl", true,
       [&] {
         int* p;
         alloc(&p);
         launch(true, work_kernel<true>, sms, p, ns, st);
         launch(true, work_kernel<true>, 8, p, small_ns, st);
         CK(cudaFreeAsync(p, st));
       }},
      {"eager K", false, [&] { launch(false, work_kernel<false>, sms, persistent, ns, st); }},
      {"eager K pdl", false, [&] { launch(true, work_kernel<true>, sms, persistent, ns, st); }},
      {"eager K C", false,
       [&] {
         launch(false, work_kernel<false>, sms, persistent, ns, st);
         launch(false, work_kernel<false>, 8, persistent, small_ns, st);
       }},
      {"eager K C pdl", false,
       [&] {
         launch(true, work_kernel<true>, sms, persistent, ns, st);
         launch(true, work_kernel<true>, 8, persistent, small_ns, st);
       }},
  };
  printf("# %s, %d SMs; kernel %.1f us on %d blocks (C: 8 blocks, %.1f us); graph of 20 calls, median of 15 "
         "replays, per call\n",
         prop.name, sms, work_us, sms, small_ns * 1e-3);
  for (int round = 0; round < 2; ++round)
    for (const Form& f : forms) {
      cudaGraphExec_t exec = nullptr;
      if (f.graph) {
        cudaGraph_t graph;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < 20; ++i) f.call();
        CK(cudaStreamEndCapture(st, &graph));
        CK(cudaGraphInstantiate(&exec, graph, 0));
        CK(cudaGraphDestroy(graph));
      }
      auto once = [&] {
        if (exec) {
          CK(cudaGraphLaunch(exec, st));
        } else {
          for (int i = 0; i < 20; ++i) f.call();
        }
      };
      once();
      CK(cudaStreamSynchronize(st));
      const double us = median_us_per_call(st, 20, once);
      printf("%-22s %8.2f us a call  (%+.2f over the kernel%s)\n", f.name.c_str(), us, us - work_us,
             f.name.find('C') != std::string::npos ? " and C's 2" : "");
      if (exec) CK(cudaGraphExecDestroy(exec));
    }
  CK(cudaGetLastError());
  return 0;
}
