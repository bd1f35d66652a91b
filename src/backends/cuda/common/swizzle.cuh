// The shared-memory layout of a [rows x D] tile of 16-bit elements used by the sm80 kernels' Q, K, V
// tiles and by every kernel's output staging: row r, 16-byte chunk c lives at chunk (c ^ (r & 7)).
// ldmatrix reads 8 rows at one logical chunk -> 8 different physical chunks (all 32 banks), and the
// 16-byte writes of one row stay a permutation inside that row: no bank conflicts either way.
#pragma once

namespace flashcore::cuda::detail {

// Element offset of (row, first element of 16-byte chunk `chunk`).
template <int D>
__device__ __forceinline__ int swz(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

}  // namespace flashcore::cuda::detail
