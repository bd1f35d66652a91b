// The portable tier's team kernel: a team of 128 threads per block of 64 query rows, written for
// GPUs (portable-cuda) but valid on any execution space; CI runs it on the host
// (run_team_kernel_on_host), where one thread plays the team's 128 in turn.
//
// The team is 8 row groups x 16 column groups. Thread (rg, cg) owns rows rg·8 .. rg·8+7 of the
// block for the whole call: their O accumulators (8 rows x CO head dims: cg·CO .. cg·CO+CO-1, at
// D = 256 runs of 4, 64 apart; Kernel::o_dim) stay in registers; so do their running max m and their
// partial sum l (over the keys the thread scores), except at D > 64 on an NVIDIA GPU, where they wait
// in shared memory between tiles (stats_shared).
// Per tile of 64 keys:
//   1. S = Q·Kᵀ: the thread scores its 8 rows against keys cg·4 .. cg·4+3 (32 accumulators),
//      reading Q and K slices of 16 head dims staged in shared memory, transposed (qt[d][row],
//      kt[d][key]) so that each step is 2 + 1 four-float loads for 32 FMAs.
//   2. logit (in the log2 domain), mask (only in tiles some row does not see whole), the row's max
//      over the tile: the 16 threads of a row group (half a warp) combine the max of their 4 keys by
//      shuffles on an NVIDIA GPU, elsewhere each posts its max and after one barrier reads the 16;
//      m' = max(m, tile max). p = 2^(s - m'), c = 2^(m - m'), o *= c, l = c·l + sum p; P goes to
//      shared memory transposed (pt[key][row]).
//   3. o += P·V: V staged in slices of 2048 elements (32, 16 or 8 keys; vt[key][d], as stored);
//      each step 2 + CO/4 four-float loads for 8·CO FMAs.
// The slices (a tile's Q/K slices, then its V slices, then the next tile's) form one pipeline
// through two buffers: while a slice is used, each thread has the next slice's 16 elements in flight
// in registers (16-bit inputs: 8 pairs of adjacent head dims), and stores them after (fp32 on sm_80+:
// copied by cp.async straight to the other buffer, and waited for after); one barrier a
// slice. At the end the 16 partial sums of a row are added (one barrier), the sink joins, O = o / l.
//
// Why this shape: the first team kernel (4x4 register tiles, the whole tile in scratch, one
// thread per row for the softmax) reached 2-8 % of the fp32 peak on an H100, bound by shared
// memory traffic (8 loads per 16 FMAs) and by Kokkos 3.4's 40 KB of level-0 scratch, which left
// 16x16 tiles at D = 128. Here only slices are staged (40.2 KB whatever the head dim), and the
// head dim lives in the registers of the 16 column groups (perf/dev/NOTES.md, eleventh session).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backends/portable/portable.hpp"

#define FC_PORTABLE_PRAGMA(x) _Pragma(#x)
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define FC_PORTABLE_UNROLL _Pragma("unroll")
#define FC_PORTABLE_UNROLL_BY(n) FC_PORTABLE_PRAGMA(unroll n)  // n: an integral constant expression
#else
#define FC_PORTABLE_UNROLL
#define FC_PORTABLE_UNROLL_BY(n)
#endif

namespace flashcore::portable::team {

constexpr int kThreads = 128, kRowGroups = 8, kColGroups = 16;
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;
constexpr int RM = 8;                     // rows per thread
constexpr int KS = 4;                     // keys per thread in S
constexpr int BM = kRowGroups * RM;       // 64 query rows a block
constexpr int BN = kColGroups * KS;       // 64 keys a tile
constexpr int DK = 16;                    // head dims per Q/K slice
constexpr int TS = BM + 4;                // row stride of qt, kt, pt: 16-byte aligned, and
                                          // 4·TS mod 32 = 16 spreads the staging stores
constexpr int kSlice = 2 * DK * BM;       // elements of a slice (Q and K, or V): 2048
constexpr int kPerThread = kSlice / kThreads;  // 16
constexpr int kBuffer = 2 * DK * TS;      // floats of one staging buffer (qt + kt, or vt); two of them
constexpr int RS = kColGroups + 4;        // row stride of the per-row partials

static_assert(BN == BM, "qt and kt share the stride TS");

/// Head dims per thread in O (CO) for a head dim: dp = 16·CO, so D is padded to 64, 128 or 256.
KOKKOS_INLINE_FUNCTION constexpr int co_for(int head_dim) { return head_dim <= 64 ? 4 : head_dim <= 128 ? 8 : 16; }
/// Keys per V slice at dp = 16·CO: a slice has kSlice elements (32, 16 or 8 keys).
KOKKOS_INLINE_FUNCTION constexpr int vk_for(int co) { return kSlice / (16 * co); }

/// A stored element as fp32 (In::load). fp16: on an NVIDIA GPU the conversion instruction (cvt.f32.f16,
/// exact for every value), elsewhere without a branch on the exponent. The software form costs ~7
/// instructions and 2 temporaries an element, 16 elements a slice and thread: at D = 128 about 1100
/// instructions a tile against the thread's 8192 FMAs, and ptxas spilled 856 bytes at F16 against 316 at
/// BF16 (perf/dev/NOTES.md, thirty-first session).
template <class In>
KOKKOS_FORCEINLINE_FUNCTION float to_float(typename In::storage x) {
  if constexpr (std::is_same<In, numeric::F16Elem>::value) {
#if defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
    return f;
#else
    return numeric::half_to_float_branchless(x);
#endif
  } else {
    return In::load(&x, 0);
  }
}

/// O's element i = x (Out::store). fp16 on an NVIDIA GPU: the conversion instruction (cvt.rn.f16.f32, round
/// to nearest even, as numeric::float_to_half); its software form with the subnormal branch was ~30
/// instructions an element, 64 elements a thread at D = 128.
template <class Out>
KOKKOS_FORCEINLINE_FUNCTION void store_out(typename Out::storage* p, std::int64_t i, float x) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same<Out, numeric::F16Elem>::value) {
    std::uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    p[i] = h;
    return;
  }
#endif
  Out::store(p, i, x);
}

/// 2^x for the softmax (x <= 0 or -inf). On an NVIDIA GPU the SFU instruction alone (ex2.approx.ftz: relative
/// error below 2^-22, results below 2^-126 flushed to 0, against a row sum >= 1); expf was ~8 instructions.
KOKKOS_FORCEINLINE_FUNCTION float exp2_approx(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return kc::exp2(x);
#endif
}

