// The dK/dV kernel: one block per (batch, KV head, 64-key block), 4 warps, each owning 16 keys.
// For every query head of the KV head's group (in order) and every 64-query tile that sees the key
// block (the mask policy's rows: causal from the first query whose diagonal reaches it, a window
// between its two edges), with the keys on the MMA rows:
//   Sᵀ  = K·Qᵀ                    (K the A operand, the Q tile the B operand)
//   Pᵀ  = exp2(Sᵀ·scale·log2e − lse2)   (lse2 per column = query; +inf rows give 0)
//   dV += Pᵀ·dO
//   dPᵀ = V·dOᵀ
//   dSᵀ = Pᵀ ∘ (dPᵀ − delta)
//   dK += dSᵀ·Q                    (scale applied once at the end)
// With soft-capping or ALiBi (Mask::kTransformsScores) Sᵀ is transformed first and dSᵀ carries the
// soft-capping's derivative; dPᵀ is then computed before P (bwd_p_ds_transformed).
// dK and dV stay in registers (fp32) and are written once: no atomics, a fixed summation order.
// Q, dO and their 64 lse2/delta values stream through a two-slot cp.async ring (the next tile loads
// while this one computes); K and V are loaded once.
// kAtomicDq (the default, non-deterministic path): the block also adds dQ_tile = dS·K of every tile
// pair to the fp32 accumulator a.dq_accum (red.global.add, in fragment order: bwd_tile_ops.cuh,
// dq_frag_index; bwd_convert.cuh writes dQ from it):
//   dSᵀ -> Elem, staged in the dO slot the tile pair is done with   (a barrier before and after)
//   dQ_acc[queries] += dS·K                                          (warp w: queries 16w..16w+15)
// 5 matmuls per tile pair and no dQ kernel, in exchange for atomics whose order varies from run to run.
// Without it (Options::deterministic) the dQ kernel (bwd_dq.cuh) recomputes S and dP: 7 matmuls.
#pragma once

#include "backends/cuda/backward/bwd_tile_ops.cuh"

