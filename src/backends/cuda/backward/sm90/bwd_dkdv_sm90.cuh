// The backward's dK/dV kernel on Hopper (sm_90a: TMA, mbarriers, wgmma), the atomic dQ path. The same
// algorithm as backward/bwd_dkdv.cuh with kAtomicDq, on the machine of the forward's Hopper kernel
// (sm90/flash_fwd_sm90.cuh), and the same workspace: delta and lse2 from the delta kernel, dQ added in
// fp32 to the accumulator in fragment order (bwd_tile_ops.cuh: dq_frag_index, red_add_frags), written
// by the conversion kernel (bwd_convert.cuh).
//
//   block = (batch, KV head, 128 keys), 3 warpgroups; backward/sm90/config.h has the sizes; causal: the
//           blocks in key-block-major order, heavy first (common/scheduler.cuh, key_block_order)
//   warpgroup 0 (producer): one thread loads K and V of the block once, then for every query head of
//                           the GQA group and every 64-query tile that sees the keys Q and dO (TMA)
//                           into a kStages ring
//   warpgroups 1, 2 (consumers): 64 keys each, keys on the wgmma rows (M), for each tile:
//     Sᵀ  = K·Qᵀ                  wgmma m64n64k16, K and Q from shared memory (K-major)
//     dPᵀ = V·dOᵀ                 the same with V and dO
//     Pᵀ  = exp2(Sᵀ·scale·log2e − lse2), dSᵀ = Pᵀ ∘ (dPᵀ − delta)   (bwd_tile_ops.cuh, with the mask
//                                 policy: kVariants, windows, soft-capping and ALiBi, bwd_p_ds_transformed)
//     dV += Pᵀ·dO                 wgmma m64nDk16, Pᵀ from registers, dO from shared memory (MN-major)
//     dK += dSᵀ·Q                 the same with dSᵀ and Q
//     dSᵀ -> shared memory (the dtype), then
//     dQ_tile = dS·K              wgmma m64n64k16, dS read transposed from the staged dSᵀ, K MN-major;
//                                 D = 128: each warpgroup 64 of dQ's columns over the 128 keys,
//                                 D = 64: each warpgroup all columns over its own 64 keys
//     dQ_acc += dQ_tile           red.global.add.v2.f32 in fragment order
//   dK·scale and dV: staged in the Q/dO slots, 16-byte stores (head_dim columns: 96 runs on D = 128, the
//   tensor maps zero-filling the columns past it, so the padding columns of every result are 0).
//
// Synchronisation: bar_kv (K and V landed), FULL[s] (slot s's Q and dO landed), EMPTY[s]
// (the 8 consumer warps are done with slot s); named barrier kBarDs per tile (dSᵀ staged; dSᵀ has two
// buffers, so a tile's writes never meet the reads of the tile before). The tile's 64 lse2 and delta
// values: warp 0 of each consumer warpgroup copies them (cp.async, a lane 16 bytes) two tiles ahead into
// one of three buffers, right after the tile's barrier (kBarDs; at D = 64 its warpgroup's kBarDs + 1 +
// cw), and waits for them before the next one:
// the barrier publishes them a tile before they are read, and the buffer written was last read before
// the barrier a tile earlier. (A TMA bulk copy completing on FULL[s], or producer stores before an mbarrier
// arrival, ran as fast, but compute-sanitizer racecheck cannot order mbarrier handoffs to plain loads and
// reported hazards.) K rows past seqlen_k are zeros
// (TMA) and masked; query rows past seqlen_q are zeros with lse2 = +inf (P = 0: no mask needed).
// Sequences (varlen Q and K/V, cache lengths; backward/bwd_sequences.cuh): packed tensors are one TMA
// batch entry of total rows and a block's rows start at its sequence's offset. A Q tile's rows past the
// sequence's queries are the next sequence's: the consumers zero them in shared memory before the
// tile's first wgmma (kBarQTail), and their lse2 is +inf (P = 0 as for the padding rows). K and V rows
// past its keys may be anything (a cache's unwritten rows): the consumers zero them in shared memory
// before the first wgmma.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

#include "backends/cuda/backward/bwd_config.cuh"
#include "backends/cuda/backward/bwd_tile_ops.cuh"
#include "backends/cuda/backward/sm90/config.h"
#include "backends/cuda/common/elem_ops.cuh"
#include "backends/cuda/common/ptx.cuh"
#include "backends/cuda/common/scheduler.cuh"
#include "backends/cuda/kernels.h"  // raise_smem_limit
#include "backends/cuda/sm90/ptx_sm90.cuh"

