// The dQ kernel: one block per (batch, query head, 64-query block), 4 warps, each owning 16 queries.
// For every 64-key tile the block sees (the mask policy's tiles: causal up to the last row's diagonal,
// a window between its edges), queries on the rows:
//   S  = Q·Kᵀ,  P = exp2(S·scale·log2e − lse2),  dP = dO·Vᵀ,  dS = P ∘ (dP − delta),  dQ += dS·K
// (soft-capping and ALiBi: S transformed, dS times the soft-capping's derivative, bwd_p_ds_transformed)
// (scale applied once at the end). dQ stays in registers (fp32) and is written once. K and V stream
// through a two-slot cp.async ring; Q and dO are loaded once. Blocks are launched heaviest first
// (causal: the last query blocks see the most keys).
#pragma once

#include "backends/cuda/backward/bwd_tile_ops.cuh"

namespace flashcore::cuda::detail {

template <int D, typename Elem, class Mask>
__global__ void __launch_bounds__(kBwdThreads) flash_bwd_dq_kernel(const __grid_constant__ BwdArgs a) {
  using Cfg = BwdConfig<D>;
  constexpr int kTile = 64 * Cfg::kRow;
  extern __shared__ __align__(128) unsigned char smem[];
  Elem* sQ = reinterpret_cast<Elem*>(smem);
  Elem* sdO = sQ + kTile;
  Elem* sK = sdO + kTile;     // 2 slots
  Elem* sV = sK + 2 * kTile;  // 2 slots

  const FlashFwdParams& p = a.p.fwd;  // the forward call
  const FlashBwdParams& g = a.p;      // dO and the gradients
  const int qb = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / a.group;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int q0 = qb * kBwdBlockM;
  constexpr bool kSeq = kBwdSequences<Mask>;  // sequence layouts (bwd_sequences.cuh)
  // Sequence b's lengths (mask.seq): this kernel has registers to spare (167 at D = 128), so they are
  // read once and held (HeldLengths) instead of read at every tile's mask question.
  const std::conditional_t<kSeq, typename Mask::template WithLengths<HeldLengths>, Mask> mask(p, b);
  if (kSeq && q0 >= mask.seq.len_q()) return;   // past the sequence's queries (block-uniform)

  // Key tiles [n_first, n_tiles) hold every key a row of the block sees.
  const int n_first = mask.first_tile(q0, kBwdBlockN);
  const int n_tiles = mask.tiles(q0 + kBwdBlockM, kBwdBlockN);

  const BwdSequenceRows<Elem, kSeq> rows(a, b);
  load_tile_async<D, Elem>(sQ, rows.q(h), p.q_seq_stride, q0, kBwdBlockM, mask.seq.len_q(), D, tid, kBwdThreads);
  load_tile_async<D, Elem>(sdO, rows.d_o(h), g.do_seq_stride, q0, kBwdBlockM, mask.seq.len_q(), D, tid, kBwdThreads);
  auto load_kv_tile = [&](int n, int slot) {
    const int len_k = mask.seq.len_k();
    load_tile_async<D, Elem>(sK + slot * kTile, rows.k(hk), p.k_seq_stride, n * kBwdBlockN, kBwdBlockN, len_k, D, tid,
                             kBwdThreads);
    load_tile_async<D, Elem>(sV + slot * kTile, rows.v(hk), p.v_seq_stride, n * kBwdBlockN, kBwdBlockN, len_k, D, tid,
                             kBwdThreads);
  };
  if (n_first < n_tiles) load_kv_tile(n_first, 0);
  cp_async_commit();

  // This thread's two query rows: lse2 and delta from the workspace (rows padded to 64: in bounds).
  const int lrow0 = 16 * warp + (lane >> 2);
  const long long w = bwd_ws_row<kSeq>(a, b, h, q0 + lrow0);
  const float lse2_r0 = a.lse2[w], lse2_r1 = a.lse2[w + 8];
  const float delta_r0 = a.delta[w], delta_r1 = a.delta[w + 8];

  const LaneOffsets lo = lane_offsets<D>(lane);
  AOperand<D, Cfg::kDqARegs> aQ, adO;
  aQ.init(smem_u32(sQ), 16 * warp, lane);
  adO.init(smem_u32(sdO), 16 * warp, lane);
  if constexpr (Cfg::kDqARegs) {
    cp_async_wait<0>();
    __syncthreads();
    aQ.load();
    adO.load();
  }

  float dq[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) dq[j][0] = dq[j][1] = dq[j][2] = dq[j][3] = 0.f;

#pragma unroll 1
  for (int n = n_first; n < n_tiles; ++n) {
    const int slot = (n - n_first) & 1;
    if (n + 1 < n_tiles) load_kv_tile(n + 1, slot ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const uint32_t tK = smem_u32(sK + slot * kTile), tV = smem_u32(sV + slot * kTile);

    float s[kBlockN / 8][4], dp[kBlockN / 8][4];
    nt_tile<D, Elem>(s, aQ, tK, lo);  // S = Q·Kᵀ
    const bool masked = bwd_tile_needs_mask(mask, q0, n * kBwdBlockN);
    if constexpr (Mask::kTransformsScores) {
      nt_tile<D, Elem>(dp, adO, tV, lo);  // dP = dO·Vᵀ
      bwd_p_ds_transformed<false>(mask, masked, s, dp, q0 + lrow0, n * kBwdBlockN, lane, h, a.scale_log2,
                                  [&](int, int e) {
                                    return e < 2 ? make_float2(lse2_r0, delta_r0) : make_float2(lse2_r1, delta_r1);
                                  });
    } else {
      if (masked) bwd_mask<false>(mask, s, q0 + lrow0, n * kBwdBlockN, lane);
      p_from_scores_rows(s, a.scale_log2, lse2_r0, lse2_r1);
      nt_tile<D, Elem>(dp, adO, tV, lo);  // dP = dO·Vᵀ
      ds_rows(dp, s, delta_r0, delta_r1);
    }
    pv_tile<D, Elem>(dq, dp, tK, lo);  // dQ += dS·K
    __syncthreads();
  }
  cp_async_wait<0>();
  __syncthreads();

  stage_acc_rows<D, Elem>(sK, lrow0, lane, dq, p.scale);
  __syncthreads();
  store_tile_rows<D, Elem>(rows.dq(h), g.dq_seq_stride, sK, q0, mask.seq.len_q(), tid, kBwdThreads);
}

}  // namespace flashcore::cuda::detail
