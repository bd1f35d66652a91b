// Context-parallel (ring) attention: one sequence sharded over the ranks of a communicator, exact
// attention over the whole sequence.
//
// Every rank holds the rows of Q, K, V and O for its positions of the sequence (its shard). The
// K/V shards travel around the ring (rank r sends to r+1 and receives from r-1) while each rank
// computes its queries against the K/V shard it holds at that step; the partial results are merged
// exactly through their log-sum-exp. After size() steps every query has seen every key.
//
//   ShardMap      which positions each rank holds. Contiguous: rank r holds the r-th of `size`
//                 equal chunks. LoadBalanced (the default): the sequence is cut into 2*size chunks
//                 and rank r holds chunks r and 2*size-1-r, so that under a causal mask every rank
//                 does the same work. Chunk lengths differ by at most one row (any length works).
//   Communicator  how the shards travel: an NCCL communicator the application made
//                 (nccl_communicator; device memory, send/recv on a stream of its own, overlapped
//                 with the compute stream), or a ring of threads in one process (local_ring; host
//                 memory; for tests and for the same code path without GPUs).
//   ring_attention the call. ContextParallel::local describes this rank's shard (seqlen_q =
//                 seqlen_k = its length; batch, heads, GQA, head_dim, dtype, causal, scale,
//                 softcap, strides as for run()); the tensors are this rank's shard in shard order
//                 (its chunks one after the other). The attention of each step runs through run()
//                 (Options::backend and FLASHCORE_BACKEND choose it as usual) on Options::stream.
//
// Not supported (declined with the field named): sliding windows, ALiBi, attention sinks (their
// positions or denominators would need the whole sequence), per-sequence layouts (varlen, paged,
// cache lengths), fp8 (e4m3) inputs. The backward pass is not distributed yet.
//
// This header pulls in neither NCCL nor MPI: the NCCL communicator is passed as the ncclComm_t the
// application created (`struct ncclComm*`).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "flashcore/flashcore.hpp"

struct ncclComm;  // NCCL's communicator (ncclComm_t is `struct ncclComm*`)

namespace flashcore {

enum class Sharding { Contiguous, LoadBalanced };
const char* to_string(Sharding s);  // "contiguous", "load-balanced"

/// One run of consecutive positions a rank holds: global rows [begin, begin + length), stored at
/// local rows [local_offset, local_offset + length) of the rank's shard.
struct ShardChunk {
  int index = 0;  // the chunk's index in the sequence (0 .. chunks-1)
  int begin = 0;
  int length = 0;
  int local_offset = 0;
};

/// Which positions of a sequence of `seqlen` rows each of `ranks` ranks holds.
struct ShardMap {
  int seqlen = 0;
  int ranks = 1;
  Sharding sharding = Sharding::LoadBalanced;

  /// Throws Error naming "seqlen" or "ranks" when they are not positive.
  static ShardMap of(int seqlen, int ranks, Sharding sharding);
  int chunks() const { return sharding == Sharding::LoadBalanced ? 2 * ranks : ranks; }
  /// Chunk c: global rows [chunk_begin(c), chunk_begin(c) + chunk_length(c)).
  int chunk_begin(int c) const;
  int chunk_length(int c) const;
  /// The chunks rank r holds, in local (shard) order.
  std::vector<ShardChunk> chunks_of(int rank) const;
  /// Rows rank r holds, and the most any rank holds.
  int local_length(int rank) const;
  int max_local_length() const;
};

/// How the K/V shards travel around the ring. shift_begin starts sending send_bytes from `send` to
/// rank (rank()+1) % size() and receiving recv_bytes from rank (rank()-1) % size() into `recv`,
/// after the work queued so far on `stream` (a cudaStream_t; ignored by host communicators);
/// shift_end makes `stream` (device) or the caller (host) wait until that shift is complete, both
/// buffers included. At most one shift is in flight; every rank calls them in the same order.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Whether the buffers (and so the ring's tensors) are device memory.
  virtual bool device_memory() const = 0;
  /// A name for reports, e.g. "nccl" or "local-threads".
  virtual const char* name() const = 0;
  virtual void shift_begin(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes,
                           void* stream) = 0;
  virtual void shift_end(void* stream) = 0;
};

/// A communicator over the application's NCCL communicator (ncclCommInitRank or ncclCommInitAll;
/// each rank on its own GPU, the current device when called). FlashCore does not own `comm`.
/// Throws Error("communicator", ...) when FlashCore was built without NCCL.
std::unique_ptr<Communicator> nccl_communicator(ncclComm* comm);
/// Whether this build can make NCCL communicators.
bool has_nccl();

/// `size` communicators that form a ring among threads of this process (host memory): rank r's
/// communicator is element r; each must be used from its own thread.
std::vector<std::unique_ptr<Communicator>> local_ring(int size);

/// The problem of one rank: `local` is this rank's shard (seqlen_q = seqlen_k = its length),
/// `seqlen` the whole sequence, `sharding` how it is cut.
struct ContextParallel {
  Problem local;
  int seqlen = 0;
  Sharding sharding = Sharding::LoadBalanced;
};

/// Exact attention over the whole sequence for this rank's queries: O (and lse when given, fp32
/// (batch, heads_q, local rows)) of this rank's shard. Tensors in the communicator's memory.
/// Collective: every rank of the communicator calls it with the same seqlen, sharding and shape.
/// Device communicators: asynchronous on Options::stream, like run(). Report::plan names the ring,
/// its steps and the backend of the partial attentions.
/// Device workspace (two K/V shards, a partial O, the fp32 accumulator) comes from a memory pool of
/// the ring's own that keeps it between calls (a loop of calls does not map it again each time);
/// call this (after the calls are complete) to give it back. The application's pools are untouched.
Report ring_attention(const ContextParallel& cp, const Tensors& t, Communicator& comm, const Options& opts = {});
void release_ring_workspace();

}  // namespace flashcore
