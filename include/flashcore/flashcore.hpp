// FlashCore public C++ API.
//
//   O = softmax(Q K^T * scale + mask) V
//
// Q is (batch, seqlen_q, heads_q, head_dim), K and V are (batch, seqlen_k, heads_kv, head_dim),
// O is (batch, seqlen_q, heads_q, head_dim), each addressed through element strides so that
// (B,S,H,D) and (B,H,S,D) tensors both work without copies (the last dimension is contiguous).
// Query head h reads key/value head h / (heads_q / heads_kv) (GQA; MQA when heads_kv == 1).
//
// Causal masking is aligned to the bottom-right corner: query row i sees key j iff
// j <= i + seqlen_k - seqlen_q (FlashAttention >= 2.1 convention). A query row that sees no
// key produces O = 0 and LSE = -inf (the sink's logit with attention sinks).
//
// Variants (each combines with the others, causal, GQA and the LSE output). With
// diag = seqlen_k - seqlen_q (row i's diagonal is key i + diag), the logit of row i, key j is
//   x = scale * q_i.k_j
//   x = softcap * tanh(x / softcap)               Problem::softcap > 0   (logit soft-capping)
//   x = x - slope[h] * |j - (i + diag)|           Tensors::alibi_slopes  (ALiBi)
// over the keys the row sees: j < seqlen_k and, per side of a sliding window (Problem::window_left,
// window_right, -1 = unbounded), i + diag - window_left <= j <= i + diag + window_right; causal is
// window_right = 0. With attention sinks (Tensors::sinks) exp(sink[h]) joins every row's softmax
// denominator without a value: O_i = sum_j exp(x_j) v_j / (exp(sink[h]) + sum_j exp(x_j)).
//
// Sequences of different lengths in one call (each combines with the others and with everything
// above; all off by default). Sequence b has Lq_b queries and Lk_b keys, and its causal mask,
// window and ALiBi distance use its own diagonal i + Lk_b - Lq_b:
//   varlen Q   Problem::total_q > 0: Q and O hold the sequences packed one after another
//              (FlashAttention's varlen layout), (total_q, heads_q, head_dim) with strides q.seq and
//              q.head (q.batch, o.batch unused); sequence b's queries are rows cu_seqlens_q[b] ..
//              cu_seqlens_q[b+1]-1 (Tensors::cu_seqlens_q), Lq_b their count. Without it Lq_b =
//              seqlen_q. LSE is then (heads_q, total_q).
//   varlen K/V Problem::total_k > 0: K and V packed likewise by Tensors::cu_seqlens_k (total_k rows).
//   KV cache   Tensors::seqlens_k: sequence b uses the first seqlens_k[b] keys of its K/V rows (the
//              cache's valid length); without it Lk_b = seqlen_k, or its cu_seqlens_k count.
//   paged K/V  Problem::page_size > 0: K and V are pools of num_pages pages of page_size rows,
//              indexed (page, row, head, dim) with strides k.batch (between pages), k.seq, k.head;
//              key j of sequence b is row j % page_size of page block_table[b * pages_per_seq +
//              j / page_size] (Tensors::block_table). Entries past a sequence's last used page are
//              not read.
// With per-sequence lengths, seqlen_q and seqlen_k are upper bounds: every Lq_b <= seqlen_q and
// Lk_b <= seqlen_k (the longest sequence is the best bound: it sizes the launch).
//
// This header does not include Kokkos. The Kokkos View entry point is in
// <flashcore/kokkos.hpp>; the C API is in <flashcore/flashcore.h>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace flashcore {

/// Element type of Q, K, V and O (all four share it, except with E4M3 inputs). LSE is always fp32.
/// E4M3 is OCP FP8 e4m3 ("e4m3fn": 4 exponent bits of bias 7, 3 mantissa bits, largest finite 448,
/// no infinities, 0x7f/0xff NaN): inputs only, forward only. Q, K, V then hold e4m3 bytes standing
/// for Problem::descale_q/k/v times their value, and O is of Problem::out_dtype (fp16 or bf16).
enum class DType { F32, F16, BF16, E4M3 };

const char* to_string(DType dtype);  // "fp32", "fp16", "bf16", "fp8_e4m3"
/// Parses "fp32"/"f32"/"float", "fp16"/"f16"/"half", "bf16"/"bfloat16", "fp8_e4m3"/"e4m3"/"fp8"/"float8_e4m3fn".
/// Throws Error otherwise.
DType parse_dtype(const std::string& name);
/// Size of one element in bytes.
int dtype_size(DType dtype);