namespace flashcore::cuda::detail {

template <int D, typename Elem, class Mask, bool kAtomicDq>
__global__ void __launch_bounds__(kBwdThreads) flash_bwd_dkdv_kernel(const __grid_constant__ BwdArgs a) {
  using Cfg = BwdConfig<D>;
  constexpr int kTile = 64 * Cfg::kRow;  // elements of one [64 x D] tile
  extern __shared__ __align__(128) unsigned char smem[];
  Elem* sK = reinterpret_cast<Elem*>(smem);
  Elem* sV = sK + kTile;
  Elem* sQ = sV + kTile;       // 2 slots
  Elem* sdO = sQ + 2 * kTile;  // 2 slots
  float* s_lse2 = reinterpret_cast<float*>(sdO + 2 * kTile);  // [2][64]
  float* s_delta = s_lse2 + 2 * 64;                            // [2][64]
  long long* s_ws_row = reinterpret_cast<long long*>(s_delta + 2 * 64);  // [2]: the tile's workspace row

  const FlashFwdParams& p = a.p.fwd;  // the forward call
  const FlashBwdParams& g = a.p;      // dO and the gradients
  const int kb = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int k0 = kb * kBwdBlockN;
  constexpr bool kSeq = kBwdSequences<Mask>;  // sequence layouts (bwd_sequences.cuh)
  const BwdSequenceRows<Elem, kSeq> rows(a, b);
  if (kSeq && k0 >= rows.rows_k()) return;  // past the K/V rows sequence b stores (block-uniform)
  // Sequence b's lengths (mask.seq): read where used; held in registers (HeldLengths) by the kernel
  // without the dQ atomics and the variants, which has registers for them.
  const std::conditional_t<kSeq && !kAtomicDq && !Mask::kTransformsScores,
                           typename Mask::template WithLengths<HeldLengths>, Mask>
      mask(p, b);

  // Query tiles [m_first, m_first + m_count) hold every row that sees a key of the block (none past
  // the sequence's keys: cache rows past its length get dK = dV = 0).
  const int r0 = mask.row_begin(k0), r1 = mask.row_end(k0 + kBwdBlockN);
  const int m_first = r0 / kBwdBlockM;
  const int m_count =
      r0 < r1 && (!kSeq || k0 < mask.seq.len_k()) ? (r1 + kBwdBlockM - 1) / kBwdBlockM - m_first : 0;
  const int n_iters = a.group * m_count;

  load_tile_async<D, Elem>(sK, rows.k(hk), p.k_seq_stride, k0, kBwdBlockN, mask.seq.len_k(), D, tid, kBwdThreads);
  load_tile_async<D, Elem>(sV, rows.v(hk), p.v_seq_stride, k0, kBwdBlockN, mask.seq.len_k(), D, tid, kBwdThreads);

  // Iteration it: query head hk·group + it / m_count, query tile m_first + it % m_count.
  auto load_q_tile = [&](int it, int slot) {
    const int h = hk * a.group + it / m_count, m = m_first + it % m_count;
    const int len_q = mask.seq.len_q();
    load_tile_async<D, Elem>(sQ + slot * kTile, rows.q(h), p.q_seq_stride, m * kBwdBlockM, kBwdBlockM, len_q, D, tid,
                             kBwdThreads);
    load_tile_async<D, Elem>(sdO + slot * kTile, rows.d_o(h), g.do_seq_stride, m * kBwdBlockM, kBwdBlockM, len_q, D,
                             tid, kBwdThreads);
    const long long w = bwd_ws_row<kSeq>(a, b, h, m * kBwdBlockM);  // rows padded: in bounds
    if (kSeq && kAtomicDq && tid == 32) s_ws_row[slot] = w;  // for the dQ atomics (read after the loop's barrier)
    if (tid < 16) cp_async_16(smem_u32(s_lse2 + slot * 64 + 4 * tid), a.lse2 + w + 4 * tid, true);
    else if (tid < 32) cp_async_16(smem_u32(s_delta + slot * 64 + 4 * (tid - 16)), a.delta + w + 4 * (tid - 16), true);
  };
  if (n_iters > 0) load_q_tile(0, 0);
  cp_async_commit();

  const LaneOffsets lo = lane_offsets<D>(lane);
  // K and V as A operands in registers where they fit (bwd_config.cuh); not beside a transforming
  // mask's per-element work (D = 64 with the dQ atomics spilled 16 bytes, sm_90).
  constexpr bool kARegs = Cfg::kDkdvARegs && !Mask::kTransformsScores;
  AOperand<D, kARegs> aK, aV;
  aK.init(smem_u32(sK), 16 * warp, lane);
  aV.init(smem_u32(sV), 16 * warp, lane);
  if constexpr (kARegs) {
    cp_async_wait<0>();
    __syncthreads();
    aK.load();
    aV.load();
  }

  float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[j][e] = dv[j][e] = 0.f;

  const int key_row0 = k0 + 16 * warp + (lane >> 2);
  const uint32_t ds_lane = ds_lane_offset(16 * warp, lane);  // kAtomicDq: this lane's dS A-fragment offset
  const int frag_off = dq_frag_offset<D>(warp, lane);        // kAtomicDq: this thread's dQ accumulator offset
#pragma unroll 1
  for (int it = 0; it < n_iters; ++it) {
    const int slot = it & 1;
    if (it + 1 < n_iters) load_q_tile(it + 1, slot ^ 1);  // the slot the previous iteration released
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const int q0 = (m_first + it % m_count) * kBwdBlockM;
    const uint32_t tQ = smem_u32(sQ + slot * kTile), tdO = smem_u32(sdO + slot * kTile);

    // The iteration's query head (ALiBi's slope; the dQ accumulator's tile), computed where used.
    auto head = [&] { return hk * a.group + it / m_count; };
    float s[kBlockN / 8][4], dp[kBlockN / 8][4];
    nt_tile<D, Elem>(s, aK, tQ, lo);  // Sᵀ: keys x queries
    const bool masked = bwd_tile_needs_mask(mask, q0, k0);
    if constexpr (Mask::kTransformsScores) {
      nt_tile<D, Elem>(dp, aV, tdO, lo);  // dPᵀ = V·dOᵀ
      const float* lse2 = s_lse2 + slot * 64;
      const float* delta = s_delta + slot * 64;
      bwd_p_ds_transformed<true>(mask, masked, s, dp, key_row0, q0, lane, head(), a.scale_log2, [&](int i, int e) {
        const int c = 8 * i + 2 * (lane & 3) + (e & 1);
        return make_float2(lse2[c], delta[c]);
      });
      pv_tile<D, Elem>(dv, s, tdO, lo);  // dV += Pᵀ·dO
    } else {
      if (masked) bwd_mask<true>(mask, s, key_row0, q0, lane);
      p_from_scores_cols(s, a.scale_log2, s_lse2 + slot * 64, lane);
      pv_tile<D, Elem>(dv, s, tdO, lo);  // dV += Pᵀ·dO
      nt_tile<D, Elem>(dp, aV, tdO, lo);  // dPᵀ = V·dOᵀ
      ds_cols(dp, s, s_delta + slot * 64, lane);
    }
    pv_tile<D, Elem>(dk, dp, tQ, lo);  // dK += dSᵀ·Q
    if constexpr (kAtomicDq) {
      __syncthreads();  // every warp is done with the dO tile: it takes dSᵀ
      Elem* sdS = sdO + slot * kTile;  // [64 keys x 64 queries], 64-element swizzled rows
      stage_acc_rows<64, Elem>(sdS, 16 * warp + (lane >> 2), lane, dp, 1.f);
      __syncthreads();
      float* acc_tile = a.dq_accum + (kSeq ? s_ws_row[slot] : bwd_ws_row<false>(a, b, head(), q0)) * D;
      // dQ columns per pass: at most 64 (32 accumulators live), dividing D.
      constexpr int kCols = D % 64 == 0 ? 64 : 32;
#pragma unroll
      for (int c0 = 0; c0 < D; c0 += kCols) {
        float acc[kCols / 8][4];
        ds_k_tile<D, Elem, kCols>(acc, smem_u32(sdS) + ds_lane, smem_u32(sK), c0, lo);  // dS·K
        red_add_frags<D, kCols>(acc_tile, frag_off, c0, acc);
      }
    }
    __syncthreads();  // the slot is free for the load two iterations on
  }
  cp_async_wait<0>();
  __syncthreads();

  // dK·scale and dV staged in the Q slots, then 16-byte stores of the block's keys.
  stage_acc_rows<D, Elem>(sQ, 16 * warp + (lane >> 2), lane, dk, p.scale);
  stage_acc_rows<D, Elem>(sQ + kTile, 16 * warp + (lane >> 2), lane, dv, 1.f);
  __syncthreads();
  // Every row the sequence stores: 0 past its keys.
  store_tile_rows<D, Elem>(rows.dk(hk), g.dk_seq_stride, sQ, k0, rows.rows_k(), tid, kBwdThreads);
  store_tile_rows<D, Elem>(rows.dv(hk), g.dv_seq_stride, sQ + kTile, k0, rows.rows_k(), tid, kBwdThreads);
}

}  // namespace flashcore::cuda::detail
