// The flashcore tool: the report of a run, as text or JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "cli.hpp"
#include "json.hpp"

namespace fcapp {

// ---------------------------------------------------------------------------------------------
// Reports
// ---------------------------------------------------------------------------------------------

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A list of lengths, the first 16 and a count beyond that.
std::string lengths_text(const std::vector<int>& v) {
  std::string s;
  const std::size_t shown = std::min<std::size_t>(v.size(), 16);
  for (std::size_t i = 0; i < shown; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  if (shown < v.size()) s += ",... (" + std::to_string(v.size()) + " sequences)";
  return s;
}

std::string json_ints(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

const char* q_layout(const Problem& p) { return p.total_q > 0 ? "packed" : "dense"; }
const char* kv_layout(const Problem& p) { return p.page_size > 0 ? "paged" : p.total_k > 0 ? "packed" : "dense"; }

/// The sequence layout in words (one line), or "" without one.
std::string sequences_text(const HostData& d) {
  const Problem& p = d.p;
  if (!p.has_sequence_layout() && d.seqs.seqlens_k.empty()) return "";
  std::ostringstream os;
  if (p.total_q > 0)
    os << "varlen Q packed (cu_seqlens_q), query lengths " << lengths_text(d.lq) << ", total_q " << p.total_q;
  else
    os << "Q dense (" << p.seqlen_q << " query rows per sequence)";
  os << "; ";
  if (p.page_size > 0)
    os << "K/V paged: page_size " << p.page_size << ", " << p.pages_per_seq << " pages per sequence, " << p.num_pages
       << " pages, block table a random permutation";
  else if (p.total_k > 0)
    os << "K/V packed (cu_seqlens_k), total_k " << p.total_k;
  else
    os << "K/V dense (" << p.seqlen_k << " rows per sequence)";
  if (!d.seqs.seqlens_k.empty()) os << ", cache lengths (seqlens_k) " << lengths_text(d.seqs.seqlens_k);
  else if (p.total_k > 0) os << ", key lengths " << lengths_text(d.lk);
  else if (p.page_size > 0) os << ", " << p.seqlen_k << " keys per sequence";
  os << " (Lq, Lk above: the bounds)";
  return os.str();
}

std::string description_of(const std::string& backend) {
  for (const flashcore::BackendInfo& b : flashcore::backends())
    if (b.name == backend) return b.name + ": " + b.description;
  return backend;
}

void print_text(const RunArgs& a, const HostData& d, const Outcome& out, const Validation& val) {
  const Problem& p = d.p;
  std::ostringstream os;
  os << "FlashCore " << flashcore::version() << ": O = softmax(Q K^T * scale + mask) V\n";
  os << "problem   : B=" << p.batch << " Hq=" << p.heads_q << " Hkv=" << p.heads_kv << " Lq=" << p.seqlen_q
     << " Lk=" << p.seqlen_k << " D=" << p.head_dim << " " << flashcore::to_string(p.dtype) << " "
     << (p.causal ? "causal" : "non-causal") << " layout=" << to_string(d.layout)
     << " scale=" << fmt("%.6g", p.effective_scale()) << (d.lse.empty() ? " (no LSE)" : "") << "\n";
  if (p.dtype == DType::E4M3)
    os << "fp8       : e4m3 inputs, O " << flashcore::to_string(p.o_dtype()) << ", descale_q=" << fmt("%.6g", p.descale_q)
       << " descale_k=" << fmt("%.6g", p.descale_k) << " descale_v=" << fmt("%.6g", p.descale_v) << "\n";
  if (p.has_window() || p.softcap > 0 || !d.alibi_slopes.empty() || !d.sinks.empty()) {
    os << "variants  :";
    if (p.has_window()) os << " window=(" << p.window_left << "," << p.window_right << ")";
    if (p.softcap > 0) os << " softcap=" << fmt("%.6g", p.softcap);
    if (!d.alibi_slopes.empty()) os << " alibi";
    if (!d.sinks.empty()) os << " sinks=" << fmt("%.6g", d.sinks[0]);
    os << "\n";
  }
  if (const std::string seq = sequences_text(d); !seq.empty()) os << "sequences : " << seq << "\n";
  if (d.from_files)
    os << "inputs    : --q " << a.q_file << ", --k " << a.k_file << ", --v " << a.v_file << "\n";
  else
    os << "inputs    : random, seed " << a.seed << " (Q, K ~ normal(0,1); V ~ uniform(-1,1))\n";
  os << "data      : " << out.location << " memory" << (out.location == "device" ? ", " + out.device : "") << "\n";
  os << "selection : " << cli_report(out.report).to_string() << "\n";
  os << "            " << description_of(out.report.chosen) << "\n";
  if (out.have_device_report) {
    os << "            (a CUDA device is present, but no device backend accepts the problem:";
    for (const auto& dec : out.device_report.decisions)
      if (dec.code != flashcore::DecisionCode::OtherMemory) os << "\n             " << dec.backend << ": " << dec.reason;
    os << ")\n";
  }
  const Work w = work_of(d);
  if (out.repeat > 0) {
    os << "timing    : " << out.warmup << " warm-up + " << out.repeat << " timed calls (" << out.timing_method
       << ")\n";
    os << "            median " << fmt("%.1f", out.median_us) << " us, min " << fmt("%.1f", out.min_us) << " us, mean "
       << fmt("%.1f", out.mean_us) << " us; " << fmt("%.4g", w.flops / (out.median_us * 1e-6) / 1e12)
       << " TFLOP/s at the median (" << fmt("%.4g", w.flops) << " FLOP), " << fmt("%.4g", w.bytes / (out.median_us * 1e-6) / 1e9)
       << " GB/s (" << fmt("%.4g", w.bytes) << " bytes: Q, O and the K/V rows the queries see)\n";
  } else {
    os << "timing    : none (--repeat 0)\n";
  }
  if (val.done) {
    os << "validation: against " << val.oracle << ", " << (out.have_final ? "first and last" : "first")
       << " call on NaN-poisoned outputs\n";
    os << "            max abs err " << fmt("%.3e", val.max_abs_err) << ", rel L2 err " << fmt("%.3e", val.rel_l2_err);
    if (val.have_lse) os << ", LSE max abs err " << fmt("%.3e", val.lse_max_abs_err);
    os << "\n            " << val.bound_text << "\n";
    if (val.o_nonfinite) os << "            " << val.o_nonfinite << " output elements are NaN or infinite\n";
    if (val.passed) {
      os << "            result: PASS\n";
    } else {
      os << "            result: FAIL";
      if (val.o_bad || val.lse_bad) os << " (" << val.o_bad << " O and " << val.lse_bad << " LSE elements out of bounds)";
      os << "\n";
      if (!val.first_bad.empty()) os << "            first failure: " << val.first_bad << "\n";
    }
  } else {
    os << "validation: not requested (--validate)\n";
  }
  std::vector<std::string> written;
  for (const std::string* f : {&a.out_q, &a.out_k, &a.out_v, &a.out_o, &a.out_lse})
    if (!f->empty()) written.push_back(*f);
  if (!written.empty()) {
    os << "wrote     :";
    for (const auto& f : written) os << " " << f;
    os << "\n";
  }
  std::cout << os.str() << std::flush;
}

void print_json(const RunArgs& a, const HostData& d, const Outcome& out, const Validation& val,
                const BackwardOutcome* bwd) {
  const Problem& p = d.p;
  const flashcore::Report rep = cli_report(out.report);  // in the CLI's terms
  JsonObject j;
  j.str("backend", rep.chosen).str("kind", rep.chosen.empty() ? "" : flashcore::to_string(rep.chosen_kind));
  j.str("how", rep.how).str("plan", rep.plan).str("device", out.device).str("location", out.location);
  j.integer("B", p.batch).integer("Hq", p.heads_q).integer("Hkv", p.heads_kv).integer("Lq", p.seqlen_q);
  j.integer("Lk", p.seqlen_k).integer("D", p.head_dim).str("dtype", flashcore::to_string(p.dtype));
  j.str("out_dtype", flashcore::to_string(p.o_dtype()));
  j.num("descale_q", p.descale_q).num("descale_k", p.descale_k).num("descale_v", p.descale_v);
  j.boolean("causal", p.causal).str("layout", to_string(d.layout)).num("scale", p.effective_scale());
  j.boolean("lse", !d.lse.empty());
  j.integer("window_left", p.window_left).integer("window_right", p.window_right).num("softcap", p.softcap);
  j.str("q_layout", q_layout(p)).str("kv_layout", kv_layout(p));
  j.raw("seqlens_q", p.total_q > 0 ? json_ints(d.lq) : "null");
  j.raw("seqlens_k", !d.seqs.seqlens_k.empty() || p.total_k > 0 ? json_ints(d.lk) : "null");
  j.integer("total_q", p.total_q).integer("total_k", p.total_k).integer("page_size", p.page_size);
  j.integer("num_pages", p.num_pages).integer("pages_per_seq", p.pages_per_seq);
  j.boolean("alibi", !d.alibi_slopes.empty());
  if (d.sinks.empty()) j.null("sinks");
  else j.num("sinks", d.sinks[0]);
  j.str("inputs", d.from_files ? "files" : "random");
  if (d.from_files) j.null("seed");
  else j.raw("seed", std::to_string(a.seed));
  j.integer("repeat", out.repeat).integer("warmup", out.warmup).str("timing", out.timing_method);
  j.num("median_us", out.median_us).num("mean_us", out.mean_us).num("min_us", out.min_us);
  const Work work = work_of(d);
  j.num("flops", work.flops).num("bytes", work.bytes);
  j.num("tflops", out.repeat > 0 ? work.flops / (out.median_us * 1e-6) / 1e12 : std::nan(""));
  j.num("gbps", out.repeat > 0 ? work.bytes / (out.median_us * 1e-6) / 1e9 : std::nan(""));
  j.boolean("validated", val.done);
  if (val.done) {
    j.str("oracle", val.oracle).num("max_abs_err", val.max_abs_err).num("rel_l2_err", val.rel_l2_err);
    if (val.have_lse) j.num("lse_max_abs_err", val.lse_max_abs_err);
    else j.null("lse_max_abs_err");
    j.str("bound", val.bound).str("bound_text", val.bound_text);
    if (val.threshold >= 0) j.num("naive_err", val.naive_err).num("threshold", val.threshold);
    else j.null("naive_err").null("threshold");
    j.integer("nonfinite", val.o_nonfinite).integer("o_bad", val.o_bad).integer("lse_bad", val.lse_bad);
    if (val.first_bad.empty()) j.null("first_failure");
    else j.str("first_failure", val.first_bad);
    j.boolean("passed", val.passed);
  } else {
    for (const char* k : {"max_abs_err", "rel_l2_err", "lse_max_abs_err", "bound", "passed"}) j.null(k);
  }
  std::string sel = "[";
  for (std::size_t i = 0; i < rep.decisions.size(); ++i) {
    const auto& dec = rep.decisions[i];
    JsonObject o;
    o.str("backend", dec.backend).str("kind", flashcore::to_string(dec.kind)).boolean("ok", dec.ok);
    o.str("code", flashcore::to_string(dec.code)).str("reason", dec.reason);
    sel += (i ? ", " : "") + o.render();
  }
  j.raw("selection", sel + "]");
  if (out.have_device_report) {
    std::string dsel = "[";
    for (std::size_t i = 0; i < out.device_report.decisions.size(); ++i) {
      const auto& dec = out.device_report.decisions[i];
      JsonObject o;
      o.str("backend", dec.backend).str("kind", flashcore::to_string(dec.kind)).boolean("ok", dec.ok);
    o.str("code", flashcore::to_string(dec.code)).str("reason", dec.reason);
      dsel += (i ? ", " : "") + o.render();
    }
    j.raw("device_selection", dsel + "]");
  } else {
    j.null("device_selection");
  }
  std::vector<std::string> written;
  for (const std::string* f : {&a.out_q, &a.out_k, &a.out_v, &a.out_o, &a.out_lse})
    if (!f->empty()) written.push_back(json_string(*f));
  std::string w = "[";
  for (std::size_t i = 0; i < written.size(); ++i) w += (i ? ", " : "") + written[i];
  j.raw("wrote", w + "]");
  if (bwd != nullptr && bwd->done) j.raw("backward", backward_json(*bwd));
  else j.null("backward");
  j.str("version", flashcore::version());
  std::cout << j.render() << "\n" << std::flush;
}

}  // namespace fcapp
