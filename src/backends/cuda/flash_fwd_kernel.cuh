// FlashCore forward attention kernel (sm_80+; also runs on sm_89 and sm_90).
//
// One block owns `block_m` query rows of one (batch, head) and walks a range of 64-key K/V tiles:
//
//   for each K/V tile (64 keys):
//       S  = Q · Kᵀ                   (mma.sync m16n8k16, fp32 accumulators in registers)
//       S  = mask(S)                  (causal / key tail; only on tiles that need it)
//       m' = max(m, rowmax(S));  P = exp2(S·scale·log2e − m'·scale·log2e)
//       l  = l·α + rowsum(P);    O = O·α + P · V     with α = exp2((m − m')·scale·log2e)
//   O /= l;  LSE = (m·scale·log2e + log2 l)·ln 2
//
// Every consumer warp owns 16 query rows (one m16 MMA row tile). Its Q fragments, the running
// max/sum, the score tile P and the O accumulator never leave registers; K and V tiles stream
// through a `stages`-deep shared-memory ring filled by 16-byte cp.async.
//
// Split-KV: when (batch · heads · query blocks) cannot fill the GPU, the key range of a query block
// is cut into `tiles_per_split`-tile pieces handled by different blocks. Each writes an fp32 partial
// (O normalised by its own l, plus its log2-domain LSE) to scratch; the last block to finish (an
// atomic ticket) merges all pieces in fixed split order, so the result does not depend on which
// block finishes last (bitwise deterministic).
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "flash_fwd.h"

namespace flashcore::cuda::detail {

// ------------------------------------------------------------------------------------------------
// Tile configuration (the one place tile sizes live)
// ------------------------------------------------------------------------------------------------
constexpr int kBlockN = 64;            // keys per K/V tile
constexpr int kWarpRows = 16;          // query rows per consumer warp (one m16 MMA row tile)
constexpr int kMaxConsumerWarps = 8;   // compute warps per block (R x G)
constexpr int kMaxStages = 4;

constexpr int kMaxSplits = 8;          // split-KV pieces per query block (merge keeps them in registers)

// Warp-specialized synchronisation. FULL[s] ("ring slot s has landed") is an mbarrier completed by the
// producer lanes' cp.async.mbarrier.arrive.noinc, so the producer never waits for its own copies.
// EMPTY[s] ("slot s may be refilled") is a named barrier: consumers bar.arrive, the producer bar.sync.
constexpr int kBarEmpty = 1;                   // named barrier ids kBarEmpty + s (0 is __syncthreads)
constexpr int kBarConsumers = 1 + kMaxStages;  // all compute warps (KV-group merge)
constexpr int kBarEpilogue = 2 + kMaxStages;   // group-0 warps only (split-KV ticket and merge)

template <int D>
struct TileConfig {
  static_assert(D % 16 == 0 && D <= 256, "head dim");
  static constexpr int kHeadDim = D;
  static constexpr int kChunks = D / 8;          // 16-byte chunks in one smem row (8 halfs each)
  static constexpr int kQKSteps = D / 16;        // k16 steps of S = Q·Kᵀ
  static constexpr int kSTiles = kBlockN / 8;    // n8 column tiles of S (8)
  static constexpr int kPVSteps = kBlockN / 16;  // k16 steps of O += P·V (4)
  static constexpr int kOTiles = D / 8;          // n8 column tiles of O
  static constexpr int kTileElems = kBlockN * D; // one K (or V) tile
  // Dynamic shared memory: [Q: block_m x D][ring: stages x key_split_warps x (K tile, V tile)], 16-bit elements.
  __host__ __device__ static constexpr size_t smem_bytes(int block_m, int key_split_warps, int stages) {
    return 2ull * (size_t(block_m) * D + size_t(stages) * key_split_warps * 2 * kTileElems);
  }
};

// Swizzled smem layout: row r of a [rows x D] tile, 16-byte chunk c, lives at chunk (c ^ (r & 7)).
// ldmatrix reads 8 rows at one logical chunk -> 8 different physical chunks (all 32 banks), and the
// cp.async writes of one row stay a permutation inside that row: no bank conflicts either way.
template <int D>
__device__ __forceinline__ int swz(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// Kernel arguments: the user's params plus what the launcher derived.
struct KernelArgs {
  FlashFwdParams p;
  float scale_log2;     // scale · log2(e): softmax runs in exp2
  int q_heads_per_kv;         // heads_q / heads_kv (GQA)
  int block_m;          // 16 · row warps (R)
  int key_split_warps;        // G: warps per row warp, each on its own share of the key tiles
  int n_mblocks;        // ceil(seqlen_q / block_m)
  int stages;           // ring depth
  int tiles_per_split;  // split-KV piece size in tiles (huge = no split)
  float* part_o;        // [split][batch][heads_q][seqlen_q][D] fp32 (split-KV scratch)
  float* part_lse;      // [split][batch][heads_q][seqlen_q]   log2 domain
  int* counters;        // [batch][heads_q][n_mblocks] tickets, zero between launches
};

// ------------------------------------------------------------------------------------------------
// PTX wrappers
// ------------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 16-byte global->shared copy; pred false -> 16 zero bytes written, nothing read.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool pred) {
  const int n = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
// Wait until at most n groups are pending (n is a run-time ring depth; 0 is always safe).
__device__ __forceinline__ void cp_async_wait_dyn(int n) {
  switch (n) {
    case 3: cp_async_wait<3>(); break;
    case 2: cp_async_wait<2>(); break;
    case 1: cp_async_wait<1>(); break;
    default: cp_async_wait<0>(); break;
  }
}
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Arrive on `bar` once all cp.async issued so far by this thread have landed (no pending-count bump:
// the barrier's init count includes this arrival).
__device__ __forceinline__ void cp_async_mbar_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait_parity(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
#if __CUDA_ARCH__ >= 900  // try_wait may suspend the warp until the phase completes (no busy issue slots)
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#else
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#endif
  } while (!done);
}
__device__ __forceinline__ void named_bar_sync(int id, int nthreads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(nthreads) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int nthreads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(nthreads) : "memory");
}
// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i; register i of lane l
// receives row l/4, columns 2(l%4), 2(l%4)+1 of matrix i (transposed with .trans).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Element type traits: packing two floats into one 32-bit MMA operand register, and the MMA itself.
//
// m16n8k16 fragments (g = lane/4, t = lane%4), each register holds 2 consecutive 16-bit elements:
//   A (16x16, row-major): a0 = A[g][2t..2t+1]   a1 = A[g+8][2t..]   a2 = A[g][2t+8..]   a3 = A[g+8][2t+8..]
//   B (16x8, "col"):      b0 = B[2t..2t+1][g]   b1 = B[2t+8..2t+9][g]
//   C (16x8 fp32):        c0,c1 = C[g][2t..2t+1]   c2,c3 = C[g+8][2t..2t+1]
template <typename Elem>
struct ElemOps;

template <>
struct ElemOps<__half> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

template <>
struct ElemOps<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

// ------------------------------------------------------------------------------------------------
// Loads
// ------------------------------------------------------------------------------------------------
// Copy rows [row0, row0 + rows) of a [seqlen x D] matrix (row stride `stride`) into a swizzled smem
// tile; rows at or past `seqlen` are zero-filled (never read). Threads first..first+nthr-1 share it.
// nthr is a multiple of D/8 (32 threads or more), so a thread always copies the same 16-byte column
// chunk, of rows r, r + nthr/(D/8), ...: one pointer bump, one compare and one cp.async per chunk.
template <int D, typename Elem>
__device__ __forceinline__ void load_tile_async(Elem* s, const Elem* g, long long stride, int row0, int rows,
                                                int seqlen, int first, int nthr) {
  constexpr int kChunks = TileConfig<D>::kChunks;
  const int chunk = first % kChunks;
  const int row_step = nthr / kChunks;
  const uint32_t s_base = smem_u32(s);
  const Elem* src = g + (long long)(row0 + first / kChunks) * stride + chunk * 8;
  const long long src_step = (long long)row_step * stride;
  const Elem* safe = g + chunk * 8;  // a valid address for zero-filled rows (nothing is read)
  for (int r = first / kChunks; r < rows; r += row_step, src += src_step) {
    const bool ok = row0 + r < seqlen;
    cp_async_16(s_base + r * (2 * D) + ((chunk ^ (r & 7)) << 4), ok ? src : safe, ok);
  }
}

// ------------------------------------------------------------------------------------------------
// Per-warp state and the two halves of a tile step
// ------------------------------------------------------------------------------------------------
template <int D>
struct WarpState {
  uint32_t q[D / 16][4];   // Q A-fragments, one per k16 step (rows: the warp's 16 query rows)
  float o[D / 8][4];       // O accumulator, C-fragment per n8 column tile of the head dim
  float row_max[2];        // running max of raw scores, rows g and g+8 (quad-uniform)
  float row_sum[2];        // running softmax denominator, this thread's columns only (quad-reduced at the end)
};

// S = Q · Kᵀ for one 64-key tile (fp32 C-fragments: s[i] covers keys 8i..8i+7).
// B[k][n] = K[n][k]: K rows are B columns, so plain ldmatrix. x4 matrices:
// (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 0-7), (keys 8-15, d 8-15)
//   -> {b0, b1} of key tile 2np, {b0, b1} of key tile 2np+1.
// Per-lane byte offsets of the ldmatrix row addresses inside a swizzled [64 x D] tile. With the
// swizzle chunk ^ (row & 7) and row & 7 == lane & 7 for every address below, k16 step kk = 4a + c
// reads chunk 8a + ((2c + half) ^ (lane & 7)): four per-lane offsets plus compile-time immediates.
struct LaneOffsets {
  uint32_t k[4];  // K (non-transposed B operand): row (lane&7) + 8·(lane>>4), chunk half (lane>>3)&1
  uint32_t v[4];  // V (transposed B operand):     row (lane&7) + 8·((lane>>3)&1), chunk half lane>>4
};
template <int D>
__device__ __forceinline__ LaneOffsets lane_offsets(int lane) {
  LaneOffsets o;
  const int sw = lane & 7;
  const int krow = (lane & 7) + ((lane >> 4) << 3), kchk = (lane >> 3) & 1;
  const int vrow = (lane & 7) + (((lane >> 3) & 1) << 3), vchk = lane >> 4;
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    o.k[c] = 2 * krow * D + (((2 * c + kchk) ^ sw) << 4);
    o.v[c] = 2 * vrow * D + (((2 * c + vchk) ^ sw) << 4);
  }
  return o;
}

