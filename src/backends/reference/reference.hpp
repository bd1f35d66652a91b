// The portable Kokkos reference: one source for every execution space (Serial, OpenMP, Cuda).
//
// Algorithm (one team per query row: batch x head x row):
//   1. load the query row into team scratch, zero the output accumulator o and set m = -inf, l = 0
//   2. for each chunk of at most kChunk visible keys:
//        s_j  = scale * (q . k_j)                      (team threads over keys; Logit below)
//        s_j  = softcap * tanh(s_j / softcap)          (soft-capping, when softcap > 0)
//        s_j -= slope_h * |j - (i + seqlen_k - seqlen_q)|  (ALiBi, when slopes are given)
//        m'   = max(m, max_j s_j)
//        p_j  = exp(s_j - m'),  l = l * exp(m - m') + sum_j p_j
//        o    = o * exp(m - m') + sum_j p_j v_j         (team threads over the head dimension)
//        m    = m'
//   3. an attention sink joins the denominator as one more logit without a value:
//        m' = max(m, sink_h),  l = l * exp(m - m') + exp(sink_h - m'),  o = o * exp(m - m')
//   4. O = o / l and LSE = m + log(l); a row that sees no key gets O = 0, LSE = -inf (sink_h with a sink).
// This is the numerically stable online softmax; every product and sum is done in Acc (fp32, or
// fp64 for the oracle mode), inputs are converted from their storage type as they are read.
// fp8 (e4m3) inputs stand for descale_q/k/v times their value: the descales are folded into the
// logit scale (scale * descale_q * descale_k) and into O's normalisation (o * descale_v / l); the
// LSE, the log of the denominator of the logits with that scale, does not see descale_v. O is then
// of Problem::out_dtype (Out = F16Elem or BF16Elem).
//
// Visible keys of row i: numeric::visible_keys (j < seqlen_k, the causal diagonal and the sliding
// window, bottom-right aligned), one contiguous range. With per-sequence lengths (flashcore.hpp,
// "Sequences") the league spans the bounds seqlen_q x heads x batch; a team whose row is past its
// sequence's Lq_b returns at once, and numeric::Sequences (core/sequences.hpp) gives Lq_b, Lk_b
// and where each row of Q, K, V, O and LSE is (packed, cached or paged). The kernel never fences globally: it runs on the execution space
// instance it is given and the caller decides when to wait.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/numeric.hpp"
#include "core/sequences.hpp"
#include "flashcore/flashcore.hpp"
#include "kokkos_compat.hpp"

namespace flashcore::reference {

/// The logit of (row i, key j) from the dot product q_i·k_j, as flashcore.hpp defines it: the scale,
/// soft-capping, ALiBi's distance to the row's diagonal key; value() also gives its derivative with
/// respect to the dot product (the backward pass, backward.hpp). One statement for both passes.
template <class Acc>
struct Logit {
  Acc scale;
  Acc softcap;    // 0: none
  Acc slope;      // ALiBi slope of the row's head (used when alibi)
  bool alibi;
  int diag_key;   // i + Lk_b - Lq_b
  KOKKOS_INLINE_FUNCTION Acc value(Acc dot, int j, Acc& d_dot) const {
    Acc s = dot * scale;
    d_dot = scale;
    if (softcap > Acc(0)) {
      const Acc t = kc::tanh(s / softcap);
      s = softcap * t;
      d_dot = scale * (Acc(1) - t * t);  // d/ds softcap·tanh(s/softcap) = 1 - tanh²
    }
    if (alibi) {
      const int dist = j - diag_key;
      s -= slope * static_cast<Acc>(dist < 0 ? -dist : dist);
    }
    return s;
  }
  KOKKOS_INLINE_FUNCTION Acc operator()(Acc dot, int j) const {
    Acc unused;
    return value(dot, j, unused);
  }
};

template <class ExecSpace, class In, class Out, class LseT, class Acc>
struct AttentionRowFunctor {
  using team_member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using scratch_view = Kokkos::View<Acc*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  static constexpr int kChunk = 128;

  const typename In::storage* q;
  const typename In::storage* k;
  const typename In::storage* v;
  typename Out::storage* o;
  LseT* lse;
  int heads_q, group, seqlen_q, seqlen_k, head_dim;
  Strides sq, sk, sv, so;
  Acc scale;    // logit_scale(): the softmax scale, times descale_q * descale_k for fp8 inputs
  Acc o_scale;  // descale_v for fp8 inputs, else 1
  bool causal;
  int window_left, window_right;  // -1: unbounded
  Acc softcap;                    // 0: none
  const float* alibi_slopes;      // heads_q values, or null
  const float* sinks;             // heads_q values, or null
  numeric::Sequences seqs;        // lengths and row locations of each sequence

