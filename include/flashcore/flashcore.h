/* FlashCore C API: fused scaled-dot-product attention for code that does not use C++.
 *
 * Same semantics as the C++ API (flashcore.hpp): Q (B,Lq,Hq,D), K/V (B,Lk,Hkv,D), O (B,Lq,Hq,D)
 * through element strides; bottom-right aligned causal mask; rows that see no key give O = 0 and
 * LSE = -inf. The variants (sliding window, soft-capping, ALiBi, attention sinks) and the sequence
 * layouts (varlen Q, varlen K/V, KV-cache lengths, paged K/V) are the last fields of fc_problem; a
 * zeroed tail (as fc_problem_init leaves it) means none of them. FP8 inputs (FC_E4M3) read the four
 * fields after them (descale_q/k/v, out_dtype; fc_problem_init sets 1, 1, 1, FC_BF16), other dtypes
 * never do. Every function returns FC_OK or an
 * error code; fc_last_error() gives the message (naming the offending field) of the last failure on
 * the calling thread. */
#ifndef FLASHCORE_FLASHCORE_H
#define FLASHCORE_FLASHCORE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* FC_E4M3: OCP FP8 e4m3 ("e4m3fn") inputs, one byte each, forward only: see descale_q/k/v and
 * out_dtype at the end of fc_problem. */
typedef enum { FC_F32 = 0, FC_F16 = 1, FC_BF16 = 2, FC_E4M3 = 3 } fc_dtype;
typedef enum { FC_LOC_AUTO = 0, FC_LOC_HOST = 1, FC_LOC_DEVICE = 2 } fc_location;
typedef enum { FC_OK = 0, FC_ERROR_INVALID = 1, FC_ERROR_BACKEND = 2, FC_ERROR_INTERNAL = 3 } fc_status;

typedef struct {
  int64_t batch, seq, head; /* element strides; the head-dim stride is 1 */
} fc_strides;

typedef struct {
  int batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim;
  fc_dtype dtype;
  int causal;  /* 0 or 1 */
  float scale; /* 0: 1/sqrt(head_dim) */
  fc_strides q, k, v, o;
  /* Variants, as Problem and Tensors in flashcore.hpp. */
  int window;                    /* 0: no sliding window (window_left/right ignored); 1: window */
  int window_left, window_right; /* with window = 1: keys left/right of the diagonal, -1 = unbounded */
  float softcap;                 /* 0: none; else logits x -> softcap * tanh(x / softcap) */
  const float* alibi_slopes;     /* NULL, or heads_q ALiBi slopes in the memory of q */
  const float* sinks;            /* NULL, or heads_q attention-sink logits in the memory of q */
  /* Sequences of different lengths, as Problem and Tensors in flashcore.hpp ("Sequences"); 0 / NULL:
   * off. seqlen_q and seqlen_k are then bounds: every sequence's length is <= them.
   *   varlen Q:   total_q > 0, cu_seqlens_q (batch+1 offsets): Q and O packed (total_q, heads_q,
   *               head_dim) with strides q.seq, q.head (q.batch, o.batch unused); LSE (heads_q, total_q).
   *   varlen K/V: total_k > 0, cu_seqlens_k (batch+1 offsets): K and V packed (total_k, heads_kv, head_dim).
   *   KV cache:   seqlens_k (batch lengths): sequence b uses its first seqlens_k[b] keys.
   *   paged K/V:  page_size > 0 (a multiple of 16), num_pages, pages_per_seq, block_table (batch x
   *               pages_per_seq page indices): K and V are pools (num_pages, page_size, heads_kv,
   *               head_dim) whose k.batch / v.batch strides step between pages (page_size * heads_kv *
   *               head_dim for contiguous pools; fc_problem_init sets seqlen_k * heads_kv * head_dim). */
  int total_q, total_k;
  int page_size, num_pages, pages_per_seq;
  int trust_sequences;          /* 0: arrays in device memory are copied to the host and checked before
                                 * any work (Options::check_sequences); 1: trusted (a decode loop that
                                 * knows they are valid: invalid ones then read outside the tensors).
                                 * Host arrays are always checked. */
  const int32_t* cu_seqlens_q;  /* NULL, or batch+1 int32 offsets in the memory of q */
  const int32_t* cu_seqlens_k;  /* NULL, or batch+1 int32 offsets in the memory of q */
  const int32_t* seqlens_k;     /* NULL, or batch int32 cache lengths in the memory of q */
  const int32_t* block_table;   /* NULL, or batch x pages_per_seq int32 page indices in the memory of q */
  int deterministic;            /* backward pass (Options::deterministic): 1 = bitwise the same gradients every
                                 * call; 0 (fc_problem_init) = fastest (cuda-flash sums dQ with atomics). */
  /* FP8 inputs (dtype FC_E4M3; read only then, as Problem in flashcore.hpp): Q, K, V hold e4m3 bytes
   * standing for descale_q/k/v times their value (per-tensor factors, finite and > 0), so attention is
   * softmax(scale * descale_q * descale_k * Q K^T + mask) * descale_v * V; O is of out_dtype (FC_F16 or
   * FC_BF16). fc_problem_init sets the descales to 1 and out_dtype to FC_BF16. No backward pass. */
  float descale_q, descale_k, descale_v;
  fc_dtype out_dtype;
} fc_problem;