namespace flashcore::cuda::detail {

template <int D, typename Elem, bool kVariants, bool kCausal, bool kSeq>
__global__ void __launch_bounds__(BwdHopperConfig<D>::kThreads, 1)
flash_bwd_dkdv_sm90_kernel(const __grid_constant__ BwdArgs a, const __grid_constant__ BwdHopperMaps maps) {
  using Cfg = BwdHopperConfig<D>;
  constexpr int kS = Cfg::kStages;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;  // swizzle atoms need 1024-byte alignment
  const uint32_t sK = base, sV = base + Cfg::kOffV, sQ = base + Cfg::kOffQ, sdO = base + Cfg::kOffDO;
  const uint32_t sdS = base + Cfg::kOffDS;
  unsigned char* const gen = smem_raw + (base - smem_u32(smem_raw));  // generic pointer of `base`
  const uint32_t bar_kv = base + Cfg::kOffBar;
  auto full = [&](int s) { return bar_kv + 8 * (1 + s); };
  auto empty = [&](int s) { return bar_kv + 8 * (1 + kS + s); };

  const FlashFwdParams& p = a.p.fwd;  // the forward call
  const FlashBwdParams& g = a.p;      // dO and the gradients
  using Mask = BwdMask<kVariants, kCausal, kSeq>;  // the variants' and sequences' causal is p.causal
  const bool heavy_first = kVariants || kSeq ? p.causal : kCausal;  // causal: heavy blocks first
  const KeyBlockCoord blk = heavy_first ? key_block_order<true>(a.heavy_group) : key_block_order<false>(a.heavy_group);
  const int kb = blk.kb, hk = blk.hk, b = blk.b;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
  const int k0 = kb * Cfg::kBlockN;
  static_assert(kSeq == kBwdSequences<Mask>, "sequence layouts (bwd_sequences.cuh)");
  const BwdSequenceRows<Elem, kSeq> seq_rows(a, b);
  if (kSeq && k0 >= seq_rows.rows_k()) return;  // past the K/V rows sequence b stores (block-uniform, before any barrier)
  const Mask mask(p, b);            // sequence b's lengths (mask.seq), read where used
  // Query tiles [m_first, m_first + m_count) hold every row that sees a key of the block (bwd_tile_ops.cuh;
  // none past the sequence's keys: cache rows past its length get dK = dV = 0).
  const int r0 = mask.row_begin(k0), r1 = mask.row_end(k0 + Cfg::kBlockN);
  const int m_first = r0 / Cfg::kBlockM;
  const int m_count =
      r0 < r1 && (!kSeq || k0 < mask.seq.len_k()) ? (r1 + Cfg::kBlockM - 1) / Cfg::kBlockM - m_first : 0;
  const int n_iters = a.group * m_count;
  // Iteration it: query head hk·group + it / m_count, query tile m_first + it % m_count (first row q0).
  struct Tile {
    int h, q0;
  };
  auto tile_of = [&](int it) { return Tile{hk * a.group + it / m_count, (m_first + it % m_count) * Cfg::kBlockM}; };
  // The workspace row of query q0 of head h (a sequence's rows padded to 64: a tile is in bounds).
  auto ws_row = [&](const Tile& t) { return bwd_ws_row<kSeq>(a, b, t.h, t.q0); };

  if (tid == 0) {
    mbar_init(bar_kv, 1);
    for (int s = 0; s < kS; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), 4 * Cfg::kConsumerWGs);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {  // ---------------- producer ----------------
    setmaxnreg_dec<Cfg::kProducerRegs>();
    if (tid == 0) {
      const TmaRows qr = kSeq ? tma_q_rows(p, b) : TmaRows{0, b}, kr = kSeq ? tma_kv_rows(p, b) : TmaRows{0, b};
      mbar_expect_tx(bar_kv, 2 * Cfg::kKVBytes);
      for (int pn = 0; pn < Cfg::kPanels; ++pn) {
        tma_load_4d(sK + pn * Cfg::kKVPanelBytes, &maps.k, 64 * pn, kr.row0 + k0, hk, kr.batch, bar_kv);
        tma_load_4d(sV + pn * Cfg::kKVPanelBytes, &maps.v, 64 * pn, kr.row0 + k0, hk, kr.batch, bar_kv);
      }
      for (int it = 0; it < n_iters; ++it) {
        const int s = it % kS;
        if (it >= kS) mbar_wait_parity(empty(s), ((it / kS) + 1) & 1);  // tile it − kS released the slot
        const Tile t = tile_of(it);
        mbar_expect_tx(full(s), 2 * Cfg::kQBytes);
        for (int pn = 0; pn < Cfg::kPanels; ++pn) {
          tma_load_4d(sQ + s * Cfg::kQBytes + pn * Cfg::kQPanelBytes, &maps.q, 64 * pn, qr.row0 + t.q0, t.h, qr.batch,
                      full(s));
          tma_load_4d(sdO + s * Cfg::kQBytes + pn * Cfg::kQPanelBytes, &maps.d_o, 64 * pn, qr.row0 + t.q0, t.h,
                      qr.batch, full(s));
        }
      }
    }
    return;
  }

  // ---------------- consumers ----------------
  setmaxnreg_inc<Cfg::kConsumerRegs>();
  const int cw = wg - 1;             // consumer warpgroup: keys k0 + 64·cw ..
  const int wl = warp & 3;           // warp in the warpgroup: accumulator rows 16·wl + lane/4 (+8)
  const int kw0 = k0 + 64 * cw;
  const int key_row0 = kw0 + 16 * wl + (lane >> 2);

  float dk[D / 8][4], dv[D / 8][4];  // C-fragment layout (common/mask.cuh); wgmma sees them flat
  auto& dk_flat = reinterpret_cast<float (&)[D / 2]>(dk);
  auto& dv_flat = reinterpret_cast<float (&)[D / 2]>(dv);
#pragma unroll
  for (int j = 0; j < D / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[j][e] = dv[j][e] = 0.f;

  // Descriptors (sm90/ptx_sm90.cuh, make_desc_sw128): the address field is in 16-byte units. K-major
  // operands (K, V as A of Sᵀ, dPᵀ; Q, dO as B): the k16 step kk is panel kk / 4, 32 bytes·(kk % 4) along
  // the swizzled row. MN-major operands (dO, Q as B of dV, dK; dSᵀ as A and K as B of dQ): the k16 step
  // is 16 rows (2048 bytes); LBO steps between 64-column panels.
  const uint64_t k_desc = make_desc_sw128(sK + cw * 64 * 128, 16);
  const uint64_t v_desc = make_desc_sw128(sV + cw * 64 * 128, 16);
  const uint64_t q_desc = make_desc_sw128(sQ, 16), do_desc = make_desc_sw128(sdO, 16);
  const uint64_t q_mn = make_desc_sw128(sQ, Cfg::kQPanelBytes), do_mn = make_desc_sw128(sdO, Cfg::kQPanelBytes);
  // dQ: A = dSᵀ rows (keys) from 0 (column split) or 64·cw (key split); B = K the same rows, its panel cw
  // (column split) or 0.
  constexpr int kDqKeys = Cfg::kDqSplitColumns ? Cfg::kBlockN : 64;
  const int dq_key0 = Cfg::kDqSplitColumns ? 0 : 64 * cw;
  const uint64_t ds_a = make_desc_sw128(sdS + dq_key0 * 128, Cfg::kDsBytes);
  const uint64_t k_b = make_desc_sw128(sK + (Cfg::kDqSplitColumns ? cw * Cfg::kKVPanelBytes : 0) + dq_key0 * 128,
                                       Cfg::kKVPanelBytes);
  const int dq_col0 = Cfg::kDqSplitColumns ? 64 * cw : 0;
  constexpr int kDqCols = Cfg::kDqSplitColumns ? D / 2 : D;  // dQ columns per warpgroup
  static_assert(kDqCols == 64, "one m64n64 dQ accumulator (32 registers) per warpgroup: config.h");
  const int frag_off = dq_frag_offset<D>(wl, lane);
  // This thread's dSᵀ rows in the staged tile (128-byte rows, 16-byte chunk c at c ^ (row & 7)).
  const int ds_row = 64 * cw + 16 * wl + (lane >> 2);
  const uint32_t ds_addr = sdS + ds_row * 128 + 4 * (lane & 3);
  const int ds_x = ds_row & 7;

  // acc[64 keys x 64 queries] = A·Bᵀ over the head dim: A the warpgroup's K or V rows, B the slot's Q or
  // dO tile (both K-major).
  auto keys_x_queries = [&](float (&acc)[32], uint64_t a_desc, uint64_t b_desc) {
    wgmma_ss_m64n64k16_init(acc, a_desc, b_desc, Elem{});
#pragma unroll
    for (int kk = 1; kk < D / 16; ++kk) {
      const uint32_t ao = ((kk / 4) * Cfg::kKVPanelBytes + (kk % 4) * 32) >> 4;
      const uint32_t bo = ((kk / 4) * Cfg::kQPanelBytes + (kk % 4) * 32) >> 4;
      wgmma_ss_m64n64k16(acc, a_desc + ao, b_desc + bo, 1, Elem{});
    }
  };
  auto release = [&](uint32_t bar) {
    __syncwarp();
    if (lane == 0) mbar_arrive(bar);
  };
  // This warpgroup's lse2/delta buffers: tile it's 64 lse2 then 64 delta values at rows(it).
  const float* s_rows = reinterpret_cast<const float*>(gen + Cfg::kOffRows) + cw * Cfg::kRowBufs * 2 * Cfg::kBlockM;
  auto rows = [&](int it) { return s_rows + (it % Cfg::kRowBufs) * 2 * Cfg::kBlockM; };
  auto load_rows = [&](int it) {  // warp 0 of the warpgroup
    const long long w = ws_row(tile_of(it));
    cp_async_16(smem_u32(rows(it) + 4 * lane), (lane < 16 ? a.lse2 : a.delta) + w + 4 * (lane & 15), true);
  };
  const int bar_rows = Cfg::kDqSplitColumns ? Cfg::kBarDs : Cfg::kBarDs + 1 + cw;  // the per-tile barrier
  const int bar_rows_threads = Cfg::kDqSplitColumns ? 128 * Cfg::kConsumerWGs : 128;
  if (wl == 0) {
    for (int it = 0; it < min(2, n_iters); ++it) load_rows(it);
    cp_async_commit();
  }

  mbar_wait_parity(bar_kv, 0);
  // Past the sequence's keys TMA read the rows that follow in memory (the next sequence, or cache rows
  // no one wrote: possibly NaN), where the fixed layout gets zeros. Their scores are masked, but P = 0
  // times a NaN in V (dPᵀ), or dS = 0 times a NaN in K (dQ), is NaN: the warpgroup zeroes its 64 rows
  // past the last key in K and V, then fences them for wgmma (the async proxy) before the barrier.
  if (const int tail = mask.seq.len_k() - kw0; kSeq && tail < 64 && kv_ends_per_sequence(p)) {
    const int r_first = max(0, tail);
    for (const uint32_t tile : {sK, sV})  // the warpgroup's 64 rows of each
      zero_smem_rows(tile + 64 * cw * 128, Cfg::kPanels, Cfg::kKVPanelBytes, r_first, 64, tid - 128 * wg, 128);
    fence_proxy_async_smem();
  }
  if (wl == 0) cp_async_wait<0>();
  named_bar_sync(bar_rows, bar_rows_threads);
  // Packed Q: a tile's rows past the sequence's queries are the next sequence's Q and dO (TMA), where
  // the fixed layout gets zeros. Their lse2 is +inf (P = 0, dS = 0), but 0 times an inf there (another
  // sequence's input) would reach this sequence's dK and dV as NaN: the consumers zero those rows of
  // the slot (each warpgroup half of the chunks), fence them for wgmma, and meet before either reads it.
  const int q_tail_from = kSeq && p.cu_seqlens_q != nullptr ? mask.seq.len_q() : 1 << 30;
#pragma unroll 1
  for (int it = 0; it < n_iters; ++it) {
    const int s = it % kS;
    mbar_wait_parity(full(s), (it / kS) & 1);
    const Tile t = tile_of(it);
    const uint32_t qo = (s * Cfg::kQBytes) >> 4;  // slot s in descriptor units
    if (const int r_first = q_tail_from - t.q0; kSeq && r_first < Cfg::kBlockM) {  // block-uniform
      for (const uint32_t tile : {sQ, sdO})
        zero_smem_rows(tile + s * Cfg::kQBytes, Cfg::kPanels, Cfg::kQPanelBytes, r_first, Cfg::kBlockM, tid - 128,
                       128 * Cfg::kConsumerWGs);
      fence_proxy_async_smem();
      named_bar_sync(Cfg::kBarQTail, 128 * Cfg::kConsumerWGs);
    }

    float st[8][4], dpt[8][4];  // Sᵀ, dPᵀ: 64 keys x 64 queries per warpgroup
    auto& st_flat = reinterpret_cast<float (&)[32]>(st);
    auto& dpt_flat = reinterpret_cast<float (&)[32]>(dpt);
    wgmma_fence();
    keys_x_queries(st_flat, k_desc, q_desc + qo);   // Sᵀ = K·Qᵀ
    keys_x_queries(dpt_flat, v_desc, do_desc + qo);  // dPᵀ = V·dOᵀ
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(st_flat);
    fence_regs(dpt_flat);

    const bool masked = bwd_tile_needs_mask(mask, t.q0, kw0);
    if constexpr (Mask::kTransformsScores) {
      const float* lse2 = rows(it);
      bwd_p_ds_transformed<true>(mask, masked, st, dpt, key_row0, t.q0, lane, t.h, a.scale_log2, [&](int i, int e) {
        const int c = 8 * i + 2 * (lane & 3) + (e & 1);
        return make_float2(lse2[c], lse2[Cfg::kBlockM + c]);
      });
    } else {
      if (masked) bwd_mask<true>(mask, st, key_row0, t.q0, lane);
      p_from_scores_cols(st, a.scale_log2, rows(it), lane);
      ds_cols(dpt, st, rows(it) + Cfg::kBlockM, lane);
    }
    uint32_t pf[4][4], dsf[4][4];  // Pᵀ and dSᵀ as A operands, one k16 step (16 queries) per [k]
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      pack_p_fragment<Elem>(pf[k], st[2 * k], st[2 * k + 1]);
      pack_p_fragment<Elem>(dsf[k], dpt[2 * k], dpt[2 * k + 1]);
    }
    // dSᵀ into buffer it & 1: rows ds_row, ds_row + 8; queries 16k + 2t (chunk 2k) and 16k + 8 + 2t (2k + 1).
    const uint32_t buf = ds_addr + (it & 1) * Cfg::kDsBytes;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint32_t c0 = uint32_t((2 * k) ^ ds_x) << 4, c1 = uint32_t((2 * k + 1) ^ ds_x) << 4;
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(buf + c0), "r"(dsf[k][0]) : "memory");
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(buf + 1024 + c0), "r"(dsf[k][1]) : "memory");
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(buf + c1), "r"(dsf[k][2]) : "memory");
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(buf + 1024 + c1), "r"(dsf[k][3]) : "memory");
    }
    fence_proxy_async_smem();  // the stores before the wgmma (async proxy) that reads them

    wgmma_fence();
