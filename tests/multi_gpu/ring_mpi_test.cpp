// Ring attention over NCCL across MPI ranks, one GPU each (mpirun -np N flashcore_ring_mpi_test).
// Every rank makes the same random whole problem (same seed), takes its shard to its GPU, runs
// ring_attention; rank 0 gathers the shards' O and LSE and checks them against the fp64 oracle of
// the whole problem (sampled rows for long sequences) within the tuned kernels' bound plus the
// ring's rounding term (tolerance::ring_bound), and against the single-GPU run() of the whole
// problem. Odd lengths that do not divide evenly, both shardings, causal and not, GQA.
//
// Exit 0: every case passed; 1: a case failed; 77: skipped (no GPU, or fewer GPUs than ranks).
// One process without mpirun is a ring of one (what CI runs: it skips without a GPU).
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "flashcore/context_parallel.hpp"
#include "support/shards.hpp"
#include "support/testing.hpp"
#include "verify/elements.hpp"
#include "verify/tolerance.hpp"

namespace {

using flashcore::DType;
using flashcore::Sharding;

#define CK(x)                                                                                \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                          \
    }                                                                                        \
  } while (0)

struct TestCase {
  fctest::Case c;
  Sharding sharding;
  int row_stride;  // oracle rows: every row_stride-th (1 = all)
};

void* to_device(const void* host, std::size_t bytes) {
  void* d = nullptr;
  CK(cudaMalloc(&d, bytes == 0 ? 1 : bytes));
  CK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
  return d;
}