/* Fills a descriptor for contiguous (B,S,H,D) tensors, with no variant and no sequence layout. */
void fc_problem_init(fc_problem* p, int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k, int head_dim,
                     fc_dtype dtype, int causal);

/* Computes attention. lse may be NULL; backend may be NULL or "" (automatic, or the
 * FLASHCORE_BACKEND environment variable); stream is a cudaStream_t for device data (NULL: default). */
fc_status fc_attention(const fc_problem* p, const void* q, const void* k, const void* v, void* o, float* lse,
                       fc_location location, const char* backend, void* stream);

/* fc_attention for callers that know how large their buffers are (the Fortran module uses it):
 * element_bytes is the size of one element of the buffers (4 for fp32; 2 for fp16 or bf16 bits;
 * 1 for FC_E4M3, whose O buffer holds 2-byte elements of out_dtype), and each *_elems the number of
 * elements its buffer holds (lse_elems is ignored when lse is NULL).
 * A dtype whose element size differs, or a problem whose layout reaches past a buffer, is
 * FC_ERROR_INVALID naming the tensor, before any work. The lengths are those of the problem's layout:
 * packed Q and O total_q rows, packed K and V total_k rows, paged K and V num_pages x page_size rows,
 * the LSE heads_q x total_q with packed Q (batch x heads_q x seqlen_q otherwise). (The sequence arrays'
 * lengths follow from batch and pages_per_seq.) */
fc_status fc_attention_sized(const fc_problem* p, int element_bytes, const void* q, int64_t q_elems, const void* k,
                             int64_t k_elems, const void* v, int64_t v_elems, void* o, int64_t o_elems, float* lse,
                             int64_t lse_elems, fc_location location, const char* backend, void* stream);

/* The backward pass (flashcore.hpp, run_backward): from the forward call's q, k, v, its output o and
 * its lse (required), and d_o = dL/dO (o's strides), computes dq, dk, dv (q's, k's, v's strides; dk and
 * dv summed over each KV head's group) and, when dsinks is not NULL, the sinks' gradient (heads_q fp32;
 * needs p->sinks). Every output is overwritten. With p->deterministic = 1, bitwise the same gradients every
 * call; with 0 (the default) cuda-flash sums dQ with fp32 atomics (its last bits vary from call to call;
 * head dim 96 always runs the deterministic path).
 * Paged K/V (page_size > 0) and FC_E4M3 inputs have no backward pass (FC_ERROR_INVALID). */
fc_status fc_attention_backward(const fc_problem* p, const void* q, const void* k, const void* v, const void* o,
                                const float* lse, const void* d_o, void* dq, void* dk, void* dv, float* dsinks,
                                fc_location location, const char* backend, void* stream);

/* fc_attention_backward for callers that know how large their buffers are (the Fortran module uses
 * it), as fc_attention_sized for the forward: element_bytes is the size of q's, k's, v's, o's, d_o's,
 * dq's, dk's and dv's elements (4 for fp32, 2 for fp16 or bf16 bits), each *_elems the number of
 * elements its buffer holds; d_o and dq are checked against o's and q's layout, dk and dv against
 * k's and v's, dsinks (when not NULL) must hold heads_q values. A buffer that is too small is
 * FC_ERROR_INVALID naming it, before any work and with no output written. */
fc_status fc_attention_backward_sized(const fc_problem* p, int element_bytes, const void* q, int64_t q_elems,
                                      const void* k, int64_t k_elems, const void* v, int64_t v_elems, const void* o,
                                      int64_t o_elems, const float* lse, int64_t lse_elems, const void* d_o,
                                      int64_t d_o_elems, void* dq, int64_t dq_elems, void* dk, int64_t dk_elems,
                                      void* dv, int64_t dv_elems, float* dsinks, int64_t dsinks_elems,
                                      fc_location location, const char* backend, void* stream);

/* Name of the backend that ran the last successful fc_attention or fc_attention_backward call on this thread. */
const char* fc_last_backend(void);
/* Message of the last error on this thread ("" when none). */
const char* fc_last_error(void);

/* Initializes Kokkos if nobody has (returns 1 when this call did), and finalizes what it started. */
int fc_initialize(void);
void fc_finalize(void);
const char* fc_version(void);

#ifdef __cplusplus
}
#endif
#endif