/// Where the tensors live. Auto asks the CUDA runtime (when built with CUDA) and otherwise
/// assumes host memory.
enum class MemoryLocation { Auto, Host, Device };
const char* to_string(MemoryLocation loc);

/// Element strides of one rank-4 tensor indexed (batch, seq, head, dim); dim stride is 1.
struct Strides {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t head = 0;
};

/// The problem descriptor.
struct Problem {
  int batch = 1;
  int heads_q = 1;
  int heads_kv = 1;  // heads_q must be a multiple of heads_kv
  int seqlen_q = 1;
  int seqlen_k = 1;
  int head_dim = 64;  // 1 .. 256
  DType dtype = DType::F16;
  /// FP8 inputs (dtype E4M3): the element q stored in Q stands for descale_q * q, likewise K and V
  /// (per-tensor factors, as FlashAttention-3's descale_q/k/v; finite and > 0). Other dtypes leave
  /// them at 1. Attention is then softmax(scale * descale_q * descale_k * Q·Kᵀ + mask) · descale_v · V.
  float descale_q = 1.0f;
  float descale_k = 1.0f;
  float descale_v = 1.0f;
  /// Element type of O when dtype is E4M3: F16 or BF16 (the default). For the other dtypes O is of
  /// dtype and this field is not read (o_dtype() says which applies).
  DType out_dtype = DType::BF16;
  bool causal = false;
  /// Softmax scale; 0 (the default) means 1/sqrt(head_dim). Must be finite and >= 0.
  float scale = 0.0f;
  /// Sliding-window (local) attention: keys a row sees to the left and right of its diagonal
  /// (bottom-right aligned like causal; see the top of this file). -1 (the default) = unbounded on
  /// that side, else >= 0; window (W, 0) is causal attention over the last W+1 keys. A causal
  /// problem has window_right 0: leave it at -1 or 0.
  int window_left = -1;
  int window_right = -1;
  /// Logit soft-capping: x -> softcap * tanh(x / softcap) after the scale. 0 (the default) = none;
  /// else finite and > 0.
  float softcap = 0.0f;
  /// Sequences of different lengths (see "Sequences" at the top of this file); 0 = off.
  int total_q = 0;        // > 0: Q and O packed, total_q rows, split by Tensors::cu_seqlens_q
  int total_k = 0;        // > 0: K and V packed, total_k rows, split by Tensors::cu_seqlens_k
  int page_size = 0;      // > 0: paged K and V (Tensors::block_table), rows per page: a multiple of 16
  int num_pages = 0;      // paged: pages in the K pool (and in the V pool)
  int pages_per_seq = 0;  // paged: block-table entries per sequence; seqlen_k <= pages_per_seq * page_size
  /// Element strides of Q, K, V, O. They must be set (set_contiguous_*() or by hand): every
  /// tensor's layout must be non-overlapping, so strides left at 0 are rejected.
  Strides q, k, v, o;

  /// scale as used: the given one, or 1/sqrt(head_dim) when none was given.
  float effective_scale() const;
  /// Element type of O (and of the backward's dO, dQ, dK, dV): out_dtype for E4M3 inputs, else dtype.
  DType o_dtype() const { return dtype == DType::E4M3 ? out_dtype : dtype; }
  /// Whether a sliding window bounds either side (window_left or window_right != -1).
  bool has_window() const { return window_left >= 0 || window_right >= 0; }
  /// Whether Q/O or K/V are packed (varlen) or K/V paged. (Cache lengths alone are Tensors::seqlens_k.)
  bool has_sequence_layout() const { return total_q > 0 || total_k > 0 || page_size > 0; }
  /// Floating-point operations: 4*B*Hq*Lq*Lk*D, halved when causal (the FlashAttention
  /// convention); with a sliding window 4*B*Hq*D times the (query, key) pairs the window shows.
  /// With per-sequence lengths it counts every sequence at the bounds seqlen_q, seqlen_k.
  double flops() const;

  /// Fills all strides for contiguous (B,S,H,D) tensors ("BSHD", the default) or (B,H,S,D).
  void set_contiguous_bshd();
  void set_contiguous_bhsd();

  /// Convenience constructor of a contiguous (B,S,H,D) problem.
  static Problem make(int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k, int head_dim,
                      DType dtype, bool causal = false);
};

