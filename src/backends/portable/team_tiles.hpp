// The portable tier's team kernel: a team of threads per block of bm query rows, every array of
// the tile in level-0 scratch (GPU shared memory), register tiles of R x W per thread. Written for
// GPUs (portable-cuda) but valid on any execution space; CI runs it on the host (run_team_on_host).
//
// Scratch layouts: qt[d][row] (Q transposed), kt[d][key] (K transposed), vt[key][d], p[row][key]
// (rows padded by one float against bank conflicts), o[row][d] (level 1 when level 0 is full).
#pragma once

#include <type_traits>

#include "backends/portable/portable.hpp"

namespace flashcore::portable::team {

constexpr int R = 4, W = 4, kPad = 1;

/// The kernel's scratch arrays, laid out by one list (Carve): all in level 0, except the O
/// accumulator, which goes to `o_level` (level 0's carve again, or level 1's when o does not fit).
struct Arrays {
  float *qt, *kt, *vt, *p, *m, *l, *c, *os;
  int *kb, *ke;

  KOKKOS_INLINE_FUNCTION static Arrays carve(Carve& level0, Carve& o_level, int bm_, int bn_, int dp_) {
    const std::size_t bm = bm_, bn = bn_, dp = dp_;
    Arrays a;
    a.qt = level0.take<float>(dp * bm);
    a.kt = level0.take<float>(dp * bn);
    a.vt = level0.take<float>(dp * bn);
    a.p = level0.take<float>(bm * (bn + kPad));
    a.m = level0.take<float>(bm);
    a.l = level0.take<float>(bm);
    a.c = level0.take<float>(bm);
    a.kb = level0.take<int>(bm);
    a.ke = level0.take<int>(bm);
    a.os = o_level.take<float>(bm * dp);
    return a;
  }
};

/// The largest tile whose arrays fit ExecSpace's level-0 scratch, o in level 0 if it fits too.
template <class ExecSpace>
Tiles choose_tiles(int head_dim) {
  Tiles t;
  t.dp = (head_dim + W - 1) / W * W;
  const std::size_t budget = static_cast<std::size_t>(Kokkos::TeamPolicy<ExecSpace>::scratch_size_max(0));
  const int shapes[][2] = {{64, 64}, {64, 32}, {32, 32}, {32, 16}, {16, 16}, {16, 8}, {8, 8}, {4, 4}};
  for (int pass = 0; pass < 2; ++pass) {
    const bool o_in_l0 = pass == 0;
    for (const auto& s : shapes) {
      Carve l0, l1;
      Arrays::carve(l0, o_in_l0 ? l0 : l1, s[0], s[1], t.dp);
      if (l0.bytes() > budget) continue;
      t.bm = s[0], t.bn = s[1];
      t.o_level1 = !o_in_l0;
      t.level0 = l0.bytes();
      t.level1 = l1.bytes();
      t.team_size = (s[0] / R) * (s[1] / W);
      return t;
    }
  }
  t.bm = t.bn = 0;  // nothing fits: the backend declines
  return t;
}

/// An n0 x n1 index space over the team's threads, flattened (neighbouring threads on
/// neighbouring inner indices: coalesced loads).
template <class Member, class F>
KOKKOS_INLINE_FUNCTION void for_2d(const Member& team, int n0, int n1, const F& f) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n0 * n1), [&](int x) { f(x / n1, x % n1); });
}

template <class ExecSpace, class In, bool Variants>
struct Kernel {
  using S = typename In::storage;
  using member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  Args<S> a;

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const Block blk = Block::of(a, team.league_rank());
    if (blk.rows <= 0) return;  // a block past its sequence
    const int bm = a.tiles.bm, bn = a.tiles.bn, dp = a.tiles.dp, D = a.head_dim, ps = bn + kPad;
    const int rows = blk.rows, j_end = blk.kmax;

    void* base0 = team.team_scratch(0).get_shmem(a.tiles.level0);
    if (base0 == nullptr) Kokkos::abort("flashcore portable team kernel: the team scratch is smaller than the plan asked for");
    Carve l0(base0);
    Carve l1(a.tiles.o_level1 ? team.team_scratch(1).get_shmem(a.tiles.level1) : nullptr);
    const Arrays t = Arrays::carve(l0, a.tiles.o_level1 ? l1 : l0, bm, bn, dp);
    float *qt = t.qt, *kt = t.kt, *vt = t.vt, *p = t.p, *m = t.m, *l = t.l, *c = t.c, *os = t.os;
    int *kb = t.kb, *ke = t.ke;

