// Internal interfaces between the core and the backends (not installed).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "flashcore/flashcore.hpp"

namespace flashcore::detail {

/// Where a pointer lives, asked of the CUDA runtime; Host when the build has no CUDA or the
/// runtime does not know the pointer. Implemented in src/platform/cuda_runtime.cpp, or in
/// src/platform/no_cuda.cpp for builds without the CUDA toolkit.
/// *device (when not null) gets the CUDA device of device memory, -1 otherwise.
MemoryLocation pointer_location(const void* p, int* device = nullptr);

/// The current CUDA device, or false with *why set.
bool current_cuda_device(DeviceInfo* out, std::string* why);

/// Kokkos version and enabled execution spaces, for build_info() (src/platform/kokkos_runtime.cpp).
std::string kokkos_configuration();

/// The backends this build provides (src/backends/builtin.cpp).
std::vector<std::unique_ptr<Backend>> builtin_backends();

/// The extents of a tensor in its layout: `outer` blocks (batch entries, or pages) of `rows` rows.
/// Packed Q/O are 1 x total_q, packed K/V 1 x total_k, paged K/V num_pages x page_size.
struct TensorExtents {
  int outer, rows;
};
TensorExtents q_extents(const Problem& p);
TensorExtents kv_extents(const Problem& p);

/// Validates the sequence arrays of a call (flashcore.hpp, "Sequences") from host copies of them
/// (null where the call has none): offsets start at 0, never decrease and end at the total; every
/// sequence within the bounds seqlen_q / seqlen_k; cache lengths within what each sequence has;
/// block-table entries of the pages in use within [0, num_pages). Throws Error naming the array,
/// the index and the value.
void validate_sequences(const Problem& p, const int* cu_seqlens_q, const int* cu_seqlens_k, const int* seqlens_k,
                        const int* block_table);

/// Copies `bytes` of device memory to the host on a cudaStream_t and waits for them (src/platform).
/// Throws Error (field `what`) when the copy fails or the build has no CUDA.
void copy_to_host(void* dst, const void* src, std::size_t bytes, void* stream, const char* what);

/// The byte range of one tensor of a call, named.
struct Range {
  const char* name;
  const char* begin;
  const char* end;
};

/// Validates the pointers of a call against a validated problem: non-null, not overlapping
/// the outputs. Throws Error naming the tensor. Returns the byte ranges of the call's tensors (q, k,
/// v, o, then lse, the per-head parameters and the sequence arrays that are given), for
/// validate_gradients.
std::vector<Range> validate_tensors(const Problem& p, const Tensors& t);

/// Validates a backward call's gradients against a validated problem (without paged K/V) and its
/// validated forward tensors, whose byte ranges validate_tensors returned: the forward's LSE given,
/// d_o, dq, dk, dv non-null, dsinks only with sinks, every gradient output apart from every other
/// tensor. Throws Error naming the field.
void validate_gradients(const Problem& p, const Tensors& t, const Gradients& g, std::vector<Range> forward_ranges);

/// The per-head parameters (alibi_slopes, sinks) in host memory: every value finite, else Error
/// naming the tensor, the head and the value. (Device-memory values are not read.)
void validate_head_parameters(const Problem& p, const Tensors& t);

}  // namespace flashcore::detail
