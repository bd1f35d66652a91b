// Backend registry and dispatch: which backend runs a call, and why the others do not.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "internal.hpp"
#include "platform/profiling.hpp"

namespace flashcore {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<Backend>> backends;  // sorted by priority, highest first

  Registry() {
    for (auto& b : detail::builtin_backends()) add(std::move(b));
  }
  void add(std::unique_ptr<Backend> b) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& existing : backends)
      if (existing->name() == b->name()) throw Error("backend", "backend '" + b->name() + "' is already registered");
    backends.push_back(std::move(b));
    std::stable_sort(backends.begin(), backends.end(),
                     [](const auto& a, const auto& c) { return a->priority() > c->priority(); });
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

MemoryLocation resolve_location(const Tensors& t, const Gradients* g, MemoryLocation requested) {
  if (requested != MemoryLocation::Auto) return requested;
  int q_device = -1;
  const MemoryLocation q = detail::pointer_location(t.q, &q_device);
  const Gradients none;
  const Gradients& gr = g != nullptr ? *g : none;
  const std::pair<const char*, const void*> others[] = {
      {"k", t.k}, {"v", t.v}, {"o", t.o}, {"lse", t.lse}, {"alibi_slopes", t.alibi_slopes}, {"sinks", t.sinks},
      {"cu_seqlens_q", t.cu_seqlens_q}, {"cu_seqlens_k", t.cu_seqlens_k}, {"seqlens_k", t.seqlens_k},
      {"block_table", t.block_table}, {"d_o", gr.d_o}, {"dq", gr.dq}, {"dk", gr.dk}, {"dv", gr.dv},
      {"dsinks", gr.dsinks}};
  for (const auto& [name, ptr] : others) {
    if (ptr == nullptr) continue;
    int device = -1;
    const MemoryLocation l = detail::pointer_location(ptr, &device);
    if (l != q)
      throw Error(name, std::string("tensors are in different memories: q is in ") + to_string(q) + " memory, " +
                            name + " in " + to_string(l) + " memory");
    if (device != q_device)
      throw Error(name, std::string("tensors are on different devices: q on CUDA device ") + std::to_string(q_device) +
                            ", " + name + " on device " + std::to_string(device));
  }
  DeviceInfo current;
  if (q == MemoryLocation::Device && detail::current_cuda_device(&current, nullptr) && current.index != q_device)
    throw Error("q", "q: the tensors are on CUDA device " + std::to_string(q_device) + " but the current device is " +
                         std::to_string(current.index) + " (call cudaSetDevice first)");
  return q;
}

// The sequence arrays of a device-memory call, copied to the host and validated.
void validate_device_sequences(const Problem& p, const Tensors& t, void* stream) {
  auto copy = [&](const char* name, const int* src, std::int64_t n, std::vector<int>& dst) -> const int* {
    if (src == nullptr) return nullptr;
    dst.resize(static_cast<std::size_t>(n));
    detail::copy_to_host(dst.data(), src, dst.size() * sizeof(int), stream, name);
    return dst.data();
  };
  std::vector<int> cq, ck, lk, bt;
  const int* cu_q = copy("cu_seqlens_q", t.cu_seqlens_q, p.batch + 1, cq);
  const int* cu_k = copy("cu_seqlens_k", t.cu_seqlens_k, p.batch + 1, ck);
  const int* lens = copy("seqlens_k", t.seqlens_k, p.batch, lk);
  const int* table = copy("block_table", t.block_table, static_cast<std::int64_t>(p.batch) * p.pages_per_seq, bt);
  detail::validate_sequences(p, cu_q, cu_k, lens, table);
}

struct Selection {
  const Backend* backend = nullptr;
  Query query;
  std::shared_ptr<const Plan> plan;  // what the chosen backend's supports() planned (may be null)
  Report report;
};

