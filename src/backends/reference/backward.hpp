// The portable Kokkos reference of the backward pass: one source for every execution space, written
// to be obviously right (flashcore.hpp, run_backward). With x_ij the logit of row i, key j (Logit in
// reference.hpp: scale, soft-capping, ALiBi) and lse_i the forward's LSE (sink included):
//   P_ij   = exp(x_ij - lse_i)                 the forward's probabilities, recomputed
//   delta_i = dO_i · O_i                        (= sum_j P_ij dO_i·v_j, the softmax's correction)
//   dx_ij  = P_ij (dO_i·v_j - delta_i)          gradient of the logit
//   dz_ij  = dx_ij · dx/d(q_i·k_j)              (Logit::value's derivative: scale · (1 - tanh²) with softcap)
//   dQ_i   = sum_j dz_ij k_j,    dK_j = sum_i dz_ij q_i,    dV_j = sum_i P_ij dO_i
//   dsink_h = -sum_{b,i} exp(sink_h - lse_i) delta_i      (the sink's share of each row's denominator)
// over the pairs the mask shows (numeric::visible_keys, and its inverse numeric::visible_queries); dK
// and dV of a KV head sum over the query heads of its group (GQA).
//
// Three kernels, each writing its own outputs, so there are no atomics and every sum runs in a fixed
// order: the gradients are bitwise the same run to run.
//   DqRows    one team per query row (b, h, i): dQ_i over the row's visible keys, in chunks.
//   DkDvRows  one team per key row (b, hk, j): dK_j and dV_j over the group's heads and the rows that
//             see key j. Rows a sequence stores past its keys (a cache longer than seqlens_k[b]) get 0.
//   DSinks    one thread per head: dsink_h over every row of every sequence.
// delta_i is recomputed where it is used (a dot product of D terms) instead of kept in a workspace.
// Accumulation in Acc (fp32); inputs converted from their storage type as they are read, outputs
// rounded once when written.
#pragma once

#include "backends/reference/reference.hpp"

namespace flashcore::reference {

/// What the backward kernels share: the problem and the forward's tensors.
template <class In, class Acc>
struct BackwardArgs {
  using S = typename In::storage;
  const S* q;
  const S* k;
  const S* v;
  const S* o;
  const S* d_o;                // dO, with O's strides
  const float* lse;            // the forward's LSE (layout of Tensors::lse)
  const float* alibi_slopes;   // or null
  const float* sinks;          // or null
  int heads_q, group, seqlen_q, seqlen_k, head_dim;
  Strides sq, sk, sv, so;
  Acc scale, softcap;
  bool causal;
  int window_left, window_right;
  numeric::Sequences seqs;

  KOKKOS_INLINE_FUNCTION Logit<Acc> logit(int b, int h, int i) const {
    return {scale, softcap, alibi_slopes != nullptr ? static_cast<Acc>(alibi_slopes[h]) : Acc(0),
            alibi_slopes != nullptr, i + seqs.len_k(b) - seqs.len_q(b)};
  }
  KOKKOS_INLINE_FUNCTION Acc lse_of(int b, int h, int i) const {
    return static_cast<Acc>(lse[seqs.lse_index(b, h, i, heads_q)]);
  }
  /// The backward's step for one visible pair (row i, key j), from dot = q_i·k_j and dp = dO_i·v_j:
  /// p = P_ij and dz = dx_ij · d x_ij / d(q_i·k_j) (the gradient the dQ, dK sums take).
  KOKKOS_INLINE_FUNCTION static void pair(const Logit<Acc>& logit, Acc dot, Acc dp, int j, Acc lse, Acc delta, Acc& p,
                                          Acc& dz) {
    Acc d_dot;
    const Acc x = logit.value(dot, j, d_dot);
    p = kc::exp(x - lse);
    dz = p * (dp - delta) * d_dot;
  }
  /// delta_i = dO_i · O_i (one thread).
  KOKKOS_INLINE_FUNCTION Acc delta(int b, int h, int i) const {
    const std::int64_t r = seqs.q_row(so, b, i) + h * so.head;
    Acc s = Acc(0);
    for (int d = 0; d < head_dim; ++d) s += static_cast<Acc>(In::load(d_o, r + d)) * static_cast<Acc>(In::load(o, r + d));
    return s;
  }
};

template <class ExecSpace, class In, class Acc>
struct DqRows {
  using team_member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using scratch_view = Kokkos::View<Acc*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  static constexpr int kChunk = 128;
  static std::size_t scratch_bytes(int head_dim) {
    return scratch_view::shmem_size(head_dim) * 3 + scratch_view::shmem_size(kChunk);
  }