// S = Q · Kᵀ for one 64-key tile (fp32 C-fragments: s[i] covers keys 8i..8i+7).
// B[k][n] = K[n][k]: K rows are B columns, so plain ldmatrix. x4 matrices:
// (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 0-7), (keys 8-15, d 8-15)
//   -> {b0, b1} of key tile 2np, {b0, b1} of key tile 2np+1.
template <int D, typename Elem>
__device__ __forceinline__ void qk_tile(float (&s)[kBlockN / 8][4], const WarpState<D>& st, uint32_t sK,
                                        const LaneOffsets& lo) {
  using Cfg = TileConfig<D>;
#pragma unroll
  for (int i = 0; i < Cfg::kSTiles; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < Cfg::kQKSteps; ++kk) {
    const uint32_t base = sK + lo.k[kk & 3] + (kk >> 2) * 128;
#pragma unroll
    for (int np = 0; np < Cfg::kSTiles / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, base + np * 16 * D * 2);
      ElemOps<Elem>::mma(s[2 * np], st.q[kk], b[0], b[1]);
      ElemOps<Elem>::mma(s[2 * np + 1], st.q[kk], b[2], b[3]);
    }
  }
}

// Mask (kMask: causal diagonal / key tail), online softmax, O += P · V for one tile.
template <int D, typename Elem, bool kMask>
__device__ __forceinline__ void softmax_pv_tile(WarpState<D>& st, float (&s)[kBlockN / 8][4], uint32_t sV,
                                                const LaneOffsets& lo, const KernelArgs& a, int row_lo, int key0,
                                                int lane) {
  using Cfg = TileConfig<D>;
  using Ops = ElemOps<Elem>;
  const int g = lane >> 2, t = lane & 3;
  if constexpr (kMask) {  // thread holds columns key0 + 8i + 2t + {0,1} of rows g, g+8
    const int seqlen_k = a.p.seqlen_k, diag = seqlen_k - a.p.seqlen_q;
    const int r0 = row_lo + g;
    const int lim0 = a.p.causal ? min(seqlen_k - 1, r0 + diag) : seqlen_k - 1;
    const int lim1 = a.p.causal ? min(seqlen_k - 1, r0 + 8 + diag) : seqlen_k - 1;
#pragma unroll
    for (int i = 0; i < Cfg::kSTiles; ++i) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = key0 + 8 * i + 2 * t + e;
        if (col > lim0) s[i][e] = -INFINITY;
        if (col > lim1) s[i][2 + e] = -INFINITY;
      }
    }
  }
  // ---- online softmax (rows g and g+8; a row's 64 columns live in the 4 threads of a quad)
  const float sl2 = a.scale_log2;
  float mx[2] = {st.row_max[0], st.row_max[1]};
