// The portable tier's CPU kernel: one thread per block of bm query rows (a Kokkos team of one on
// the default host execution space), the tile's arrays in level-1 scratch (they stay in L1/L2),
// and register tiles of 8-lane vectors (simd.hpp) in every inner loop.
//
// The loop order is chosen so that no tile is transposed but Q's, once per block:
//   qt[d][row]  Q transposed: S's register tile reads 16 consecutive rows of one d
//   kn[key][d]  K as stored (one row converted to fp32 with vector loads)
//   vn[key][d]  V as stored
//   st[key][row] S, then P: the softmax runs on 8 rows at once, down the keys
//   o[row][d]   the accumulator
// S tile:   4 keys x 16 rows = 8 vector accumulators; per d: 2 loads of qt, 4 broadcasts of K, 8 FMAs
// P·V tile: 4 rows x 16 dims = 8 vector accumulators; per key: 2 loads of V, 4 broadcasts of P, 8 FMAs
#pragma once

#include <type_traits>

#include "backends/portable/portable.hpp"
#include "backends/portable/simd.hpp"

namespace flashcore::portable::cpu {

constexpr int kRowTile = 16;  // rows of S's register tile (two vectors); bm is a multiple
constexpr int kKeyTile = 4;   // keys of S's register tile
constexpr int kDimTile = 16;  // dims of P·V's register tile (two vectors); dp is a multiple
constexpr int kPvRows = 4;    // rows of P·V's register tile

/// The kernel's scratch arrays (level 1, one thread's block): laid out by one list (Carve).
struct Arrays {
  float *qt, *kn, *vn, *st, *os, *m, *l, *c, *row;
  int *kb, *ke;

  static Arrays carve(Carve& s, const Tiles& t) {
    const std::size_t bm = t.bm, bn = t.bn, dp = t.dp;
    Arrays a;
    a.qt = s.take<float>(dp * bm);
    a.kn = s.take<float>(bn * dp);
    a.vn = s.take<float>(bn * dp);
    a.st = s.take<float>(bn * bm);
    a.os = s.take<float>(bm * dp);
    a.m = s.take<float>(bm);
    a.l = s.take<float>(bm);
    a.c = s.take<float>(bm);
    a.row = s.take<float>(dp);
    a.kb = s.take<int>(bm);
    a.ke = s.take<int>(bm);
    return a;
  }
};

/// Tiles for head_dim and the longest query sequence: 64 keys a tile, up to 64 rows a block (fewer
/// for short queries: decode rows do not pay for 64), head_dim rounded up to 16.
inline Tiles choose_tiles(int head_dim, int seqlen_q) {
  Tiles t;
  t.dp = (head_dim + kDimTile - 1) / kDimTile * kDimTile;
  const int rows = (seqlen_q + kRowTile - 1) / kRowTile * kRowTile;
  t.bm = rows < 64 ? (rows > 0 ? rows : kRowTile) : 64;
  t.bn = 64;
  t.team_size = 1;
  Carve count;
  Arrays::carve(count, t);
  t.level1 = count.bytes();
  return t;
}

/// n elements of one row converted to fp32 into dst, zeros up to dp. (fp8 e4m3: one at a time.)
template <class In>
inline void load_row(const typename In::storage* src, int n, int dp, float* dst) {
  int d = 0;
  if constexpr (!std::is_same<In, numeric::E4M3Elem>::value) {
    for (; d + simd::kLanes <= n; d += simd::kLanes) {
      if constexpr (std::is_same<In, numeric::F32Elem>::value) {
        simd::store(dst + d, simd::load(src + d));
      } else if constexpr (std::is_same<In, numeric::F16Elem>::value) {
        simd::store(dst + d, simd::half_to_float(simd::load_u16(src + d)));
      } else {
        simd::store(dst + d, simd::bf16_to_float(simd::load_u16(src + d)));
      }
    }
  }
  for (; d < n; ++d) dst[d] = In::load(src, d);
  for (; d < dp; ++d) dst[d] = 0.f;
}

template <class ExecSpace, class In, class Out, bool Variants>
struct Kernel {
  using S = typename In::storage;
  using member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using f8 = simd::f8;
  Args<S, typename Out::storage> a;

