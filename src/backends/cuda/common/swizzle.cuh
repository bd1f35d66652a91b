// The shared-memory layout of a [rows x D] tile of 16-bit elements used by the sm80 kernels' Q, K, V
// tiles and by every kernel's output staging: row r, 16-byte chunk c lives at chunk (c ^ (r & 7)).
// A row is smem_row<D>() elements: D rounded up to 64 (eight 16-byte chunks), so the XOR stays inside
// the row for head dims that are not a multiple of 64 (96 -> 128, 32 -> 64; the padding is never read).
// ldmatrix reads 8 rows at one logical chunk -> 8 different physical chunks (all 32 banks), and the
// 16-byte writes of one row stay a permutation inside that row: no bank conflicts either way.
#pragma once

namespace flashcore::cuda::detail {

// Elements of one smem row of a head-dim-D tile.
template <int D>
__host__ __device__ constexpr int smem_row() { return (D + 63) / 64 * 64; }

// Element offset of (row, first element of 16-byte chunk `chunk`).
template <int D>
__device__ __forceinline__ int swz(int row, int chunk) {
  return row * smem_row<D>() + ((chunk ^ (row & 7)) << 3);
}

}  // namespace flashcore::cuda::detail