#pragma unroll
  for (int i = 0; i < Cfg::kSTiles; ++i) {
    mx[0] = fmaxf(mx[0], fmaxf(s[i][0], s[i][1]));
    mx[1] = fmaxf(mx[1], fmaxf(s[i][2], s[i][3]));
  }
  float ms[2], alpha[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    // A row that has seen only masked keys keeps max -inf; subtract 0 instead so that
    // exp2(-inf - 0) = 0 rather than exp2(-inf + inf) = NaN.
    ms[r] = (mx[r] == -INFINITY) ? 0.f : mx[r] * sl2;
    alpha[r] = fast_exp2(st.row_max[r] * sl2 - ms[r]);  // old max -inf -> 0 (accumulators are 0 then)
    st.row_max[r] = mx[r];
  }
  float sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < Cfg::kSTiles; ++i) {
    s[i][0] = fast_exp2(fmaf(s[i][0], sl2, -ms[0]));
    s[i][1] = fast_exp2(fmaf(s[i][1], sl2, -ms[0]));
    s[i][2] = fast_exp2(fmaf(s[i][2], sl2, -ms[1]));
    s[i][3] = fast_exp2(fmaf(s[i][3], sl2, -ms[1]));
    sum[0] += s[i][0] + s[i][1];
    sum[1] += s[i][2] + s[i][3];
  }
  st.row_sum[0] = st.row_sum[0] * alpha[0] + sum[0];
  st.row_sum[1] = st.row_sum[1] * alpha[1] + sum[1];
#pragma unroll
  for (int j = 0; j < Cfg::kOTiles; ++j) {
    st.o[j][0] *= alpha[0]; st.o[j][1] *= alpha[0];
    st.o[j][2] *= alpha[1]; st.o[j][3] *= alpha[1];
  }
  // ---- O += P · V. The C-fragments of S tiles 2kk and 2kk+1 are exactly the A-fragment of
  // k16 step kk (a0 = S[2kk] rows g, a1 = S[2kk] rows g+8, a2/a3 = S[2kk+1]): P never leaves registers.
  // B[k][n] = V[key k][d n] is "col" only after transposing: ldmatrix.trans. x4 matrices:
  // (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 8-15)
  //   -> {b0, b1} of d tile 2dp, {b0, b1} of d tile 2dp+1.
#pragma unroll
  for (int kk = 0; kk < Cfg::kPVSteps; ++kk) {
    uint32_t pa[4];
    pa[0] = Ops::pack(s[2 * kk][0], s[2 * kk][1]);
    pa[1] = Ops::pack(s[2 * kk][2], s[2 * kk][3]);
    pa[2] = Ops::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    pa[3] = Ops::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
    for (int dp = 0; dp < Cfg::kOTiles / 2; ++dp) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, sV + lo.v[dp & 3] + (dp >> 2) * 128 + kk * 16 * D * 2);
      Ops::mma(st.o[2 * dp], pa, b[0], b[1]);
      Ops::mma(st.o[2 * dp + 1], pa, b[2], b[3]);
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Epilogue pieces shared by every kernel. A warp holds rows g and g+8 (g = lane/4) of a 16-row
// accumulator tile; row_sum is this thread's partial sum (quad-reduced here), row_max the row max.
// ------------------------------------------------------------------------------------------------
// 1/l and the log2-domain LSE of the two rows; l == 0 <=> the row saw no key: O = 0, LSE = -inf.
__device__ __forceinline__ void finish_rows(const float (&row_sum)[2], const float (&row_max)[2], float scale_log2,
                                            float (&inv)[2], float (&lse2)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = row_sum[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    inv[r] = l > 0.f ? 1.f / l : 0.f;
    lse2[r] = l > 0.f ? row_max[r] * scale_log2 + __log2f(l) : -INFINITY;
  }
}
// O·inv of the two rows (o(j, e) = C-fragment register e of n8 column tile j) -> rows lr0, lr0 + 8 of
// a swizzled [rows x D] smem tile.
template <int D, typename Elem, typename GetO>
__device__ __forceinline__ void stage_o_rows(Elem* sO, int lr0, int lane, const float (&inv)[2], GetO o) {
  const int t = lane & 3;
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    *reinterpret_cast<uint32_t*>(sO + swz<D>(lr0, j) + 2 * t) = ElemOps<Elem>::pack(o(j, 0) * inv[0], o(j, 1) * inv[0]);
    *reinterpret_cast<uint32_t*>(sO + swz<D>(lr0 + 8, j) + 2 * t) = ElemOps<Elem>::pack(o(j, 2) * inv[1], o(j, 3) * inv[1]);
  }
}
// LSE (natural log) of query rows row0 and row0 + 8, by the quad leader.
__device__ __forceinline__ void write_lse_rows(const FlashFwdParams& p, int b, int h, int row0, const float (&lse2)[2],
                                               int lane) {
  constexpr float kLn2 = 0.6931471805599453f;
  if (p.lse == nullptr || (lane & 3) != 0) return;
  float* lse = p.lse + ((long long)b * p.heads_q + h) * p.seqlen_q;
  if (row0 < p.seqlen_q) lse[row0] = lse2[0] * kLn2;
  if (row0 + 8 < p.seqlen_q) lse[row0 + 8] = lse2[1] * kLn2;
}
// A warp's `rows` staged rows (smem rows lrow0..) -> global query rows row0.. of (b, h), 16-byte stores.
template <int D, typename Elem>
__device__ __forceinline__ void store_o_rows(const FlashFwdParams& p, int b, int h, const Elem* sO, int lrow0, int row0,
                                             int rows, int lane) {
  constexpr int kChunks = D / 8;
  Elem* gO = static_cast<Elem*>(p.o) + b * p.o_batch_stride + h * p.o_head_stride;
#pragma unroll
  for (int c = lane; c < rows * kChunks; c += 32) {
    const int r = c / kChunks, ch = c % kChunks;
    const int row = row0 + r;
    if (row < p.seqlen_q)
      *reinterpret_cast<uint4*>(gO + row * p.o_seq_stride + ch * 8) = *reinterpret_cast<const uint4*>(sO + swz<D>(lrow0 + r, ch));
  }
}

