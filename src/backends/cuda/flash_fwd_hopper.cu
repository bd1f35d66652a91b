// FlashCore forward attention, Hopper-native kernel (sm_90a only: warpgroup MMA, wgmma).
//
// Same algorithm as flash_fwd_kernel.cuh (online softmax over 64-key K/V tiles), different machine:
//
//   block = 3 warpgroups x 64 query rows = 192 rows of one (batch, head); every thread also loads K/V
//   S  = Q · Kᵀ    wgmma m64n64k16, Q and K straight from shared memory (no register fragments)
//   P  = softmax(S) in registers (the accumulator layout equals the mma.sync one: same masking code)
//   O += P · V     wgmma m64nDk16 with P from registers and V from shared memory (MN-major, transposed)
//
// Pipelining inside a warpgroup (wgmma is asynchronous): step i issues S(i+1) = Q·K(i+1)ᵀ, rescales O,
// issues P(i)·V(i), waits for S(i+1) only and runs the softmax of tile i+1 while P(i)·V(i) is on the
// tensor cores. The S registers are declared inside the step (never loop-carried): when the softmax
// rewrote loop-carried S registers while a wgmma group was in flight, ptxas 13.0 serialised every wgmma
// of the kernel (C7513). Experimental: slower than the wide mma.sync kernel except at 16k rows, D=128
// (perf/dev/NOTES.md, v7), so Auto does not pick it; backend `cuda-flash-hopper` runs it when forced.
//
// Shared memory, all tiles in the "core-matrix" layout wgmma reads without swizzling: element (row, col)
// of a [rows x D] tile at byte ((row/8)·(D/8) + col/8)·128 + (row%8)·16 + (col%8)·2: 8x8 core matrices of
// 128 contiguous bytes (conflict-free for wgmma and for the cp.async writes, see load_cm_tile).
//   Q [192 x D] | K slot 0 | K slot 1 | V slot 0 | V slot 1        (D=128: 112 KB, D=64: 56 KB)
// K(t) lives in slot t%2, V(t) in slot t%2. Step i loads K(i+2) and V(i+1), one step ahead of use.
#include <map>
#include <mutex>

#include "flash_fwd_hopper.h"
#include "flash_fwd_kernel.cuh"

namespace flashcore::cuda::detail {
namespace {

#include "wgmma_ops.inc"

template <int D>
struct HopperConfig {
  static constexpr int kWarpgroups = 3;                   // consumer warpgroups; every thread also loads
  static constexpr int kBlockM = 64 * kWarpgroups;        // query rows per block
  static constexpr int kThreads = 128 * kWarpgroups;
  static constexpr int kMinBlocksPerSM = 1;               // 384 threads: <= 168 registers per thread
                                                          // (D=128 spills 36 bytes, nvcc 13.0)
  static constexpr uint32_t kRowGroupBytes = 16 * D;      // 8 rows x D of core matrices
  static constexpr uint32_t kQBytes = kBlockM * D * 2;
  static constexpr uint32_t kTileBytes = kBlockN * D * 2;  // one K or V tile
  static constexpr size_t kSmemBytes = kQBytes + 4 * size_t(kTileBytes);
  static constexpr int kOAcc = D / 2;                     // O accumulator floats per thread (64 x D / 128)
};

// Descriptor strides. K-major operands (Q, K): LBO = step between core matrices along K (the head dim,
// 128 B), SBO = step between 8-row groups (16·D B). V is the MN-major B operand of P·V (N = head dim,
// K = keys): LBO = step along its K (keys: 16·D B), SBO = step along N (128 B). Checked on the device by
// perf/dev/wgmma_probe.cu (H200: both operands exact; the swapped order faults).

__device__ __forceinline__ uint64_t make_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
  // bits 0-13 address >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4, 49-51 base offset 0, 62-63 swizzle 0 (none)
  return uint64_t((saddr & 0x3FFFFu) >> 4) | (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// Keeps the compiler from moving register reads/writes across an asynchronous wgmma's issue or wait.
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}
// Generic-proxy writes (cp.async, st.shared) -> visible to the async proxy (wgmma operand reads).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

template <typename Elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[32], const uint32_t* a, uint64_t db) { wgmma_rs_m64n64k16(o, a, db, Elem{}); }
template <typename Elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[64], const uint32_t* a, uint64_t db) { wgmma_rs_m64n128k16(o, a, db, Elem{}); }

