// ring_attention (context_parallel.hpp): a plan per call (which partial attentions each step
// runs), then the steps: K/V of the shard held at step s travel to the right neighbour while this
// rank's queries attend to them; each partial result is merged into an fp32 accumulator through
// the log-sum-exps; O is written once at the end.
//
// The mask of a (query chunk, key chunk) pair under causal attention, in global positions: key
// chunk before the query chunk -> every key visible (a plain, non-causal partial); the same chunk
// -> causal with Lq = Lk (bottom-right = top-left); key chunk after -> nothing (skipped). Chunks
// are contiguous runs of positions, so no other case exists. Neighbouring pairs with the same
// mask merge into one call (blocks_of), and the rank's own shard is one causal call.
#include <sstream>
#include <string>
#include <vector>

#include "context_parallel/ring_exec.hpp"
#include "flashcore/context_parallel.hpp"
#include "platform/profiling.hpp"

namespace flashcore {
namespace {

/// One partial attention: local query rows [q_off, q_off + lq) against rows [k_off, k_off + lk)
/// of the K/V shard held at that step.
struct Block {
  int q_off, lq, k_off, lk;
  bool causal;
};

struct Step {
  int src;      // the rank whose K/V shard this step holds
  int src_len;  // its rows
  std::vector<Block> blocks;
};

struct RingPlan {
  ShardMap map;
  int rank = 0, size = 1, local_len = 0;
  std::vector<Step> steps;
  int partials() const {
    int n = 0;
    for (const Step& s : steps) n += static_cast<int>(s.blocks.size());
    return n;
  }
};

/// The blocks of one step: every (query chunk, key chunk) pair classified, then neighbours merged
/// (consecutive key chunks for one query chunk, consecutive query chunks with the same keys).
std::vector<Block> blocks_of(const ShardMap& map, bool causal, int rank, int src) {
  const std::vector<ShardChunk> qs = map.chunks_of(rank), ks = map.chunks_of(src);
  // The rank's own shard under a causal mask: its chunks are in increasing global order, so the
  // local causal mask of the whole shard (row i sees local keys <= i) is the global one. One call.
  if (causal && src == rank) {
    bool increasing = true;
    for (std::size_t c = 1; c < qs.size(); ++c) increasing = increasing && qs[c].begin > qs[c - 1].begin;
    const int len = map.local_length(rank);
    if (increasing) return {Block{0, len, 0, len, true}};
  }
  std::vector<Block> per_q;
  for (const ShardChunk& q : qs) {
    std::vector<Block> row;
    for (const ShardChunk& k : ks) {
      if (q.length == 0 || k.length == 0) continue;
      if (causal && k.index > q.index) continue;
      const bool diag = causal && k.index == q.index;
      const Block b{q.local_offset, q.length, k.local_offset, k.length, diag};
      if (!row.empty() && !row.back().causal && !diag && row.back().k_off + row.back().lk == b.k_off) {
        row.back().lk += b.lk;
      } else {
        row.push_back(b);
      }
    }
    per_q.insert(per_q.end(), row.begin(), row.end());
  }
  std::vector<Block> out;
  for (const Block& b : per_q) {
    if (!out.empty()) {
      Block& a = out.back();
      if (!a.causal && !b.causal && a.k_off == b.k_off && a.lk == b.lk && a.q_off + a.lq == b.q_off) {
        a.lq += b.lq;
        continue;
      }
    }
    out.push_back(b);
  }
  return out;
}

RingPlan make_plan(const ContextParallel& cp, int rank, int size) {
  RingPlan plan;
  plan.map = ShardMap::of(cp.seqlen, size, cp.sharding);
  plan.rank = rank;
  plan.size = size;
  plan.local_len = plan.map.local_length(rank);
  for (int s = 0; s < size; ++s) {
    const int src = (rank - s + size) % size;
    plan.steps.push_back({src, plan.map.local_length(src), blocks_of(plan.map, cp.local.causal, rank, src)});
  }
  return plan;
}

/// The checks of a ring call, before any work: the shard's shape against the map, the variants
/// the ring cannot distribute, the tensors.
void validate_ring(const ContextParallel& cp, const Tensors& t, const Communicator& comm, const Options& opts) {
  const int size = comm.size(), rank = comm.rank();
  if (size <= 0 || rank < 0 || rank >= size)
    throw Error("communicator", "rank " + std::to_string(rank) + " of size " + std::to_string(size) + " is not a ring position");
  const ShardMap map = ShardMap::of(cp.seqlen, size, cp.sharding);
  if (cp.seqlen < map.chunks())
    throw Error("seqlen", "seqlen = " + std::to_string(cp.seqlen) + " is shorter than the " + std::to_string(map.chunks()) +
                              " chunks of a " + to_string(cp.sharding) + " ring of " + std::to_string(size) +
                              " ranks: every chunk needs a row");
  const Problem& p = cp.local;
  const int want = map.local_length(rank);
  if (p.seqlen_q != want)
    throw Error("seqlen_q", "seqlen_q = " + std::to_string(p.seqlen_q) + ": rank " + std::to_string(rank) + " of a " +
                                to_string(cp.sharding) + " ring of " + std::to_string(size) + " over " +
                                std::to_string(cp.seqlen) + " rows holds " + std::to_string(want) + " rows");
  if (p.seqlen_k != want)
    throw Error("seqlen_k", "seqlen_k = " + std::to_string(p.seqlen_k) + ": the K/V shard has the query shard's " +
                                std::to_string(want) + " rows");
  validate(p);
  if (p.dtype == DType::E4M3)
    throw Error("dtype", "ring attention: fp8_e4m3 inputs are not supported (dtype fp8_e4m3: the partial outputs "
                         "and the K/V shards it moves are of one dtype; pass fp16 or bf16)");
  if (p.has_window())
    throw Error("window_left", "ring attention: sliding windows are not supported (window_left = " +
                                   std::to_string(p.window_left) + ", window_right = " + std::to_string(p.window_right) + ")");
  if (p.has_sequence_layout())
    throw Error("total_q", "ring attention: packed or paged sequences are not supported (total_q = " + std::to_string(p.total_q) +
                               ", total_k = " + std::to_string(p.total_k) + ", page_size = " + std::to_string(p.page_size) + ")");
  if (t.alibi_slopes != nullptr) throw Error("alibi_slopes", "ring attention: ALiBi is not supported");
  if (t.sinks != nullptr) throw Error("sinks", "ring attention: attention sinks are not supported");
  if (t.seqlens_k != nullptr || t.cu_seqlens_q != nullptr || t.cu_seqlens_k != nullptr || t.block_table != nullptr)
    throw Error("seqlens_k", "ring attention: per-sequence arrays are not supported");
  if (t.q == nullptr) throw Error("q", "q is null");
  if (t.k == nullptr) throw Error("k", "k is null");
  if (t.v == nullptr) throw Error("v", "v is null");
  if (t.o == nullptr) throw Error("o", "o is null");
  const MemoryLocation mem = comm.device_memory() ? MemoryLocation::Device : MemoryLocation::Host;
  if (opts.location != MemoryLocation::Auto && opts.location != mem)
    throw Error("location", std::string("location = ") + to_string(opts.location) + ": the " + comm.name() +
                                " communicator moves " + to_string(mem) + " memory");
}

/// Contiguous (batch, rows, heads, dim) strides.
Strides contiguous(int rows, int heads, int head_dim) {
  Strides s;
  s.head = head_dim;
  s.seq = static_cast<std::int64_t>(heads) * head_dim;
  s.batch = s.seq * rows;
  return s;
}

ring::View4 view(const Strides& s) { return {s.batch, s.seq, s.head}; }

const char* offset(const void* p, std::int64_t elements, int esize) {
  return static_cast<const char*>(p) + elements * esize;
}

}  // namespace

Report ring_attention(const ContextParallel& cp, const Tensors& t, Communicator& comm, const Options& opts) {
  validate_ring(cp, t, comm, opts);
  const RingPlan plan = make_plan(cp, comm.rank(), comm.size());
  const Problem& p = cp.local;
  const int B = p.batch, Hq = p.heads_q, Hkv = p.heads_kv, D = p.head_dim, L = plan.local_len;
  const int esize = dtype_size(p.dtype);
  const bool device = comm.device_memory();
  detail::ProfilingRegion region("ring");

  // Workspace: two K/V slots (K rows then V rows of the shard held, contiguous), the partial O and
  // LSE of one block, the fp32 accumulator and its LSE.
  const std::int64_t kv_max = static_cast<std::int64_t>(B) * plan.map.max_local_length() * Hkv * D;
  const std::size_t slot_bytes = static_cast<std::size_t>(2 * kv_max * esize);
  const std::int64_t o_elems = static_cast<std::int64_t>(B) * L * Hq * D, lse_elems = static_cast<std::int64_t>(B) * Hq * L;
  const auto kv_bytes = [&](int rows) { return static_cast<std::size_t>(2) * B * rows * Hkv * D * esize; };

  std::unique_ptr<ring::Exec> ex = device ? ring::cuda_exec(opts.stream) : ring::host_exec();
  void* slot[2] = {ex->allocate(slot_bytes), ex->allocate(slot_bytes)};
  void* part = ex->allocate(static_cast<std::size_t>(o_elems * esize));
  float* lse_part = static_cast<float*>(ex->allocate(sizeof(float) * lse_elems));
  float* acc = static_cast<float*>(ex->allocate(sizeof(float) * o_elems));
  float* lse_acc = static_cast<float*>(ex->allocate(sizeof(float) * lse_elems));
  struct Release {
    ring::Exec& ex;
    std::vector<void*> ptrs;
    ~Release() {
      for (void* q : ptrs) ex.release(q);
    }
  } release{*ex, {slot[0], slot[1], part, lse_part, acc, lse_acc}};

  ex->init(acc, o_elems, lse_acc, lse_elems);
  const std::int64_t own = static_cast<std::int64_t>(B) * L * Hkv * D;
  ex->pack(esize, t.k, view(p.k), slot[0], B, L, Hkv, D);
  ex->pack(esize, t.v, view(p.v), static_cast<char*>(slot[0]) + own * esize, B, L, Hkv, D);

  Options part_opts = opts;
  part_opts.location = device ? MemoryLocation::Device : MemoryLocation::Host;
  Report first;
  bool have_first = false;
  for (int s = 0; s < plan.size; ++s) {
    const Step& st = plan.steps[s];
    void* cur = slot[s % 2];
    if (s > 0) comm.shift_end(opts.stream);
    if (s + 1 < plan.size) comm.shift_begin(cur, kv_bytes(st.src_len), slot[(s + 1) % 2], kv_bytes(plan.steps[s + 1].src_len), opts.stream);
    const std::int64_t src_elems = static_cast<std::int64_t>(B) * st.src_len * Hkv * D;
    for (const Block& b : st.blocks) {
      Problem pp = p;
      pp.seqlen_q = b.lq;
      pp.seqlen_k = b.lk;
      pp.causal = b.causal;
      pp.k = pp.v = contiguous(st.src_len, Hkv, D);
      pp.o = contiguous(b.lq, Hq, D);
      Tensors tt;
      tt.q = offset(t.q, b.q_off * p.q.seq, esize);
      tt.k = offset(cur, static_cast<std::int64_t>(b.k_off) * pp.k.seq, esize);
      tt.v = offset(cur, src_elems + static_cast<std::int64_t>(b.k_off) * pp.v.seq, esize);
      tt.o = part;
      tt.lse = lse_part;
      const Report r = run(pp, tt, part_opts);
      if (!have_first) first = r, have_first = true;
      ex->merge(ring::Rows{B, Hq, D, L, b.q_off, b.lq}, p.dtype, part, lse_part, acc, lse_acc);
    }
  }
  ex->finalize(ring::Rows{B, Hq, D, L, 0, L}, p.dtype, acc, lse_acc, t.o, view(p.o), t.lse);

  std::ostringstream how;
  how << "ring of " << plan.size << " (" << comm.name() << "), " << to_string(cp.sharding) << ", rank " << plan.rank
      << " holds " << L << " of " << cp.seqlen << " rows; " << plan.steps.size() << " steps, " << plan.partials()
      << " partial attentions on " << (have_first ? first.chosen : std::string("none"));
  Report out = first;
  out.plan = how.str() + (first.plan.empty() ? "" : " (" + first.plan + ")");
  return out;
}

void release_ring_workspace() { ring::trim_pools(); }

}  // namespace flashcore
