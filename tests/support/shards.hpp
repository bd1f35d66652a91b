// Moving rows between a whole problem's tensors and one rank's shard (context_parallel.hpp): for the
// ring tests on the host (test_context_parallel.cpp) and across MPI ranks (multi_gpu/).
#pragma once

#include <cstring>
#include <vector>

#include "flashcore/context_parallel.hpp"

namespace fctest {

/// Copies the rows of `chunks` between a whole tensor (strides fs) and a shard (strides ls):
/// to_shard true gathers whole -> shard, false scatters shard -> whole.
inline void move_rows(bool to_shard, const std::vector<flashcore::ShardChunk>& chunks, int batch, int heads,
                      int head_dim, int esize, unsigned char* whole, const flashcore::Strides& fs, unsigned char* shard,
                      const flashcore::Strides& ls) {
  for (int b = 0; b < batch; ++b)
    for (const flashcore::ShardChunk& c : chunks)
      for (int i = 0; i < c.length; ++i)
        for (int h = 0; h < heads; ++h) {
          unsigned char* w = whole + flashcore::element_offset(fs, b, c.begin + i, h, 0) * esize;
          unsigned char* s = shard + flashcore::element_offset(ls, b, c.local_offset + i, h, 0) * esize;
          if (to_shard) {
            std::memcpy(s, w, static_cast<std::size_t>(head_dim) * esize);
          } else {
            std::memcpy(w, s, static_cast<std::size_t>(head_dim) * esize);
          }
        }
}

/// The same for an LSE: whole (batch, heads, seqlen) from a shard's (batch, heads, local rows).
inline void scatter_lse(const std::vector<flashcore::ShardChunk>& chunks, int batch, int heads, int seqlen,
                        int local_rows, const float* shard, float* whole) {
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (const flashcore::ShardChunk& c : chunks)
        for (int i = 0; i < c.length; ++i)
          whole[(static_cast<std::size_t>(b) * heads + h) * seqlen + c.begin + i] =
              shard[(static_cast<std::size_t>(b) * heads + h) * local_rows + c.local_offset + i];
}

}  // namespace fctest
