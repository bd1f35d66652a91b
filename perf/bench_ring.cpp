// Context-parallel (ring) attention timing across MPI ranks, one GPU each (perf/run_ring.sh):
//   mpirun -np N flashcore_bench_ring [--len 131072,262144] [--heads 32] [--dim 128] [--iters 3]
//                                     [--sharding load-balanced|contiguous] [--json FILE]
// Per row (B=1, bf16, causal and not), on every rank, medians of `iters` calls after one warm-up,
// the slowest rank's median reported:
//   ring     ring_attention: the whole call, transfers included
//   compute  the same call with a communicator that moves nothing (the same partial attentions,
//            merges and passes: the ring's time if communication were free)
//   comm     the transfers alone (size-1 shifts of a K/V shard, nothing else on the GPU)
//   hidden   1 - max(0, ring - compute) / comm: the fraction of the transfers the ring hides
// TF/s counts the whole sequence's attention FLOPs (Problem::flops) over the ring time. Scaling
// efficiency needs the 1-rank time: run_ring.sh runs np=1 and np=N and divides.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "flashcore/context_parallel.hpp"

namespace {

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                           \
    }                                                                                         \
  } while (0)

/// A communicator that keeps the ring's shape and moves nothing.
class Still final : public flashcore::Communicator {
 public:
  Still(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool device_memory() const override { return true; }
  const char* name() const override { return "none (compute only)"; }
  void shift_begin(const void*, std::size_t, void*, std::size_t, void*) override {}
  void shift_end(void*) override {}

 private:
  int rank_, size_;
};

/// Fills n bf16 values with a repeating block of random values in [-1, 1) (timing does not need more).
void fill(unsigned short* p, std::size_t n, unsigned seed) {
  std::vector<unsigned short> block(1 << 20);
  unsigned x = seed * 2654435761u + 1;
  for (auto& e : block) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    const float f = (x & 0xffff) / 32768.0f - 1.0f;
    unsigned u;
    std::memcpy(&u, &f, 4);
    e = static_cast<unsigned short>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
  }
  for (std::size_t i = 0; i < n; i += block.size())
    CK(cudaMemcpy(p + i, block.data(), 2 * std::min(block.size(), n - i), cudaMemcpyHostToDevice));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    out.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> lens{131072, 262144};
  int heads = 32, dim = 128, iters = 3;
  flashcore::Sharding sharding = flashcore::Sharding::LoadBalanced;
  const char* json = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--len") lens = parse_list(argv[i + 1]);
    else if (a == "--heads") heads = std::atoi(argv[i + 1]);
    else if (a == "--dim") dim = std::atoi(argv[i + 1]);
    else if (a == "--iters") iters = std::atoi(argv[i + 1]);
    else if (a == "--sharding") sharding = std::string(argv[i + 1]) == "contiguous" ? flashcore::Sharding::Contiguous : flashcore::Sharding::LoadBalanced;
    else if (a == "--json") json = argv[i + 1];
  }
  int devices = 0;
  CK(cudaGetDeviceCount(&devices));
  int local_rank = rank;
  if (const char* lr = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) local_rank = std::atoi(lr);
  CK(cudaSetDevice(local_rank % devices));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, local_rank % devices));
  flashcore::initialize();
  ncclUniqueId id;
  if (rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t nccl;
  if (ncclCommInitRank(&nccl, size, id, rank) != ncclSuccess) MPI_Abort(MPI_COMM_WORLD, 2);
  FILE* out = rank == 0 && json ? std::fopen(json, "w") : nullptr;
  if (rank == 0)
    std::printf("# ring attention, %d rank(s) on %s, sharding %s, B=1 H=%d D=%d bf16, medians of %d\n", size, prop.name,
                flashcore::to_string(sharding), heads, dim, iters);
  {
    auto comm = flashcore::nccl_communicator(nccl);
    Still still(rank, size);
    cudaStream_t stream;
    CK(cudaStreamCreate(&stream));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int len : lens)
      for (bool causal : {true, false}) {
        const flashcore::ShardMap map = flashcore::ShardMap::of(len, size, sharding);
        const int L = map.local_length(rank);
        flashcore::ContextParallel cp;
        cp.local = flashcore::Problem::make(1, heads, heads, L, L, dim, flashcore::DType::BF16, causal);
        cp.seqlen = len;
        cp.sharding = sharding;
        const std::size_t n = static_cast<std::size_t>(L) * heads * dim;
        unsigned short *q, *k, *v, *o;
        CK(cudaMalloc(&q, 2 * n));
        CK(cudaMalloc(&k, 2 * n));
        CK(cudaMalloc(&v, 2 * n));
        CK(cudaMalloc(&o, 2 * n));
        fill(q, n, 1u + 7u * rank);
        fill(k, n, 2u + 7u * rank);
        fill(v, n, 3u + 7u * rank);
        flashcore::Tensors t;
        t.q = q, t.k = k, t.v = v, t.o = o;
        flashcore::Options opts;
        opts.stream = stream;
        std::string plan;
        auto time = [&](auto&& call) {
          std::vector<double> ms;
          for (int it = 0; it <= iters; ++it) {
            MPI_Barrier(MPI_COMM_WORLD);
            CK(cudaEventRecord(e0, stream));
            call();
            CK(cudaEventRecord(e1, stream));
            CK(cudaEventSynchronize(e1));
            float m = 0;
            CK(cudaEventElapsedTime(&m, e0, e1));
            if (it > 0) ms.push_back(m);  // the first is the warm-up
          }
          double mine = median(ms), slowest = 0;
          MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          return slowest;
        };
        const double ring = time([&] { plan = flashcore::ring_attention(cp, t, *comm, opts).plan; });
        const double compute = time([&] { flashcore::ring_attention(cp, t, still, opts); });
        // The transfers alone: size-1 shifts of this rank's K/V shard (both tensors), nothing else.
        const std::size_t kv_bytes = 2 * static_cast<std::size_t>(map.max_local_length()) * heads * dim * 2;
        void *a = nullptr, *b = nullptr;
        CK(cudaMalloc(&a, kv_bytes));
        CK(cudaMalloc(&b, kv_bytes));
        const double comm_ms = size == 1 ? 0.0 : time([&] {
          for (int s = 0; s + 1 < size; ++s) {
            comm->shift_begin(s % 2 ? b : a, kv_bytes, s % 2 ? a : b, kv_bytes, stream);
            comm->shift_end(stream);
          }
        });
        CK(cudaFree(a));
        CK(cudaFree(b));
        flashcore::Problem whole = flashcore::Problem::make(1, heads, heads, len, len, dim, flashcore::DType::BF16, causal);
        // One rank: the plain run() of the whole problem too (what the ring's own passes cost).
        const double plain = size == 1 ? time([&] { flashcore::run(whole, t, opts); }) : 0.0;
        const double tflops = whole.flops() / (ring * 1e-3) / 1e12;
        const double hidden = comm_ms > 0 ? 1.0 - std::max(0.0, ring - compute) / comm_ms : 1.0;
        if (rank == 0) {
          std::printf("len %7d %-10s ranks %d: ring %9.2f ms  compute %9.2f ms  comm %8.2f ms  %6.1f TF/s  hidden %5.1f%%",
                      len, causal ? "causal" : "non-causal", size, ring, compute, comm_ms, tflops, 100 * hidden);
          if (size == 1) std::printf("  plain run() %9.2f ms (ring passes +%.1f%%)", plain, 100 * (ring / plain - 1));
          std::printf("\n  plan: %s\n", plan.c_str());
          if (out)
            std::fprintf(out,
                         "{\"len\": %d, \"causal\": %s, \"ranks\": %d, \"gpu\": \"%s\", \"sharding\": \"%s\", \"heads\": %d, "
                         "\"dim\": %d, \"ring_ms\": %.4f, \"compute_ms\": %.4f, \"comm_ms\": %.4f, \"tflops\": %.2f, "
                         "\"hidden\": %.4f, \"plain_ms\": %.4f}\n",
                         len, causal ? "true" : "false", size, prop.name, flashcore::to_string(sharding), heads, dim, ring,
                         compute, comm_ms, tflops, hidden, plain);
        }
        std::fflush(stdout);
        for (void* p : {static_cast<void*>(q), static_cast<void*>(k), static_cast<void*>(v), static_cast<void*>(o)}) CK(cudaFree(p));
      }
    CK(cudaStreamDestroy(stream));
  }
  if (out) std::fclose(out);
  ncclCommDestroy(nccl);
  flashcore::finalize();
  MPI_Finalize();
  return 0;
}