/// The row max of a tile through warp shuffles: on an NVIDIA GPU (CUDA lays a team's 128 threads out as
/// four warps, team rank = lane + 32·warp) the 16 column groups of a row group are half a warp, so four
/// xor-shuffles give each the max of the 16 without shared memory and without a barrier. Elsewhere
/// (host, other GPUs with other wave sizes) the shared-memory exchange.
#if defined(__CUDA_ARCH__)
constexpr bool kWarpMax = true;
KOKKOS_FORCEINLINE_FUNCTION float half_warp_max(float x) {
  static_assert(kColGroups == 16, "a row group is half a warp");
  for (int o = kColGroups / 2; o > 0; o /= 2) {
    const float y = __shfl_xor_sync(0xffffffffu, x, o);
    x = y > x ? y : x;
  }
  return x;
}
/// The lanes of a warp meet (a row group's 16 threads are half of one).
KOKKOS_FORCEINLINE_FUNCTION void sync_warp() { __syncwarp(); }
#else
constexpr bool kWarpMax = false;
KOKKOS_FORCEINLINE_FUNCTION float half_warp_max(float x) { return x; }
KOKKOS_FORCEINLINE_FUNCTION void sync_warp() {}
#endif

/// Whether the running max m of a row and a thread's partial sum l live in shared memory between tiles
/// (Kernel::kStats), for a head dim of 16·CO. Where the tile max goes through shuffles (kWarpMax),
/// `part` is free during the loop: l stays there as part[cg][row] and m in its own array, so that the
/// S and P·V loops, the kernel's hot code, hold 16 registers fewer. At D = 128 ptxas spilled 300 bytes
/// at the 168-register cap, and reloads of spilled addresses and counters drew ~15 % of the warp stall
/// samples; with m and l in shared memory (and the slice loads by 32-bit offsets) D = 128 took 0.91-0.96
/// of the time and D = 256 0.93-1.00, but fp32 D = 64 (CO = 4, spilling little) 1.03 (H200, run 32b;
/// perf/dev/NOTES.md, thirty-second session), so CO = 4 keeps them in registers. Elsewhere part carries
/// the tile max exchange, and m and l stay in registers.
KOKKOS_INLINE_FUNCTION constexpr bool stats_shared(int co) { return kWarpMax && co >= 8; }

/// Four floats, for 16-byte loads and stores of shared memory (addresses are multiples of 16).
struct alignas(16) F4 {
  float v[4];
};
KOKKOS_FORCEINLINE_FUNCTION F4 load4(const float* p) { return *reinterpret_cast<const F4*>(p); }
/// load4 from shared memory by `ld.shared` on an NVIDIA GPU (a 32-bit address; otherwise load4). Kokkos hands
/// the scratch out as a generic pointer, so plain loads compile to generic LD with 64-bit addresses, which
/// wait on the long scoreboard. The asm is volatile, not pure: it stays between the barriers and the stores
/// around it (CUTLASS reads shared memory the same way). Which kernels use it: Kernel::kLds.
KOKKOS_FORCEINLINE_FUNCTION F4 load4_shared(const float* p) {
#if defined(__CUDA_ARCH__)
  F4 x;
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(x.v[0]), "=f"(x.v[1]), "=f"(x.v[2]), "=f"(x.v[3]) : "r"(a));
  return x;
#else
  return load4(p);
#endif
}
KOKKOS_FORCEINLINE_FUNCTION void store4(float* p, const F4& x) { *reinterpret_cast<F4*>(p) = x; }

/// On an NVIDIA GPU of compute capability 8.0 or later, fp32 slices go from global memory to their place in
/// shared memory by `cp.async` (Kernel::kAsync): 4-byte copies (Q and K land transposed), a zero where the
/// source size is 0, no register holding an element in flight. copy4_async issues one copy (src must be a
/// valid address even when !in: nothing is read from it then); copies_commit closes the thread's group of
/// copies; copies_wait waits until they have landed (a barrier after it shows them to the team).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
constexpr bool kCopyAsync = true;
KOKKOS_FORCEINLINE_FUNCTION void copy4_async(float* dst, const void* src, bool in) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(d), "l"(src), "r"(in ? 4 : 0) : "memory");
}
KOKKOS_FORCEINLINE_FUNCTION void copies_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
KOKKOS_FORCEINLINE_FUNCTION void copies_wait() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
#else
constexpr bool kCopyAsync = false;
KOKKOS_FORCEINLINE_FUNCTION void copy4_async(float*, const void*, bool) {}
KOKKOS_FORCEINLINE_FUNCTION void copies_commit() {}
KOKKOS_FORCEINLINE_FUNCTION void copies_wait() {}
#endif

/// The kernel's scratch arrays, laid out by one list (Carve).
struct Arrays {
  float *stage, *pt, *part, *m;
  KOKKOS_INLINE_FUNCTION static Arrays carve(Carve& level0) {
    Arrays a;
    a.stage = level0.take<float>(2 * kBuffer);  // two buffers: qt[DK][TS] then kt[DK][TS]; or vt[VK][dp]
    a.pt = level0.take<float>(BN * TS);      // P transposed: pt[key][row]
    a.part = level0.take<float>(BM * RS);    // the tile max exchange part[row][cg] (!kWarpMax); l as part[cg][row]
    a.m = level0.take<float>(BM);            // each row's running max (Kernel::kStats)
    return a;
  }
};

/// Threads a team on ExecSpace: 128 on a GPU; 1 on the host, playing the 128 in turn.
template <class ExecSpace>
constexpr int team_threads() {
  return kc::is_host_space<ExecSpace>() ? 1 : kThreads;
}

/// The tiles of ExecSpace for a head dim: the arrays in level 0 on a GPU (shared memory), in
/// level 1 on the host (the same memory; level 0 is 32 KB there); bm = 0 when they do not fit.
template <class ExecSpace>
Tiles choose_tiles(int head_dim) {
  Tiles t;
  t.dp = 16 * co_for(head_dim);
  t.bm = BM, t.bn = BN;
  t.team_size = team_threads<ExecSpace>();
  Carve bytes;
  Arrays::carve(bytes);
  const int level = kc::is_host_space<ExecSpace>() ? 1 : 0;
  (level == 0 ? t.level0 : t.level1) = bytes.bytes();
  if (bytes.bytes() > static_cast<std::size_t>(Kokkos::TeamPolicy<ExecSpace>::scratch_size_max(level)))
    t.bm = t.bn = 0;
  return t;
}