/// Number of elements a tensor with these strides spans (max offset + 1).
std::int64_t span_elements(const Strides& s, int batch, int seq, int heads, int head_dim);
/// Offset in elements of element (b, i, h, d) of a tensor with these strides.
inline std::int64_t element_offset(const Strides& s, int b, int i, int h, int d) {
  return b * s.batch + static_cast<std::int64_t>(i) * s.seq + h * s.head + d;
}

/// Every error FlashCore reports is of this type. field() names the offending descriptor field
/// or option ("" when none applies); what() is a readable sentence naming the field and value.
class Error : public std::runtime_error {
 public:
  Error(std::string field, const std::string& message);
  const std::string& field() const noexcept { return field_; }

 private:
  std::string field_;
};

/// Throws Error naming the first invalid field. Called by run() before any work.
void validate(const Problem& p);

/// The tensors of one call. lse is optional (nullptr: not computed); when given it is fp32,
/// contiguous (batch, heads_q, seqlen_q), natural log of the softmax denominator of each row
/// including the scale: lse = log(sum_j exp(x_j)) over visible keys with x_j the logit above
/// (scale * q.k_j without variants), -inf when none; with sinks log(exp(sink[h]) + sum_j exp(x_j)).
///
/// The per-head parameters of two variants are fp32 arrays of heads_q values in the same memory as
/// Q (host or device); nullptr (the default) = variant off. They must be finite.
///   alibi_slopes  ALiBi slope of each query head: the logit of key j in row i gets
///                 -slope[h] * |j - (i + seqlen_k - seqlen_q)| (after soft-capping).
///   sinks         attention-sink logit of each query head, in the units of the scaled logits:
///                 exp(sink[h]) joins each row's softmax denominator. lse then includes it.
///
/// The sequence arrays (see "Sequences" at the top) are int32, in the same memory as Q; nullptr =
/// off. They are validated before any work (device memory: see Options::check_sequences).
///   cu_seqlens_q  batch+1 offsets, 0 = cu[0] <= cu[1] <= ... <= cu[batch] = total_q (needs total_q)
///   cu_seqlens_k  the same for K and V (needs total_k)
///   seqlens_k     batch cache lengths, 0 <= seqlens_k[b] <= the rows sequence b has
///   block_table   batch x pages_per_seq page indices in [0, num_pages) (needs page_size)
struct Tensors {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
  const float* alibi_slopes = nullptr;
  const float* sinks = nullptr;
  const int* cu_seqlens_q = nullptr;
  const int* cu_seqlens_k = nullptr;
  const int* seqlens_k = nullptr;
  const int* block_table = nullptr;
};

/// The gradients of a backward call (run_backward, training): dO in, dQ, dK, dV (and the sinks')
/// out. dO has O's strides (Problem::o) and layout, dQ Q's, dK K's, dV V's, all of the problem's
/// dtype, in the memory of Q.
///   d_o     dL/dO (input)
///   dq      dL/dQ: every row of every sequence is written
///   dk, dv  dL/dK, dL/dV: summed over the query heads of each KV head's group (GQA); every row the
///           layout stores is written (rows past a sequence's cache length seqlens_k[b] get 0)
///   dsinks  optional: dL/dsinks, heads_q fp32 values (needs Tensors::sinks), summed over the batch
/// The outputs are overwritten, not accumulated into, and must not overlap any other tensor.
struct Gradients {
  const void* d_o = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  float* dsinks = nullptr;
};

/// Per-call options.
struct Options {
  /// Backend name to force ("" = automatic). The environment variable FLASHCORE_BACKEND is
  /// used when this is empty; an explicitly named backend that declines is an error.
  std::string backend;
  MemoryLocation location = MemoryLocation::Auto;
  /// cudaStream_t for device backends (nullptr = default stream). Device backends are
  /// asynchronous with respect to the host on that stream; host backends return when done.
  void* stream = nullptr;
  /// Sequence arrays (Tensors::cu_seqlens_q, ..., block_table) in device memory are copied to the
  /// host and validated before any work: a copy on `stream` that waits for it (a few microseconds
  /// plus the stream's pending work). false skips the copy for loops that know their arrays are
  /// valid (a decode loop): FlashCore then trusts them, and an offset, length or page index out of
  /// range reads memory outside the tensors. Host-memory arrays are always validated.
  bool check_sequences = true;
  /// The backward pass (run_backward): true asks for bitwise-reproducible gradients (the same call
  /// gives the same bits every time). false (the default) lets a backend take a faster path whose
  /// float sums run in a varying order: `cuda-flash` then adds dQ with fp32 atomics (its last bits
  /// vary from run to run; dK, dV do not; head dim 96 and a failed workspace allocation run the
  /// deterministic path), as PyTorch's and FlashAttention's default backward do.
  /// The Kokkos backends are deterministic either way. The forward is always deterministic.
  bool deterministic = false;
};

