// flashcore: command-line tool of the FlashCore library.
//
//   flashcore                 the main job: a validated, timed fp16 problem (B=1, H=8, L=512, D=64)
//   flashcore run [flags]     one problem from flags or .npy files; timing, validation, outputs
//   flashcore info            version, build configuration, CUDA devices, backends
//
// Exit status: 0 success, 1 runtime error, 2 usage error or invalid problem, 3 validation failed.
//
// The tool is split by concern: args.cpp (flags), inputs.cpp (problem, .npy and random inputs,
// outputs), running.cpp (where the data goes, the calls, timing), reporting.cpp (text and JSON),
// and this file (the commands and main).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "device.hpp"

namespace fcapp {

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

/// Kokkos through FlashCore: initialized on first use, finalized at exit.
struct Runtime {
  bool started = false;
  void start() {
    if (!started) {
      // Kokkos' OpenMP backend prints a warning on stdout when thread binding is unset, which
      // would break --json; the tool sets Kokkos' recommended binding unless the user chose one.
      setenv("OMP_PROC_BIND", "spread", /*overwrite=*/0);
      setenv("OMP_PLACES", "threads", /*overwrite=*/0);
      flashcore::initialize();
      started = true;
    }
  }
  ~Runtime() {
    if (started) {
      try {
        flashcore::finalize();
      } catch (...) {
      }
    }
  }
};

int cmd_run(const std::vector<std::string>& args, bool main_job, Runtime& rt) {
  const RunArgs a = parse_run_args(args, main_job);
  if (a.help) {
    std::cout << kRunHelp;
    return kOk;
  }
  HostData d = make_data(a);  // validates the problem (usage errors) before Kokkos starts
  rt.start();
  flashcore::Options opts;
  opts.backend = a.backend;
  Outcome out;
  // Where the data goes: a forced backend (--backend or FLASHCORE_BACKEND) decides by the memory
  // it reads; automatically, device memory when a device backend accepts the problem.
  std::string forced_by;
  std::string forced;
  try {
    forced = flashcore::forced_backend(opts, &forced_by);
    forced_by = in_cli_terms(forced_by);
  } catch (const flashcore::Error& e) {
    throw UsageError(in_cli_terms(e.what()));
  }
  flashcore::MemoryLocation loc = flashcore::MemoryLocation::Host;
  std::string no_device_why;
#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
  const bool have_device = !flashcore::cuda_devices(&no_device_why).empty();
#else
  const bool have_device = false;
  no_device_why = "this build has no CUDA runtime";
#endif
  if (!forced.empty()) {
    for (const auto& b : flashcore::backends())
      if (b.name == forced) loc = b.location;
    if (loc == flashcore::MemoryLocation::Device && !have_device)
      throw RunError("backend '" + forced + "' (" + forced_by + ") reads device memory, but there is no CUDA device: " +
                     no_device_why);
  }
#if defined(FLASHCORE_HAVE_CUDA_RUNTIME)
  else if (have_device) {
    out.device_report = device_explain(d, !d.lse.empty(), opts);
    if (!out.device_report.chosen.empty()) loc = flashcore::MemoryLocation::Device;
    else out.have_device_report = true;
  }
  if (loc == flashcore::MemoryLocation::Device) run_device(a, d, opts, out);
#endif
  if (loc != flashcore::MemoryLocation::Device) run_host(a, d, opts, out);

  Validation val;
  if (a.validate) {
    const Problem& p = d.p;
    const bool reference = out.report.chosen_kind == flashcore::BackendKind::Reference;
    // The naive same-precision error sizes the kernel bound; fp8 inputs have a fixed one.
    const bool naive = !reference && p.dtype != flashcore::DType::E4M3;
    const Oracle ref = compute_oracle(p, d.q.data(), d.k.data(), d.v.data(), d.head_params(), d.seqs, naive);
    val = compare(p, d.seqs, ref, d.q.data(), d.k.data(), d.v.data(), out.o_first.data(),
                  out.lse_first.empty() ? nullptr : out.lse_first.data(), out.report.chosen_kind);
    if (out.have_final)
      val = worst(val, compare(p, d.seqs, ref, d.q.data(), d.k.data(), d.v.data(), d.o.data(),
                               d.lse.empty() ? nullptr : d.lse.data(), out.report.chosen_kind));
  }
  BackwardOutcome bwd;
  if (a.backward) bwd = run_backward_step(a, d, loc, opts);
  write_outputs(a, d);
  if (a.json) {
    print_json(a, d, out, val, &bwd);
  } else {
    print_text(a, d, out, val);
    if (bwd.done) print_backward_text(bwd);
  }
  const bool failed = (val.done && !val.passed) || (bwd.validated && !bwd.passed);
  return failed ? kValidationFailed : kOk;
}

std::string bytes_string(std::size_t b) {
  char buf[64];
  if (b >= (std::size_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", b / 1073741824.0);
  else if (b >= (std::size_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  return buf;
}

int cmd_info(const std::vector<std::string>& args, Runtime& rt) {
  for (const std::string& s : args) {
    if (s == "-h" || s == "--help") {
      std::cout << "usage: flashcore info\n\nPrints the version, the build configuration, the CUDA devices "
                   "found and the registered backends.\n";
      return kOk;
    }
    throw UsageError("info: unexpected argument '" + s + "'");
  }
  rt.start();
  std::ostringstream os;
  os << "FlashCore " << flashcore::version() << "\n\nbuild:\n";
  std::istringstream bi(flashcore::build_info());
  for (std::string line; std::getline(bi, line);) os << "  " << line << "\n";
  os << "\nCUDA devices:\n";
  std::string why;
  const auto devs = flashcore::cuda_devices(&why);
  if (devs.empty()) os << "  none (" << (why.empty() ? "no reason given" : why) << ")\n";
  for (const auto& dev : devs) {
    os << "  [" << dev.index << "] " << dev.name << ": compute capability " << dev.cc_major << "." << dev.cc_minor
       << ", " << dev.sm_count << " SMs";
    if (dev.clock_mhz) os << " at " << dev.clock_mhz << " MHz";
    os << ", shared memory " << bytes_string(dev.smem_optin_per_block) << " per block (opt-in), "
       << bytes_string(dev.smem_per_sm) << " per SM, memory " << bytes_string(dev.global_mem_bytes) << ", L2 "
       << bytes_string(dev.l2_bytes) << "\n";
  }
  os << "\nbackends (priority order):\n";
  for (const std::string& b : flashcore::backend_descriptions()) os << "  " << b << "\n";
  if (const char* env = std::getenv("FLASHCORE_BACKEND"); env != nullptr && *env)
    os << "\nFLASHCORE_BACKEND=" << env << " forces that backend\n";
  std::cout << os.str() << std::flush;
  return kOk;
}

int dispatch(int argc, char** argv, Runtime& rt) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return cmd_run({}, true, rt);
  const std::string cmd = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    if (!rest.empty() && rest[0] == "run") std::cout << kRunHelp;
    else std::cout << kMainHelp << "\n" << kRunHelp;
    return kOk;
  }
  if (cmd == "--version" || cmd == "version") {
    std::cout << "flashcore " << flashcore::version() << "\n";
    return kOk;
  }
  if (cmd == "run") return cmd_run(rest, false, rt);
  if (cmd == "info") return cmd_info(rest, rt);
  if (!cmd.empty() && cmd[0] == '-') return cmd_run(args, true, rt);  // flags for the main job
  throw UsageError("unknown command '" + cmd + "' (commands: run, info, help)");
}

int report_error(const std::string& msg, int code) {
  std::cout << std::flush;
  std::cerr << "flashcore: error: " << one_line(msg) << std::endl;
  return code;
}

}  // namespace fcapp

int main(int argc, char** argv) {
  using namespace fcapp;
  int code = kRuntime;
  {
    Runtime rt;  // finalizes Kokkos on every path, after the device buffers are gone
    try {
      code = dispatch(argc, argv, rt);
    } catch (const UsageError& e) {
      code = report_error(e.what(), kUsage);
    } catch (const RunError& e) {
      code = report_error(e.what(), kRuntime);
    } catch (const DeviceError& e) {
      code = report_error(std::string("CUDA: ") + e.what(), kRuntime);
    } catch (const flashcore::Error& e) {
      code = report_error(e.what(), kRuntime);
    } catch (const std::bad_alloc&) {
      code = report_error("out of host memory", kRuntime);
    } catch (const std::exception& e) {
      code = report_error(e.what(), kRuntime);
    } catch (...) {
      code = report_error("unknown exception", kRuntime);
    }
  }
  return code;
}