  static std::size_t scratch_bytes(int head_dim) {
    return scratch_view::shmem_size(head_dim) * 2 + scratch_view::shmem_size(kChunk);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const team_member& team) const {
    const int row = team.league_rank();
    const int i = row % seqlen_q;
    const int h = (row / seqlen_q) % heads_q;
    const int b = row / seqlen_q / heads_q;
    const int hk = h / group;
    const int D = head_dim;
    const int len_q = seqs.len_q(b), len_k = seqs.len_k(b);  // this sequence's lengths
    if (i >= len_q) return;                                  // a row past its sequence

    const std::int64_t q_off = seqs.q_row(sq, b, i) + h * sq.head;
    const std::int64_t o_off = seqs.q_row(so, b, i) + h * so.head;
    const std::int64_t k_off = hk * sk.head;  // plus seqs.kv_row(sk, b, j) for key j
    const std::int64_t v_off = hk * sv.head;

    scratch_view qs(team.team_scratch(0), D);
    scratch_view os(team.team_scratch(0), D);
    scratch_view ps(team.team_scratch(0), kChunk);

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, D), [&](int d) {
      qs(d) = static_cast<Acc>(In::load(q, q_off + d));
      os(d) = Acc(0);
    });
    team.team_barrier();

    const numeric::KeyRange keys = numeric::visible_keys(i, len_q, len_k, causal, window_left, window_right);
    const Logit<Acc> logit{scale, softcap, alibi_slopes != nullptr ? static_cast<Acc>(alibi_slopes[h]) : Acc(0),
                           alibi_slopes != nullptr, i + len_k - len_q};

    Acc m = kc::neg_inf<Acc>();
    Acc l = Acc(0);
    for (int c0 = keys.begin; c0 < keys.end; c0 += kChunk) {
      const int n = keys.end - c0 < kChunk ? keys.end - c0 : kChunk;
      Acc chunk_max = kc::neg_inf<Acc>();
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, n),
          [&](int jj, Acc& mx) {
            const std::int64_t kr = k_off + seqs.kv_row(sk, b, c0 + jj);
            Acc s = Acc(0);
            for (int d = 0; d < D; ++d) s += qs(d) * static_cast<Acc>(In::load(k, kr + d));
            s = logit(s, c0 + jj);
            ps(jj) = s;
            mx = s > mx ? s : mx;
          },
          Kokkos::Max<Acc>(chunk_max));
      team.team_barrier();
      const Acc m_new = chunk_max > m ? chunk_max : m;
      const Acc correction = kc::exp(m - m_new);  // exp(-inf) = 0 on the first chunk
      Acc chunk_sum = Acc(0);
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, n),
          [&](int jj, Acc& sum) {
            const Acc p = kc::exp(ps(jj) - m_new);
            ps(jj) = p;
            sum += p;
          },
          chunk_sum);
      team.team_barrier();
      l = l * correction + chunk_sum;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, D), [&](int d) {
        Acc acc = os(d) * correction;
        for (int jj = 0; jj < n; ++jj)
          acc += ps(jj) * static_cast<Acc>(In::load(v, v_off + seqs.kv_row(sv, b, c0 + jj) + d));
        os(d) = acc;
      });
      team.team_barrier();
      m = m_new;
    }

    Acc o_factor = Acc(1);  // what the sink's rescaling leaves of o
    if (sinks != nullptr) {
      const Acc sink = static_cast<Acc>(sinks[h]);
      const Acc m_new = sink > m ? sink : m;
      o_factor = kc::exp(m - m_new);
      l = l * o_factor + kc::exp(sink - m_new);
      m = m_new;
    }
    const Acc inv_l = l > Acc(0) ? o_factor * o_scale / l : Acc(0);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, D), [&](int d) { Out::store(o, o_off + d, os(d) * inv_l); });
    if (lse != nullptr) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        lse[seqs.lse_index(b, h, i, heads_q)] = static_cast<LseT>(l > Acc(0) ? m + kc::log(l) : kc::neg_inf<Acc>());
      });
    }
  }
};

/// The logit scale of a problem in Acc: the softmax scale, times descale_q * descale_k with fp8
/// inputs (their stored values stand for descale times the value; 1 otherwise, so the product is
/// the scale itself).
template <class Acc>
Acc logit_scale(const Problem& p) {
  const Acc scale = static_cast<Acc>(p.effective_scale());
  return p.dtype == DType::E4M3 ? scale * static_cast<Acc>(p.descale_q) * static_cast<Acc>(p.descale_k) : scale;
}
/// The factor of O in its normalisation: descale_v with fp8 inputs, else 1.
template <class Acc>
Acc output_scale(const Problem& p) {
  return p.dtype == DType::E4M3 ? static_cast<Acc>(p.descale_v) : Acc(1);
}