  BackwardArgs<In, Acc> a;
  typename In::storage* dq;  // Q's strides

  KOKKOS_INLINE_FUNCTION void operator()(const team_member& team) const {
    const int row = team.league_rank();
    const int i = row % a.seqlen_q;
    const int h = (row / a.seqlen_q) % a.heads_q;
    const int b = row / a.seqlen_q / a.heads_q;
    const int hk = h / a.group;
    const int D = a.head_dim;
    const int len_q = a.seqs.len_q(b), len_k = a.seqs.len_k(b);
    if (i >= len_q) return;  // a row past its sequence

    const std::int64_t q_off = a.seqs.q_row(a.sq, b, i) + h * a.sq.head;
    const std::int64_t o_off = a.seqs.q_row(a.so, b, i) + h * a.so.head;
    scratch_view qs(team.team_scratch(0), D);
    scratch_view dos(team.team_scratch(0), D);
    scratch_view dqs(team.team_scratch(0), D);
    scratch_view dz(team.team_scratch(0), kChunk);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, D), [&](int d) {
      qs(d) = static_cast<Acc>(In::load(a.q, q_off + d));
      dos(d) = static_cast<Acc>(In::load(a.d_o, o_off + d));
      dqs(d) = Acc(0);
    });
    const Acc delta = a.delta(b, h, i);  // the value the dK/dV kernel uses for this row, bit for bit
    team.team_barrier();

    const numeric::KeyRange keys = numeric::visible_keys(i, len_q, len_k, a.causal, a.window_left, a.window_right);
    const Logit<Acc> logit = a.logit(b, h, i);
    const Acc lse = keys.end > keys.begin ? a.lse_of(b, h, i) : Acc(0);
    for (int c0 = keys.begin; c0 < keys.end; c0 += kChunk) {
      const int n = keys.end - c0 < kChunk ? keys.end - c0 : kChunk;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](int jj) {
        const int j = c0 + jj;
        const std::int64_t kr = a.seqs.kv_row(a.sk, b, j) + hk * a.sk.head;
        const std::int64_t vr = a.seqs.kv_row(a.sv, b, j) + hk * a.sv.head;
        Acc dot = Acc(0), dp = Acc(0);
        for (int d = 0; d < D; ++d) {
          dot += qs(d) * static_cast<Acc>(In::load(a.k, kr + d));
          dp += dos(d) * static_cast<Acc>(In::load(a.v, vr + d));
        }
        Acc p;
        a.pair(logit, dot, dp, j, lse, delta, p, dz(jj));
      });
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, D), [&](int d) {
        Acc acc = dqs(d);
        for (int jj = 0; jj < n; ++jj)
          acc += dz(jj) * static_cast<Acc>(In::load(a.k, a.seqs.kv_row(a.sk, b, c0 + jj) + hk * a.sk.head + d));
        dqs(d) = acc;
      });
      team.team_barrier();
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, D), [&](int d) { In::store(dq, q_off + d, dqs(d)); });
  }
};

template <class ExecSpace, class In, class Acc>
struct DkDvRows {
  using team_member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using scratch_view = Kokkos::View<Acc*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  static constexpr int kChunk = 128;
  static std::size_t scratch_bytes(int head_dim) {
    return scratch_view::shmem_size(head_dim) * 4 + scratch_view::shmem_size(kChunk) * 2;
  }