/// What one (row group, column group) holds for the whole call.
template <int CO>
struct Thread {
  float o[RM][CO];  // O accumulators of its rows, head dims Kernel::o_dim(cg, 0 .. CO-1)
  float s[RM][KS];  // S (then P) of the current tile
  float m[RM];      // running max of each row's logits in the log2 domain (the same in the row group's 16
                    // threads); with Kernel::kStats in Arrays::m instead
  float l[RM];      // sum of p over the keys this thread scored, rescaled with m; with Kernel::kStats in part
};

template <class ExecSpace, class In, class Out, bool Variants, int CO>
struct Kernel {
  using S = typename In::storage;
  using member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr int VPT = kThreads / team_threads<ExecSpace>();  // team threads one thread plays
  static constexpr int DP = 16 * CO, VK = vk_for(CO), kQ = DP / DK;
  // The loops over a slice's head dims (S) and keys (P·V) are unrolled by this much, not fully: less
  // code (the instruction fetch stalled 0.62 cycles per issued instruction with full unrolling). H100,
  // perf/dev/NOTES.md: against full unrolling (thirtieth session), by 4 took 0.88-1.014 of the time at
  // D = 64/128, by 2 0.87-0.97 at D = 256; after the unchecked slice loads (thirty-first session), by 8
  // took 0.963-1.016 at D = 128 (10 of 12 rows faster) but up to 1.04 at D = 64, fully (16) 0.96-1.09.
  static constexpr int kSliceUnroll = CO >= 16 ? 2 : CO >= 8 ? 8 : 4;
  static constexpr bool kStats = stats_shared(CO);  // m and l in shared memory
  // 16-bit inputs travel as pairs of adjacent head dims, one pair a 32-bit register (kPair): 8 prefetch
  // registers and 8 loads a slice instead of 16 (P: what one prefetch register holds).
  static constexpr bool kPair = sizeof(S) == 2;
  static constexpr int kPre = kPair ? kPerThread / 2 : kPerThread;
  using P = typename std::conditional<kPair, std::uint32_t, S>::type;
  // fp32 inputs on sm_80+ go to shared memory by cp.async (kCopyAsync), not through registers: H200 (run 33a,
  // against loads to registers) 0.90-0.98 of the time on every fp32 row; ptxas spill stores at CO = 16/8/4
  // 196/160/136 -> 88/100/48 bytes. (VPT == 1: a GPU's team; nvcc's device pass also compiles the host
  // team kernel of team_on_host.cpp.)
  static constexpr bool kAsync = kCopyAsync && std::is_same<S, float>::value && VPT == 1;
  // Which kernels read shared memory by ld.shared (load4_shared): the 16-bit ones (H200 run 32h, against generic
  // loads: 0.89-0.905 of the time at D = 64, 0.85-0.86 at D = 256, 0.99-1.01 at D = 128) and the cp.async fp32
  // one at D <= 64 (run 33a: 0.914-0.926 of the time against 0.964-0.976 without; spills 48 -> 4 bytes). At
  // CO = 8/16 the fp32 kernels spill 412/244 bytes with it (100/88 without), so they keep generic loads.
  static constexpr bool kLds = kWarpMax && (kPair || (kAsync && CO <= 4));
  KOKKOS_FORCEINLINE_FUNCTION static F4 ld4(const float* p) {
    if constexpr (kLds)
      return load4_shared(p);
    else
      return load4(p);
  }
  /// The head dim of column group cg's c-th O accumulator. At D = 256: runs of 4 head dims, 64 apart (4·cg ..
  /// 4·cg+3, then 64 + 4·cg ..), so that the 16 column groups of a row group read 16 adjacent four-float runs of
  /// a V row, all 32 banks; with 16 adjacent head dims a thread (16·cg ..) their V loads hit 8 banks (4-way
  /// conflicts: Nsight Compute, run 33n, counted 410M shared-load bank conflicts at fp32 D = 256, 0.45M at
  /// D = 64). H200 runs 33d/33e: D = 256 0.836-0.856 of the time non-causal, 0.83-0.88 causal (on top of the
  /// longest-first order). Elsewhere CO adjacent head dims: at D = 128 (2-way conflicts) the runs of 4 took
  /// 1.01-1.08 of the time (more spills), and at D = 64 the two maps are the same.
  KOKKOS_FORCEINLINE_FUNCTION static constexpr int o_dim(int cg, int c) {
    return CO >= 16 ? (c / 4) * (4 * kColGroups) + 4 * cg + c % 4 : cg * CO + c;
  }
  Args<S, typename Out::storage> a;

  /// One slice of the pipeline: the k-th Q/K slice (v = false) or V slice of the tile at j0.
  struct Slice {
    int j0, k;
    bool v;
  };
  /// V slices of the tile at j0: those with a key before the block's last (the rest are zero).
  KOKKOS_FORCEINLINE_FUNCTION static int v_slices(const Block& blk, int j0) {
    const int n = blk.kmax - j0 < BN ? blk.kmax - j0 : BN;
    return (n + VK - 1) / VK;
  }
  /// The slice after s (j0 >= kmax: none).
  KOKKOS_FORCEINLINE_FUNCTION static Slice next(const Block& blk, const Slice& s) {
    if (!s.v) return s.k + 1 < kQ ? Slice{s.j0, s.k + 1, false} : Slice{s.j0, 0, true};
    if (s.k + 1 < v_slices(blk, s.j0)) return Slice{s.j0, s.k + 1, true};
    return Slice{s.j0 + BN, 0, false};
  }