#pragma unroll
    for (int k = 0; k < 4; ++k) wgmma_pv<Elem>(dv_flat, pf[k], do_mn + qo + ((k * 16 * 128) >> 4));  // dV += Pᵀ·dO
#pragma unroll
    for (int k = 0; k < 4; ++k) wgmma_pv<Elem>(dk_flat, dsf[k], q_mn + qo + ((k * 16 * 128) >> 4));  // dK += dSᵀ·Q
    wgmma_commit();

    if (wl == 0) cp_async_wait<0>();  // tile it + 1's lse2/delta (copied a tile ago) have landed
    named_bar_sync(bar_rows, bar_rows_threads);  // dSᵀ staged; tile it + 1's lse2/delta published
    if (wl == 0 && it + 2 < n_iters) {
      load_rows(it + 2);  // into the buffer tile it − 1 used
      cp_async_commit();
    }
    float dq[kDqCols / 8][4];  // dQ_tile: 64 queries x kDqCols columns (dq_col0 ..)
    auto& dq_flat = reinterpret_cast<float (&)[kDqCols / 2]>(dq);
    const uint32_t dso = ((it & 1) * Cfg::kDsBytes) >> 4;
    wgmma_fence();
    wgmma_sstt_m64n64k16_init(dq_flat, ds_a + dso, k_b, Elem{});
