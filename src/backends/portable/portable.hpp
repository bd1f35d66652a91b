// The portable tier: a tiled Kokkos forward for every execution space Kokkos targets. It computes
// what the reference computes (every dtype, head dim, mask, stride, variant and sequence layout,
// LSE) with the same statement of the logits (reference::Logit) and of the visible keys
// (numeric::visible_keys), but in tiles: each K/V element loaded serves a block of query rows,
// and the inner loops are register tiles.
//
// Algorithm (one Kokkos team per block of `bm` query rows of one (batch, head)):
//   1. Q block -> fp32 scratch; o = 0, m = -inf, l = 0 per row; the block's keys are the union
//      of its rows' visible ranges (monotone in the row)
//   2. for each tile of `bn` keys: K, V tile -> fp32 scratch (converted once here)
//        S  = Q·Kᵀ in register tiles; logit + mask -> s (or -inf)
//        per row: m' = max(m, max_j s_j), c = exp(m - m'), p_j = exp(s_j - m'), l = c·l + sum_j p_j
//        o  = c·o + P·V in register tiles; m = m'
//   3. the sink joins the denominator; O = o / l, LSE = m + log l (a row that sees no key: 0, -inf)
// fp8 (e4m3) inputs fold their descales in as the reference does (reference::logit_scale: the logit
// scale times descale_q * descale_k; O = o * descale_v / l) and write O of Problem::out_dtype.
//
// Two kernels state the tiles for the two kinds of machine (the loop order is what differs):
//   team_tiles.hpp  a team of 128 threads per block of 64 rows, O in registers, slices of Q, K
//                   and V in level-0 scratch (GPU shared memory); any execution space
//                   (portable-cuda; tested on the host in CI)
//   cpu_tiles.hpp   one thread per block, 8-lane vectors (simd.hpp), level-1 scratch in cache
//                   (portable-host)
// This header holds what they share: the arguments, the block's rows and keys, the row's end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backends/reference/kokkos_compat.hpp"
#include "backends/reference/reference.hpp"
#include "core/numeric.hpp"
#include "core/sequences.hpp"
#include "flashcore/flashcore.hpp"

namespace flashcore::portable {

using reference::Logit;

/// The tile shape of one call: bm query rows per team, bn keys per tile, dp = head dim rounded up
/// to the register tile (the padding is zero in Q, K and V), threads per team, scratch bytes per
/// team in levels 0 and 1.
struct Tiles {
  int bm = 64, bn = 64, dp = 64, team_size = 1;
  std::size_t level0 = 0, level1 = 0;
};

/// Lays a kernel's scratch arrays out one after another, each on a 64-byte boundary. The same
/// list of take() calls runs twice: on a counter (Carve{}) when the plan sizes the scratch, and on
/// the team's scratch when the kernel runs, so the bytes requested and the bytes used cannot
/// disagree (Kokkos 3.4 does not check; 4.x returns nullptr past the end).
class Carve {
 public:
  Carve() = default;  // (defaulted: host and device alike, no annotation)
  KOKKOS_INLINE_FUNCTION explicit Carve(void* base) : base_(reinterpret_cast<std::uintptr_t>(base)) {}
  template <class E>
  KOKKOS_INLINE_FUNCTION E* take(std::size_t n) {
    E* p = reinterpret_cast<E*>(base_ + used_);
    used_ += (n * sizeof(E) + 63) / 64 * 64;
    return p;
  }
  KOKKOS_INLINE_FUNCTION std::size_t bytes() const { return used_; }

 private:
  std::uintptr_t base_ = 0;
  std::size_t used_ = 0;
};

/// What both kernels read: the tensors (storage type S of Q, K, V; SO of O: S but with fp8 inputs),
/// the problem's fields, the tiles.
template <class S, class SO = S>
struct Args {
  const S* q;
  const S* k;
  const S* v;
  SO* o;
  float* lse;
  int heads_q, group, head_dim, n_qblocks;
  Strides sq, sk, sv, so;
  float scale;    // reference::logit_scale: with fp8 inputs times descale_q * descale_k
  float o_scale;  // reference::output_scale: descale_v with fp8 inputs, else 1
  bool causal;
  int window_left, window_right;
  float softcap;
  const float* alibi_slopes;
  const float* sinks;
  numeric::Sequences seqs;
  Tiles tiles;

  /// The logit of row i of head h (reference::Logit: scale, softcap, ALiBi).
  KOKKOS_INLINE_FUNCTION Logit<float> logit(int h, int i, int len_q, int len_k) const {
    return Logit<float>{scale, softcap, alibi_slopes != nullptr ? alibi_slopes[h] : 0.f, alibi_slopes != nullptr,
                        i + len_k - len_q};
  }
};

/// One team's block: which (b, h), its rows [i0, i0 + rows) and the union [kmin, kmax) of their
/// visible keys (rows' ranges move right with the row: the first non-empty row's begin to the
/// last non-empty row's end); [free_begin, free_end): the keys every row sees (empty when a row
/// sees none), where no mask is needed. rows <= 0: a block past its sequence's end.
struct Block {
  int b, h, hk, len_q, len_k, i0, rows, kmin, kmax, free_begin, free_end;