// g: the backward pass's gradients (nullptr: the forward pass).
Selection select(const Problem& p, const Tensors& t, const Options& opts, const Gradients* g = nullptr) {
  validate(p);
  if (g != nullptr && p.dtype == DType::E4M3)
    throw Error("dtype", std::string("dtype ") + to_string(p.dtype) +
                             ": fp8_e4m3 inputs have no backward pass (the forward only; train in fp16 or bf16)");
  if (g != nullptr && p.page_size > 0)
    throw Error("page_size", "page_size " + std::to_string(p.page_size) +
                                 ": the backward pass has no paged K/V (pass K and V dense, or packed with cu_seqlens_k)");
  std::vector<detail::Range> ranges = detail::validate_tensors(p, t);
  if (g != nullptr) detail::validate_gradients(p, t, *g, std::move(ranges));
  Selection sel;
  Query& q = sel.query;
  q.problem = &p;
  q.tensors = &t;
  q.gradients = g;
  q.deterministic = opts.deterministic;
  q.location = resolve_location(t, g, opts.location);
  if (q.location == MemoryLocation::Host) {
    detail::validate_head_parameters(p, t);
    detail::validate_sequences(p, t.cu_seqlens_q, t.cu_seqlens_k, t.seqlens_k, t.block_table);
  } else if (opts.check_sequences) {
    validate_device_sequences(p, t, opts.stream);
  }
  q.want_lse = t.lse != nullptr;

  const std::string forced = forced_backend(opts, &sel.report.how, &sel.report.mode);
  // Backends are never removed: take the list under the lock, then ask them without it (a
  // backend's supports() may itself call into the registry).
  std::vector<const Backend*> list;
  {
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    for (const auto& b : reg.backends) list.push_back(b.get());
  }
  for (const Backend* b : list) {
    Decision d{b->name(), false, {}, DecisionCode::Unsupported, b->kind()};
    if (!forced.empty() && b->name() != forced) {
      d.code = DecisionCode::NotSelected;
      d.reason = "not selected (" + sel.report.how + ")";
    } else if (forced.empty() && !b->automatic()) {
      d.code = DecisionCode::OnlyWhenForced;
      d.reason = "runs only when forced by name (Options::backend or FLASHCORE_BACKEND)";
    } else if (b->location() != q.location) {
      d.code = DecisionCode::OtherMemory;
      d.reason = std::string("reads ") + to_string(b->location()) + " memory; the data is in " + to_string(q.location) +
                 " memory";
    } else if (sel.backend != nullptr) {
      d.code = DecisionCode::NotAsked;
      d.reason = "not asked: " + sel.backend->name() + " comes first";
    } else {
      Support s = g != nullptr ? b->supports_backward(q) : b->supports(q);
      d.ok = s.ok;
      d.code = s.ok ? DecisionCode::Chosen : DecisionCode::Unsupported;
      d.reason = s.ok ? "chosen" : s.reason;
      if (s.ok) {
        sel.backend = b;
        sel.plan = std::move(s.plan);
      }
    }
    sel.report.decisions.push_back(d);
  }
  if (sel.backend != nullptr) {
    sel.report.chosen = sel.backend->name();
    sel.report.chosen_kind = sel.backend->kind();
    if (sel.plan) sel.report.plan = sel.plan->describe();
  }
  sel.query.plan = sel.plan.get();  // the chosen backend's own plan, for its run()
  return sel;
}

}  // namespace

const char* to_string(BackendKind kind) {
  switch (kind) {
    case BackendKind::Reference: return "reference";
    case BackendKind::Portable: return "portable";
    case BackendKind::Tuned: return "tuned";
    case BackendKind::External: return "external";
  }
  return "invalid";
}

const char* to_string(DecisionCode code) {
  switch (code) {
    case DecisionCode::Chosen: return "chosen";
    case DecisionCode::Unsupported: return "unsupported";
    case DecisionCode::NotSelected: return "not-selected";
    case DecisionCode::OnlyWhenForced: return "only-when-forced";
    case DecisionCode::OtherMemory: return "other-memory";
    case DecisionCode::NotAsked: return "not-asked";
  }
  return "invalid";
}

std::string Report::to_string() const {
  std::ostringstream os;
  os << "backend: " << (chosen.empty() ? "(none)" : chosen) << " (" << how << ")";
  if (!plan.empty()) os << "\n  plan: " << plan;
  for (const auto& d : decisions) os << "\n  " << d.backend << ": " << (d.ok ? "yes" : "no") << " - " << d.reason;
  return os.str();
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const BackendInfo& b : backends()) names.push_back(b.name);
  return names;
}

std::string forced_backend(const Options& opts, std::string* how, SelectionMode* mode) {
  std::string name = opts.backend, by = "automatic";
  SelectionMode m = SelectionMode::Automatic;
  if (!name.empty()) {
    by = "forced by Options::backend";
    m = SelectionMode::ForcedByOption;
  } else if (const char* env = std::getenv("FLASHCORE_BACKEND"); env != nullptr && *env != '\0') {
    name = env;
    by = "forced by FLASHCORE_BACKEND";
    m = SelectionMode::ForcedByEnvironment;
  }
  if (how != nullptr) *how = by;
  if (mode != nullptr) *mode = m;
  if (name.empty()) return name;
  const std::vector<BackendInfo> all = backends();
  if (std::none_of(all.begin(), all.end(), [&](const BackendInfo& b) { return b.name == name; })) {
    std::string names;
    for (const BackendInfo& b : all) names += (names.empty() ? "" : ", ") + b.name;
    throw Error("backend", "backend '" + name + "' (" + by + ") is not registered; registered: " + names);
  }
  return name;
}