#pragma unroll
    for (int kk = 1; kk < kDqKeys / 16; ++kk)
      wgmma_sstt_m64n64k16(dq_flat, ds_a + dso + ((kk * 16 * 128) >> 4), k_b + ((kk * 16 * 128) >> 4), Elem{});
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(dq_flat);
    fence_regs(dk_flat);
    fence_regs(dv_flat);
    release(empty(s));  // Q and dO of slot s are read

    red_add_frags<D, kDqCols>(a.dq_accum + ws_row(t) * D, frag_off, dq_col0, dq);
  }

  // ---- epilogue: every consumer is done with the Q and dO slots (its wgmma waited); warpgroup cw
  // stages its dK·scale and dV in tiles 2cw and 2cw + 1 of [Q slots | dO slots], then stores its keys.
  named_bar_sync(Cfg::kBarEpilogue, 128 * Cfg::kConsumerWGs);
  Elem* tiles = reinterpret_cast<Elem*>(gen + Cfg::kOffQ);
  Elem* s_dk = tiles + (2 * cw) * 64 * D;
  Elem* s_dv = tiles + (2 * cw + 1) * 64 * D;
  stage_acc_rows<D, Elem>(s_dk, 16 * wl + (lane >> 2), lane, dk, p.scale);
  stage_acc_rows<D, Elem>(s_dv, 16 * wl + (lane >> 2), lane, dv, 1.f);
  named_bar_sync(Cfg::kBarDs + 1 + cw, 128);
  // Every row the sequence stores: 0 past its keys.
  store_tile_rows<D, Elem>(seq_rows.dk(hk), g.dk_seq_stride, s_dk, kw0, seq_rows.rows_k(), tid - 128 * wg, 128,
                           p.head_dim / 8);
  store_tile_rows<D, Elem>(seq_rows.dv(hk), g.dv_seq_stride, s_dv, kw0, seq_rows.rows_k(), tid - 128 * wg, 128,
                           p.head_dim / 8);
}