  /// The block that team r of n computes, as the league rank Block::of reads (query block fastest, then head,
  /// then batch entry). Causal on a GPU: the query blocks with the most keys first, every head's last block
  /// before any head's second last, so that the block scheduler fills the last wave with the short ones (the
  /// longest-first rule). The host keeps the order: its threads take contiguous chunks of the league.
  KOKKOS_INLINE_FUNCTION int block_rank(int r, int n) const {
    if (kc::is_host_space<ExecSpace>() || !a.causal) return r;
    const int heads = n / a.n_qblocks;  // (batch entry, head) pairs
    return (a.n_qblocks - 1 - r / heads) + a.n_qblocks * (r % heads);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const Block blk = Block::of(a, block_rank(team.league_rank(), team.league_size()));
    const float scale_log2 = a.scale * kLog2e;  // scores -> logits in the log2 domain (the softmax's exp2)
    if (blk.rows <= 0) return;  // a block past its sequence
    void* base = a.tiles.level0 > 0 ? team.team_scratch(0).get_shmem(a.tiles.level0)
                                     : team.team_scratch(1).get_shmem(a.tiles.level1);
    if (base == nullptr) Kokkos::abort("flashcore portable team kernel: the team scratch is smaller than the plan asked for");
    Carve l0(base);
    const Arrays sh = Arrays::carve(l0);
    const int t0 = team.team_rank() * VPT;

    Thread<CO> th[VPT];
    P pre[VPT][kPre];  // the next slice as stored, loaded while this one is used (converted
                       // when put: a conversion right after the load would wait for it)
    for (int v = 0; v < VPT; ++v) {
      const int rg = (t0 + v) / kColGroups, cg = (t0 + v) % kColGroups;
      FC_PORTABLE_UNROLL
      for (int r = 0; r < RM; ++r) {
        if constexpr (kStats) {
          sh.part[cg * BM + rg * RM + r] = 0.f;
          if (cg == 0) sh.m[rg * RM + r] = kc::neg_inf<float>();  // read after the next barrier
        } else {
          th[v].m[r] = kc::neg_inf<float>(), th[v].l[r] = 0.f;
        }
        FC_PORTABLE_UNROLL
        for (int c = 0; c < CO; ++c) th[v].o[r][c] = 0.f;
      }
    }

    // The pipeline: slice after slice (a tile's Q/K slices, then its V slices) through two
    // buffers; while one is used, the next slice's loads are in flight. One barrier a slice.
    const Rows rw = rows_of(blk);
    Slice cur{blk.kmin, 0, false};
    int b = 0;  // the buffer that holds cur
    if (blk.kmin < blk.kmax) {
      fetch(rw, blk, cur, t0, pre, sh.stage);
      put(cur, t0, pre, sh.stage);
      team.team_barrier();
    }
    for (int j0 = blk.kmin; j0 < blk.kmax; j0 += BN) {
      // S = 0 for the tile.
      for (int v = 0; v < VPT; ++v) {
        FC_PORTABLE_UNROLL
        for (int r = 0; r < RM; ++r) {
          FC_PORTABLE_UNROLL
          for (int w = 0; w < KS; ++w) th[v].s[r][w] = 0.f;
        }
      }
      // 1. S += Q·Kᵀ over the DK head dims of a Q/K slice.
      auto qk = [&](const float* buf) {
        for (int v = 0; v < VPT; ++v) {
          const int rg = (t0 + v) / kColGroups, cg = (t0 + v) % kColGroups;
          const float* qt = buf + rg * RM;
          const float* kt = buf + DK * TS + cg * KS;
          float(&s)[RM][KS] = th[v].s;
          FC_PORTABLE_UNROLL_BY(kSliceUnroll)
          for (int d = 0; d < DK; ++d) {
            const F4 q0 = ld4(qt + d * TS), q1 = ld4(qt + d * TS + 4), kk = ld4(kt + d * TS);
            FC_PORTABLE_UNROLL
            for (int w = 0; w < KS; ++w) {
              FC_PORTABLE_UNROLL
              for (int r = 0; r < 4; ++r) {
                s[r][w] += q0.v[r] * kk.v[w];
                s[r + 4][w] += q1.v[r] * kk.v[w];
              }
            }
          }
        }
      };
      // 2. The softmax of S: logits, mask, the rows' max and sums, O rescaled, P -> pt.
      auto softmax = [&] {
        // Logits, mask, each thread's max of its 4 keys per row -> the row group's max (tile_max) or part.
        float tile_max[VPT][RM];
        const bool whole = j0 >= blk.free_begin && j0 + BN <= blk.free_end;  // every row sees every key
        for (int v = 0; v < VPT; ++v) {
          const int rg = (t0 + v) / kColGroups, cg = (t0 + v) % kColGroups;
          FC_PORTABLE_UNROLL
          for (int r = 0; r < RM; ++r) {
            const int i = rg * RM + r;
            float(&s)[KS] = th[v].s[r];
            int lo = 0, hi = KS;  // the thread's keys row i sees
            if (!whole) {
              const numeric::KeyRange kr = i < blk.rows ? blk.keys(a, i) : numeric::KeyRange{0, 0};
              lo = kr.begin - (j0 + cg * KS), hi = kr.end - (j0 + cg * KS);
            }
            float mx = kc::neg_inf<float>();
            FC_PORTABLE_UNROLL
            for (int w = 0; w < KS; ++w) {
              float x;  // the logit in the log2 domain
              if constexpr (Variants)
                x = a.logit(blk.h, blk.i0 + i, blk.len_q, blk.len_k)(s[w], j0 + cg * KS + w) * kLog2e;
              else
                x = s[w] * scale_log2;
              s[w] = w >= lo && w < hi ? x : kc::neg_inf<float>();
              mx = s[w] > mx ? s[w] : mx;
            }
            if constexpr (kWarpMax) {
              tile_max[v][r] = half_warp_max(mx);
            } else {
              sh.part[i * RS + cg] = mx;
            }
          }
        }
        if constexpr (!kWarpMax) team.team_barrier();

        // The row's new max; p, c, the rescaled o and l; P -> pt.
        for (int v = 0; v < VPT; ++v) {
          const int rg = (t0 + v) / kColGroups, cg = (t0 + v) % kColGroups;
          Thread<CO>& tv = th[v];
          float* const m_sh = sh.m + rg * RM;              // (kStats)
          float* const l_sh = sh.part + cg * BM + rg * RM;  // (kStats)
          if constexpr (kStats) {
            const F4 m0 = ld4(m_sh), m1 = ld4(m_sh + 4), l0 = ld4(l_sh), l1 = ld4(l_sh + 4);
            FC_PORTABLE_UNROLL
            for (int r = 0; r < 4; ++r) {
              tv.m[r] = m0.v[r], tv.m[r + 4] = m1.v[r];
              tv.l[r] = l0.v[r], tv.l[r + 4] = l1.v[r];
            }
          }
          FC_PORTABLE_UNROLL
          for (int r = 0; r < RM; ++r) {
            const int i = rg * RM + r;
            float mx = tv.m[r];
            if constexpr (kWarpMax) {
              mx = tile_max[v][r] > mx ? tile_max[v][r] : mx;
            } else {
              FC_PORTABLE_UNROLL
              for (int g = 0; g < kColGroups; g += 4) {
                const F4 x = ld4(sh.part + i * RS + g);
                FC_PORTABLE_UNROLL
                for (int e = 0; e < 4; ++e) mx = x.v[e] > mx ? x.v[e] : mx;
              }
            }
            const float mu = mx == kc::neg_inf<float>() ? 0.f : mx;  // no key seen yet: p = 0
            const float c = exp2_approx(tv.m[r] - mu);
            tv.m[r] = mx;
            float sum = 0.f;
            FC_PORTABLE_UNROLL
            for (int w = 0; w < KS; ++w) {
              tv.s[r][w] = exp2_approx(tv.s[r][w] - mu);
              sum += tv.s[r][w];
            }
            tv.l[r] = tv.l[r] * c + sum;
            FC_PORTABLE_UNROLL
            for (int e = 0; e < CO; ++e) tv.o[r][e] *= c;
          }
          if constexpr (kStats) {
            store4(l_sh, F4{{tv.l[0], tv.l[1], tv.l[2], tv.l[3]}});
            store4(l_sh + 4, F4{{tv.l[4], tv.l[5], tv.l[6], tv.l[7]}});
            sync_warp();  // the row group's 16 threads have read the old m (all hold the same new one)
            if (cg == 0) {
              store4(m_sh, F4{{tv.m[0], tv.m[1], tv.m[2], tv.m[3]}});
              store4(m_sh + 4, F4{{tv.m[4], tv.m[5], tv.m[6], tv.m[7]}});
            }
          }
          FC_PORTABLE_UNROLL
          for (int w = 0; w < KS; ++w) {
            float* dst = sh.pt + (cg * KS + w) * TS + rg * RM;
            store4(dst, F4{{tv.s[0][w], tv.s[1][w], tv.s[2][w], tv.s[3][w]}});
            store4(dst + 4, F4{{tv.s[4][w], tv.s[5][w], tv.s[6][w], tv.s[7][w]}});
          }
        }
        team.team_barrier();  // pt written (the first V slice is in its buffer already)
      };
      // 3. o += P·V over the VK keys of V slice kv (none past the block's last key).
      auto pv = [&](const float* buf, int kv) {
        for (int v = 0; v < VPT; ++v) {
          const int rg = (t0 + v) / kColGroups, cg = (t0 + v) % kColGroups;
          const float* pt = sh.pt + kv * VK * TS + rg * RM;
          const float* vt = buf + o_dim(cg, 0);
          float(&o)[RM][CO] = th[v].o;
          FC_PORTABLE_UNROLL_BY(kSliceUnroll)
          for (int jj = 0; jj < VK; ++jj) {
            const F4 p0 = ld4(pt + jj * TS), p1 = ld4(pt + jj * TS + 4);
            FC_PORTABLE_UNROLL
            for (int e = 0; e < CO; e += 4) {
              const F4 x = ld4(vt + jj * DP + o_dim(0, e));
              FC_PORTABLE_UNROLL
              for (int f = 0; f < 4; ++f) {
                FC_PORTABLE_UNROLL
                for (int r = 0; r < 4; ++r) {
                  o[r][e + f] += p0.v[r] * x.v[f];
                  o[r + 4][e + f] += p1.v[r] * x.v[f];
                }
              }
            }
          }
        }
      };
      const int nv = v_slices(blk, j0);
      if constexpr (CO <= 4) {
        // One step() for all the tile's slices (one copy of fetch/put in the code): at D <= 64 the
        // kernel is then smaller with fewer spills (stack 160 -> 80 bytes) and 5-17 % faster (H100,
        // perf/dev/NOTES.md 2026-11-27); at D = 128/256 the same made ptxas spill more (248 -> 384
        // bytes) and run 1.35-1.96x slower, so those keep a step() for each kind of slice.
        for (int k = 0; k < kQ + nv; ++k) {
          if (k == kQ) softmax();
          step(team, rw, blk, sh, t0, pre, cur, b, [&](const float* buf) {
            if (k < kQ)
              qk(buf);
            else
              pv(buf, k - kQ);
          });
        }
      } else {
        for (int k = 0; k < kQ; ++k) step(team, rw, blk, sh, t0, pre, cur, b, qk);
        softmax();
        for (int k = 0; k < nv; ++k) step(team, rw, blk, sh, t0, pre, cur, b, [&](const float* buf) { pv(buf, k); });
      }
    }

    // The row's sum over the 16 column groups; the sink; O and LSE.
    if constexpr (!kStats) {  // (the last max exchange was read before softmax()'s closing barrier)
      for (int v = 0; v < VPT; ++v) {
        const int rg = (t0 + v) / kColGroups, cg = (t0 + v) % kColGroups;
        FC_PORTABLE_UNROLL
        for (int r = 0; r < RM; ++r) sh.part[cg * BM + rg * RM + r] = th[v].l[r];
      }
    }
    team.team_barrier();
    const std::int64_t o_off = blk.h * a.so.head;
    for (int v = 0; v < VPT; ++v) {
      const int rg = (t0 + v) / kColGroups, cg = (t0 + v) % kColGroups;
      FC_PORTABLE_UNROLL
      for (int r = 0; r < RM; ++r) {
        const int i = rg * RM + r;
        if (i >= blk.rows) continue;
        float l = 0.f;
        for (int g = 0; g < kColGroups; ++g) l += sh.part[g * BM + i];
        const float m = kStats ? sh.m[i] : th[v].m[r];
        const RowEnd e = RowEnd::of(m * kLn2, l, a.sinks, blk.h, a.o_scale);  // m: log2 domain
        if (cg == 0 && a.lse != nullptr) a.lse[a.seqs.lse_index(blk.b, blk.h, blk.i0 + i, a.heads_q)] = e.lse;
        const std::int64_t row = a.seqs.q_row(a.so, blk.b, blk.i0 + i) + o_off;
        FC_PORTABLE_UNROLL
        for (int c = 0; c < CO; ++c) {
          const int d = o_dim(cg, c);
          if (d < a.head_dim) store_out<Out>(a.o, row + d, th[v].o[r][c] * e.factor);
        }
      }
    }
  }