/// Enqueues the reference on `exec`. In/Out are element tags from core/numeric.hpp; Acc is the
/// accumulation type (float, or double for the oracle mode). LseT is float or double.
template <class ExecSpace, class In, class Out, class LseT, class Acc>
void launch(const ExecSpace& exec, const typename In::storage* q, const typename In::storage* k,
            const typename In::storage* v, typename Out::storage* o, LseT* lse, const float* alibi_slopes,
            const float* sinks, const numeric::Sequences& seqs, const Problem& p) {
  using F = AttentionRowFunctor<ExecSpace, In, Out, LseT, Acc>;
  F f{q, k, v, o, lse, p.heads_q, p.heads_q / p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim,
      p.q, p.k, p.v, p.o, logit_scale<Acc>(p), output_scale<Acc>(p), p.causal,
      p.window_left, p.window_right, static_cast<Acc>(p.softcap), alibi_slopes, sinks, seqs};
  const int league = p.batch * p.heads_q * p.seqlen_q;
  const int team_size = kc::is_host_space<ExecSpace>() ? 1 : 64;
  Kokkos::TeamPolicy<ExecSpace> policy(exec, league, team_size);
  policy.set_scratch_size(0, Kokkos::PerTeam(F::scratch_bytes(p.head_dim)));
  // The label names the path for Kokkos Tools: "flashcore::reference[fp16 in, fp32 acc]",
  // "flashcore::reference[fp8_e4m3 in, bf16 out, fp32 acc]".
  const std::string out = p.dtype == DType::E4M3 ? std::string(to_string(p.o_dtype())) + " out, " : std::string();
  const std::string label = std::string("flashcore::reference[") + to_string(p.dtype) + " in, " + out +
                            (std::is_same<Acc, double>::value ? "fp64" : "fp32") + " acc]";
  Kokkos::parallel_for(label, policy, f);
}

}  // namespace flashcore::reference

namespace flashcore::reference {

/// Calls f(In tag, Out tag) with the element tags (core/numeric.hpp) of the problem's Q/K/V and of
/// its O: the same but with fp8 inputs, whose O is of out_dtype (F16Elem or BF16Elem; validate()
/// allows no other). The reference and the portable tier both dispatch through it.
template <class F>
void with_elem_tags(const Problem& p, const F& f) {
  switch (p.dtype) {
    case DType::F32: f(numeric::F32Elem{}, numeric::F32Elem{}); break;
    case DType::F16: f(numeric::F16Elem{}, numeric::F16Elem{}); break;
    case DType::BF16: f(numeric::BF16Elem{}, numeric::BF16Elem{}); break;
    case DType::E4M3:
      if (p.out_dtype == DType::F16)
        f(numeric::E4M3Elem{}, numeric::F16Elem{});
      else
        f(numeric::E4M3Elem{}, numeric::BF16Elem{});
      break;
  }
}

/// Calls launch<ExecSpace, In, Out, LseT, Acc> with the element tag In of the problem's dtype and
/// Out = OutOf::type<tag of the problem's o_dtype()> (with_elem_tags).
template <class ExecSpace, class OutOf, class LseT, class Acc>
void dispatch_dtype(const ExecSpace& exec, const Problem& p, const void* q, const void* k, const void* v, void* o,
                    LseT* lse, const float* alibi_slopes, const float* sinks, const numeric::Sequences& seqs) {
  with_elem_tags(p, [&](auto in_tag, auto out_tag) {
    using In = decltype(in_tag);
    using Out = typename OutOf::template type<decltype(out_tag)>;
    using S = typename In::storage;
    launch<ExecSpace, In, Out, LseT, Acc>(exec, static_cast<const S*>(q), static_cast<const S*>(k),
                                          static_cast<const S*>(v), static_cast<typename Out::storage*>(o), lse, alibi_slopes, sinks, seqs, p);
  });
}

/// O of the problem's o_dtype() (the fp32-accumulating reference).
struct OutOfProblem {
  template <class OutElem>
  using type = OutElem;
};
struct OutF64 {
  template <class OutElem>
  using type = numeric::F64Elem;
};

/// Enqueues the fp32-accumulating reference for the problem's dtype on `exec`.
template <class ExecSpace>
void launch_for_dtype(const ExecSpace& exec, const Problem& p, const Tensors& t) {
  dispatch_dtype<ExecSpace, OutOfProblem, float, float>(exec, p, t.q, t.k, t.v, t.o, t.lse, t.alibi_slopes, t.sinks,
                                                       numeric::Sequences::of(p, t));
}

/// Enqueues the fp64 oracle mode on `exec`: fp64 accumulation, O and LSE written as double
/// (O with the problem's o strides, LSE in the layout of Tensors::lse); t.o and t.lse unused.
template <class ExecSpace>
void launch_fp64_for_dtype(const ExecSpace& exec, const Problem& p, const Tensors& t, double* o, double* lse) {
  dispatch_dtype<ExecSpace, OutF64, double, double>(exec, p, t.q, t.k, t.v, o, lse, t.alibi_slopes, t.sinks,
                                                   numeric::Sequences::of(p, t));
}

/// Why the reference cannot run a problem on any execution space, or "" when it can.
inline std::string common_limits(const Problem& p) {
  const long long league = static_cast<long long>(p.batch) * p.heads_q * p.seqlen_q;
  if (league > 2147483647LL)
    return "batch*heads_q*seqlen_q = " + std::to_string(league) + " exceeds 2^31-1 rows";
  if (!Kokkos::is_initialized()) return "Kokkos is not initialized (call Kokkos::initialize or flashcore::initialize)";
  return {};
}

}  // namespace flashcore::reference