std::vector<BackendInfo> backends() {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  std::vector<BackendInfo> out;
  for (const auto& b : reg.backends)
    out.push_back({b->name(), b->priority(), b->location(), b->description(), b->kind()});
  return out;
}

std::vector<std::string> backend_descriptions() {
  std::vector<std::string> out;
  for (const BackendInfo& b : backends())
    out.push_back(b.name + " [" + to_string(b.location) + " memory, priority " + std::to_string(b.priority) +
                  "]: " + b.description);
  return out;
}

void register_backend(std::unique_ptr<Backend> backend) {
  if (!backend) throw Error("backend", "register_backend: null backend");
  registry().add(std::move(backend));
}

Report explain(const Problem& p, const Tensors& t, const Options& opts) { return select(p, t, opts).report; }

namespace {
void require_backend(const Selection& sel, const char* pass) {
  if (sel.backend != nullptr) return;
  std::string why;
  for (const auto& d : sel.report.decisions) why += "\n  " + d.backend + ": " + d.reason;
  throw Error("backend", std::string("no registered backend can run this problem's ") + pass + " (" + sel.report.how +
                             "):" + why);
}
}  // namespace

Report run(const Problem& p, const Tensors& t, const Options& opts) {
  Selection sel = select(p, t, opts);
  require_backend(sel, "forward pass");
  detail::ProfilingRegion region(sel.backend->name());
  sel.backend->run(sel.query, opts);
  return sel.report;
}

Report explain_backward(const Problem& p, const Tensors& forward, const Gradients& g, const Options& opts) {
  return select(p, forward, opts, &g).report;
}

Report run_backward(const Problem& p, const Tensors& forward, const Gradients& g, const Options& opts) {
  Selection sel = select(p, forward, opts, &g);
  require_backend(sel, "backward pass");
  detail::ProfilingRegion region(sel.backend->name() + "::backward");
  sel.backend->run_backward(sel.query, opts);
  return sel.report;
}