// Split-KV merge, run by the last block of a query block: O = Σ w_s O_s with w_s = 2^(lse_s - max)/Σ,
// in fixed split order (deterministic). Two phases, each with all its loads in flight at once.
template <int D, typename Elem>
__device__ __forceinline__ void merge_splits(const KernelArgs& a, float* s_w, int b, int h, int m0, int n_splits,
                                             int tid, int n_consumers) {
  const FlashFwdParams& p = a.p;
  constexpr float kLn2 = 0.6931471805599453f;
  const long long split_rows = (long long)p.batch * p.heads_q * p.seqlen_q;
  const long long bh_row = ((long long)b * p.heads_q + h) * p.seqlen_q;
  const int rows_here = min(a.block_m, p.seqlen_q - m0);
  // Phase 1: per-row weights -> smem, final LSE.
  for (int r = tid; r < rows_here; r += n_consumers) {
    float l[kMaxSplits];
    float mx = -INFINITY;
#pragma unroll
    for (int sp = 0; sp < kMaxSplits; ++sp) {
      l[sp] = sp < n_splits ? __ldcg(a.part_lse + sp * split_rows + bh_row + m0 + r) : -INFINITY;
      mx = fmaxf(mx, l[sp]);
    }
    float sum = 0.f;
#pragma unroll
    for (int sp = 0; sp < kMaxSplits; ++sp) {
      l[sp] = mx == -INFINITY ? 0.f : fast_exp2(l[sp] - mx);
      sum += l[sp];
    }
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
#pragma unroll
    for (int sp = 0; sp < kMaxSplits; ++sp) s_w[r * kMaxSplits + sp] = l[sp] * inv;
    if (p.lse != nullptr) p.lse[bh_row + m0 + r] = (mx == -INFINITY) ? -INFINITY : (mx + __log2f(sum)) * kLn2;
  }
  named_bar_sync(kBarEpilogue, n_consumers);
  // Phase 2: O, 4 columns per item.
  Elem* gO = static_cast<Elem*>(p.o) + b * p.o_batch_stride + h * p.o_head_stride;
  for (int it = tid; it < rows_here * (D / 4); it += n_consumers) {
    const int r = it / (D / 4), c4 = it % (D / 4);
    float4 v[kMaxSplits];
#pragma unroll
    for (int sp = 0; sp < kMaxSplits; ++sp)
      if (sp < n_splits)
        v[sp] = __ldcg(reinterpret_cast<const float4*>(a.part_o + (sp * split_rows + bh_row + m0 + r) * D) + c4);
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int sp = 0; sp < kMaxSplits; ++sp)
      if (sp < n_splits) {
        const float w = s_w[r * kMaxSplits + sp];
        acc[0] = fmaf(w, v[sp].x, acc[0]); acc[1] = fmaf(w, v[sp].y, acc[1]);
        acc[2] = fmaf(w, v[sp].z, acc[2]); acc[3] = fmaf(w, v[sp].w, acc[3]);
      }
    uint2 out;
    out.x = ElemOps<Elem>::pack(acc[0], acc[1]);
    out.y = ElemOps<Elem>::pack(acc[2], acc[3]);
    *reinterpret_cast<uint2*>(gO + (m0 + r) * p.o_seq_stride + c4 * 4) = out;
  }
}

// Warps per block (upper bound, for __launch_bounds__). More than 8 warps put 3 warps on one SM
// sub-partition, which caps registers at 168/thread: the warp-specialized kernels therefore use at most
// 4 compute warps + 1 producer (255-register cap).
template <int D, bool kWarpSpecialized>
struct BlockShape {
  static constexpr int kMaxComputeWarps = kWarpSpecialized ? 4 : detail::kMaxConsumerWarps;
  static constexpr int kMaxThreads = 32 * (kMaxComputeWarps + (kWarpSpecialized ? 1 : 0));
};