  // Element e of team thread t in a slice. In a Q/K slice, the first 8 are Q, the last 8 K: head
  // dim qk_dim(t) of rows qk_row(t) + 8·(e % 8); a warp reads 4 rows x 8 head dims (32-byte runs)
  // and its stores to qt[d][row] / kt[d][key] hit 32 different banks (d·TS + row, TS = 68). In a
  // V slice element x = t + 128·e is key x / DP, head dim x % DP: as stored.
  KOKKOS_FORCEINLINE_FUNCTION static int qk_dim(int t) { return t % 8 + 8 * (t / 32 % 2); }
  KOKKOS_FORCEINLINE_FUNCTION static int qk_row(int t) { return t / 8 % 4 + 4 * (t / 64); }
  /// Where team thread t's Q elements of a Q/K slice go in buffer buf (qt[qk_dim][qk_row + 8·e]; its K
  /// elements DK·TS further, in kt); a V slice's element e goes to buf[t + 128·e].
  KOKKOS_FORCEINLINE_FUNCTION static float* qk_dst(int t, float* buf) { return buf + qk_dim(t) * TS + qk_row(t); }

  /// Where a block's rows start: Q at its first row, K and V at key 0 (null when K/V are paged:
  /// each key is looked up), and their row strides.
  struct Rows {
    const S *q, *k, *v;
    std::int64_t sq, sk, sv;
    bool narrow;  // 64 rows of each fit a 32-bit offset: the whole-slice loads index by int
    bool pairs;   // (16-bit inputs) the rows start on 4 bytes and the strides are even: pairs load as one
  };
  KOKKOS_INLINE_FUNCTION Rows rows_of(const Block& blk) const {
    const bool paged = a.seqs.block_table != nullptr;
    constexpr std::int64_t kNarrow = (std::int64_t{1} << 31) / BM;
    Rows r{a.q + blk.h * a.sq.head + a.seqs.q_row(a.sq, blk.b, blk.i0),
           paged ? nullptr : a.k + blk.hk * a.sk.head + a.seqs.kv_row(a.sk, blk.b, 0),
           paged ? nullptr : a.v + blk.hk * a.sv.head + a.seqs.kv_row(a.sv, blk.b, 0),
           a.sq.seq, a.sk.seq, a.sv.seq,
           a.sq.seq < kNarrow && a.sk.seq < kNarrow && a.sv.seq < kNarrow, false};
    r.pairs = ((reinterpret_cast<std::uintptr_t>(r.q) | reinterpret_cast<std::uintptr_t>(r.k) |
                reinterpret_cast<std::uintptr_t>(r.v)) % 4 == 0) &&
              (r.sq | r.sk | r.sv) % 2 == 0;
    return r;
  }
  /// Whether the V slice from key key0, or the Q/K slice s, is whole: contiguous K/V (not paged), every key
  /// before the block's last, every row of Q in the block, every head dim below D (every slice but a block's
  /// last tile's, its last rows' and a head dim below 64/128/256's); rows that load by 32-bit offsets, and
  /// for 16-bit inputs by pairs.
  KOKKOS_FORCEINLINE_FUNCTION bool whole_v_slice(const Rows& rw, const Block& blk, int key0) const {
    return rw.v != nullptr && rw.narrow && (!kPair || rw.pairs) && key0 + VK <= blk.kmax && a.head_dim == DP;
  }
  KOKKOS_FORCEINLINE_FUNCTION bool whole_qk_slice(const Rows& rw, const Block& blk, const Slice& s) const {
    return rw.k != nullptr && rw.narrow && (!kPair || rw.pairs) && blk.rows == BM && s.j0 + BN <= blk.kmax &&
           (s.k + 1) * DK <= a.head_dim;
  }
  /// Where a thread's loads of a whole Q/K slice start (Q row r0 and K row j0 + r0 of the block, head dim d), and
  /// the rows' strides as int (Rows::narrow). The element and the pair maps step from here by 8 or 16 rows.
  struct SliceStart {
    const S *q, *k;
    int sq, sk;
  };
  KOKKOS_FORCEINLINE_FUNCTION static SliceStart slice_start(const Rows& rw, const Slice& s, int r0, int d) {
    return {rw.q + r0 * rw.sq + d, rw.k + (s.j0 + r0) * rw.sk + d, static_cast<int>(rw.sq), static_cast<int>(rw.sk)};
  }
  /// Where head dim d of a key's K (V) row is: contiguous or looked up in the block table.
  KOKKOS_FORCEINLINE_FUNCTION const S* k_at(const Rows& rw, const Block& blk, int key, int d) const {
    return rw.k != nullptr ? rw.k + key * rw.sk + d : a.k + blk.hk * a.sk.head + a.seqs.kv_row(a.sk, blk.b, key) + d;
  }
  KOKKOS_FORCEINLINE_FUNCTION const S* v_at(const Rows& rw, const Block& blk, int key, int d) const {
    return rw.v != nullptr ? rw.v + key * rw.sv + d : a.v + blk.hk * a.sv.head + a.seqs.kv_row(a.sv, blk.b, key) + d;
  }
  KOKKOS_FORCEINLINE_FUNCTION S load_k(const Rows& rw, const Block& blk, int key, int d) const { return *k_at(rw, blk, key, d); }
  KOKKOS_FORCEINLINE_FUNCTION S load_v(const Rows& rw, const Block& blk, int key, int d) const { return *v_at(rw, blk, key, d); }

