// The C API over the C++ one.
#include "flashcore/flashcore.h"

#include <type_traits>

#include "core/internal.hpp"
#include "flashcore/flashcore.hpp"

// The sequence arrays are int32 in C and int in C++: the same type on every platform FlashCore builds on.
static_assert(std::is_same<std::int32_t, int>::value, "fc_problem's int32_t arrays are Tensors' int arrays");

namespace {

thread_local std::string t_error;
thread_local std::string t_backend;

flashcore::Strides to_cpp(const fc_strides& s) { return {s.batch, s.seq, s.head}; }
fc_strides to_c(const flashcore::Strides& s) { return {s.batch, s.seq, s.head}; }

// An fc_dtype field of the C descriptor; any other value is an Error naming the field.
flashcore::DType to_cpp(fc_dtype dt, const char* field) {
  switch (dt) {
    case FC_F32: return flashcore::DType::F32;
    case FC_F16: return flashcore::DType::F16;
    case FC_BF16: return flashcore::DType::BF16;
    case FC_E4M3: return flashcore::DType::E4M3;
  }
  throw flashcore::Error(field, std::string(field) + ": value " + std::to_string(static_cast<int>(dt)) +
                                    " is not FC_F32, FC_F16, FC_BF16 or FC_E4M3");
}

// A 0/1 field of the C descriptor; any other value is an Error naming the field.
bool flag(const char* field, int value) {
  if (value != 0 && value != 1)
    throw flashcore::Error(field, std::string(field) + ": value " + std::to_string(value) + " is not 0 or 1");
  return value == 1;
}

// The C++ descriptor of a C one; throws Error naming a field that has no C++ counterpart.
flashcore::Problem to_cpp(const fc_problem* p) {
  if (p == nullptr) throw flashcore::Error("problem", "problem: descriptor pointer is null");
  flashcore::Problem cp;
  cp.batch = p->batch;
  cp.heads_q = p->heads_q;
  cp.heads_kv = p->heads_kv;
  cp.seqlen_q = p->seqlen_q;
  cp.seqlen_k = p->seqlen_k;
  cp.head_dim = p->head_dim;
  cp.dtype = to_cpp(p->dtype, "dtype");
  if (cp.dtype == flashcore::DType::E4M3) {
    // Read only for fp8 inputs: other dtypes keep the C++ defaults (descales 1), whatever the tail holds.
    cp.descale_q = p->descale_q;
    cp.descale_k = p->descale_k;
    cp.descale_v = p->descale_v;
    cp.out_dtype = to_cpp(p->out_dtype, "out_dtype");
  }
  cp.causal = flag("causal", p->causal);
  cp.scale = p->scale;
  cp.q = to_cpp(p->q);
  cp.k = to_cpp(p->k);
  cp.v = to_cpp(p->v);
  cp.o = to_cpp(p->o);
  if (flag("window", p->window)) {
    cp.window_left = p->window_left;
    cp.window_right = p->window_right;
  }
  cp.softcap = p->softcap;
  cp.total_q = p->total_q;
  cp.total_k = p->total_k;
  cp.page_size = p->page_size;
  cp.num_pages = p->num_pages;
  cp.pages_per_seq = p->pages_per_seq;
  flag("trust_sequences", p->trust_sequences);  // read by run_c
  flag("deterministic", p->deterministic);      // read by run_c
  return cp;
}

// Runs a converted problem; the shared tail of fc_attention and fc_attention_sized.
// `c` is the C descriptor, for its pointers (Tensors in C++: per-head parameters, sequence arrays)
// trust_sequences (Options::check_sequences) and deterministic (Options::deterministic).
// grads: the backward pass's gradients (run_backward), or null for the forward.
fc_status run_c(const flashcore::Problem& cp, const fc_problem& c, const void* q, const void* k, const void* v,
                void* o, float* lse, fc_location location, const char* backend, void* stream,
                const flashcore::Gradients* grads = nullptr) {
  flashcore::Options opts;
  if (backend != nullptr) opts.backend = backend;
  switch (location) {
    case FC_LOC_AUTO: opts.location = flashcore::MemoryLocation::Auto; break;
    case FC_LOC_HOST: opts.location = flashcore::MemoryLocation::Host; break;
    case FC_LOC_DEVICE: opts.location = flashcore::MemoryLocation::Device; break;
    default: throw flashcore::Error("location", "location: value " + std::to_string(static_cast<int>(location)) +
                                                    " is not FC_LOC_AUTO, FC_LOC_HOST or FC_LOC_DEVICE");
  }
  opts.stream = stream;
  opts.check_sequences = c.trust_sequences == 0;
  opts.deterministic = c.deterministic != 0;
  flashcore::Tensors t{q, k, v, o, lse, c.alibi_slopes, c.sinks};
  t.cu_seqlens_q = c.cu_seqlens_q;
  t.cu_seqlens_k = c.cu_seqlens_k;
  t.seqlens_k = c.seqlens_k;
  t.block_table = c.block_table;
  t_backend = grads != nullptr ? flashcore::run_backward(cp, t, *grads, opts).chosen : flashcore::run(cp, t, opts).chosen;
  return FC_OK;
}

// Calls body() and turns what it throws into a status and the thread's error message.
template <class Body>
fc_status guarded(Body&& body) {
  t_error.clear();
  try {
    return body();
  } catch (const flashcore::Error& e) {
    t_error = e.what();
    return e.field() == "backend" ? FC_ERROR_BACKEND : FC_ERROR_INVALID;
  } catch (const std::exception& e) {
    t_error = e.what();
    return FC_ERROR_INTERNAL;
  } catch (...) {
    t_error = "unknown error";
    return FC_ERROR_INTERNAL;
  }
}

// The checks of the *_sized entry points (the Fortran module's): the problem is valid, the buffers'
// element size is the dtype's, and each buffer holds the extent of its tensor in the problem's layout:
// batch x seqlen rows, or total_q / total_k packed rows, or num_pages x page_size paged rows.
// Each throws an Error naming the buffer, before any work.
class SizedCheck {
 public:
  SizedCheck(const flashcore::Problem& cp, int element_bytes)
      : cp_((flashcore::validate(cp), cp)),  // valid before the extents are taken
        qx_(flashcore::detail::q_extents(cp)),
        kx_(flashcore::detail::kv_extents(cp)) {
    // element_bytes is the size of Q's, K's and V's elements; O's are of o_dtype() (fp16 or bf16
    // for fp8 inputs), and o_elems counts them.
    const int want = flashcore::dtype_size(cp.dtype);
    if (element_bytes != want)
      throw flashcore::Error("dtype", std::string("dtype: ") + flashcore::to_string(cp.dtype) + " takes " +
                                          std::to_string(want) + "-byte elements; the buffers hold " +
                                          std::to_string(element_bytes) + "-byte elements");
    if (cp.total_q > 0) q_layout_ = " (packed: total_q " + std::to_string(cp.total_q) + " rows)";
    if (cp.page_size > 0)
      kv_layout_ = " (paged: num_pages " + std::to_string(cp.num_pages) + " x page_size " +
                   std::to_string(cp.page_size) + " rows)";
    else if (cp.total_k > 0)
      kv_layout_ = " (packed: total_k " + std::to_string(cp.total_k) + " rows)";
  }
  void q(const char* name, std::int64_t have) const {
    fits(name, q_layout_, flashcore::span_elements(cp_.q, qx_.outer, qx_.rows, cp_.heads_q, cp_.head_dim), have);
  }
  void o(const char* name, std::int64_t have) const {
    fits(name, q_layout_, flashcore::span_elements(cp_.o, qx_.outer, qx_.rows, cp_.heads_q, cp_.head_dim), have);
  }
  void kv(const char* name, const flashcore::Strides& st, std::int64_t have) const {
    fits(name, kv_layout_, flashcore::span_elements(st, kx_.outer, kx_.rows, cp_.heads_kv, cp_.head_dim), have);
  }
  void lse(std::int64_t have) const {
    fits("lse", q_layout_, static_cast<std::int64_t>(qx_.outer) * cp_.heads_q * qx_.rows, have);
  }
  // The forward call's buffers (the lse only when there is one).
  void forward(std::int64_t q_elems, std::int64_t k_elems, std::int64_t v_elems, std::int64_t o_elems,
               const float* lse_ptr, std::int64_t lse_elems) const {
    q("q", q_elems);
    kv("k", cp_.k, k_elems);
    kv("v", cp_.v, v_elems);
    o("o", o_elems);
    if (lse_ptr != nullptr) lse(lse_elems);
  }