    const std::int64_t q_off = blk.h * a.sq.head, o_off = blk.h * a.so.head;
    const std::int64_t k_off = blk.hk * a.sk.head, v_off = blk.hk * a.sv.head;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, bm), [&](int r) {
      const numeric::KeyRange kr = r < rows ? blk.keys(a, r) : numeric::KeyRange{0, 0};
      kb[r] = kr.begin, ke[r] = kr.end;
      m[r] = kc::neg_inf<float>(), l[r] = 0.f;
    });
    for_2d(team, bm, dp, [&](int r, int d) {
      os[r * dp + d] = 0.f;
      qt[d * bm + r] = r < rows && d < D ? In::load(a.q, a.seqs.q_row(a.sq, blk.b, blk.i0 + r) + q_off + d) : 0.f;
    });

    for (int j0 = blk.kmin; j0 < j_end; j0 += bn) {
      team.team_barrier();  // the previous tile's kt, vt and P are consumed
      for_2d(team, bn, dp, [&](int jj, int d) {
        const int j = j0 + jj;
        const bool in = j < j_end && d < D;
        kt[d * bn + jj] = in ? In::load(a.k, k_off + a.seqs.kv_row(a.sk, blk.b, j) + d) : 0.f;
        vt[jj * dp + d] = in ? In::load(a.v, v_off + a.seqs.kv_row(a.sv, blk.b, j) + d) : 0.f;
      });
      team.team_barrier();

      // S = Q·Kᵀ of the tile, R x W per index; the logit and the mask as the register tile is stored.
      const int rblocks = bm / R;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rblocks * (bn / W)), [&](int s) {
        const int r0 = (s % rblocks) * R, c0 = (s / rblocks) * W;
        float acc[R][W] = {};
        for (int d = 0; d < dp; ++d) {
          const float* qd = qt + d * bm + r0;
          const float* kd = kt + d * bn + c0;
          for (int r = 0; r < R; ++r)
            for (int w = 0; w < W; ++w) acc[r][w] += qd[r] * kd[w];
        }
        for (int r = 0; r < R; ++r) {
          const int lo = kb[r0 + r] - j0 - c0, hi = ke[r0 + r] - j0 - c0;
          float* pr = p + (r0 + r) * ps + c0;
          if constexpr (Variants) {
            const Logit<float> logit = a.logit(blk.h, blk.i0 + r0 + r, blk.len_q, blk.len_k);
            for (int w = 0; w < W; ++w)
              pr[w] = w >= lo && w < hi ? logit(acc[r][w], j0 + c0 + w) : kc::neg_inf<float>();
          } else {
            for (int w = 0; w < W; ++w) pr[w] = w >= lo && w < hi ? acc[r][w] * a.scale : kc::neg_inf<float>();
          }
        }
      });
      team.team_barrier();

      // The online softmax step of each row.
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, bm), [&](int r) {
        float* pr = p + r * ps;
        float tile_max = kc::neg_inf<float>();
        for (int j = 0; j < bn; ++j) tile_max = pr[j] > tile_max ? pr[j] : tile_max;
        const float m_new = tile_max > m[r] ? tile_max : m[r];
        const float mu = m_new == kc::neg_inf<float>() ? 0.f : m_new;  // no key seen yet: p = 0
        float tile_sum = 0.f;
        for (int j = 0; j < bn; ++j) {
          const float e = kc::exp(pr[j] - mu);
          pr[j] = e;
          tile_sum += e;
        }
        c[r] = kc::exp(m[r] - mu);
        l[r] = l[r] * c[r] + tile_sum;
        m[r] = m_new;
      });
      team.team_barrier();

      // o = c·o + P·V, R x W per index.
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rblocks * (dp / W)), [&](int s) {
        const int r0 = (s % rblocks) * R, d0 = (s / rblocks) * W;
        float acc[R][W];
        for (int r = 0; r < R; ++r)
          for (int w = 0; w < W; ++w) acc[r][w] = os[(r0 + r) * dp + d0 + w] * c[r0 + r];
        const int n = j_end - j0 < bn ? j_end - j0 : bn;
        for (int j = 0; j < n; ++j) {
          const float* vj = vt + j * dp + d0;
          for (int r = 0; r < R; ++r) {
            const float pj = p[(r0 + r) * ps + j];
            for (int w = 0; w < W; ++w) acc[r][w] += pj * vj[w];
          }
        }
        for (int r = 0; r < R; ++r)
          for (int w = 0; w < W; ++w) os[(r0 + r) * dp + d0 + w] = acc[r][w];
      });
    }
    team.team_barrier();

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](int r) {
      const RowEnd e = RowEnd::of(m[r], l[r], a.sinks, blk.h);
      c[r] = e.factor;
      if (a.lse != nullptr) a.lse[a.seqs.lse_index(blk.b, blk.h, blk.i0 + r, a.heads_q)] = e.lse;
    });
    team.team_barrier();
    for_2d(team, rows, D, [&](int r, int d) {
      In::store(a.o, a.seqs.q_row(a.so, blk.b, blk.i0 + r) + o_off + d, os[r * dp + d] * c[r]);
    });
  }

};

/// Enqueues the team kernel for p on exec with tiles t (choose_tiles<ExecSpace>).
template <class ExecSpace>
void launch(const ExecSpace& exec, const Problem& p, const Tensors& tn, const Tiles& t) {
  dispatch(p, tn, [&](auto in_tag, auto variants_tag) {
    using In = decltype(in_tag);
    constexpr bool kVariants = decltype(variants_tag)::value;
    const Kernel<ExecSpace, In, kVariants> f{make_args<typename In::storage>(p, tn, t)};
    // A team of (bm/R)·(bn/W) threads, or as many as the space has (the host: its thread pool);
    // the loops are TeamThreadRanges, right with any team size.
    auto policy_of = [&](int team_size) {
      Kokkos::TeamPolicy<ExecSpace> policy(exec, p.batch * p.heads_q * f.a.n_qblocks, team_size);
      if (t.level0 > 0) policy.set_scratch_size(0, Kokkos::PerTeam(t.level0));
      if (t.level1 > 0) policy.set_scratch_size(1, Kokkos::PerTeam(t.level1));
      return policy;
    };
    const int most = policy_of(1).team_size_max(f, Kokkos::ParallelForTag());
    const auto policy = policy_of(t.team_size < most ? t.team_size : most);
    Kokkos::parallel_for(label("team", p, kVariants, t), policy, f);
  });
}

}  // namespace flashcore::portable::team
