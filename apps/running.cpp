// The flashcore tool: choosing where the data goes, running the calls and timing them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cli.hpp"
#include "device.hpp"

namespace fcapp {

// ---------------------------------------------------------------------------------------------
// Running and timing
// ---------------------------------------------------------------------------------------------

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ';';
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ';' && i + 1 < s.size()) {
      out += "; ";
      while (i + 1 < s.size() && s[i + 1] == ' ') ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// The selection for data in `loc`; unknown backends are usage errors.
flashcore::Report explain_at(const Problem& p, const flashcore::Tensors& t, flashcore::Options opts,
                             flashcore::MemoryLocation loc) {
  opts.location = loc;
  try {
    return flashcore::explain(p, t, opts);
  } catch (const flashcore::Error& e) {
    if (e.field() == "backend") throw UsageError(e.what());
    throw;
  }
}

#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
/// The selection for data in device memory, asked with placeholder device addresses (explain()
/// touches no memory): which device backend would run the problem, and why the others decline.
flashcore::Report device_explain(const HostData& d, bool want_lse, const flashcore::Options& opts) {
  const Problem& p = d.p;
  std::uintptr_t next = std::uintptr_t(1) << 44;  // far from any real allocation; 256-byte aligned ranges
  auto place = [&](std::size_t bytes) {
    const std::uintptr_t at = next;
    next += (bytes + 511) / 256 * 256;
    return reinterpret_cast<void*>(at);
  };
  const Extents qx = q_extents(p), kx = kv_extents(p);
  flashcore::Tensors t;
  t.q = place(tensor_bytes(p, p.q, qx, p.heads_q, p.dtype));
  t.k = place(tensor_bytes(p, p.k, kx, p.heads_kv, p.dtype));
  t.v = place(tensor_bytes(p, p.v, kx, p.heads_kv, p.dtype));
  t.o = place(tensor_bytes(p, p.o, qx, p.heads_q, p.o_dtype()));
  if (want_lse) t.lse = static_cast<float*>(place(static_cast<std::size_t>(qx.outer) * p.heads_q * qx.rows * 4));
  if (!d.alibi_slopes.empty()) t.alibi_slopes = static_cast<const float*>(place(p.heads_q * sizeof(float)));
  if (!d.sinks.empty()) t.sinks = static_cast<const float*>(place(p.heads_q * sizeof(float)));
  auto place_ints = [&](const std::vector<int>& a) {
    return a.empty() ? nullptr : static_cast<const int*>(place(a.size() * sizeof(int)));
  };
  t.cu_seqlens_q = place_ints(d.seqs.cu_seqlens_q);
  t.cu_seqlens_k = place_ints(d.seqs.cu_seqlens_k);
  t.seqlens_k = place_ints(d.seqs.seqlens_k);
  t.block_table = place_ints(d.seqs.block_table);
  // The placeholders hold no arrays to check (the real call checks the real ones).
  flashcore::Options no_copy = opts;
  no_copy.check_sequences = false;
  return explain_at(p, t, no_copy, flashcore::MemoryLocation::Device);
}
#endif

/// The library names its own way of forcing a backend ("forced by Options::backend", "runs only when
/// forced by name (Options::backend or FLASHCORE_BACKEND)"); the CLI fills Options::backend only from
/// --backend, so that is what a CLI user is told.
std::string in_cli_terms(std::string text) {
  const std::string from = "Options::backend";
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
    text.replace(at, from.size(), "--backend");
  return text;
}
flashcore::Report cli_report(flashcore::Report r) {
  r.how = in_cli_terms(r.how);
  for (auto& d : r.decisions) d.reason = in_cli_terms(d.reason);
  return r;
}

/// Why no backend runs the problem: the forced backend's reason, or every backend's.
std::string decline_message(const flashcore::Report& report, const char* where) {
  const flashcore::Report r = cli_report(report);
  if (r.mode != flashcore::SelectionMode::Automatic) {
    for (const auto& dec : r.decisions)
      if (dec.code != flashcore::DecisionCode::NotSelected)
        return "backend '" + dec.backend + "' (" + r.how + ") cannot run this problem in " + where +
               " memory: " + dec.reason;
  }
  std::string s = std::string("no backend can run this problem in ") + where + " memory (" + r.how + "):";
  for (std::size_t i = 0; i < r.decisions.size(); ++i)
    s += (i ? "; " : " ") + r.decisions[i].backend + ": " + r.decisions[i].reason;
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void fill_timing(Outcome& out, const std::vector<double>& samples) {
  if (samples.empty()) return;
  out.median_us = median(samples);
  out.min_us = *std::min_element(samples.begin(), samples.end());
  double s = 0;
  for (double x : samples) s += x;
  if (std::isnan(out.mean_us)) out.mean_us = s / samples.size();
}

/// Runs on host memory: the first call on poisoned outputs, warm-up, timed calls, and (when
/// validating) a final call on poisoned outputs. d.o / d.lse end with the last call's outputs.
void run_host(const RunArgs& a, HostData& d, flashcore::Options opts, Outcome& out) {
  const Problem& p = d.p;
  const flashcore::verify::HeadParams hp = d.head_params();
  flashcore::Tensors t{d.q.data(), d.k.data(), d.v.data(), d.o.data(), d.lse.empty() ? nullptr : d.lse.data(),
                       hp.alibi_slopes, hp.sinks};
  d.seqs.set(t);
  opts.location = flashcore::MemoryLocation::Host;
  out.report = explain_at(p, t, opts, flashcore::MemoryLocation::Host);
  if (out.report.chosen.empty())
    throw RunError(decline_message(out.report, "host"));
  out.warmup = a.warmup > 0 ? a.warmup : 1;
  out.repeat = a.repeat;
  out.timing_method = "std::chrono::steady_clock per call";
  d.poison();
  out.report = flashcore::run(p, t, opts);
  out.o_first = d.o;
  out.lse_first = d.lse;
  for (int i = 1; i < out.warmup; ++i) flashcore::run(p, t, opts);
  std::vector<double> samples;
  for (int i = 0; i < a.repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    flashcore::run(p, t, opts);
    const auto t1 = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  fill_timing(out, samples);
  if (a.validate && a.repeat + out.warmup > 1) {
    d.poison();
    flashcore::run(p, t, opts);
    out.have_final = true;
  }
}

#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
/// The same on device memory, timed with CUDA events.
void run_device(const RunArgs& a, HostData& d, flashcore::Options opts, Outcome& out) {
  const Problem& p = d.p;
  DeviceBuffer q(d.q.size(), "q"), k(d.k.size(), "k"), v(d.v.size(), "v"), o(d.o.size(), "o");
  std::unique_ptr<DeviceBuffer> lse_buf;
  if (!d.lse.empty()) lse_buf = std::make_unique<DeviceBuffer>(d.lse.size() * sizeof(float), "lse");
  q.upload(d.q.data(), d.q.size());
  k.upload(d.k.data(), d.k.size());
  v.upload(d.v.data(), d.v.size());
  // The variants' per-head parameters (heads_q floats each) go to device memory too.
  std::unique_ptr<DeviceBuffer> slopes_buf, sinks_buf;
  auto upload_floats = [](const std::vector<float>& h, std::unique_ptr<DeviceBuffer>& buf, const char* name) {
    if (h.empty()) return static_cast<const float*>(nullptr);
    buf = std::make_unique<DeviceBuffer>(h.size() * sizeof(float), name);
    buf->upload(h.data(), h.size() * sizeof(float));
    return static_cast<const float*>(buf->get());
  };
  flashcore::Tensors t{q.get(), k.get(), v.get(), o.get(), lse_buf ? static_cast<float*>(lse_buf->get()) : nullptr,
                       upload_floats(d.alibi_slopes, slopes_buf, "alibi_slopes"), upload_floats(d.sinks, sinks_buf, "sinks")};
  // The sequence arrays too (checked by the library before the first call: Options::check_sequences).
  std::unique_ptr<DeviceBuffer> seq_bufs[4];
  auto upload_ints = [](const std::vector<int>& h, std::unique_ptr<DeviceBuffer>& buf, const char* name) {
    if (h.empty()) return static_cast<const int*>(nullptr);
    buf = std::make_unique<DeviceBuffer>(h.size() * sizeof(int), name);
    buf->upload(h.data(), h.size() * sizeof(int));
    return static_cast<const int*>(buf->get());
  };
  t.cu_seqlens_q = upload_ints(d.seqs.cu_seqlens_q, seq_bufs[0], "cu_seqlens_q");
  t.cu_seqlens_k = upload_ints(d.seqs.cu_seqlens_k, seq_bufs[1], "cu_seqlens_k");
  t.seqlens_k = upload_ints(d.seqs.seqlens_k, seq_bufs[2], "seqlens_k");
  t.block_table = upload_ints(d.seqs.block_table, seq_bufs[3], "block_table");
  opts.location = flashcore::MemoryLocation::Device;
  out.report = explain_at(p, t, opts, flashcore::MemoryLocation::Device);
  if (out.report.chosen.empty())
    throw RunError(decline_message(out.report, "device"));
  out.location = "device";
  out.device = current_device_name();
  out.warmup = a.warmup > 0 ? a.warmup : 3;
  out.repeat = a.repeat;
  out.timing_method = "CUDA events: median of per-call times; mean over back-to-back calls";
  if (d.p.has_sequence_layout() || !d.seqs.seqlens_k.empty())
    out.timing_method += "; sequence arrays checked on the first call, trusted (Options::check_sequences) in the timed ones";
  auto poison = [&] {
    d.poison();
    o.upload(d.o.data(), d.o.size());
    if (lse_buf) lse_buf->upload(d.lse.data(), d.lse.size() * sizeof(float));
  };
  auto fetch = [&] {
    device_synchronize(out.report.chosen.c_str());
    o.download(d.o.data(), d.o.size());
    if (lse_buf) lse_buf->download(d.lse.data(), d.lse.size() * sizeof(float));
  };
  poison();
  out.report = flashcore::run(p, t, opts);
  fetch();
  out.o_first = d.o;
  out.lse_first = d.lse;
  // The first call checked the sequence arrays (a copy to the host and a wait); the warm-up and
  // timed calls trust them, as a decode loop whose arrays do not change would.
  flashcore::Options trusted = opts;
  trusted.check_sequences = false;
  for (int i = 1; i < out.warmup; ++i) flashcore::run(p, t, trusted);
  device_synchronize("the warm-up calls");
  double total_us = 0;
  const std::vector<double> samples = time_device_calls([&] { flashcore::run(p, t, trusted); }, a.repeat, &total_us);
  if (a.repeat > 0) out.mean_us = total_us / a.repeat;
  fill_timing(out, samples);
  if (a.validate && a.repeat + out.warmup > 1) {
    poison();
    flashcore::run(p, t, opts);
    out.have_final = true;
  }
  fetch();
  // Buffers are freed here, before flashcore::finalize().
}
#endif

}  // namespace fcapp