 private:
  static void fits(const char* name, const std::string& layout, std::int64_t need, std::int64_t have) {
    if (need > have)
      throw flashcore::Error(name, std::string(name) + ": the problem's layout" + layout + " reaches element " +
                                       std::to_string(need) + " but the buffer holds " + std::to_string(have));
  }
  const flashcore::Problem& cp_;
  const flashcore::detail::TensorExtents qx_, kx_;
  std::string q_layout_, kv_layout_;
};

}  // namespace

extern "C" {

void fc_problem_init(fc_problem* p, int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k, int head_dim,
                     fc_dtype dtype, int causal) {
  if (p == nullptr) return;
  flashcore::Problem cp = flashcore::Problem::make(batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim,
                                                   flashcore::DType::F16, causal != 0);
  p->batch = batch;
  p->heads_q = heads_q;
  p->heads_kv = heads_kv;
  p->seqlen_q = seqlen_q;
  p->seqlen_k = seqlen_k;
  p->head_dim = head_dim;
  p->dtype = dtype;
  p->causal = causal;
  p->scale = 0.0f;
  p->q = to_c(cp.q);
  p->k = to_c(cp.k);
  p->v = to_c(cp.v);
  p->o = to_c(cp.o);
  p->window = 0;
  p->window_left = p->window_right = -1;
  p->softcap = 0.0f;
  p->alibi_slopes = nullptr;
  p->sinks = nullptr;
  p->total_q = p->total_k = 0;
  p->page_size = p->num_pages = p->pages_per_seq = 0;
  p->trust_sequences = 0;
  p->deterministic = 0;
  p->descale_q = p->descale_k = p->descale_v = 1.0f;
  p->out_dtype = FC_BF16;
  p->cu_seqlens_q = p->cu_seqlens_k = p->seqlens_k = p->block_table = nullptr;
}

fc_status fc_attention(const fc_problem* p, const void* q, const void* k, const void* v, void* o, float* lse,
                       fc_location location, const char* backend, void* stream) {
  return guarded([&] {
    const flashcore::Problem cp = to_cpp(p);  // throws for a null p
    return run_c(cp, *p, q, k, v, o, lse, location, backend, stream);
  });
}

fc_status fc_attention_backward(const fc_problem* p, const void* q, const void* k, const void* v, const void* o,
                                const float* lse, const void* d_o, void* dq, void* dk, void* dv, float* dsinks,
                                fc_location location, const char* backend, void* stream) {
  return guarded([&] {
    const flashcore::Problem cp = to_cpp(p);  // throws for a null p
    const flashcore::Gradients g{d_o, dq, dk, dv, dsinks};
    // Tensors::o and lse are the forward's outputs; the backward pass only reads them.
    return run_c(cp, *p, q, k, v, const_cast<void*>(o), const_cast<float*>(lse), location, backend, stream, &g);
  });
}

fc_status fc_attention_sized(const fc_problem* p, int element_bytes, const void* q, int64_t q_elems, const void* k,
                             int64_t k_elems, const void* v, int64_t v_elems, void* o, int64_t o_elems, float* lse,
                             int64_t lse_elems, fc_location location, const char* backend, void* stream) {
  return guarded([&] {
    const flashcore::Problem cp = to_cpp(p);
    SizedCheck(cp, element_bytes).forward(q_elems, k_elems, v_elems, o_elems, lse, lse_elems);
    return run_c(cp, *p, q, k, v, o, lse, location, backend, stream);
  });
}

fc_status fc_attention_backward_sized(const fc_problem* p, int element_bytes, const void* q, int64_t q_elems,
                                      const void* k, int64_t k_elems, const void* v, int64_t v_elems, const void* o,
                                      int64_t o_elems, const float* lse, int64_t lse_elems, const void* d_o,
                                      int64_t d_o_elems, void* dq, int64_t dq_elems, void* dk, int64_t dk_elems,
                                      void* dv, int64_t dv_elems, float* dsinks, int64_t dsinks_elems,
                                      fc_location location, const char* backend, void* stream) {
  return guarded([&] {
    const flashcore::Problem cp = to_cpp(p);
    const SizedCheck fits(cp, element_bytes);
    fits.forward(q_elems, k_elems, v_elems, o_elems, lse, lse_elems);  // a null lse: run_backward names it
    // dO has O's strides, each gradient those of its tensor.
    fits.o("d_o", d_o_elems);
    fits.q("dq", dq_elems);
    fits.kv("dk", cp.k, dk_elems);
    fits.kv("dv", cp.v, dv_elems);
    if (dsinks != nullptr && dsinks_elems < cp.heads_q)
      throw flashcore::Error("dsinks", "dsinks: the problem has heads_q " + std::to_string(cp.heads_q) +
                                           " sinks but the buffer holds " + std::to_string(dsinks_elems));
    const flashcore::Gradients g{d_o, dq, dk, dv, dsinks};
    return run_c(cp, *p, q, k, v, const_cast<void*>(o), const_cast<float*>(lse), location, backend, stream, &g);
  });
}

const char* fc_last_backend(void) { return t_backend.c_str(); }
const char* fc_last_error(void) { return t_error.c_str(); }
int fc_initialize(void) {
  try {
    return flashcore::initialize() ? 1 : 0;
  } catch (const std::exception& e) {
    t_error = e.what();
    return -1;
  }
}
void fc_finalize(void) { flashcore::finalize(); }
const char* fc_version(void) { return flashcore::version(); }

}  // extern "C"
