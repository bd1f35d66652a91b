// Tile sizes of the Hopper kernel (sm90/flash_fwd_sm90.cu): the one place they live. Host code
// includes this too (TMA box sizes, shared memory of a launch).
#pragma once

#include <cuda.h>  // CUtensorMap (type only)

#include <cstddef>
#include <cstdint>

namespace flashcore::cuda::detail {

template <int D>
struct HopperConfig {
  static constexpr int kConsumerWGs = 2;
  static constexpr int kBlockM = 64 * kConsumerWGs;        // query rows per block
  static constexpr int kBlockN = 128;                      // keys per K/V tile
  static constexpr int kStages = D == 64 ? 3 : 2;          // K/V ring depth
  static constexpr int kThreads = 128 * (kConsumerWGs + 1);
  // setmaxnreg moves registers inside the block's launch allocation (the 64K register file over
  // kThreads, in steps of 8: 168 for 384 threads): consumers can only grow by what the producer gives
  // back, or setmaxnreg.inc waits forever (a 32-register producer hung the kernel on the H200).
  static constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumerWGs <= kLaunchRegs * kThreads,
                "setmaxnreg budget exceeds the launch allocation");
  static constexpr int kPanels = D / 64;                   // 64-column (128-byte) swizzle panels
  static constexpr uint32_t kQPanelBytes = kBlockM * 128;
  static constexpr uint32_t kKVPanelBytes = kBlockN * 128;
  static constexpr uint32_t kQBytes = kPanels * kQPanelBytes;
  static constexpr uint32_t kTileBytes = kPanels * kKVPanelBytes;  // one K or V tile
  static constexpr uint32_t kBarOffset = kQBytes + 2 * kStages * kTileBytes;
  static constexpr size_t kSmemBytes = 1024 /* alignment slack */ + kBarOffset + 8 * (2 + 4 * kStages);  // Q, 4 per stage, V tail
  static constexpr int kSTiles = kBlockN / 8;              // n8 column tiles of S per thread row pair
  static constexpr int kPVSteps = kBlockN / 16;            // k16 steps of P·V
  static constexpr int kOAcc = D / 2;                      // O accumulator floats per thread (64 x D / 128)
  static_assert(kQBytes >= uint32_t(kBlockM) * D * 2, "output staging reuses the Q region");
  static constexpr int kBarEpilogue = 1;                   // named barrier of the consumer threads
};

// Query rows per block and dynamic shared memory of one launch (head_dim 64 or 128), for the plan.
inline int sm90_block_m(int head_dim) { return head_dim == 64 ? HopperConfig<64>::kBlockM : HopperConfig<128>::kBlockM; }
inline size_t sm90_smem_bytes(int head_dim) {
  return head_dim == 64 ? HopperConfig<64>::kSmemBytes : HopperConfig<128>::kSmemBytes;
}

// The kernel's TMA tensor maps of Q, K, V: dims (D, seqlen, heads, batch), boxes of 64 columns x
// kBlockM (Q) or kBlockN (K, V) rows. Encoded by sm90/tensor_maps.cpp, kept in FlashFwdPlan.
struct HopperMaps {
  CUtensorMap q, k, v;
};

}  // namespace flashcore::cuda::detail