  BackwardArgs<In, Acc> a;
  int heads_kv;
  typename In::storage* dk;  // K's strides
  typename In::storage* dv;  // V's strides

  KOKKOS_INLINE_FUNCTION void operator()(const team_member& team) const {
    const int row = team.league_rank();
    const int j = row % a.seqlen_k;
    const int hk = (row / a.seqlen_k) % heads_kv;
    const int b = row / a.seqlen_k / heads_kv;
    const int D = a.head_dim;
    if (j >= a.seqs.rows_k(b)) return;  // not a row of this sequence
    const int len_q = a.seqs.len_q(b), len_k = a.seqs.len_k(b);
    const std::int64_t k_off = a.seqs.kv_row(a.sk, b, j) + hk * a.sk.head;
    const std::int64_t v_off = a.seqs.kv_row(a.sv, b, j) + hk * a.sv.head;

    scratch_view ks(team.team_scratch(0), D);
    scratch_view vs(team.team_scratch(0), D);
    scratch_view dks(team.team_scratch(0), D);
    scratch_view dvs(team.team_scratch(0), D);
    scratch_view ps(team.team_scratch(0), kChunk);
    scratch_view dz(team.team_scratch(0), kChunk);
    const bool used = j < len_k;  // a cache row past the sequence's keys: no row sees it, gradient 0
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, D), [&](int d) {
      ks(d) = used ? static_cast<Acc>(In::load(a.k, k_off + d)) : Acc(0);
      vs(d) = used ? static_cast<Acc>(In::load(a.v, v_off + d)) : Acc(0);
      dks(d) = Acc(0);
      dvs(d) = Acc(0);
    });
    team.team_barrier();

    const numeric::KeyRange rows =
        used ? numeric::visible_queries(j, len_q, len_k, a.causal, a.window_left, a.window_right) : numeric::KeyRange{0, 0};
    for (int h = hk * a.group; h < (hk + 1) * a.group; ++h) {
      for (int c0 = rows.begin; c0 < rows.end; c0 += kChunk) {
        const int n = rows.end - c0 < kChunk ? rows.end - c0 : kChunk;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](int ii) {
          const int i = c0 + ii;
          const std::int64_t qr = a.seqs.q_row(a.sq, b, i) + h * a.sq.head;
          const std::int64_t orow = a.seqs.q_row(a.so, b, i) + h * a.so.head;
          Acc dot = Acc(0), dp = Acc(0);
          for (int d = 0; d < D; ++d) {
            dot += static_cast<Acc>(In::load(a.q, qr + d)) * ks(d);
            dp += static_cast<Acc>(In::load(a.d_o, orow + d)) * vs(d);
          }
          a.pair(a.logit(b, h, i), dot, dp, j, a.lse_of(b, h, i), a.delta(b, h, i), ps(ii), dz(ii));
        });
        team.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, D), [&](int d) {
          Acc gk = dks(d), gv = dvs(d);
          for (int ii = 0; ii < n; ++ii) {
            const int i = c0 + ii;
            gk += dz(ii) * static_cast<Acc>(In::load(a.q, a.seqs.q_row(a.sq, b, i) + h * a.sq.head + d));
            gv += ps(ii) * static_cast<Acc>(In::load(a.d_o, a.seqs.q_row(a.so, b, i) + h * a.so.head + d));
          }
          dks(d) = gk;
          dvs(d) = gv;
        });
        team.team_barrier();
      }
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, D), [&](int d) {
      In::store(dk, k_off + d, dks(d));
      In::store(dv, v_off + d, dvs(d));
    });
  }
};