  template <class S, class SO>
  KOKKOS_INLINE_FUNCTION static Block of(const Args<S, SO>& a, int league_rank) {
    Block k;
    const int qb = league_rank % a.n_qblocks;
    k.h = league_rank / a.n_qblocks % a.heads_q;
    k.b = league_rank / a.n_qblocks / a.heads_q;
    k.hk = k.h / a.group;
    k.len_q = a.seqs.len_q(k.b), k.len_k = a.seqs.len_k(k.b);
    k.i0 = qb * a.tiles.bm;
    k.rows = k.len_q - k.i0 < a.tiles.bm ? k.len_q - k.i0 : a.tiles.bm;
    k.kmin = k.kmax = k.free_begin = k.free_end = 0;
    bool any = false, all = true;
    for (int r = 0; r < k.rows; ++r) {
      const numeric::KeyRange kr = k.keys(a, r);
      if (kr.begin >= kr.end) {
        all = false;
        continue;
      }
      if (!any) k.kmin = k.free_begin = kr.begin, k.free_end = kr.end;
      k.kmax = kr.end;
      k.free_begin = kr.begin > k.free_begin ? kr.begin : k.free_begin;
      k.free_end = kr.end < k.free_end ? kr.end : k.free_end;
      any = true;
    }
    if (!all || k.free_begin >= k.free_end) k.free_begin = k.free_end = 0;
    return k;
  }
  /// The keys row i0 + r sees.
  template <class S, class SO>
  KOKKOS_INLINE_FUNCTION numeric::KeyRange keys(const Args<S, SO>& a, int r) const {
    return numeric::visible_keys(i0 + r, len_q, len_k, a.causal, a.window_left, a.window_right);
  }
};

/// A row's end: the sink (if any) joins the denominator; O = o · factor (o_scale / l, with what the
/// sink's rescaling leaves), and the LSE.
struct RowEnd {
  float factor, lse;
  KOKKOS_INLINE_FUNCTION static RowEnd of(float m, float l, const float* sinks, int h, float o_scale) {
    float factor = 1.f;
    if (sinks != nullptr) {
      const float sink = sinks[h];
      const float m_new = sink > m ? sink : m;
      factor = kc::exp(m - m_new);
      l = l * factor + kc::exp(sink - m_new);
      m = m_new;
    }
    return l > 0.f ? RowEnd{factor * o_scale / l, m + kc::log(l)} : RowEnd{0.f, kc::neg_inf<float>()};
  }
};

template <class S, class SO>
Args<S, SO> make_args(const Problem& p, const Tensors& tn, const Tiles& t) {
  return Args<S, SO>{static_cast<const S*>(tn.q), static_cast<const S*>(tn.k), static_cast<const S*>(tn.v),
                     static_cast<SO*>(tn.o), tn.lse, p.heads_q, p.heads_q / p.heads_kv, p.head_dim,
                     (p.seqlen_q + t.bm - 1) / t.bm, p.q, p.k, p.v, p.o, reference::logit_scale<float>(p),
                     reference::output_scale<float>(p), p.causal, p.window_left, p.window_right,
                     static_cast<float>(p.softcap), tn.alibi_slopes, tn.sinks, numeric::Sequences::of(p, tn), t};
}

/// The label that names the path for Kokkos Tools: "flashcore::portable[cpu, fp16, 64x64 tiles]",
/// "flashcore::portable[cpu, fp8_e4m3 in, bf16 out, 64x64 tiles]".
inline std::string label(const char* kernel, const Problem& p, bool variants, const Tiles& t) {
  const std::string dtype = p.dtype == DType::E4M3
                                ? std::string(to_string(p.dtype)) + " in, " + to_string(p.o_dtype()) + " out"
                                : std::string(to_string(p.dtype));
  return std::string("flashcore::portable[") + kernel + ", " + dtype + (variants ? ", softcap/alibi" : "") + ", " +
         std::to_string(t.bm) + "x" + std::to_string(t.bn) + " tiles]";
}

/// Calls f(In tag, Out tag, variants tag) with the element types of Q/K/V and of O
/// (reference::with_elem_tags) and whether the problem has softcap/ALiBi.
template <class F>
void dispatch(const Problem& p, const Tensors& tn, const F& f) {
  const bool variants = p.softcap > 0 || tn.alibi_slopes != nullptr;
  reference::with_elem_tags(p, [&](auto in_tag, auto out_tag) {
    if (variants)
      f(in_tag, out_tag, std::true_type{});
    else
      f(in_tag, out_tag, std::false_type{});
  });
}

/// Why a kernel with tiles t cannot run p ("" = it can).
inline std::string limits(const Problem& p, const Tiles& t) {
  const std::string why = reference::common_limits(p);
  if (!why.empty()) return why;
  if (t.bm == 0) return "head_dim = " + std::to_string(p.head_dim) + ": no tile fits the team scratch";
  const long long blocks = static_cast<long long>(p.batch) * p.heads_q * ((p.seqlen_q + t.bm - 1) / t.bm);
  if (blocks > 2147483647LL) return "batch*heads_q*query blocks = " + std::to_string(blocks) + " exceeds 2^31-1";
  return {};
}

/// The plan of one call (supports() makes it, run() launches it): which kernel, which tiles.
struct TilePlan final : Plan {
  const char* kernel = "";
  Tiles tiles;
  std::string describe() const override {
    return std::string("portable-") + kernel + " bm=" + std::to_string(tiles.bm) + " bn=" + std::to_string(tiles.bn) +
           " dp=" + std::to_string(tiles.dp) + " threads=" + std::to_string(tiles.team_size);
  }
};

/// yes with the plan, or no with the reason.
inline Support plan_or_decline(const Problem& p, const char* kernel, const Tiles& t) {
  const std::string why = limits(p, t);
  if (!why.empty()) return Support::no(why);
  auto plan = std::make_shared<TilePlan>();
  plan->kernel = kernel;
  plan->tiles = t;
  return Support::yes(std::move(plan));
}

/// The tiles supports() planned for this call (or `fallback`, computed again, without a plan).
template <class Fallback>
Tiles planned_tiles(const Query& q, const Fallback& fallback) {
  const auto* plan = dynamic_cast<const TilePlan*>(q.plan);
  return plan != nullptr ? plan->tiles : fallback();
}

}  // namespace flashcore::portable
