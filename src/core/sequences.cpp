// Validation of the sequence arrays of a call (flashcore.hpp, "Sequences"): offsets, cache lengths
// and block tables, read from host memory (the registry copies device arrays first).
#include <sstream>
#include <string>

#include "core/internal.hpp"

namespace flashcore::detail {

namespace {

[[noreturn]] void fail(const std::string& field, const std::string& msg) { throw Error(field, field + ": " + msg); }

std::string at(const char* name, long long i) { return std::string(name) + "[" + std::to_string(i) + "]"; }

// Offsets cu[0..batch]: start at 0, never decrease, end at `total`; each sequence at most `bound` rows.
void validate_offsets(const char* name, const int* cu, int batch, int total, const char* total_name, int bound,
                      const char* bound_name) {
  if (cu[0] != 0) fail(name, at(name, 0) + " = " + std::to_string(cu[0]) + " must be 0");
  for (int b = 0; b < batch; ++b)
    if (cu[b + 1] < cu[b])
      fail(name, at(name, b + 1) + " = " + std::to_string(cu[b + 1]) + " is less than " + at(name, b) + " = " +
                     std::to_string(cu[b]) + " (offsets must not decrease)");
  for (int b = 0; b < batch; ++b) {
    const long long len = static_cast<long long>(cu[b + 1]) - cu[b];
    if (len > bound)
      fail(name, "sequence " + std::to_string(b) + " has " + std::to_string(len) + " rows (" + at(name, b + 1) + " - " +
                     at(name, b) + "), more than " + bound_name + " " + std::to_string(bound) +
                     " (the bound of every sequence's length)");
  }
  if (cu[batch] != total)
    fail(name, at(name, batch) + " = " + std::to_string(cu[batch]) + " must equal " + total_name + " " +
                   std::to_string(total));
}

}  // namespace

void validate_sequences(const Problem& p, const int* cu_seqlens_q, const int* cu_seqlens_k, const int* seqlens_k,
                        const int* block_table) {
  if (cu_seqlens_q != nullptr)
    validate_offsets("cu_seqlens_q", cu_seqlens_q, p.batch, p.total_q, "total_q", p.seqlen_q, "seqlen_q");
  if (cu_seqlens_k != nullptr)
    validate_offsets("cu_seqlens_k", cu_seqlens_k, p.batch, p.total_k, "total_k", p.seqlen_k, "seqlen_k");
  // Keys of each sequence: its cache length within what it holds, else what it holds.
  auto held = [&](int b) { return cu_seqlens_k != nullptr ? cu_seqlens_k[b + 1] - cu_seqlens_k[b] : p.seqlen_k; };
  if (seqlens_k != nullptr)
    for (int b = 0; b < p.batch; ++b)
      if (seqlens_k[b] < 0 || seqlens_k[b] > held(b))
        fail("seqlens_k", at("seqlens_k", b) + " = " + std::to_string(seqlens_k[b]) + " is not in [0, " +
                              std::to_string(held(b)) + "]: sequence " + std::to_string(b) + " has " +
                              std::to_string(held(b)) + " key rows (" +
                              (cu_seqlens_k != nullptr ? "cu_seqlens_k" : "seqlen_k") + ")");
  if (block_table != nullptr) {
    for (int b = 0; b < p.batch; ++b) {
      const int keys = seqlens_k != nullptr ? seqlens_k[b] : held(b);
      const int used = (keys + p.page_size - 1) / p.page_size;  // pages the sequence's keys are in
      for (int n = 0; n < used; ++n) {
        const long long i = static_cast<long long>(b) * p.pages_per_seq + n;
        const int page = block_table[i];
        if (page < 0 || page >= p.num_pages)
          fail("block_table", at("block_table", i) + " = " + std::to_string(page) + " (sequence " + std::to_string(b) +
                                  ", page " + std::to_string(n) + " of its " + std::to_string(used) +
                                  " in use) is not a page index in [0, num_pages " + std::to_string(p.num_pages) + ")");
      }
    }
  }
}

}  // namespace flashcore::detail