template <int D, typename Elem, bool kVariants, bool kCausal, bool kSeq>
cudaError_t launch_bwd_sm90_typed(const FlashBwdPlan& plan, const BwdArgs& args, const BwdHopperMaps& maps,
                                  cudaStream_t stream) {
  void (*kernel)(BwdArgs, BwdHopperMaps) = flash_bwd_dkdv_sm90_kernel<D, Elem, kVariants, kCausal, kSeq>;
  const cudaError_t e = raise_smem_limit(reinterpret_cast<const void*>(kernel), plan.device, plan.smem_dkdv);
  if (e != cudaSuccess) return e;
  kernel<<<plan.grid_dkdv, plan.threads, plan.smem_dkdv, stream>>>(args, maps);
  return cudaGetLastError();
}

// The kernels of the VariantMask policy and of sequence layouts take causal at run time, the others
// as a template argument.
template <int D, typename Elem, bool kVariants, bool kSeq>
cudaError_t launch_bwd_sm90_causal(const FlashBwdPlan& plan, const BwdArgs& args, const BwdHopperMaps& maps,
                                   cudaStream_t stream) {
  if constexpr (kVariants || kSeq)
    return launch_bwd_sm90_typed<D, Elem, kVariants, false, kSeq>(plan, args, maps, stream);
  else
    return args.p.fwd.causal ? launch_bwd_sm90_typed<D, Elem, false, true, false>(plan, args, maps, stream)
                             : launch_bwd_sm90_typed<D, Elem, false, false, false>(plan, args, maps, stream);
}

template <int D, bool kVariants, bool kSeq>
cudaError_t launch_bwd_sm90_head_dim(const FlashBwdPlan& plan, const BwdArgs& args, cudaStream_t stream) {
  BwdHopperMaps maps;
  std::memcpy(static_cast<void*>(&maps), plan.tensor_maps, sizeof maps);
  return args.p.fwd.bf16 ? launch_bwd_sm90_causal<D, __nv_bfloat16, kVariants, kSeq>(plan, args, maps, stream)
                         : launch_bwd_sm90_causal<D, __half, kVariants, kSeq>(plan, args, maps, stream);
}

}  // namespace flashcore::cuda::detail

#define FLASHCORE_BWD_SM90_INSTANTIATE(D, VARIANTS, SEQ)                                          \
  template cudaError_t flashcore::cuda::detail::launch_bwd_sm90_head_dim<D, VARIANTS, SEQ>(       \
      const flashcore::cuda::FlashBwdPlan&, const flashcore::cuda::detail::BwdArgs&, cudaStream_t);