  void operator()(const member& team) const {
    const Block blk = Block::of(a, team.league_rank());
    if (blk.rows <= 0) return;  // a block past its sequence
    const int bm = a.tiles.bm, bn = a.tiles.bn, dp = a.tiles.dp, D = a.head_dim;
    const int rows = blk.rows;
    const int rows16 = (rows + kRowTile - 1) / kRowTile * kRowTile;  // rows S computes
    const int rows4 = (rows + kPvRows - 1) / kPvRows * kPvRows;      // rows P·V computes

    void* base = team.team_scratch(1).get_shmem(a.tiles.level1);
    if (base == nullptr) Kokkos::abort("flashcore portable-cpu: the team scratch is smaller than the plan asked for");
    Carve scratch(base);
    const Arrays t = Arrays::carve(scratch, a.tiles);
    float *qt = t.qt, *kn = t.kn, *vn = t.vn, *st = t.st, *os = t.os, *m = t.m, *l = t.l, *c = t.c, *row = t.row;
    int *kb = t.kb, *ke = t.ke;

    const std::int64_t q_off = blk.h * a.sq.head, o_off = blk.h * a.so.head;
    const std::int64_t k_off = blk.hk * a.sk.head, v_off = blk.hk * a.sv.head;
    for (int r = 0; r < bm; ++r) {
      const numeric::KeyRange kr = r < rows ? blk.keys(a, r) : numeric::KeyRange{0, 0};
      kb[r] = kr.begin, ke[r] = kr.end;
      m[r] = kc::neg_inf<float>(), l[r] = 0.f;
      if (r < rows)
        load_row<In>(a.q + a.seqs.q_row(a.sq, blk.b, blk.i0 + r) + q_off, D, dp, row);
      else
        for (int d = 0; d < dp; ++d) row[d] = 0.f;
      for (int d = 0; d < dp; ++d) qt[d * bm + r] = row[d], os[r * dp + d] = 0.f;
    }

    const f8 scale = simd::splat(a.scale), neg_inf = simd::splat(kc::neg_inf<float>());
    for (int j0 = blk.kmin; j0 < blk.kmax; j0 += bn) {
      const int n = blk.kmax - j0 < bn ? blk.kmax - j0 : bn;  // keys of this tile
      const int n4 = (n + kKeyTile - 1) / kKeyTile * kKeyTile;
      for (int jj = 0; jj < n; ++jj) {
        load_row<In>(a.k + k_off + a.seqs.kv_row(a.sk, blk.b, j0 + jj), D, dp, kn + jj * dp);
        load_row<In>(a.v + v_off + a.seqs.kv_row(a.sv, blk.b, j0 + jj), D, dp, vn + jj * dp);
      }
      for (int jj = n; jj < n4; ++jj)
        for (int d = 0; d < dp; ++d) kn[jj * dp + d] = 0.f;  // masked below; kept finite

      // S = Q·Kᵀ: 16 rows x 4 keys per register tile, then logit and mask as it is stored.
      for (int r0 = 0; r0 < rows16; r0 += kRowTile) {
        const simd::i8 kb0 = simd::load(kb + r0), kb1 = simd::load(kb + r0 + 8);
        const simd::i8 ke0 = simd::load(ke + r0), ke1 = simd::load(ke + r0 + 8);
        for (int x0 = 0; x0 < n4; x0 += kKeyTile) {
          f8 acc[kKeyTile][2];
          for (int x = 0; x < kKeyTile; ++x) acc[x][0] = acc[x][1] = simd::splat(0.f);
          const float* kx = kn + x0 * dp;
          for (int d = 0; d < dp; ++d) {
            const f8 q0 = simd::load(qt + d * bm + r0), q1 = simd::load(qt + d * bm + r0 + 8);
            for (int x = 0; x < kKeyTile; ++x) {
              const f8 kv = simd::splat(kx[x * dp + d]);
              acc[x][0] = acc[x][0] + q0 * kv;
              acc[x][1] = acc[x][1] + q1 * kv;
            }
          }
          for (int x = 0; x < kKeyTile; ++x) {
            const int j = j0 + x0 + x;
            const simd::i8 jv = simd::splat(j);
            const simd::i8 vis0 = simd::le(kb0, jv) & simd::lt(jv, ke0);
            const simd::i8 vis1 = simd::le(kb1, jv) & simd::lt(jv, ke1);
            float* sx = st + (x0 + x) * bm + r0;
            if constexpr (Variants) {
              simd::store(sx, simd::select(vis0, acc[x][0], neg_inf));
              simd::store(sx + 8, simd::select(vis1, acc[x][1], neg_inf));
              for (int r = 0; r < kRowTile; ++r)
                if (sx[r] != kc::neg_inf<float>()) sx[r] = a.logit(blk.h, blk.i0 + r0 + r, blk.len_q, blk.len_k)(sx[r], j);
            } else {
              simd::store(sx, simd::select(vis0, acc[x][0] * scale, neg_inf));
              simd::store(sx + 8, simd::select(vis1, acc[x][1] * scale, neg_inf));
            }
          }
        }
      }

      // The online softmax step, 8 rows at a time down the tile's keys.
      for (int r0 = 0; r0 < rows16; r0 += simd::kLanes) {
        f8 mx = neg_inf;
        for (int jj = 0; jj < n; ++jj) mx = simd::max(mx, simd::load(st + jj * bm + r0));
        const f8 m_old = simd::load(m + r0);
        const f8 m_new = simd::max(m_old, mx);
        const f8 mu = simd::select(simd::eq(m_new, neg_inf), simd::splat(0.f), m_new);  // no key yet: p = 0
        f8 sum = simd::splat(0.f);
        for (int jj = 0; jj < n; ++jj) {
          const f8 e = simd::exp(simd::load(st + jj * bm + r0) - mu);
          simd::store(st + jj * bm + r0, e);
          sum = sum + e;
        }
        const f8 cr = simd::exp(m_old - mu);
        simd::store(c + r0, cr);
        simd::store(l + r0, simd::load(l + r0) * cr + sum);
        simd::store(m + r0, m_new);
      }

      // o = c·o + P·V: 4 rows x 16 dims per register tile.
      for (int r0 = 0; r0 < rows4; r0 += kPvRows) {
        for (int d0 = 0; d0 < dp; d0 += kDimTile) {
          f8 acc[kPvRows][2];
          for (int r = 0; r < kPvRows; ++r) {
            const f8 cr = simd::splat(c[r0 + r]);
            acc[r][0] = simd::load(os + (r0 + r) * dp + d0) * cr;
            acc[r][1] = simd::load(os + (r0 + r) * dp + d0 + 8) * cr;
          }
          for (int jj = 0; jj < n; ++jj) {
            const f8 v0 = simd::load(vn + jj * dp + d0), v1 = simd::load(vn + jj * dp + d0 + 8);
            const float* pj = st + jj * bm + r0;
            for (int r = 0; r < kPvRows; ++r) {
              const f8 pb = simd::splat(pj[r]);
              acc[r][0] = acc[r][0] + pb * v0;
              acc[r][1] = acc[r][1] + pb * v1;
            }
          }
          for (int r = 0; r < kPvRows; ++r) {
            simd::store(os + (r0 + r) * dp + d0, acc[r][0]);
            simd::store(os + (r0 + r) * dp + d0 + 8, acc[r][1]);
          }
        }
      }
    }

    for (int r = 0; r < rows; ++r) {
      const RowEnd e = RowEnd::of(m[r], l[r], a.sinks, blk.h, a.o_scale);
      if (a.lse != nullptr) a.lse[a.seqs.lse_index(blk.b, blk.h, blk.i0 + r, a.heads_q)] = e.lse;
      const std::int64_t at = a.seqs.q_row(a.so, blk.b, blk.i0 + r) + o_off;
      for (int d = 0; d < D; ++d) Out::store(a.o, at + d, os[r * dp + d] * e.factor);
    }
  }

};

/// Runs the CPU kernel for p on exec (a host execution space) with tiles t (choose_tiles).
template <class ExecSpace>
void launch(const ExecSpace& exec, const Problem& p, const Tensors& tn, const Tiles& t) {
  dispatch(p, tn, [&](auto in_tag, auto out_tag, auto variants_tag) {
    using In = decltype(in_tag);
    using Out = decltype(out_tag);
    constexpr bool kVariants = decltype(variants_tag)::value;
    const Kernel<ExecSpace, In, Out, kVariants> f{make_args<typename In::storage, typename Out::storage>(p, tn, t)};
    Kokkos::TeamPolicy<ExecSpace> policy(exec, p.batch * p.heads_q * f.a.n_qblocks, 1);
    policy.set_scratch_size(1, Kokkos::PerTeam(t.level1));
    Kokkos::parallel_for(label("cpu", p, kVariants, t), policy, f);
  });
}

}  // namespace flashcore::portable::cpu