  /// The slice's elements of team threads t0 .. t0+VPT-1 on their way to buffer buf, as stored (0 past the rows,
  /// the block's keys or D): in pre (nothing here waits for them), or by cp.async straight to buf (kAsync).
  KOKKOS_FORCEINLINE_FUNCTION void fetch(const Rows& rw, const Block& blk, const Slice& s, int t0,
                                         P (&pre)[VPT][kPre], float* buf) const {
    if (s.j0 >= blk.kmax) return;
    if constexpr (kAsync) {
      each_single(rw, blk, s, t0, buf, [](int, float* dst, const S* src, bool in) { copy4_async(dst, src, in); });
      copies_commit();
    } else if constexpr (kPair) {
      fetch_pairs(rw, blk, s, t0, pre);
    } else {
      for (int v = 0; v < VPT; ++v)
        each_single(rw, blk, s, t0 + v, buf, [&](int e, float*, const S* src, bool in) { pre[v][e] = in ? *src : S(0); });
    }
  }
  /// take(e, dst, src, in) for each element e of team thread t in slice s, dst its place in buffer buf: in, it
  /// is *src; else 0 (src is then a valid address that is not read).
  template <class Take>
  KOKKOS_FORCEINLINE_FUNCTION void each_single(const Rows& rw, const Block& blk, const Slice& s, int t, float* buf,
                                               const Take& take) const {
    constexpr int kHalf = kPerThread / 2;
    // Whole slices: no bounds and no page lookup per element, one pointer and one stride, int offsets (16 loads
    // cost ~2 instructions each, against ~4.4 in 64 bits). The checked loops cost ~12 instructions an element,
    // a third of a slice's arithmetic at D = 64.
    if (s.v) {
      const int key0 = s.j0 + s.k * VK;
      if (whole_v_slice(rw, blk, key0)) {
        const int sv = static_cast<int>(rw.sv);
        if constexpr (DP <= kThreads) {
          const S* p = rw.v + (key0 + t / DP) * rw.sv + t % DP;
          const int step = (kThreads / DP) * sv;
          FC_PORTABLE_UNROLL
          for (int e = 0; e < kPerThread; ++e) take(e, buf + t + kThreads * e, p + e * step, true);
        } else {
          constexpr int kRowParts = DP / kThreads;  // elements of one key a thread takes
          const S* p = rw.v + key0 * rw.sv + t;
          FC_PORTABLE_UNROLL
          for (int e = 0; e < kPerThread; ++e)
            take(e, buf + t + kThreads * e, p + (e / kRowParts) * sv + (e % kRowParts) * kThreads, true);
        }
      } else {
        FC_PORTABLE_UNROLL
        for (int e = 0; e < kPerThread; ++e) {
          const int x = t + kThreads * e, key = key0 + x / DP, d = x % DP;
          const bool in = key < blk.kmax && d < a.head_dim;
          take(e, buf + x, in ? v_at(rw, blk, key, d) : a.v, in);
        }
      }
      return;
    }
    const int d = s.k * DK + qk_dim(t), r0 = qk_row(t);
    float* const qt = qk_dst(t, buf);
    if (whole_qk_slice(rw, blk, s)) {
      const SliceStart w = slice_start(rw, s, r0, d);
      FC_PORTABLE_UNROLL
      for (int e = 0; e < kHalf; ++e) {
        take(e, qt + 8 * e, w.q + 8 * e * w.sq, true);
        take(kHalf + e, qt + DK * TS + 8 * e, w.k + 8 * e * w.sk, true);
      }
    } else {
      const bool in_d = d < a.head_dim;
      FC_PORTABLE_UNROLL
      for (int e = 0; e < kHalf; ++e) {
        const int row = r0 + 8 * e, key = s.j0 + row;
        const bool qin = in_d && row < blk.rows, kin = in_d && key < blk.kmax;
        take(e, qt + 8 * e, qin ? rw.q + row * rw.sq + d : a.q, qin);
        take(kHalf + e, qt + DK * TS + 8 * e, kin ? k_at(rw, blk, key, d) : a.k, kin);
      }
    }
  }