namespace detail {

namespace {
// The byte range of a tensor of element type dt with strides s and extents x.
Range tensor_range(const Problem& p, DType dt, const char* name, const void* ptr, const Strides& s, TensorExtents x,
                   int heads) {
  const char* b = static_cast<const char*>(ptr);
  return Range{name, b, b + span_elements(s, x.outer, x.rows, heads, p.head_dim) * dtype_size(dt)};
}
// The variants' per-head parameter arrays of a call, named (null when off).
std::array<std::pair<const char*, const float*>, 2> head_parameters(const Tensors& t) {
  return {{{"alibi_slopes", t.alibi_slopes}, {"sinks", t.sinks}}};
}

std::vector<Range> tensor_ranges(const Problem& p, const Tensors& t) {
  const TensorExtents qx = q_extents(p), kx = kv_extents(p);
  auto range = [&](const char* name, const void* ptr, const Strides& s, TensorExtents x, int heads) {
    return tensor_range(p, p.dtype, name, ptr, s, x, heads);
  };
  // O is of o_dtype() (out_dtype with fp8 inputs).
  std::vector<Range> r = {range("q", t.q, p.q, qx, p.heads_q), range("k", t.k, p.k, kx, p.heads_kv),
                          range("v", t.v, p.v, kx, p.heads_kv),
                          tensor_range(p, p.o_dtype(), "o", t.o, p.o, qx, p.heads_q)};
  if (t.lse != nullptr) {
    const char* b = reinterpret_cast<const char*>(t.lse);
    r.push_back({"lse", b, b + static_cast<std::int64_t>(qx.outer) * p.heads_q * qx.rows * sizeof(float)});
  }
  for (const auto& [name, ptr] : head_parameters(t))
    if (ptr != nullptr) r.push_back({name, reinterpret_cast<const char*>(ptr), reinterpret_cast<const char*>(ptr + p.heads_q)});
  auto int_range = [&](const char* name, const int* ptr, std::int64_t n) {
    if (ptr != nullptr) r.push_back({name, reinterpret_cast<const char*>(ptr), reinterpret_cast<const char*>(ptr + n)});
  };
  int_range("cu_seqlens_q", t.cu_seqlens_q, p.batch + 1);
  int_range("cu_seqlens_k", t.cu_seqlens_k, p.batch + 1);
  int_range("seqlens_k", t.seqlens_k, p.batch);
  int_range("block_table", t.block_table, static_cast<std::int64_t>(p.batch) * p.pages_per_seq);
  return r;
}

void check_outputs_apart(const std::vector<Range>& r, std::size_t first, std::size_t last, const char* why) {
  for (std::size_t i = first; i < last; ++i)
    for (std::size_t j = 0; j < r.size(); ++j)
      if (j != i && r[i].begin < r[j].end && r[j].begin < r[i].end)
        throw Error(r[i].name, std::string(r[i].name) + ": output memory overlaps " + r[j].name + " (" + why + ")");
}
}  // namespace

std::vector<Range> validate_tensors(const Problem& p, const Tensors& t) {
  const std::pair<const char*, const void*> required[] = {{"q", t.q}, {"k", t.k}, {"v", t.v}, {"o", t.o}};
  for (const auto& [name, ptr] : required)
    if (ptr == nullptr) throw Error(name, std::string(name) + ": pointer is null");

  // The sequence arrays: each one present exactly when the problem's layout uses it.
  const struct {
    const char* name;
    const void* ptr;
    bool used;
    const char* field;
  } arrays[] = {{"cu_seqlens_q", t.cu_seqlens_q, p.total_q > 0, "total_q"},
                {"cu_seqlens_k", t.cu_seqlens_k, p.total_k > 0, "total_k"},
                {"block_table", t.block_table, p.page_size > 0, "page_size"}};
  for (const auto& a : arrays) {
    if (a.used && a.ptr == nullptr)
      throw Error(a.name, std::string(a.name) + ": pointer is null, but " + a.field + " > 0 says the layout needs it");
    if (!a.used && a.ptr != nullptr)
      throw Error(a.name, std::string(a.name) + ": given, but " + a.field + " is 0 (set " + a.field +
                              " to use it, or pass nullptr)");
  }

  std::vector<Range> r = tensor_ranges(p, t);
  const std::size_t n_outputs = t.lse != nullptr ? 2 : 1;  // o and lse: r[3], r[4]
  check_outputs_apart(r, 3, 3 + n_outputs, "in-place attention is not supported");
  return r;
}

void validate_gradients(const Problem& p, const Tensors& t, const Gradients& g, std::vector<Range> r) {
  if (t.lse == nullptr)
    throw Error("lse", "lse: pointer is null, but the backward pass needs the forward's LSE (Tensors::lse)");
  const std::pair<const char*, const void*> required[] = {{"d_o", g.d_o}, {"dq", g.dq}, {"dk", g.dk}, {"dv", g.dv}};
  for (const auto& [name, ptr] : required)
    if (ptr == nullptr) throw Error(name, std::string(name) + ": pointer is null");
  if (g.dsinks != nullptr && t.sinks == nullptr)
    throw Error("dsinks", "dsinks: given, but the call has no sinks (Tensors::sinks is null)");
  const TensorExtents qx = q_extents(p), kx = kv_extents(p);
  auto range = [&](const char* name, const void* ptr, const Strides& s, TensorExtents x, int heads) {
    return tensor_range(p, p.dtype, name, ptr, s, x, heads);
  };
  r.push_back(tensor_range(p, p.o_dtype(), "d_o", g.d_o, p.o, qx, p.heads_q));
  const std::size_t first = r.size();
  r.push_back(range("dq", g.dq, p.q, qx, p.heads_q));
  r.push_back(range("dk", g.dk, p.k, kx, p.heads_kv));
  r.push_back(range("dv", g.dv, p.v, kx, p.heads_kv));
  if (g.dsinks != nullptr)
    r.push_back({"dsinks", reinterpret_cast<const char*>(g.dsinks), reinterpret_cast<const char*>(g.dsinks + p.heads_q)});
  check_outputs_apart(r, first, r.size(), "gradients are written to their own memory");
}

void validate_head_parameters(const Problem& p, const Tensors& t) {
  for (const auto& [name, ptr] : head_parameters(t)) {
    if (ptr == nullptr) continue;
    for (int h = 0; h < p.heads_q; ++h)
      if (!std::isfinite(ptr[h])) {
        std::ostringstream v;
        v << ptr[h];
        throw Error(name, std::string(name) + ": value " + v.str() + " of head " + std::to_string(h) +
                              " is not finite");
      }
  }
}

}  // namespace detail

}  // namespace flashcore