/// What a backend decided for one call when it said yes (its kernel, launch shape, workspace,
/// descriptors): made once by supports(), handed to run() of the same call. Backends derive their own.
class Plan {
 public:
  virtual ~Plan() = default;
  /// One line naming what will run, e.g. "sm90-tma-wgmma block_m=128 splits=1" (for reports).
  virtual std::string describe() const { return {}; }
};

/// What a backend answers to "can you run this problem here?".
struct Support {
  bool ok = false;
  std::string reason;  // why not, when !ok
  std::shared_ptr<const Plan> plan;  // optional: what run() will execute (see Query::plan)
  static Support yes(std::shared_ptr<const Plan> plan = nullptr) { return {true, {}, std::move(plan)}; }
  static Support no(std::string why) { return {false, std::move(why), nullptr}; }
};

/// Context a backend decides on: the validated problem, where the data lives, and the
/// alignment of the pointers.
struct Query {
  const Problem* problem = nullptr;
  const Tensors* tensors = nullptr;
  MemoryLocation location = MemoryLocation::Host;  // resolved, never Auto
  bool want_lse = false;
  /// In run(): the plan this backend's supports() returned for this same call (nullptr if none);
  /// the registry never passes one backend's plan to another. nullptr in supports().
  const Plan* plan = nullptr;
  /// The backward pass's gradients (supports_backward / run_backward); nullptr for the forward.
  const Gradients* gradients = nullptr;
  /// Options::deterministic: the backward must give bitwise-reproducible gradients.
  bool deterministic = false;
};

/// What a backend is: the correctness oracle (the Kokkos reference), the portable tier, a tuned
/// kernel, or one an application registered.
enum class BackendKind { Reference, Portable, Tuned, External };
const char* to_string(BackendKind kind);  // "reference", "portable", "tuned", "external"

/// The backend interface. Backends register themselves in the Registry.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  /// Higher runs first when several can run a problem (tuned > reference).
  virtual int priority() const = 0;
  /// Which memory the backend consumes.
  virtual MemoryLocation location() const = 0;
  /// One line describing the backend (execution space, device, ...).
  virtual std::string description() const = 0;
  virtual Support supports(const Query& q) const = 0;
  /// Whether automatic selection may pick this backend; variants that exist to be forced by name
  /// (and benchmarked) return false.
  virtual bool automatic() const { return true; }
  /// The tier the backend belongs to; backends an application registers need not say.
  virtual BackendKind kind() const { return BackendKind::External; }
  /// Runs a call that supports() accepted; q.plan is what supports() planned for it.
  virtual void run(const Query& q, const Options& opts) const = 0;
  /// The backward pass (run_backward), asked and run like the forward; q.gradients is set and
  /// q.tensors holds the forward's tensors (O and LSE as inputs). A backend without one declines.
  virtual Support supports_backward(const Query& /*q*/) const { return Support::no("has no backward pass"); }
  virtual void run_backward(const Query& /*q*/, const Options& /*opts*/) const {
    throw Error("backend", name() + ": has no backward pass");
  }
};

/// How the backend of a call was chosen.
enum class SelectionMode { Automatic, ForcedByOption, ForcedByEnvironment };

/// Why a backend did or did not run a call (Decision::reason says it in words).
enum class DecisionCode {
  Chosen,          // asked, accepted: it runs the call
  Unsupported,     // asked, declined: supports() gave the reason
  NotSelected,     // another backend was forced by name
  OnlyWhenForced,  // runs only when forced by name (fixed variants)
  OtherMemory,     // reads another memory than the data's
  NotAsked,        // a backend before it was chosen
};
const char* to_string(DecisionCode code);  // "chosen", "unsupported", "not-selected", ...

/// One backend's answer, as reported by explain() and last_report().
struct Decision {
  std::string backend;
  bool ok = false;      // true only for the backend that was asked and accepted
  std::string reason;   // why not (or "chosen")
  DecisionCode code = DecisionCode::Unsupported;
  BackendKind kind = BackendKind::External;
};