// ------------------------------------------------------------------------------------------------
// The kernel.
//
// Warp roles. Compute warp w is (row warp rw = w % R, KV group grp = w / R), R = block_m / 16, G =
// key_split_warps: it owns query rows m0 + 16·rw .. +15 and the block's key tiles grp, grp + G, grp + 2G, ...
// (G > 1 spreads a small problem over more warps; the G partial softmax states are merged through shared
// memory at the end). kWarpSpecialized adds one producer warp (the last) that alone issues the K/V
// loads; otherwise every warp loads its share.
//
// Ring: slot s holds, for every group, {K of the group's tile i+1, V of its tile i} for step i; the K
// of each group's first tile goes into slot stages-1 before the loop. Step i issues the MMAs of
// S(i+1) = Q·K(i+1)ᵀ before the softmax and P·V of tile i, so the tensor pipe and the FMA/MUFU pipes
// work on independent instruction streams inside one warp.
// ------------------------------------------------------------------------------------------------
template <int D, typename Elem, bool kWarpSpecialized>
__global__ void __launch_bounds__(BlockShape<D, kWarpSpecialized>::kMaxThreads)
flash_fwd_kernel(const __grid_constant__ KernelArgs a) {
  using Cfg = TileConfig<D>;
  using Ops = ElemOps<Elem>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __shared__ int s_is_last;
  __shared__ __align__(8) uint64_t full_bar[kMaxStages];  // warp-specialized only
  Elem* sQ = reinterpret_cast<Elem*>(smem_raw);
  Elem* sRing = sQ + a.block_m * D;

  const FlashFwdParams& p = a.p;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int n_threads = blockDim.x;
  const int R = a.block_m / kWarpRows, G = a.key_split_warps;
  const int n_compute = 32 * R * G;   // compute threads (all threads unless warp-specialized)
  const int n_epi = 32 * R;           // group-0 threads: they finish the block (epilogue)
  const int rw = warp % R, grp = warp / R;
  const int stages = a.stages;

  // ---- which (batch, head, query block, key split) this block owns. Heavy (late, for causal)
  // query blocks come first in launch order.
  const int mblock = a.n_mblocks - 1 - (int)(blockIdx.x % a.n_mblocks);
  const int split = (int)(blockIdx.x / a.n_mblocks);
  const int h = blockIdx.y, b = blockIdx.z, hk = h / a.q_heads_per_kv;
  const int m0 = mblock * a.block_m;
  const int diag = p.seqlen_k - p.seqlen_q;                 // causal: row i sees keys j <= i + diag
  int n_end = p.seqlen_k;                                   // keys [0, n_end) visible to some row
  if (p.causal) n_end = min(n_end, m0 + a.block_m + diag);
  const int n_tiles = n_end > 0 ? (n_end + kBlockN - 1) / kBlockN : 0;
  const int n_splits = max(1, (n_tiles + a.tiles_per_split - 1) / a.tiles_per_split);
  if (split >= n_splits) return;  // this query block needs fewer splits (causal)
  const int t_begin = split * a.tiles_per_split;
  const int n_iter = max(0, min(n_tiles, t_begin + a.tiles_per_split) - t_begin);  // tiles of this block
  const int n_steps = (n_iter + G - 1) / G;
  // Tiles before t_mask need no mask at all (full tiles below the diagonal of the block's first row).
  int t_mask = p.seqlen_k / kBlockN;
  if (p.causal) t_mask = min(t_mask, max(0, m0 + diag + 1) / kBlockN);
  // This warp's group: tiles t_begin + grp + G·i, i < n_mine; the first i_mask of them unmasked.
  const int n_mine = n_iter > grp ? (n_iter - grp + G - 1) / G : 0;
  const int i_mask = min(n_mine, max(0, (t_mask - t_begin - grp + G - 1) / G));

  const Elem* gQ = static_cast<const Elem*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
  const Elem* gK = static_cast<const Elem*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const Elem* gV = static_cast<const Elem*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  auto slot_k = [&](int slot, int g) { return sRing + (slot * G + g) * 2 * Cfg::kTileElems; };
  auto slot_v = [&](int slot, int g) { return sRing + (slot * G + g) * 2 * Cfg::kTileElems + Cfg::kTileElems; };
  auto tile_key0 = [&](int g, int i) { return (t_begin + g + G * i) * kBlockN; };
  const int t_end = t_begin + n_iter;
  // Fill ring slot `slot` for step i: for every group, V of its tile i and K of its tile i+1.
  auto fill_slot = [&](int i, int slot, int first, int nthr) {
    for (int g = 0; g < G; ++g) {
      const int t = t_begin + g + G * i;  // group g's tile at step i
      if (t < t_end)
        load_tile_async<D>(slot_v(slot, g), gV, p.v_seq_stride, t * kBlockN, kBlockN, p.seqlen_k, first, nthr);
      if (t + G < t_end)
        load_tile_async<D>(slot_k(slot, g), gK, p.k_seq_stride, (t + G) * kBlockN, kBlockN, p.seqlen_k, first, nthr);
    }
  };

  // ---- Q tile and every group's first K -> smem (all threads), one commit group
  load_tile_async<D>(sQ, gQ, p.q_seq_stride, m0, a.block_m, p.seqlen_q, tid, n_threads);
  for (int g = 0; g < G && g < n_iter; ++g)
      load_tile_async<D>(slot_k(stages - 1, g), gK, p.k_seq_stride, tile_key0(g, 0), kBlockN, p.seqlen_k, tid, n_threads);
  cp_async_commit();

  WarpState<D> st;
#pragma unroll
  for (int j = 0; j < Cfg::kOTiles; ++j) st.o[j][0] = st.o[j][1] = st.o[j][2] = st.o[j][3] = 0.f;
  st.row_max[0] = st.row_max[1] = -INFINITY;
  st.row_sum[0] = st.row_sum[1] = 0.f;
  const int row_lo = m0 + rw * kWarpRows;  // first query row of this compute warp

  // Q A-fragments: x4 matrices (rows 0-7, d 0-7), (rows 8-15, d 0-7), (rows 0-7, d 8-15),
  // (rows 8-15, d 8-15) of k16 step kk = a0, a1, a2, a3.
  auto load_q_fragments = [&]() {
    const uint32_t base = smem_u32(sQ);
    const int row = rw * kWarpRows + (lane & 15);
#pragma unroll
    for (int kk = 0; kk < Cfg::kQKSteps; ++kk)
      ldmatrix_x4(st.q[kk], base + 2 * (row * D + (((2 * kk + (lane >> 4)) ^ (lane & 7)) << 3)));
  };

  const LaneOffsets lo = lane_offsets<D>(lane);
  float s_next[Cfg::kSTiles][4];  // scores of this warp's next tile, computed one step ahead
  // One step of a compute warp: S(i+1) MMAs first, then softmax + P·V of tile i (scores in s_next).
  // At the warp's last tile the K half holds stale data: its scores are computed and never used.
  auto consume = [&](auto mask_tag, int i, int slot) {
    float s_cur[Cfg::kSTiles][4];
#pragma unroll
    for (int k = 0; k < Cfg::kSTiles; ++k)
#pragma unroll
      for (int e = 0; e < 4; ++e) s_cur[k][e] = s_next[k][e];
    qk_tile<D, Elem>(s_next, st, smem_u32(slot_k(slot, grp)), lo);
    softmax_pv_tile<D, Elem, decltype(mask_tag)::value>(st, s_cur, smem_u32(slot_v(slot, grp)), lo, a, row_lo,
                                                        tile_key0(grp, i), lane);
  };
  auto compute_step = [&](int i, int slot) {
    if (i < i_mask) consume(std::false_type{}, i, slot);
    else if (i < n_mine) consume(std::true_type{}, i, slot);
  };

  if constexpr (!kWarpSpecialized) {
    // ================= all warps load and compute; one __syncthreads per step =================
    // Prologue: slots of steps 0..stages-2 in flight (one commit group each; empty groups keep the count).
    for (int i = 0; i < stages - 1; ++i) {
      fill_slot(i, i, tid, n_threads);
      cp_async_commit();
    }
    cp_async_wait_dyn(stages - 1);  // the Q + first-K group has landed (this thread's copies)...
    __syncthreads();                // ...and everyone's
    load_q_fragments();
    qk_tile<D, Elem>(s_next, st, smem_u32(slot_k(stages - 1, grp)), lo);
    int slot = 0;
    for (int i = 0; i < n_steps; ++i) {
      cp_async_wait_dyn(stages - 2);  // slot of step i landed (this thread's copies)...
      __syncthreads();                // ...and everyone's; everyone is also done with step i-1
      fill_slot(i + stages - 1, slot == 0 ? stages - 1 : slot - 1, tid, n_threads);  // slot of step i-1
      cp_async_commit();
      compute_step(i, slot);
      slot = (slot + 1 == stages) ? 0 : slot + 1;
    }
  } else {
    // ================= warp-specialized: producer warp fills the ring, compute warps consume =================
    if (tid == 0)
      for (int s = 0; s < kMaxStages; ++s) mbar_init(smem_u32(&full_bar[s]), 32);
    cp_async_wait<0>();
    __syncthreads();  // Q, first K tiles, barrier init visible; last block-wide barrier
    if (warp == R * G) {
      // ---- producer: fills slot i%S for step i once the compute warps released it (step i-S, or for
      // slot S-1 its first use, the first K tiles), then lets the slot's mbarrier track its copies.
      for (int i = 0; i < n_steps; ++i) {
        const int slot = i % stages;
        if (i >= stages - 1) named_bar_sync(kBarEmpty + slot, n_threads);
        fill_slot(i, slot, lane, 32);
        cp_async_mbar_arrive(smem_u32(&full_bar[slot]));
      }
      cp_async_wait<0>();
      return;
    }
    // ---- compute warps
    load_q_fragments();
    qk_tile<D, Elem>(s_next, st, smem_u32(slot_k(stages - 1, grp)), lo);
    if (stages - 1 < n_steps) named_bar_arrive(kBarEmpty + stages - 1, n_threads);  // first K tiles read
    int slot = 0;
    uint32_t phase = 0;
    for (int i = 0; i < n_steps; ++i) {
      mbar_wait_parity(smem_u32(&full_bar[slot]), phase);
      compute_step(i, slot);
      if (i + stages < n_steps) named_bar_arrive(kBarEmpty + slot, n_threads);  // only if it will be refilled
      if (++slot == stages) { slot = 0; phase ^= 1u; }
    }
  }

  // ---- merge the G groups' softmax states (fixed order: deterministic). Groups > 0 park their fp32
  // registers in the (now idle) ring, lane-major so that each group-0 thread reads what its twin wrote.
  if (G > 1) {
    constexpr int kVals = Cfg::kOTiles * 4 + 4;  // O fragment + row_max[2] + row_sum[2]
    float* xbuf = reinterpret_cast<float*>(sRing);
    named_bar_sync(kBarConsumers, n_compute);  // every group done with the ring
    if (grp > 0) {
      float* dst = xbuf + ((grp - 1) * R + rw) * kVals * 32 + lane;
#pragma unroll
      for (int j = 0; j < Cfg::kOTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) dst[(j * 4 + e) * 32] = st.o[j][e];
      dst[(kVals - 4) * 32] = st.row_max[0];
      dst[(kVals - 3) * 32] = st.row_max[1];
      dst[(kVals - 2) * 32] = st.row_sum[0];
      dst[(kVals - 1) * 32] = st.row_sum[1];
    }
    named_bar_sync(kBarConsumers, n_compute);
    if (grp > 0) return;
    const float sl2 = a.scale_log2;
    float mx[2] = {st.row_max[0], st.row_max[1]};
    for (int g = 1; g < G; ++g) {
      const float* src = xbuf + ((g - 1) * R + rw) * kVals * 32 + lane;
      mx[0] = fmaxf(mx[0], src[(kVals - 4) * 32]);
      mx[1] = fmaxf(mx[1], src[(kVals - 3) * 32]);
    }
    // factor of a state with max m: 2^((m - mx)·scale·log2e); 0 for a state (or row) that saw no key
    auto factor = [&](float m, int r) { return m == -INFINITY ? 0.f : fast_exp2((m - mx[r]) * sl2); };
    float f0 = factor(st.row_max[0], 0), f1 = factor(st.row_max[1], 1);
    st.row_sum[0] *= f0;
    st.row_sum[1] *= f1;
#pragma unroll
    for (int j = 0; j < Cfg::kOTiles; ++j) {
      st.o[j][0] *= f0; st.o[j][1] *= f0; st.o[j][2] *= f1; st.o[j][3] *= f1;
    }
    for (int g = 1; g < G; ++g) {
      const float* src = xbuf + ((g - 1) * R + rw) * kVals * 32 + lane;
      f0 = factor(src[(kVals - 4) * 32], 0);
      f1 = factor(src[(kVals - 3) * 32], 1);
      st.row_sum[0] = fmaf(f0, src[(kVals - 2) * 32], st.row_sum[0]);
      st.row_sum[1] = fmaf(f1, src[(kVals - 1) * 32], st.row_sum[1]);
#pragma unroll
      for (int j = 0; j < Cfg::kOTiles; ++j) {
        st.o[j][0] = fmaf(f0, src[(j * 4 + 0) * 32], st.o[j][0]);
        st.o[j][1] = fmaf(f0, src[(j * 4 + 1) * 32], st.o[j][1]);
        st.o[j][2] = fmaf(f1, src[(j * 4 + 2) * 32], st.o[j][2]);
        st.o[j][3] = fmaf(f1, src[(j * 4 + 3) * 32], st.o[j][3]);
      }
    }
    st.row_max[0] = mx[0];
    st.row_max[1] = mx[1];
  }

  // =============================== epilogue (group-0 warps) ===============================
  const int g = lane >> 2, t = lane & 3;
  float inv[2], lse2[2];
  finish_rows(st.row_sum, st.row_max, a.scale_log2, inv, lse2);
  const int row0 = row_lo + g, row1 = row0 + 8;

  if (n_splits == 1) {
    // O -> smem (this warp's own 16 rows of the Q tile, no longer needed) -> 16-byte stores.
    Elem* sO = sQ;
    __syncwarp();  // all lanes' ldmatrix reads of these rows are done (formal WAR order for racecheck)
    stage_o_rows<D>(sO, rw * kWarpRows + g, lane, inv, [&](int j, int e) { return st.o[j][e]; });
    __syncwarp();
    store_o_rows<D>(p, b, h, sO, rw * kWarpRows, row_lo, kWarpRows, lane);
    write_lse_rows(p, b, h, row0, lse2, lane);
    return;
  }

  // ---- split-KV: write this piece's fp32 partial (normalised O, log2 LSE)
  {
    const long long split_rows = (long long)p.batch * p.heads_q * p.seqlen_q;  // rows per split
    const long long bh_row = ((long long)b * p.heads_q + h) * p.seqlen_q;
    float* po = a.part_o + (split * split_rows + bh_row) * D;
    float* pl = a.part_lse + split * split_rows + bh_row;
#pragma unroll
    for (int j = 0; j < Cfg::kOTiles; ++j) {
      if (row0 < p.seqlen_q)
        *reinterpret_cast<float2*>(po + (long long)row0 * D + 8 * j + 2 * t) = make_float2(st.o[j][0] * inv[0], st.o[j][1] * inv[0]);
      if (row1 < p.seqlen_q)
        *reinterpret_cast<float2*>(po + (long long)row1 * D + 8 * j + 2 * t) = make_float2(st.o[j][2] * inv[1], st.o[j][3] * inv[1]);
    }
    if (t == 0) {
      if (row0 < p.seqlen_q) pl[row0] = lse2[0];
      if (row1 < p.seqlen_q) pl[row1] = lse2[1];
    }
  }
  // Ticket: the last of the n_splits blocks of this query block merges.
  __threadfence();
  named_bar_sync(kBarEpilogue, n_epi);
  int* counter = a.counters + ((long long)b * p.heads_q + h) * a.n_mblocks + mblock;
  if (tid == 0) s_is_last = (atomicAdd(counter, 1) == n_splits - 1);
  named_bar_sync(kBarEpilogue, n_epi);
  if (!s_is_last) return;
  __threadfence();
  // Weights go to the Q region (block_m x D x 2 bytes >= block_m x kMaxSplits x 4 bytes): all warps are
  // past their last use of it (the Q fragments were loaded before the first tile).
  merge_splits<D, Elem>(a, reinterpret_cast<float*>(smem_raw), b, h, m0, n_splits, tid, n_epi);
  if (tid == 0) *counter = 0;  // ready for the next launch
}