template <class In, class Acc>
struct DSinks {
  BackwardArgs<In, Acc> a;
  int batch;
  float* dsinks;
  KOKKOS_INLINE_FUNCTION void operator()(int h) const {
    const Acc sink = static_cast<Acc>(a.sinks[h]);
    Acc g = Acc(0);
    for (int b = 0; b < batch; ++b)
      for (int i = 0; i < a.seqs.len_q(b); ++i) g -= kc::exp(sink - a.lse_of(b, h, i)) * a.delta(b, h, i);
    dsinks[h] = static_cast<float>(g);
  }
};

/// Enqueues the backward pass of the problem's dtype on `exec` (fp32 accumulation): dQ, dK, dV and,
/// when g.dsinks is given, the sinks' gradient. The caller has validated p, t and g.
template <class ExecSpace>
void launch_backward(const ExecSpace& exec, const Problem& p, const Tensors& t, const Gradients& g) {
  using Acc = float;
  auto go = [&](auto in_tag) {
    using In = decltype(in_tag);
    using S = typename In::storage;
    const BackwardArgs<In, Acc> a{static_cast<const S*>(t.q), static_cast<const S*>(t.k), static_cast<const S*>(t.v),
                                  static_cast<const S*>(t.o), static_cast<const S*>(g.d_o), t.lse, t.alibi_slopes,
                                  t.sinks, p.heads_q, p.heads_q / p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim,
                                  p.q, p.k, p.v, p.o, static_cast<Acc>(p.effective_scale()),
                                  static_cast<Acc>(p.softcap), p.causal, p.window_left, p.window_right,
                                  numeric::Sequences::of(p, t)};
    const int team_size = kc::is_host_space<ExecSpace>() ? 1 : 64;
    const std::string tag = std::string("[") + to_string(p.dtype) + " in, fp32 acc]";
    {
      using F = DqRows<ExecSpace, In, Acc>;
      Kokkos::TeamPolicy<ExecSpace> policy(exec, p.batch * p.heads_q * p.seqlen_q, team_size);
      policy.set_scratch_size(0, Kokkos::PerTeam(F::scratch_bytes(p.head_dim)));
      Kokkos::parallel_for("flashcore::reference_backward_dq" + tag, policy, F{a, static_cast<S*>(g.dq)});
    }
    {
      using F = DkDvRows<ExecSpace, In, Acc>;
      Kokkos::TeamPolicy<ExecSpace> policy(exec, p.batch * p.heads_kv * p.seqlen_k, team_size);
      policy.set_scratch_size(0, Kokkos::PerTeam(F::scratch_bytes(p.head_dim)));
      Kokkos::parallel_for("flashcore::reference_backward_dkdv" + tag, policy,
                           F{a, p.heads_kv, static_cast<S*>(g.dk), static_cast<S*>(g.dv)});
    }
    if (g.dsinks != nullptr)
      Kokkos::parallel_for("flashcore::reference_backward_dsinks" + tag,
                           Kokkos::RangePolicy<ExecSpace>(exec, 0, p.heads_q), DSinks<In, Acc>{a, p.batch, g.dsinks});
  };
  switch (p.dtype) {
    case DType::F32: go(numeric::F32Elem{}); break;
    case DType::F16: go(numeric::F16Elem{}); break;
    case DType::BF16: go(numeric::BF16Elem{}); break;
    case DType::E4M3:  // run_backward rejects fp8 inputs before selecting a backend (registry.cpp)
      throw Error("dtype", "dtype fp8_e4m3: fp8_e4m3 inputs have no backward pass");
  }
}

/// Why the reference cannot run a problem's backward pass, or "" when it can.
inline std::string backward_limits(const Problem& p) {
  if (p.dtype == DType::E4M3) return "fp8_e4m3 inputs have no backward pass";
  const long long keys = static_cast<long long>(p.batch) * p.heads_kv * p.seqlen_k;
  if (keys > 2147483647LL) return "batch*heads_kv*seqlen_k = " + std::to_string(keys) + " exceeds 2^31-1 rows";
  return common_limits(p);
}

}  // namespace flashcore::reference