// Rows [row0, row0 + rows) of a [seqlen x D] matrix (row stride `stride`) -> core-matrix tile at `s`; rows
// at or past `seqlen` are zero-filled. Chunk index idx = (row group · D/8 + column chunk) · 8 + row % 8 is
// also the destination in 16-byte units: 8 consecutive threads fill one 128-byte core matrix (no bank
// conflict) from 8 rows, and one warp reads 4 x 16 contiguous bytes of each of 8 rows (full sectors).
template <int D, typename Elem>
__device__ __forceinline__ void load_cm_tile(uint32_t s, const Elem* g, long long stride, int row0, int rows,
                                             int seqlen, int tid, int nthr) {
  constexpr int kChunks = D / 8;
#pragma unroll 4
  for (int idx = tid; idx < rows * kChunks; idx += nthr) {
    const int rg = idx / (8 * kChunks), w = idx % (8 * kChunks);
    const int r = rg * 8 + (w & 7), c = w >> 3;
    const bool ok = row0 + r < seqlen;
    cp_async_16(s + idx * 16, ok ? g + (long long)(row0 + r) * stride + c * 8 : g, ok);
  }
}

// ------------------------------------------------------------------------------------------------
// The kernel. Warp roles: warpgroup wg = warp / 4 owns query rows m0 + 64·wg .. +63 (its warp w & 3 the
// accumulator rows 16·(w & 3) + lane/4 (+8)); every thread also issues its share of the cp.async loads.
// ------------------------------------------------------------------------------------------------
template <int D, typename Elem>
__global__ void __launch_bounds__(HopperConfig<D>::kThreads, HopperConfig<D>::kMinBlocksPerSM)
flash_fwd_hopper_kernel(const __grid_constant__ KernelArgs a) {
  using Cfg = HopperConfig<D>;
  using Ops = ElemOps<Elem>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const uint32_t sQ = smem_u32(smem_raw);
  const uint32_t sK = sQ + Cfg::kQBytes;            // K slot s at sK + s·kTileBytes
  const uint32_t sV = sK + 2 * Cfg::kTileBytes;     // V slot s at sV + s·kTileBytes

  const FlashFwdParams& p = a.p;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
  const int g = lane >> 2, t = lane & 3;
  const int mblock = a.n_mblocks - 1 - (int)blockIdx.x;  // heavy (causal) query blocks first
  const int h = blockIdx.y, b = blockIdx.z, hk = h / a.kv_group;
  const int m0 = mblock * Cfg::kBlockM;
  const int diag = p.seqlen_k - p.seqlen_q;  // causal: row i sees keys j <= i + diag
  int n_end = p.seqlen_k;
  if (p.causal) n_end = min(n_end, m0 + Cfg::kBlockM + diag);
  const int n_tiles = n_end > 0 ? (n_end + kBlockN - 1) / kBlockN : 0;  // tiles the block loads
  // This warpgroup computes tiles [0, wg_tiles); tiles before wg_full need no mask.
  const int wg_row0 = m0 + 64 * wg;
  int wg_end = p.seqlen_k;
  if (p.causal) wg_end = min(wg_end, wg_row0 + 64 + diag);
  const int wg_tiles = min(n_tiles, wg_end > 0 ? (wg_end + kBlockN - 1) / kBlockN : 0);
  int wg_full = p.seqlen_k / kBlockN;
  if (p.causal) wg_full = min(wg_full, max(0, wg_row0 + diag + 1) / kBlockN);
  const int row_lo = wg_row0 + 16 * (warp & 3);  // this warp's first accumulator row

  const Elem* gQ = static_cast<const Elem*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
  const Elem* gK = static_cast<const Elem*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const Elem* gV = static_cast<const Elem*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  auto load_k = [&](int tile) {
    load_cm_tile<D>(sK + (tile & 1) * Cfg::kTileBytes, gK, p.k_seq_stride, tile * kBlockN, kBlockN, p.seqlen_k, tid, Cfg::kThreads);
  };
  auto load_v = [&](int tile) {
    load_cm_tile<D>(sV + (tile & 1) * Cfg::kTileBytes, gV, p.v_seq_stride, tile * kBlockN, kBlockN, p.seqlen_k, tid, Cfg::kThreads);
  };

  // ---- prologue: group 0 = Q, K(0); group 1 = K(1), V(0)
  load_cm_tile<D>(sQ, gQ, p.q_seq_stride, m0, Cfg::kBlockM, p.seqlen_q, tid, Cfg::kThreads);
  if (n_tiles > 0) load_k(0);
  cp_async_commit();
  if (n_tiles > 1) load_k(1);
  if (n_tiles > 0) load_v(0);
  cp_async_commit();
  cp_async_wait<1>();
  fence_proxy_async();
  __syncthreads();

  float o[Cfg::kOAcc];     // O accumulator (64 rows x D per warpgroup)
  uint32_t pf[16];         // P of the next P·V as its A operand: 4 k16 steps x 4 registers
#pragma unroll
  for (int i = 0; i < Cfg::kOAcc; ++i) o[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  float alpha[2] = {1.f, 1.f};  // rescale of O before the next P·V

  const uint64_t q_desc = make_desc(sQ + wg * 8 * Cfg::kRowGroupBytes, 128, Cfg::kRowGroupBytes);
  const uint64_t k_desc = make_desc(sK, 128, Cfg::kRowGroupBytes);
  const uint64_t v_desc = make_desc(sV, Cfg::kRowGroupBytes, 128);
  // Descriptor address fields are in 16-byte units: adding (bytes >> 4) moves the start address.
  auto issue_qk = [&](float (&s)[32], int tile) {
    const uint64_t kd = k_desc + (((tile & 1) * Cfg::kTileBytes) >> 4);
    wgmma_ss_m64n64k16_init(s, q_desc, kd, Elem{});
#pragma unroll
    for (int kk = 1; kk < D / 16; ++kk) wgmma_ss_m64n64k16(s, q_desc + kk * 16, kd + kk * 16, 1, Elem{});
  };
  auto issue_pv = [&](int tile) {
    const uint64_t vd = v_desc + (((tile & 1) * Cfg::kTileBytes) >> 4);
#pragma unroll
    for (int j = 0; j < 4; ++j) wgmma_pv<Elem>(o, pf + 4 * j, vd + ((2 * j * Cfg::kRowGroupBytes) >> 4));
  };

  const float sl2 = a.scale_log2;
  // Mask (tiles from wg_full on), online softmax of S(tile) in place, alpha for O. Tiles this warpgroup
  // does not need (past wg_tiles) leave the state alone and give P = 0.
  auto softmax = [&](float (&s)[32], int tile) {
    alpha[0] = alpha[1] = 1.f;
    if (tile >= wg_tiles) {
#pragma unroll
      for (int j = 0; j < 32; ++j) s[j] = 0.f;
      return;
    }
    if (tile >= wg_full) {  // causal diagonal / key tail: s[4j + e] is key tile·64 + 8j + 2t + (e & 1), row g + 8(e >> 1)
      const int seqlen_k = p.seqlen_k, r0 = row_lo + g;
      const int lim0 = p.causal ? min(seqlen_k - 1, r0 + diag) : seqlen_k - 1;
      const int lim1 = p.causal ? min(seqlen_k - 1, r0 + 8 + diag) : seqlen_k - 1;
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = tile * kBlockN + 8 * j + 2 * t + e;
          if (col > lim0) s[4 * j + e] = -INFINITY;
          if (col > lim1) s[4 * j + 2 + e] = -INFINITY;
        }
    }
    // rows g and g+8 (a row's 64 keys live in the 4 threads of a quad)
    float mx[2] = {row_max[0], row_max[1]};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      mx[0] = fmaxf(mx[0], fmaxf(s[4 * j], s[4 * j + 1]));
      mx[1] = fmaxf(mx[1], fmaxf(s[4 * j + 2], s[4 * j + 3]));
    }
    float ms[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      ms[r] = (mx[r] == -INFINITY) ? 0.f : mx[r] * sl2;  // all-masked so far: exp2(-inf - 0) = 0, not NaN
      alpha[r] = fast_exp2(row_max[r] * sl2 - ms[r]);
      row_max[r] = mx[r];
    }
    float sum[2] = {0.f, 0.f};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      s[4 * j + 0] = fast_exp2(fmaf(s[4 * j + 0], sl2, -ms[0]));
      s[4 * j + 1] = fast_exp2(fmaf(s[4 * j + 1], sl2, -ms[0]));
      s[4 * j + 2] = fast_exp2(fmaf(s[4 * j + 2], sl2, -ms[1]));
      s[4 * j + 3] = fast_exp2(fmaf(s[4 * j + 3], sl2, -ms[1]));
      sum[0] += s[4 * j + 0] + s[4 * j + 1];
      sum[1] += s[4 * j + 2] + s[4 * j + 3];
    }
    row_sum[0] = row_sum[0] * alpha[0] + sum[0];
    row_sum[1] = row_sum[1] * alpha[1] + sum[1];
  };
  // C-fragments of S tiles 2k, 2k+1 = the A-fragment of k16 step k (as in the mma.sync kernel)
  auto pack_p = [&](const float (&s)[32]) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      pf[4 * k + 0] = Ops::pack(s[8 * k + 0], s[8 * k + 1]);
      pf[4 * k + 1] = Ops::pack(s[8 * k + 2], s[8 * k + 3]);
      pf[4 * k + 2] = Ops::pack(s[8 * k + 4], s[8 * k + 5]);
      pf[4 * k + 3] = Ops::pack(s[8 * k + 6], s[8 * k + 7]);
    }
  };

  {  // tile 0: S, softmax, P (the S registers are fresh in every step: never loop-carried, see header)
    float s[32];
    wgmma_fence();
    issue_qk(s, 0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(s);
    softmax(s, 0);
    pack_p(s);
  }
  for (int i = 0; i < n_tiles; ++i) {
    cp_async_wait<0>();   // K(i+1), V(i) landed (this thread's copies)...
    fence_proxy_async();  // ...visible to wgmma...
    __syncthreads();      // ...for everyone's copies; both warpgroups are done with K(i) and V(i-1)
    if (i + 2 < n_tiles) load_k(i + 2);
    if (i + 1 < n_tiles) load_v(i + 1);
    cp_async_commit();
    float s[32];
    wgmma_fence();
    issue_qk(s, i + 1);  // past the last tile: stale K, result ignored
    wgmma_commit();
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {  // O is idle: P(i-1)·V(i-1) completed in the last step
      o[4 * j + 0] *= alpha[0]; o[4 * j + 1] *= alpha[0];
      o[4 * j + 2] *= alpha[1]; o[4 * j + 3] *= alpha[1];
    }
    wgmma_fence();
    issue_pv(i);
    wgmma_commit();
    wgmma_wait<1>();  // S(i+1) done; P(i)·V(i) runs under the softmax
    fence_regs(s);
    softmax(s, i + 1);
    wgmma_wait<0>();  // P(i)·V(i) done: pf may be overwritten
    fence_regs(o);
    fence_regs(pf);
    pack_p(s);
  }
  cp_async_wait<0>();
  __syncthreads();  // every wgmma of both warpgroups has read Q: its region takes the output staging

  // ---- epilogue: O / l -> this warp's 16 rows of the Q region (row-major, swizzled) -> 16-byte stores
  float inv[2], lse2[2];
  finish_rows(row_sum, row_max, sl2, inv, lse2);
  Elem* sO = reinterpret_cast<Elem*>(smem_raw);
  stage_o_rows<D>(sO, row_lo - m0 + g, lane, inv, [&](int j, int e) { return o[4 * j + e]; });
  write_lse_rows(p, b, h, row_lo + g, lse2, lane);
  __syncwarp();
  store_o_rows<D>(p, b, h, sO, row_lo - m0, row_lo, 16, lane);
}