// ------------------------------------------------------------------------------------------------
// Wide-warp kernel (large problems): every warp owns 32 query rows (two m16 tiles) that share each
// K and V fragment read from shared memory, halving the ldmatrix traffic per MMA (16 rows per warp
// re-read the whole K/V tile for every 16 rows: 16 FLOP per byte of ldmatrix; here 32, or 25.6 for
// D=128 where Q is re-read from shared memory because 2x(Q, O, S) fragments do not fit registers).
// Fixed shape: 4 warps x 32 rows = 128 rows per block, one K/V tile ring (`stages` deep, slot s holds
// K and V of the same tile), AllWarps loads, one __syncthreads per tile, no KV groups, no split-KV,
// no S(i+1) prefetch (two blocks per SM = 2 warps per scheduler hide the softmax instead).
// ------------------------------------------------------------------------------------------------
constexpr int kWideWarpRows = 32;
constexpr int kWideWarps = 4;
constexpr int kWideBlockM = kWideWarpRows * kWideWarps;  // 128

// Per-lane ldmatrix offsets of the wide kernel, 4 registers for Q, K and V: with sw = lane & 7 and the
// half-chunk bit h, ((2c + h) ^ sw) << 4 = ((h ^ (sw & 1)) << 4) + ((c << 5) ^ ((sw & 6) << 4)), so the
// row part and h go into one base per operand and the chunk term x(c) is one XOR (registers are short).
struct WideOffsets {
  uint32_t q, k, v;  // row offset + half-chunk term (Q: row lane&15, h lane>>4; K, V as in LaneOffsets)
  uint32_t x0;       // (lane & 6) << 4
  __device__ __forceinline__ uint32_t x(int c) const { return x0 ^ (uint32_t(c) << 5); }
};
template <int D>
__device__ __forceinline__ WideOffsets wide_offsets(int lane) {
  WideOffsets o;
  const int sw = lane & 7;
  const int krow = (lane & 7) + ((lane >> 4) << 3), kchk = (lane >> 3) & 1;
  const int vrow = (lane & 7) + (((lane >> 3) & 1) << 3), vchk = lane >> 4;
  const int qrow = lane & 15, qchk = lane >> 4;
  o.q = 2 * qrow * D + ((qchk ^ (sw & 1)) << 4);
  o.k = 2 * krow * D + ((kchk ^ (sw & 1)) << 4);
  o.v = 2 * vrow * D + ((vchk ^ (sw & 1)) << 4);
  o.x0 = (sw & 6) << 4;
  return o;
}

