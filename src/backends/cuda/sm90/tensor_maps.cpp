// The Hopper kernel's TMA descriptors (host side): Q, K and V as 4-D tensor maps (head_dim, seqlen,
// heads, batch) with 64-column x kBlockM/kBlockN-row boxes and the 128-byte swizzle the kernel reads
// (32-column boxes and the 64-byte swizzle for the D = 32, 96 and 160 instances; the plan says which instance)
// (a box past head_dim is zero-filled: the kernel compiled for the next head dim reads zeros); packed
// (varlen) Q or K/V as one batch entry of total rows. The
// plan encodes them once per call (flash_fwd_plan); layouts TMA cannot describe are declined here,
// naming the tensor and the stride. Plain C++ against the CUDA headers (no kernels).
#include <cuda.h>  // CUtensorMap and its enums (types only: the encoder comes through the runtime)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>

#include "backends/cuda/backward/sm90/config.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/sm90/config.h"

namespace flashcore::cuda::detail {
namespace {

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiledFn encode_tiled_fn() {  // cuTensorMapEncodeTiled through the runtime (no libcuda link)
  static EncodeTiledFn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      f = nullptr;
    return reinterpret_cast<EncodeTiledFn>(f);
  }();
  return fn;
}

// Element types of the views: 16-bit (fp16, bf16) or bytes (FP8 e4m3, as UINT8: TMA only copies).
enum class TmaElem { F16, BF16, U8 };
TmaElem tma_elem(const FlashFwdParams& p) { return p.fp8 ? TmaElem::U8 : p.bf16 ? TmaElem::BF16 : TmaElem::F16; }
int elem_bytes(TmaElem e) { return e == TmaElem::U8 ? 1 : 2; }

// A [batch][heads][seqlen][D] view (element strides; the D stride is 1) as TMA sees it: dims innermost
// first and byte strides of dims 1..3; boxes of one swizzle row of row_bytes (128: 64 16-bit or 128 FP8
// columns; 64 at D = 32, 96 and 160, in the 64-byte swizzle) by box_rows.
struct TmaView {
  const char* name;
  const void* ptr;
  cuuint64_t dim[4];
  cuuint64_t stride[3];
  cuuint32_t box_rows;
  TmaElem elem;
  int row_bytes;
};

// Empty string if TMA can read the view, else why not (naming the tensor, the stride and its value).
std::string make_view(TmaView* v, const char* name, const void* ptr, int batch, int heads, int seqlen, int d,
                      long long batch_stride, long long head_stride, long long seq_stride, int box_rows,
                      TmaElem elem, int row_bytes = 128) {
  const std::string who = std::string("the Hopper kernel (TMA) needs ") + name;
  if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return who + " 16-byte aligned";
  const long long strides[3] = {seq_stride, head_stride, batch_stride};
  const int extents[3] = {seqlen, heads, batch};
  const char* sname[3] = {"seq_stride", "head_stride", "batch_stride"};
  const int bytes = elem_bytes(elem), multiple = 16 / bytes;  // strides in elements of 16 bytes
  *v = TmaView{name, ptr, {(cuuint64_t)d, (cuuint64_t)seqlen, (cuuint64_t)heads, (cuuint64_t)batch}, {}, (cuuint32_t)box_rows, elem,
               row_bytes};
  long long span = d;  // elements spanned by the inner dimensions: stand-in stride of extent-1 dims
  for (int i = 0; i < 3; ++i) {
    long long s = strides[i];
    if (extents[i] == 1) s = (span + multiple - 1) / multiple * multiple;  // never stepped: any valid stride will do
    if (s <= 0 || s % multiple != 0 || s * bytes >= (1ll << 40))
      return who + " " + sname[i] + " to be a positive multiple of " + std::to_string(multiple) +
             " elements (16 bytes), got " + std::to_string(strides[i]);
    v->stride[i] = (cuuint64_t)s * bytes;
    span = std::max(span, s * extents[i]);
  }
  return {};
}

std::string encode_view(CUtensorMap* map, const TmaView& v) {
  EncodeTiledFn enc = encode_tiled_fn();
  if (enc == nullptr) return "the Hopper kernel needs cuTensorMapEncodeTiled (driver entry point not found)";
  const cuuint32_t box[4] = {cuuint32_t(v.row_bytes / elem_bytes(v.elem)), v.box_rows, 1, 1};
  const CUtensorMapSwizzle swizzle = v.row_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : v.row_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                                         : CU_TENSOR_MAP_SWIZZLE_32B;
  const cuuint32_t estride[4] = {1, 1, 1, 1};
  const CUtensorMapDataType type = v.elem == TmaElem::U8     ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                   : v.elem == TmaElem::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                             : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = enc(map, type, 4,
                         const_cast<void*>(v.ptr), v.dim, v.stride, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                         swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return std::string("the Hopper kernel (TMA) needs ") + v.name + " in a layout cuTensorMapEncodeTiled accepts (error " +
           std::to_string((int)r) + ")";
  return {};
}

// The encodings of views that all passed make_view, in order, stopping at the first that fails.
std::string encode_views(std::initializer_list<std::pair<CUtensorMap*, const TmaView*>> maps) {
  for (const auto& [map, view] : maps) {
    const std::string why = encode_view(map, *view);
    if (!why.empty()) return why;
  }
  return {};
}

// Every layout check first (they need no driver), then the three encodings. cd, wgs: the compiled head
// dim and consumer warpgroups of the instance that reads them (its block rows, tiles and swizzle row).
// o_tma (not null): O's map too where the kernel can store O by TMA, *o_tma saying whether it did: the
// D = 64 instances (their staging rows are the 128-byte swizzle's 128-byte rows), 16-bit, O not packed
// (every sequence then has seqlen_q rows, and TMA drops the rows past them: an item's rows past the last
// query are never written), O in a layout TMA can write (else the warps store it: no error).
std::string encode_maps(const FlashFwdParams& p, int cd, int wgs, HopperMaps* m, bool* o_tma) {
  const int bm = sm90_block_m(cd, p.fp8, wgs);  // box rows of Q
  // Packed Q (cu_seqlens_q) or K/V (cu_seqlens_k): one batch entry of total rows; the kernel starts a
  // sequence at row cu_seqlens[b]. Cache lengths keep the batch layout (seqlen_k rows per entry).
  // Paged K/V: the pools as (D, page_size, heads, num_pages), boxes of sm90_paged_box_rows rows (a
  // K/V tile is loaded in pieces, each inside one page; the kernel finds a key's page with a shift,
  // so page sizes that are not a power of two run on the reference).
  const bool packed_q = p.cu_seqlens_q != nullptr, packed_k = p.cu_seqlens_k != nullptr;
  const bool paged = p.block_table != nullptr;
  if (packed_k && p.total_k < 1) return "the Hopper kernel needs total_k (rows of packed K/V) with cu_seqlens_k";
  if (paged && (p.page_size < 16 || (p.page_size & (p.page_size - 1)) != 0 || p.num_pages < 1))
    return "the Hopper kernel reads paged K/V with a power-of-two page_size >= 16 and num_pages >= 1, got page_size " +
           std::to_string(p.page_size) + ", num_pages " + std::to_string(p.num_pages);
  const int bn = paged ? sm90_paged_box_rows(cd, p.page_size) : sm90_block_n(cd, p.fp8);  // box rows of K, V
  const int q_batch = packed_q ? 1 : p.batch, q_rows = packed_q ? p.total_q : p.seqlen_q;
  const int k_batch = paged ? p.num_pages : packed_k ? 1 : p.batch;
  const int k_rows = paged ? p.page_size : packed_k ? p.total_k : p.seqlen_k;
  const TmaElem el = tma_elem(p);
  const int rb = sm90_row_bytes(cd, p.fp8);  // the compiled head dim's swizzle row
  TmaView q, k, v;
  std::string why = make_view(&q, "q", p.q, q_batch, p.heads_q, q_rows, p.head_dim, p.q_batch_stride,
                              p.q_head_stride, p.q_seq_stride, bm, el, rb);
  if (why.empty())
    why = make_view(&k, "k", p.k, k_batch, p.heads_kv, k_rows, p.head_dim, p.k_batch_stride, p.k_head_stride,
                    p.k_seq_stride, bn, el, rb);
  if (why.empty())
    why = make_view(&v, "v", p.v, k_batch, p.heads_kv, k_rows, p.head_dim, p.v_batch_stride, p.v_head_stride,
                    p.v_seq_stride, bn, el, rb);
  if (why.empty() && p.fp8) return encode_views({{&m->q, &q}, {&m->k, &k}});  // V: its transposed copy, per call
  if (why.empty()) why = encode_views({{&m->q, &q}, {&m->k, &k}, {&m->v, &v}});
  if (why.empty() && o_tma != nullptr) {
    TmaView o;
    *o_tma = cd == 64 && !packed_q &&
             make_view(&o, "o", p.o, p.batch, p.heads_q, p.seqlen_q, p.head_dim, p.o_batch_stride, p.o_head_stride,
                       p.o_seq_stride, kOStoreRows, el, 128).empty() &&
             encode_view(&m->o, o).empty();
  }
  return why;
}

// The backward: Q and dO in boxes of kBlockM rows, K and V of kBlockN (backward/sm90/config.h). Packed
// Q/dO (cu_seqlens_q) or K/V (cu_seqlens_k) as one batch entry of total rows, as for the forward; cache
// lengths keep the batch layout (flash_bwd_plan declines paged K/V).
std::string encode_bwd_maps(const FlashBwdParams& b, BwdHopperMaps* m) {
  const FlashFwdParams& p = b.fwd;
  const int bm = BwdHopperConfig<64>::kBlockM, bn = BwdHopperConfig<64>::kBlockN;
  static_assert(BwdHopperConfig<64>::kBlockM == BwdHopperConfig<128>::kBlockM &&
                    BwdHopperConfig<64>::kBlockN == BwdHopperConfig<128>::kBlockN,
                "one box size for every head dim");
  const bool packed_q = p.cu_seqlens_q != nullptr, packed_k = p.cu_seqlens_k != nullptr;
  if (packed_q && p.total_q < 1) return "the Hopper backward needs total_q (rows of packed Q) with cu_seqlens_q";
  if (packed_k && p.total_k < 1) return "the Hopper backward needs total_k (rows of packed K/V) with cu_seqlens_k";
  const int q_batch = packed_q ? 1 : p.batch, q_rows = packed_q ? p.total_q : p.seqlen_q;
  const int k_batch = packed_k ? 1 : p.batch, k_rows = packed_k ? p.total_k : p.seqlen_k;
  const TmaElem el = p.bf16 ? TmaElem::BF16 : TmaElem::F16;
  TmaView q, k, v, d_o;
  std::string why = make_view(&q, "q", p.q, q_batch, p.heads_q, q_rows, p.head_dim, p.q_batch_stride,
                              p.q_head_stride, p.q_seq_stride, bm, el);
  if (why.empty())
    why = make_view(&k, "k", p.k, k_batch, p.heads_kv, k_rows, p.head_dim, p.k_batch_stride, p.k_head_stride,
                    p.k_seq_stride, bn, el);
  if (why.empty())
    why = make_view(&v, "v", p.v, k_batch, p.heads_kv, k_rows, p.head_dim, p.v_batch_stride, p.v_head_stride,
                    p.v_seq_stride, bn, el);
  if (why.empty())
    why = make_view(&d_o, "d_o", b.d_o, q_batch, p.heads_q, q_rows, p.head_dim, b.do_batch_stride,
                    b.do_head_stride, b.do_seq_stride, bm, el);
  if (why.empty()) why = encode_views({{&m->q, &q}, {&m->k, &k}, {&m->v, &v}, {&m->d_o, &d_o}});
  return why;
}

}  // namespace

std::string sm90_bwd_tensor_maps(const FlashBwdParams& b, void* maps) {
  static_assert(sizeof(BwdHopperMaps) == 4 * 128, "FlashBwdPlan::tensor_maps holds 4 of them");
  BwdHopperMaps m;
  const std::string why = encode_bwd_maps(b, &m);
  if (why.empty() && maps != nullptr) std::memcpy(maps, static_cast<const void*>(&m), sizeof m);
  return why;
}

std::string sm90_fp8_vt_map(const FlashFwdParams& p, const void* vt, int keys_pad, void* map) {
  // Vᵀ [batch][heads_kv][head_dim][keys_pad] bytes as TMA dims (keys_pad, head_dim, heads_kv, batch); a box
  // is 128 keys (one 128-byte row: the kernel's kBlockN) x 128 head-dim rows (rows past head_dim read as 0).
  static_assert(HopperFp8Config::kBlockN == 128, "a Vᵀ box row is one tile of keys");
  TmaView v;
  const long long row = keys_pad;
  std::string why = make_view(&v, "the transposed V", vt, p.batch, p.heads_kv, p.head_dim, keys_pad,
                              row * p.head_dim * p.heads_kv, row * p.head_dim, row, kHopperFp8HeadDim, TmaElem::U8);
  if (why.empty()) why = encode_view(static_cast<CUtensorMap*>(map), v);
  return why;
}

std::string sm90_tensor_maps(const FlashFwdParams& p, void* maps, int compiled_dim, int wgs, bool* o_tma) {
  static_assert(sizeof(CUtensorMap) == 128 && alignof(CUtensorMap) <= 128, "FlashFwdPlan::tensor_maps holds 4 of them");
  static_assert(sizeof(HopperMaps) == 4 * sizeof(CUtensorMap), "FlashFwdPlan::tensor_maps is copied into HopperMaps");
  HopperMaps m;
  bool with_o = false;
  const std::string why = encode_maps(p, compiled_dim > 0 ? compiled_dim : hopper_head_dim(p.head_dim), wgs, &m,
                                      o_tma != nullptr && !p.fp8 ? &with_o : nullptr);
  if (o_tma != nullptr) *o_tma = why.empty() && with_o;
  if (why.empty() && maps != nullptr) {
    CUtensorMap* out = static_cast<CUtensorMap*>(maps);
    out[0] = m.q;
    out[1] = m.k;
    out[2] = m.v;
    if (with_o) out[3] = m.o;
  }
  return why;
}

}  // namespace flashcore::cuda::detail