/// The result of selecting a backend: which one runs, and why the others did not.
struct Report {
  std::string chosen;       // name of the backend that ran ("" if none could)
  BackendKind chosen_kind = BackendKind::External;  // its kind (meaningless when chosen is "")
  SelectionMode mode = SelectionMode::Automatic;
  std::string how;          // mode in words: "forced by Options::backend", "forced by FLASHCORE_BACKEND", "automatic"
  std::string plan;         // what the chosen backend runs, in words (its Plan::describe(); "" if it has none)
  std::vector<Decision> decisions;  // every backend considered, in priority order
  std::string to_string() const;
};

/// A registered backend as seen from outside.
struct BackendInfo {
  std::string name;
  int priority = 0;
  MemoryLocation location = MemoryLocation::Host;
  std::string description;
  BackendKind kind = BackendKind::External;
};
/// All registered backends, in priority order (highest first).
std::vector<BackendInfo> backends();
/// Names of all registered backends, in priority order (highest first).
std::vector<std::string> backend_names();
/// Descriptions of all registered backends, as "name: description".
std::vector<std::string> backend_descriptions();
/// Registers a backend (the library registers its own; applications may add theirs).
void register_backend(std::unique_ptr<Backend> backend);

/// The backend a call with these options is forced to: Options::backend, else the environment
/// variable FLASHCORE_BACKEND, else "" (automatic). *how says which ("forced by Options::backend",
/// "forced by FLASHCORE_BACKEND", "automatic"). Throws Error (field "backend") naming the
/// registered backends when the name is not one of them.
std::string forced_backend(const Options& opts, std::string* how = nullptr, SelectionMode* mode = nullptr);

/// Which backend would run this call, and why the others decline; does no work.
Report explain(const Problem& p, const Tensors& t, const Options& opts = {});

/// Computes attention. Validates the problem first (throws Error naming the field; nothing is
/// written to the outputs), selects a backend, runs it. Returns the selection report.
Report run(const Problem& p, const Tensors& t, const Options& opts = {});

/// The backward pass: given the forward's tensors (Q, K, V, its output O and its LSE, which is
/// required, and the variants' and sequences' arrays of the forward call) and dO in `g`, computes
/// dQ, dK, dV (and dsinks when asked) of the same problem:
///   P_ij = exp(x_ij - lse_i), delta_i = dO_i·O_i, dx_ij = P_ij (dO_i·v_j - delta_i),
///   dQ_i = sum_j dx_ij dx_ij/dq_i,  dK_j = sum_i dx_ij dx_ij/dk_j,  dV_j = sum_i P_ij dO_i
/// with x_ij the logit of the top of this file (scale, soft-capping, ALiBi) over the pairs the mask
/// shows. With Options::deterministic every backend gives bitwise the same gradients every time (no
/// atomics; each gradient summed in a fixed order); without it (the default) `cuda-flash` sums dQ with
/// fp32 atomics, whose order, and so dQ's last bits, vary from run to run. Validates everything
/// first (Error naming the field; nothing is written), then selects a backend as run() does, among
/// those with a backward pass. Paged K/V (Problem::page_size) has no backward pass: Error.
Report run_backward(const Problem& p, const Tensors& forward, const Gradients& g, const Options& opts = {});
/// Which backend would run this backward call, and why the others decline; does no work.
Report explain_backward(const Problem& p, const Tensors& forward, const Gradients& g, const Options& opts = {});

/// A CUDA device as FlashCore sees it.
struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t smem_optin_per_block = 0;  // opt-in shared memory per block (bytes)
  std::size_t smem_per_sm = 0;
  std::size_t global_mem_bytes = 0;
  std::size_t l2_bytes = 0;
  int clock_mhz = 0;  // 0 when the runtime does not report it
};

/// CUDA devices visible to this process. Empty when the build has no CUDA support or no
/// device/driver is found; *why then says which (when why is not null).
std::vector<DeviceInfo> cuda_devices(std::string* why = nullptr);

/// Library version string, e.g. "0.1.0".
const char* version();
/// Build configuration: compiler, Kokkos version and its enabled execution spaces, CUDA.
std::string build_info();

/// Initializes Kokkos if it is not initialized yet (FlashCore never does this by itself);
/// returns true when this call initialized it. finalize() finalizes only what initialize()
/// started. Applications that manage Kokkos themselves need neither.
bool initialize();
void finalize();

}  // namespace flashcore