template <int D, typename Elem>
cudaError_t launch_typed(const KernelArgs& args, int device, cudaStream_t stream) {
  using Cfg = HopperConfig<D>;
  void (*kernel)(KernelArgs) = flash_fwd_hopper_kernel<D, Elem>;
  const cudaError_t e = raise_smem_limit(reinterpret_cast<const void*>(kernel), device, Cfg::kSmemBytes);
  if (e != cudaSuccess) return e;
  const dim3 grid((unsigned)args.n_mblocks, (unsigned)args.p.heads_q, (unsigned)args.p.batch);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace

int hopper_block_m(int head_dim) { return head_dim == 64 ? HopperConfig<64>::kBlockM : HopperConfig<128>::kBlockM; }

size_t hopper_smem_bytes(int head_dim) {
  return head_dim == 64 ? HopperConfig<64>::kSmemBytes : HopperConfig<128>::kSmemBytes;
}

bool hopper_kernel_available(int device) {
  static std::mutex m;
  static std::map<int, bool> cache;
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(device);
  if (it != cache.end()) return it->second;
  int prev = -1;
  bool ok = cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(device) == cudaSuccess;
  if (ok) {
    cudaFuncAttributes attr{};
    ok = cudaFuncGetAttributes(&attr, flash_fwd_hopper_kernel<64, __half>) == cudaSuccess;
    if (!ok) cudaGetLastError();  // no sm_90a image for this device: not an error of the caller
    cudaSetDevice(prev);
  }
  cache[device] = ok;
  return ok;
}

cudaError_t launch_hopper(const KernelArgs& args, int device, cudaStream_t stream) {
  if (args.p.head_dim == 64)
    return args.p.bf16 ? launch_typed<64, __nv_bfloat16>(args, device, stream) : launch_typed<64, __half>(args, device, stream);
  return args.p.bf16 ? launch_typed<128, __nv_bfloat16>(args, device, stream) : launch_typed<128, __half>(args, device, stream);
}

}  // namespace flashcore::cuda::detail