/// One case on every rank; true on rank 0 when it passed (the other ranks return true).
bool run_case(const TestCase& tc, int rank, int size, flashcore::Communicator& comm, std::uint64_t seed) {
  const fctest::Case& c = tc.c;
  fctest::HostData d = fctest::make_data(c, seed);
  const flashcore::Problem& full = d.problem;
  const int es = flashcore::dtype_size(full.dtype);
  const flashcore::ShardMap map = flashcore::ShardMap::of(full.seqlen_q, size, tc.sharding);
  const auto chunks = map.chunks_of(rank);
  const int L = map.local_length(rank);

  flashcore::ContextParallel cp;
  cp.local = flashcore::Problem::make(full.batch, full.heads_q, full.heads_kv, L, L, full.head_dim, full.dtype, full.causal);
  cp.seqlen = full.seqlen_q;
  cp.sharding = tc.sharding;
  const flashcore::Problem& p = cp.local;
  auto shard_of = [&](std::vector<unsigned char>& whole, const flashcore::Strides& fs, const flashcore::Strides& ls, int heads) {
    std::vector<unsigned char> s(static_cast<std::size_t>(flashcore::span_elements(ls, full.batch, L, heads, full.head_dim)) * es);
    fctest::move_rows(true, chunks, full.batch, heads, full.head_dim, es, whole.data(), fs, s.data(), ls);
    return s;
  };
  std::vector<unsigned char> q = shard_of(d.q, full.q, p.q, full.heads_q), k = shard_of(d.k, full.k, p.k, full.heads_kv),
                             v = shard_of(d.v, full.v, p.v, full.heads_kv);
  std::vector<unsigned char> o(static_cast<std::size_t>(flashcore::span_elements(p.o, full.batch, L, full.heads_q, full.head_dim)) * es, 0xff);
  std::vector<float> lse(static_cast<std::size_t>(full.batch) * full.heads_q * L, NAN);

  flashcore::Tensors t;
  t.q = to_device(q.data(), q.size());
  t.k = to_device(k.data(), k.size());
  t.v = to_device(v.data(), v.size());
  t.o = to_device(o.data(), o.size());  // poisoned (0xffff: NaN in fp16, bf16 and fp32)
  t.lse = static_cast<float*>(to_device(lse.data(), lse.size() * sizeof(float)));
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  flashcore::Options opts;
  opts.stream = stream;
  std::string plan, error;
  try {
    plan = flashcore::ring_attention(cp, t, comm, opts).plan;
  } catch (const flashcore::Error& e) {
    error = e.what();
  }
  CK(cudaStreamSynchronize(stream));
  CK(cudaMemcpy(o.data(), t.o, o.size(), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(lse.data(), t.lse, lse.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (const void* ptr : {t.q, t.k, t.v, static_cast<const void*>(t.o), static_cast<const void*>(t.lse)}) CK(cudaFree(const_cast<void*>(ptr)));
  CK(cudaStreamDestroy(stream));

  // Gather the shards (bytes of O, then LSE) on rank 0.
  std::vector<int> o_bytes(size), lse_count(size), o_disp(size), lse_disp(size);
  const int my_o = static_cast<int>(o.size()), my_lse = static_cast<int>(lse.size());
  MPI_Gather(&my_o, 1, MPI_INT, o_bytes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Gather(&my_lse, 1, MPI_INT, lse_count.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total_o = 0, total_lse = 0;
  for (int r = 0; r < size; ++r) o_disp[r] = total_o, lse_disp[r] = total_lse, total_o += o_bytes[r], total_lse += lse_count[r];
  std::vector<unsigned char> all_o(rank == 0 ? total_o : 0);
  std::vector<float> all_lse(rank == 0 ? total_lse : 0);
  MPI_Gatherv(o.data(), my_o, MPI_BYTE, all_o.data(), o_bytes.data(), o_disp.data(), MPI_BYTE, 0, MPI_COMM_WORLD);
  MPI_Gatherv(lse.data(), my_lse, MPI_FLOAT, all_lse.data(), lse_count.data(), lse_disp.data(), MPI_FLOAT, 0, MPI_COMM_WORLD);
  int any_error = error.empty() ? 0 : 1, errors = 0;
  MPI_Reduce(&any_error, &errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank != 0) return true;

  const std::string name = c.name() + (tc.sharding == Sharding::Contiguous ? " contiguous" : " load-balanced");
  if (errors > 0) {
    std::printf("FAIL %s: ring_attention threw on %d rank(s); rank 0: %s\n", name.c_str(), errors, error.c_str());
    return false;
  }
  d.poison_outputs();
  for (int r = 0; r < size; ++r) {
    const int Lr = map.local_length(r);
    flashcore::Problem pr = flashcore::Problem::make(full.batch, full.heads_q, full.heads_kv, Lr, Lr, full.head_dim, full.dtype, full.causal);
    fctest::move_rows(false, map.chunks_of(r), full.batch, full.heads_q, full.head_dim, es, d.o.data(), full.o,
                      all_o.data() + o_disp[r], pr.o);
    fctest::scatter_lse(map.chunks_of(r), full.batch, full.heads_q, full.seqlen_q, Lr, all_lse.data() + lse_disp[r], d.lse.data());
  }
  const fctest::OracleOut ref = fctest::oracle(d, tc.row_stride);
  const double naive = fctest::naive_error(d, ref, tc.row_stride);
  double max_v = 0;
  for (std::size_t i = 0; i < d.v.size() / es; ++i) max_v = std::max(max_v, std::fabs(flashcore::verify::load_element(full.dtype, d.v.data(), i)));
  const auto bound = flashcore::tolerance::ring_bound(full.dtype, flashcore::tolerance::kernel_bound(full.dtype, naive), max_v);
  const fctest::Errors e = fctest::compare_o(d, ref, bound.atol, bound.rtol, /*kernel_lse=*/true);

  // The single-GPU run of the whole problem, for the same comparison.
  fctest::HostData single = d;
  single.poison_outputs();
  flashcore::Tensors st;
  st.q = to_device(d.q.data(), d.q.size());
  st.k = to_device(d.k.data(), d.k.size());
  st.v = to_device(d.v.data(), d.v.size());
  st.o = to_device(single.o.data(), single.o.size());
  flashcore::run(full, st, {});
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(single.o.data(), st.o, single.o.size(), cudaMemcpyDeviceToHost));
  for (const void* ptr : {st.q, st.k, st.v, static_cast<const void*>(st.o)}) CK(cudaFree(const_cast<void*>(ptr)));
  double max_diff = 0;
  for (std::size_t i = 0; i < d.o.size() / es; ++i)
    max_diff = std::max(max_diff, std::fabs(flashcore::verify::load_element(full.dtype, d.o.data(), i) -
                                            flashcore::verify::load_element(full.dtype, single.o.data(), i)));
  const fctest::Errors es1 = fctest::compare_o(single, ref, bound.atol, bound.rtol);
  const bool ok = e.bad == 0 && e.lse_bad == 0 && max_diff <= 2 * bound.atol;
  std::printf("%s %s: ranks %d, oracle rows 1/%d: max abs %.3g (bound %.3g, single GPU %.3g), |ring - single| %.3g%s%s\n  plan: %s\n",
              ok ? "PASS" : "FAIL", name.c_str(), size, tc.row_stride, e.max_abs, bound.atol, es1.max_abs, max_diff,
              e.bad ? ("; first bad: " + e.first_bad).c_str() : "", e.lse_bad ? "; LSE off" : "", plan.c_str());
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  if (devices < 1 || !flashcore::has_nccl()) {
    if (rank == 0) std::printf("SKIP: %s\n", devices < 1 ? "no GPU" : "built without NCCL");
    MPI_Finalize();
    return 77;
  }
  int local_rank = rank;
  if (const char* lr = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) local_rank = std::atoi(lr);
  if (size > devices) {
    if (rank == 0) std::printf("SKIP: %d ranks but %d GPU(s): one GPU a rank\n", size, devices);
    MPI_Finalize();
    return 77;
  }
  CK(cudaSetDevice(local_rank % devices));
  flashcore::initialize();
  ncclUniqueId id;
  if (rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t nccl;
  if (ncclCommInitRank(&nccl, size, id, rank) != ncclSuccess) {
    std::fprintf(stderr, "rank %d: ncclCommInitRank failed\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int passed = 1;
  {
    auto comm = flashcore::nccl_communicator(nccl);
    std::uint64_t seed = fctest::run_seed();
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    std::vector<TestCase> cases;
    auto add = [&](int b, int hq, int hkv, int len, int dim, DType dt, bool causal, Sharding sh, int stride) {
      cases.push_back({fctest::make_case(b, hq, hkv, len, len, dim, dt, causal), sh, stride});
    };
    add(1, 4, 2, 1001, 64, DType::F16, true, Sharding::LoadBalanced, 1);
    add(2, 4, 1, 777, 128, DType::BF16, true, Sharding::Contiguous, 1);
    add(1, 8, 2, 1537, 128, DType::BF16, false, Sharding::LoadBalanced, 3);
    add(1, 2, 2, 2 * size + 1, 32, DType::F16, true, Sharding::LoadBalanced, 1);  // one or two rows a chunk
    add(1, 8, 8, 4099, 64, DType::F16, false, Sharding::Contiguous, 7);
    add(1, 16, 4, 8191, 128, DType::BF16, true, Sharding::LoadBalanced, 61);
    add(1, 4, 4, 999, 96, DType::F16, true, Sharding::LoadBalanced, 1);  // a head dim the tuned path pads
    add(1, 2, 1, 333, 40, DType::F32, true, Sharding::LoadBalanced, 1);  // fp32: the partials on a Kokkos backend
    for (std::size_t i = 0; i < cases.size(); ++i)
      if (!run_case(cases[i], rank, size, *comm, seed + i)) passed = 0;
  }
  MPI_Bcast(&passed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  ncclCommDestroy(nccl);
  flashcore::finalize();
  MPI_Finalize();
  if (rank == 0) std::printf("%s\n", passed ? "ALL PASSED" : "SOME FAILED");
  return passed ? 0 : 1;
}