template <int D>
struct WideState {
  static constexpr bool kQRegs = D <= 64;         // Q A-fragments kept in registers (D=64 only)
  uint32_t q[2][kQRegs ? D / 16 : 1][4];
  float o[2][D / 8][4];
  float row_max[2][2];  // [m tile][rows g, g+8]
  float row_sum[2][2];
};

// One 64-key tile for a 32-row warp: S = Q·Kᵀ (both m tiles share each K fragment), mask, online
// softmax, O += P·V (both m tiles share each V fragment). D=128 walks the tile as two 32-key halves, one
// softmax update each, in a loop that is NOT unrolled: unrolled (or as one 64-key step) ptxas issues both
// halves' Q·Kᵀ together (S 64 + O 128 + prefetched fragments) and spills.
template <int D, typename Elem, bool kMask>
__device__ __forceinline__ void wide_tile(WideState<D>& st, uint32_t sQw, uint32_t sK, uint32_t sV,
                                          const WideOffsets& lo, const KernelArgs& a, int row_lo, int key0,
                                          int lane) {
  using Cfg = TileConfig<D>;
  using Ops = ElemOps<Elem>;
  constexpr bool kQRegs = WideState<D>::kQRegs;
  constexpr int kSub = D > 64 ? 2 : 1;          // softmax updates per 64-key tile
  constexpr int kSubKeys = kBlockN / kSub;      // keys per update
  constexpr int kST = kSubKeys / 8;             // n8 score tiles per update
  const int g = lane >> 2, t = lane & 3;
  const float sl2 = a.scale_log2;
#pragma unroll 1
  for (int sub = 0; sub < kSub; ++sub) {
    float s[2][kST][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int i = 0; i < kST; ++i) s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < Cfg::kQKSteps; ++kk) {
      uint32_t qa[2][4];
      if constexpr (kQRegs) {
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int e = 0; e < 4; ++e) qa[mt][e] = st.q[mt][kk][e];
      } else {
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) ldmatrix_x4(qa[mt], sQw + lo.q + lo.x(kk & 3) + (kk >> 2) * 128 + mt * 16 * D * 2);
      }
      const uint32_t base = sK + lo.k + lo.x(kk & 3) + (kk >> 2) * 128 + sub * kSubKeys * D * 2;
#pragma unroll
      for (int np = 0; np < kST / 2; ++np) {
        uint32_t b[4];
        ldmatrix_x4(b, base + np * 16 * D * 2);
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          Ops::mma(s[mt][2 * np], qa[mt], b[0], b[1]);
          Ops::mma(s[mt][2 * np + 1], qa[mt], b[2], b[3]);
        }
      }
    }
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      if constexpr (kMask) {  // thread holds columns key0 + sub·kSubKeys + 8i + 2t + {0,1} of rows g, g+8
        const int seqlen_k = a.p.seqlen_k, diag = seqlen_k - a.p.seqlen_q;
        const int r0 = row_lo + 16 * mt + g;
        const int lim0 = a.p.causal ? min(seqlen_k - 1, r0 + diag) : seqlen_k - 1;
        const int lim1 = a.p.causal ? min(seqlen_k - 1, r0 + 8 + diag) : seqlen_k - 1;
#pragma unroll
        for (int i = 0; i < kST; ++i) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int col = key0 + sub * kSubKeys + 8 * i + 2 * t + e;
            if (col > lim0) s[mt][i][e] = -INFINITY;
            if (col > lim1) s[mt][i][2 + e] = -INFINITY;
          }
        }
      }
      float mx[2] = {st.row_max[mt][0], st.row_max[mt][1]};
#pragma unroll
      for (int i = 0; i < kST; ++i) {
        mx[0] = fmaxf(mx[0], fmaxf(s[mt][i][0], s[mt][i][1]));
        mx[1] = fmaxf(mx[1], fmaxf(s[mt][i][2], s[mt][i][3]));
      }
      float ms[2], alpha[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        ms[r] = (mx[r] == -INFINITY) ? 0.f : mx[r] * sl2;  // all-masked row so far: exp2(-inf - 0) = 0
        alpha[r] = fast_exp2(st.row_max[mt][r] * sl2 - ms[r]);
        st.row_max[mt][r] = mx[r];
      }
      float sum[2] = {0.f, 0.f};
#pragma unroll
      for (int i = 0; i < kST; ++i) {
        s[mt][i][0] = fast_exp2(fmaf(s[mt][i][0], sl2, -ms[0]));
        s[mt][i][1] = fast_exp2(fmaf(s[mt][i][1], sl2, -ms[0]));
        s[mt][i][2] = fast_exp2(fmaf(s[mt][i][2], sl2, -ms[1]));
        s[mt][i][3] = fast_exp2(fmaf(s[mt][i][3], sl2, -ms[1]));
        sum[0] += s[mt][i][0] + s[mt][i][1];
        sum[1] += s[mt][i][2] + s[mt][i][3];
      }
      st.row_sum[mt][0] = st.row_sum[mt][0] * alpha[0] + sum[0];
      st.row_sum[mt][1] = st.row_sum[mt][1] * alpha[1] + sum[1];
