// Tile sizes of the Hopper backward kernel (backward/sm90/bwd_dkdv_sm90.cuh): the one place they live.
// Host code includes this too (the plan's shared memory, grid and TMA boxes).
#pragma once

#include <cuda.h>  // CUtensorMap (type only)
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace flashcore::cuda::detail {

// The head dims the Hopper backward runs (backward/sm90/instances/ compiles 64 and 128; 96 runs on the
// 128 kernel, TMA zero-filling columns 96..127 of Q, K, V and dO, so S and dP are exact, the padding
// columns of dK, dV and dQ are 0 and not stored); 0 for the others, which run the mma.sync backward
// (backward/bwd_dkdv.cuh). Atomic dQ path only: Options::deterministic runs mma.sync.
constexpr int bwd_hopper_head_dim(int d) { return d == 64 ? 64 : (d == 96 || d == 128) ? 128 : 0; }
constexpr bool bwd_hopper_built(int d) { return bwd_hopper_head_dim(d) != 0; }

// One block per (batch, KV head, 128 keys): a producer warpgroup (TMA) and two consumer warpgroups
// of 64 keys each, their dK and dV (64 x D fp32 each) in registers for the whole block.
template <int D>
struct BwdHopperConfig {
  static_assert(D == 64 || D == 128, "compiled head dims: bwd_hopper_built");
  static constexpr int kConsumerWGs = 2;
  static constexpr int kBlockN = 64 * kConsumerWGs;  // keys per block
  static constexpr int kBlockM = 64;                 // queries per tile (the workspace's 64-row tiles)
  static constexpr int kStages = 3;                  // Q/dO ring depth
  static constexpr int kRowBufs = 3;                 // lse2/delta buffers per consumer warpgroup (2 tiles ahead)
  static constexpr int kThreads = 128 * (kConsumerWGs + 1);
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumerWGs <= 65536 / kThreads / 8 * 8 * kThreads,
                "setmaxnreg budget exceeds the launch allocation");
  static constexpr int kPanels = D / 64;                          // 64-column (128-byte) swizzle panels
  static constexpr uint32_t kKVPanelBytes = kBlockN * 128;        // one panel of K or V: 128 keys
  static constexpr uint32_t kKVBytes = kPanels * kKVPanelBytes;   // K or V of the block
  static constexpr uint32_t kQPanelBytes = kBlockM * 128;         // one panel of a Q or dO tile
  static constexpr uint32_t kQBytes = kPanels * kQPanelBytes;     // a Q or dO tile
  static constexpr uint32_t kDsBytes = kBlockN * kBlockM * 2;     // dSᵀ [128 keys x 64 queries], one panel
  static constexpr uint32_t kRowsBytes = 2 * kBlockM * 4;         // a tile's 64 lse2 then 64 delta values
  // dQ = dS·K of a tile: D = 128 splits dQ's columns between the warpgroups (each 64 queries x 64
  // columns over the block's 128 keys: both warpgroups' dSᵀ, a barrier of the 256 consumer threads);
  // D = 64 splits the keys (each warpgroup 64 x 64 over its own 64 keys: its own dSᵀ, its own barrier;
  // twice the atomics). Either way 32 accumulator registers beside dK and dV.
  // (Splitting the keys at D = 128 too, 64 x 128 accumulators: H100 (2,16,4096,128) 1516 -> 1930 us.)
  static constexpr bool kDqSplitColumns = D == 128;
  // Shared memory (1024-byte aligned): K | V | Q[kStages] | dO[kStages] | dSᵀ[2] |
  // (lse2, delta)[consumer warpgroup][kRowBufs] | mbarriers (K/V, full[kStages], empty[kStages]).
  static constexpr uint32_t kOffV = kKVBytes;
  static constexpr uint32_t kOffQ = 2 * kKVBytes;
  static constexpr uint32_t kOffDO = kOffQ + kStages * kQBytes;
  static constexpr uint32_t kOffDS = kOffDO + kStages * kQBytes;
  static constexpr uint32_t kOffRows = kOffDS + 2 * kDsBytes;
  static constexpr uint32_t kOffBar = kOffRows + kConsumerWGs * kRowBufs * kRowsBytes;
  static constexpr size_t kSmemBytes = 1024 /* alignment slack */ + kOffBar + 8 * (1 + 2 * kStages);
  static_assert(kSmemBytes <= 227 * 1024, "more shared memory than a block of compute capability 9.0 may have");
  // The epilogue stages dK and dV (64 x D each per warpgroup) in the Q and dO slots.
  static_assert(2 * kStages * kQBytes >= 2 * kConsumerWGs * 64 * D * 2, "dK/dV staging fits the Q and dO slots");
  static constexpr int kBarDs = 1;  // named barrier: dSᵀ staged (256 consumer threads, or 2 + warpgroup for 128)
  static constexpr int kBarEpilogue = 4;
  static constexpr int kBarQTail = 5;  // packed Q: a tile's rows past the sequence zeroed (256 consumer threads)
};

inline size_t bwd_sm90_smem_bytes(int head_dim) {
  return bwd_hopper_head_dim(head_dim) == 64 ? BwdHopperConfig<64>::kSmemBytes : BwdHopperConfig<128>::kSmemBytes;
}

// The kernel's TMA tensor maps: Q and dO in boxes of 64 columns x 64 rows, K and V of 64 x 128 rows
// (sm90/tensor_maps.cpp, sm90_bwd_tensor_maps), kept in FlashBwdPlan::tensor_maps.
struct BwdHopperMaps {
  CUtensorMap q, k, v, d_o;
};

}  // namespace flashcore::cuda::detail
