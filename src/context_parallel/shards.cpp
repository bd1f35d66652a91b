// Which positions of the sequence each rank holds (ShardMap, context_parallel.hpp).
#include <string>

#include "flashcore/context_parallel.hpp"

namespace flashcore {

const char* to_string(Sharding s) { return s == Sharding::Contiguous ? "contiguous" : "load-balanced"; }

ShardMap ShardMap::of(int seqlen, int ranks, Sharding sharding) {
  if (seqlen <= 0) throw Error("seqlen", "seqlen = " + std::to_string(seqlen) + ": the whole sequence must have at least one row");
  if (ranks <= 0) throw Error("ranks", "ranks = " + std::to_string(ranks) + ": a ring needs at least one rank");
  ShardMap m;
  m.seqlen = seqlen;
  m.ranks = ranks;
  m.sharding = sharding;
  return m;
}

// Chunk c of n has seqlen / n rows, the first seqlen % n chunks one more.
int ShardMap::chunk_length(int c) const {
  const int n = chunks();
  return seqlen / n + (c < seqlen % n ? 1 : 0);
}

int ShardMap::chunk_begin(int c) const {
  const int n = chunks();
  const int extra = seqlen % n;
  return c * (seqlen / n) + (c < extra ? c : extra);
}

std::vector<ShardChunk> ShardMap::chunks_of(int rank) const {
  std::vector<int> ids{rank};
  if (sharding == Sharding::LoadBalanced) ids.push_back(2 * ranks - 1 - rank);
  std::vector<ShardChunk> out;
  int offset = 0;
  for (int c : ids) {
    out.push_back({c, chunk_begin(c), chunk_length(c), offset});
    offset += chunk_length(c);
  }
  return out;
}

int ShardMap::local_length(int rank) const {
  int n = 0;
  for (const ShardChunk& c : chunks_of(rank)) n += c.length;
  return n;
}

int ShardMap::max_local_length() const {
  int most = 0;
  for (int r = 0; r < ranks; ++r) most = local_length(r) > most ? local_length(r) : most;
  return most;
}

}  // namespace flashcore