#pragma unroll
      for (int j = 0; j < Cfg::kOTiles; ++j) {
        st.o[mt][j][0] *= alpha[0]; st.o[mt][j][1] *= alpha[0];
        st.o[mt][j][2] *= alpha[1]; st.o[mt][j][3] *= alpha[1];
      }
    }
    // O += P·V: P C-fragments are the A-fragments (see softmax_pv_tile); each V fragment feeds both m tiles.
#pragma unroll
    for (int kk = 0; kk < kST / 2; ++kk) {
      uint32_t pa[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        pa[mt][0] = Ops::pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][1] = Ops::pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = Ops::pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][3] = Ops::pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < Cfg::kOTiles / 2; ++dp) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, sV + lo.v + lo.x(dp & 3) + (dp >> 2) * 128 + (sub * kST / 2 + kk) * 16 * D * 2);
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          Ops::mma(st.o[mt][2 * dp], pa[mt], b[0], b[1]);
          Ops::mma(st.o[mt][2 * dp + 1], pa[mt], b[2], b[3]);
        }
      }
    }
  }
}

template <int D, typename Elem>
__global__ void __launch_bounds__(32 * kWideWarps, 2)
flash_fwd_wide_kernel(const __grid_constant__ KernelArgs a) {
  using Cfg = TileConfig<D>;
  using Ops = ElemOps<Elem>;
  constexpr int kThreads = 32 * kWideWarps;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Elem* sQ = reinterpret_cast<Elem*>(smem_raw);
  Elem* sRing = sQ + kWideBlockM * D;

  const FlashFwdParams& p = a.p;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int stages = a.stages;
  const int mblock = a.n_mblocks - 1 - (int)blockIdx.x;  // heavy (causal) query blocks first
  const int h = blockIdx.y, b = blockIdx.z, hk = h / a.q_heads_per_kv;
  const int m0 = mblock * kWideBlockM;
  const int diag = p.seqlen_k - p.seqlen_q;  // causal: row i sees keys j <= i + diag
  int n_end = p.seqlen_k;
  if (p.causal) n_end = min(n_end, m0 + kWideBlockM + diag);
  const int n_tiles = n_end > 0 ? (n_end + kBlockN - 1) / kBlockN : 0;  // tiles the block loads
  const int row_lo = m0 + warp * kWideWarpRows;  // this warp's first query row
  // This warp computes tiles [0, w_tiles); tiles before w_full need no mask.
  int w_end = p.seqlen_k;
  if (p.causal) w_end = min(w_end, row_lo + kWideWarpRows + diag);
  const int w_tiles = min(n_tiles, w_end > 0 ? (w_end + kBlockN - 1) / kBlockN : 0);
  int w_full = p.seqlen_k / kBlockN;
  if (p.causal) w_full = min(w_full, max(0, row_lo + diag + 1) / kBlockN);

  const Elem* gQ = static_cast<const Elem*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
  const Elem* gK = static_cast<const Elem*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const Elem* gV = static_cast<const Elem*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  const uint32_t ring = smem_u32(sRing);
  auto fill = [&](int t, int slot) {
    if (t < n_tiles) {
      Elem* k = sRing + slot * 2 * Cfg::kTileElems;
      load_tile_async<D>(k, gK, p.k_seq_stride, t * kBlockN, kBlockN, p.seqlen_k, tid, kThreads);
      load_tile_async<D>(k + Cfg::kTileElems, gV, p.v_seq_stride, t * kBlockN, kBlockN, p.seqlen_k, tid, kThreads);
    }
  };
  // Prologue: Q + tile 0 (group 0), tiles 1..stages-2 (one group each; empty groups keep the count).
  load_tile_async<D>(sQ, gQ, p.q_seq_stride, m0, kWideBlockM, p.seqlen_q, tid, kThreads);
  for (int i = 0; i < stages - 1; ++i) {
    fill(i, i);
    cp_async_commit();
  }

  WideState<D> st;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
    for (int j = 0; j < Cfg::kOTiles; ++j) st.o[mt][j][0] = st.o[mt][j][1] = st.o[mt][j][2] = st.o[mt][j][3] = 0.f;
    st.row_max[mt][0] = st.row_max[mt][1] = -INFINITY;
    st.row_sum[mt][0] = st.row_sum[mt][1] = 0.f;
  }
  // Q A-fragments: x4 = rows 0-7 / 8-15 of the m tile at chunk 2kk, then at chunk 2kk+1 (as load_q_fragments).
  const WideOffsets lo = wide_offsets<D>(lane);
  const uint32_t sQw = smem_u32(sQ) + warp * kWideWarpRows * D * 2;

  int slot = 0;
  for (int i = 0; i < n_tiles; ++i) {
    cp_async_wait_dyn(stages - 2);  // tile i landed (this thread's copies)...
    __syncthreads();                // ...and everyone's; everyone is done with tile i-1
    fill(i + stages - 1, slot == 0 ? stages - 1 : slot - 1);
    cp_async_commit();
    if constexpr (WideState<D>::kQRegs) {
      if (i == 0) {
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int kk = 0; kk < Cfg::kQKSteps; ++kk)
            ldmatrix_x4(st.q[mt][kk], sQw + lo.q + lo.x(kk & 3) + (kk >> 2) * 128 + mt * 16 * D * 2);
      }
    }
    const uint32_t sK = ring + slot * 4 * Cfg::kTileElems, sV = sK + 2 * Cfg::kTileElems;
    if (i < w_full)
      wide_tile<D, Elem, false>(st, sQw, sK, sV, lo, a, row_lo, i * kBlockN, lane);
    else if (i < w_tiles)
      wide_tile<D, Elem, true>(st, sQw, sK, sV, lo, a, row_lo, i * kBlockN, lane);
    slot = (slot + 1 == stages) ? 0 : slot + 1;
  }
  cp_async_wait<0>();  // nothing of this thread in flight (only empty groups can remain)
  if (n_tiles == 0) __syncthreads();  // Q copies of all threads landed before the staging below

  // ---- epilogue: O / l -> this warp's own 32 rows of the Q tile -> 16-byte stores; LSE.
  const int g = lane >> 2;
  Elem* sO = sQ;
  __syncwarp();  // all lanes' ldmatrix reads of these rows are done
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    float inv[2], lse2[2];
    finish_rows(st.row_sum[mt], st.row_max[mt], a.scale_log2, inv, lse2);
    stage_o_rows<D>(sO, warp * kWideWarpRows + 16 * mt + g, lane, inv, [&](int j, int e) { return st.o[mt][j][e]; });
    write_lse_rows(p, b, h, row_lo + 16 * mt + g, lse2, lane);
  }
  __syncwarp();
  store_o_rows<D>(p, b, h, sO, warp * kWideWarpRows, row_lo, kWideWarpRows, lane);
}

}  // namespace flashcore::cuda::detail