  /// pre -> the buffer as fp32, in the slice's layout (a stored zero is +0 in every dtype); with kAsync, the
  /// thread's copies land.
  KOKKOS_FORCEINLINE_FUNCTION static void put(const Slice& s, int t0, const P (&pre)[VPT][kPre], float* buf) {
    if constexpr (kAsync) {
      copies_wait();
    } else if constexpr (kPair) {
      put_pairs(s, t0, pre, buf);
    } else {
      constexpr int kHalf = kPerThread / 2;
      for (int v = 0; v < VPT; ++v) {
        const int t = t0 + v;
        if (s.v) {
          FC_PORTABLE_UNROLL
          for (int e = 0; e < kPerThread; ++e) buf[t + kThreads * e] = to_float<In>(pre[v][e]);
        } else {
          float* qt = qk_dst(t, buf);
          FC_PORTABLE_UNROLL
          for (int e = 0; e < kHalf; ++e) {
            qt[8 * e] = to_float<In>(pre[v][e]);
            qt[DK * TS + 8 * e] = to_float<In>(pre[v][kHalf + e]);
          }
        }
      }
    }
  }

  // Pair e of team thread t (kPair). In a Q/K slice the first 4 are Q, the last 4 K: head dims 2·qk_pair(t)
  // and the next of rows qk_prow(t) + 16·(e % 4); a warp reads 4 rows x 16 head dims (32-byte runs). In a
  // V slice pair e holds elements x, x + 1 with x = 2·(t + 128·e): key x / DP, head dims x % DP and the next.
  KOKKOS_FORCEINLINE_FUNCTION static int qk_pair(int t) { return t % 8; }
  KOKKOS_FORCEINLINE_FUNCTION static int qk_prow(int t) { return t / 8; }

