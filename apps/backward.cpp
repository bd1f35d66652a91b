// `flashcore run --backward`: the backward pass after the forward, on the forward's memory, with a
// random dO (seeded); timed, and with --validate checked against the fp64 backward oracle of
// src/verify (tolerance::reference_gradient_bound for the reference, kernel_gradient_bound otherwise).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "cli.hpp"
#include "device.hpp"
#include "json.hpp"
#include "verify/backward.hpp"
#include "verify/tolerance.hpp"

namespace fcapp {

namespace verify = flashcore::verify;

BackwardOutcome run_backward_step(const RunArgs& a, HostData& d, flashcore::MemoryLocation loc,
                                  const flashcore::Options& forward_opts) {
  const Problem& p = d.p;
  BackwardOutcome out;
  out.location = loc == flashcore::MemoryLocation::Device ? "device" : "host";
  const verify::Sequences sq{d.seqs.cu_seqlens_q.empty() ? nullptr : d.seqs.cu_seqlens_q.data(),
                             d.seqs.cu_seqlens_k.empty() ? nullptr : d.seqs.cu_seqlens_k.data(),
                             d.seqs.seqlens_k.empty() ? nullptr : d.seqs.seqlens_k.data(),
                             d.seqs.block_table.empty() ? nullptr : d.seqs.block_table.data()};
  // dO uniform in [-1, 1] over every sequence's rows, from its own stream of the seed.
  std::vector<unsigned char> d_o(d.o.size(), 0);
  std::mt19937_64 rng(a.seed ^ 0xd0d0d0ull);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int b = 0; b < p.batch; ++b)
    for (int i = 0; i < sq.len_q(p, b); ++i)
      for (int h = 0; h < p.heads_q; ++h)
        for (int dd = 0; dd < p.head_dim; ++dd) verify::store_element(p.dtype, d_o.data(), sq.q_offset(p, p.o, b, i, h) + dd, u(rng));
  std::vector<unsigned char> dq(d.q.size()), dk(d.k.size()), dv(d.v.size());
  auto poison = [&] {
    for (auto* g : {&dq, &dk, &dv}) std::memset(g->data(), 0xff, g->size());  // NaN in every dtype
  };
  poison();
  const verify::HeadParams hp = d.head_params();
  flashcore::Options opts = forward_opts;
  opts.location = loc;
  opts.deterministic = a.deterministic;
  const int warmup = a.warmup > 0 ? a.warmup : 1;
  std::vector<double> samples;
  if (loc == flashcore::MemoryLocation::Host) {
    flashcore::Tensors t{d.q.data(), d.k.data(), d.v.data(), d.o.data(), d.lse.data(), hp.alibi_slopes, hp.sinks};
    d.seqs.set(t);
    const flashcore::Gradients g{d_o.data(), dq.data(), dk.data(), dv.data()};
    out.report = flashcore::run_backward(p, t, g, opts);  // the checked call: on poisoned gradients
    const std::vector<unsigned char> q0 = dq, k0 = dk, v0 = dv;
    for (int i = 1; i < warmup; ++i) flashcore::run_backward(p, t, g, opts);
    for (int i = 0; i < a.repeat; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      flashcore::run_backward(p, t, g, opts);
      samples.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    dq = q0, dk = k0, dv = v0;
  } else {
#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
    DeviceBuffer q(d.q.size(), "q"), k(d.k.size(), "k"), v(d.v.size(), "v"), o(d.o.size(), "o");
    DeviceBuffer lse(d.lse.size() * sizeof(float), "lse"), dob(d_o.size(), "d_o");
    DeviceBuffer dqb(dq.size(), "dq"), dkb(dk.size(), "dk"), dvb(dv.size(), "dv");
    q.upload(d.q.data(), d.q.size()), k.upload(d.k.data(), d.k.size()), v.upload(d.v.data(), d.v.size());
    o.upload(d.o.data(), d.o.size()), lse.upload(d.lse.data(), d.lse.size() * sizeof(float));
    dob.upload(d_o.data(), d_o.size());
    dqb.upload(dq.data(), dq.size()), dkb.upload(dk.data(), dk.size()), dvb.upload(dv.data(), dv.size());
    auto floats = [](const std::vector<float>& x, std::unique_ptr<DeviceBuffer>& buf, const char* what) -> const float* {
      if (x.empty()) return nullptr;
      buf = std::make_unique<DeviceBuffer>(x.size() * sizeof(float), what);
      buf->upload(x.data(), x.size() * sizeof(float));
      return static_cast<const float*>(buf->get());
    };
    auto ints = [](const std::vector<int>& x, std::unique_ptr<DeviceBuffer>& buf, const char* what) -> const int* {
      if (x.empty()) return nullptr;
      buf = std::make_unique<DeviceBuffer>(x.size() * sizeof(int), what);
      buf->upload(x.data(), x.size() * sizeof(int));
      return static_cast<const int*>(buf->get());
    };
    std::unique_ptr<DeviceBuffer> slopes, sinks, cq, ck, lk, bt;
    flashcore::Tensors t{q.get(), k.get(), v.get(), o.get(), static_cast<float*>(lse.get()),
                         floats(d.alibi_slopes, slopes, "alibi_slopes"), floats(d.sinks, sinks, "sinks")};
    t.cu_seqlens_q = ints(d.seqs.cu_seqlens_q, cq, "cu_seqlens_q");
    t.cu_seqlens_k = ints(d.seqs.cu_seqlens_k, ck, "cu_seqlens_k");
    t.seqlens_k = ints(d.seqs.seqlens_k, lk, "seqlens_k");
    t.block_table = ints(d.seqs.block_table, bt, "block_table");
    const flashcore::Gradients g{dob.get(), dqb.get(), dkb.get(), dvb.get()};
    out.report = flashcore::run_backward(p, t, g, opts);
    device_synchronize("the backward pass");
    dqb.download(dq.data(), dq.size()), dkb.download(dk.data(), dk.size()), dvb.download(dv.data(), dv.size());
    for (int i = 1; i < warmup; ++i) flashcore::run_backward(p, t, g, opts);
    double total = 0;
    if (a.repeat > 0) samples = time_device_calls([&] { flashcore::run_backward(p, t, g, opts); }, a.repeat, &total);
#else
    throw RunError("--backward on device memory: this build has no CUDA runtime");
#endif
  }
  out.repeat = a.repeat;
  if (!samples.empty()) {
    out.median_us = median(samples);
    out.tflops = 2.5 * work_of(d).flops / (out.median_us * 1e-6) / 1e12;
  }
  if (a.validate) {
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const verify::Gradients ref =
        verify::attention_backward(p, d.q.data(), d.k.data(), d.v.data(), d.o.data(), d_o.data(), verify::Precision::Exact,
                                   threads, hp, sq);
    const std::array<double, 3> scale = verify::gradient_scales(ref);
    std::array<flashcore::tolerance::Bound, 3> bounds;
    const bool reference = out.report.chosen_kind == flashcore::BackendKind::Reference;
    std::array<double, 3> naive{};
    if (!reference)
      naive = verify::gradient_differences(
          verify::attention_backward(p, d.q.data(), d.k.data(), d.v.data(), d.o.data(), d_o.data(),
                                     verify::Precision::Same, threads, hp, sq),
          ref);
    for (int n = 0; n < 3; ++n)
      bounds[n] = reference ? flashcore::tolerance::reference_gradient_bound(p.dtype, scale[n])
                            : flashcore::tolerance::kernel_gradient_bound(p.dtype, naive[n], scale[n]);
    out.bound = reference ? "reference: atol + rtol |ref| + rtol max|ref| per tensor"
                          : "kernel: 2 x naive same-precision error + floor x max|ref| per tensor";
    out.check = verify::check_gradients(p, sq, ref, dq.data(), dk.data(), dv.data(), bounds);
    out.validated = true;
    out.passed = out.check.bad == 0;
  }
  out.done = true;
  return out;
}

void print_backward_text(const BackwardOutcome& b) {
  const flashcore::Report r = cli_report(b.report);
  std::printf("backward:   %s (%s), %s memory", r.chosen.c_str(), r.how.c_str(), b.location.c_str());
  if (!std::isnan(b.median_us))
    std::printf("; median %.1f us over %d calls (%.3g TFLOP/s at 2.5 x the forward's FLOPs)", b.median_us, b.repeat,
                b.tflops);
  std::printf("\n");
  if (b.validated) {
    const char* names[] = {"dQ", "dK", "dV"};
    std::printf("gradients:  vs the fp64 backward oracle:");
    for (int n = 0; n < 3; ++n)
      std::printf(" %s max err %.3g (max |ref| %.3g)%s", names[n], b.check.max_abs[n], b.check.max_ref[n], n < 2 ? ";" : "");
    std::printf("\n            bound %s: %s%s%s\n", b.bound.c_str(), b.passed ? "PASS" : "FAIL",
                b.passed ? "" : "; first: ", b.passed ? "" : b.check.first_bad.c_str());
  }
  std::fflush(stdout);
}

std::string backward_json(const BackwardOutcome& b) {
  const flashcore::Report r = cli_report(b.report);
  JsonObject j;
  j.str("backend", r.chosen).str("kind", r.chosen.empty() ? "" : flashcore::to_string(r.chosen_kind)).str("how", r.how);
  j.str("plan", r.plan).str("location", b.location).integer("repeat", b.repeat);
  j.num("median_us", b.median_us).num("tflops", b.tflops);
  if (b.validated) {
    j.boolean("passed", b.passed).str("bound", b.bound);
    j.num("dq_max_abs_err", b.check.max_abs[0]).num("dk_max_abs_err", b.check.max_abs[1]);
    j.num("dv_max_abs_err", b.check.max_abs[2]).integer("bad", b.check.bad).str("first_bad", b.check.first_bad);
  }
  return j.render();
}

}  // namespace fcapp