  /// fetch() for 16-bit inputs: two adjacent head dims a load (a pair of zeros past the rows, the block's
  /// keys or D; one zero past D in a pair that D splits).
  KOKKOS_FORCEINLINE_FUNCTION void fetch_pairs(const Rows& rw, const Block& blk, const Slice& s, int t0,
                                               std::uint32_t (&pre)[VPT][kPre]) const {
    constexpr int kHalf = kPre / 2;
    auto pack = [](S lo, S hi) { return static_cast<std::uint32_t>(lo) | static_cast<std::uint32_t>(hi) << 16; };
    auto pair_at = [](const S* p) {  // p: 4-byte aligned (Rows::pairs)
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
      return *reinterpret_cast<const std::uint32_t*>(p);
#else
      std::uint32_t x;
      std::memcpy(&x, p, sizeof x);  // (no aliasing of uint16_t storage through a uint32_t*)
      return x;
#endif
    };
    for (int v = 0; v < VPT; ++v) {
      const int t = t0 + v;
      if (s.v) {
        const int key0 = s.j0 + s.k * VK;
        // (DP <= 256: 2·t / DP is the key in a run of 256 elements, 256 / DP keys a run)
        if (whole_v_slice(rw, blk, key0)) {
          const S* p = rw.v + (key0 + 2 * t / DP) * rw.sv + 2 * t % DP;
          const int step = (2 * kThreads / DP) * static_cast<int>(rw.sv);
          FC_PORTABLE_UNROLL
          for (int e = 0; e < kPre; ++e) pre[v][e] = pair_at(p + e * step);
        } else {
          FC_PORTABLE_UNROLL
          for (int e = 0; e < kPre; ++e) {
            const int x = 2 * (t + kThreads * e), key = key0 + x / DP, d = x % DP;
            const bool in = key < blk.kmax;
            pre[v][e] = pack(in && d < a.head_dim ? load_v(rw, blk, key, d) : S(0),
                             in && d + 1 < a.head_dim ? load_v(rw, blk, key, d + 1) : S(0));
          }
        }
      } else {
        const int d = s.k * DK + 2 * qk_pair(t), r0 = qk_prow(t);
        if (whole_qk_slice(rw, blk, s)) {
          const SliceStart w = slice_start(rw, s, r0, d);
          FC_PORTABLE_UNROLL
          for (int e = 0; e < kHalf; ++e) {
            pre[v][e] = pair_at(w.q + 16 * e * w.sq);
            pre[v][kHalf + e] = pair_at(w.k + 16 * e * w.sk);
          }
        } else {
          FC_PORTABLE_UNROLL
          for (int e = 0; e < kHalf; ++e) {
            const int row = r0 + 16 * e, key = s.j0 + row;
            const bool qin = row < blk.rows, kin = key < blk.kmax;
            pre[v][e] = pack(qin && d < a.head_dim ? rw.q[row * rw.sq + d] : S(0),
                             qin && d + 1 < a.head_dim ? rw.q[row * rw.sq + d + 1] : S(0));
            pre[v][kHalf + e] = pack(kin && d < a.head_dim ? load_k(rw, blk, key, d) : S(0),
                                     kin && d + 1 < a.head_dim ? load_k(rw, blk, key, d + 1) : S(0));
          }
        }
      }
    }
  }

  /// put() for 16-bit inputs. A V pair is one 8-byte store. A Q/K pair goes to two rows of qt (kt), 2·dp and
  /// 2·dp + 1: the pairs dp < 4 store their first element first and the others their second, so that each of
  /// the two stores of a warp hits 32 different banks (bank 4·d + row mod 32, TS = 68).
  KOKKOS_FORCEINLINE_FUNCTION static void put_pairs(const Slice& s, int t0, const std::uint32_t (&pre)[VPT][kPre],
                                                    float* buf) {
    constexpr int kHalf = kPre / 2;
    auto lo = [](std::uint32_t x) { return to_float<In>(static_cast<S>(x & 0xffffu)); };
    auto hi = [](std::uint32_t x) { return to_float<In>(static_cast<S>(x >> 16)); };
    for (int v = 0; v < VPT; ++v) {
      const int t = t0 + v;
      if (s.v) {
        FC_PORTABLE_UNROLL
        for (int e = 0; e < kPre; ++e) {
          float* dst = buf + 2 * (t + kThreads * e);
          dst[0] = lo(pre[v][e]);
          dst[1] = hi(pre[v][e]);
        }
      } else {
        const int dp = qk_pair(t);
        const bool swap = dp >= 4;
        float* first = buf + (2 * dp + (swap ? 1 : 0)) * TS + qk_prow(t);
        float* second = buf + (2 * dp + (swap ? 0 : 1)) * TS + qk_prow(t);
        FC_PORTABLE_UNROLL
        for (int e = 0; e < kPre; ++e) {
          const int off = (e < kHalf ? 0 : DK * TS) + 16 * (e % kHalf);
          const float a0 = lo(pre[v][e]), a1 = hi(pre[v][e]);
          first[off] = swap ? a1 : a0;
          second[off] = swap ? a0 : a1;
        }
      }
    }
  }

  /// One step of the pipeline: the slice after cur is fetched (its loads in flight), use() reads
  /// cur's buffer, the fetched slice is put in the other buffer, one barrier; cur moves on.
  template <class Use>
  KOKKOS_FORCEINLINE_FUNCTION void step(const member& team, const Rows& rw, const Block& blk, const Arrays& sh, int t0,
                                        P (&pre)[VPT][kPre], Slice& cur, int& b, const Use& use) const {
    const Slice nxt = next(blk, cur);
    float* const other = sh.stage + (1 - b) * kBuffer;  // free: the last step's use() read it before its barrier
    fetch(rw, blk, nxt, t0, pre, other);
    use(sh.stage + b * kBuffer);
    put(nxt, t0, pre, other);
    team.team_barrier();
    b = 1 - b, cur = nxt;
  }
};

/// Calls f(std::integral_constant<int, CO>) for the tiles' dp.
template <class F>
void with_co(int dp, const F& f) {
  switch (dp / 16) {
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 8: f(std::integral_constant<int, 8>{}); break;
    default: f(std::integral_constant<int, 16>{}); break;
  }
}

/// Enqueues the team kernel for p on exec with tiles t (choose_tiles<ExecSpace>).
template <class ExecSpace>
void launch(const ExecSpace& exec, const Problem& p, const Tensors& tn, const Tiles& t) {
  dispatch(p, tn, [&](auto in_tag, auto out_tag, auto variants_tag) {
    with_co(t.dp, [&](auto co_tag) {
      using In = decltype(in_tag);
      using Out = decltype(out_tag);
      constexpr bool kVariants = decltype(variants_tag)::value;
      constexpr int CO = decltype(co_tag)::value;
      const Kernel<ExecSpace, In, Out, kVariants, CO> f{
          make_args<typename In::storage, typename Out::storage>(p, tn, t)};
      // 128 threads a team on a GPU, at least 2 teams an SM (3 up to D = 128: <= 170 registers).
      using Bounds = Kokkos::LaunchBounds<kThreads, CO >= 16 ? 2 : 3>;
      Kokkos::TeamPolicy<ExecSpace, Bounds> policy(exec, p.batch * p.heads_q * f.a.n_qblocks, t.team_size);
      if (t.level0 > 0) policy.set_scratch_size(0, Kokkos::PerTeam(t.level0));
      if (t.level1 > 0) policy.set_scratch_size(1, Kokkos::PerTeam(t.level1));
      Kokkos::parallel_for(label("team", p, kVariants, t), policy, f);
    });
  });
}

}  // namespace flashcore::portable::team
