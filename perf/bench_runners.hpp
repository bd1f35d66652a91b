// The benchmark bodies of flashcore_bench: device (bench_device.cpp) and host (bench_attention.cpp).
#pragma once

#include <benchmark/benchmark.h>

#include <string>

#include "bench_support.hpp"

namespace fcbench {

/// True when this build can time device backends (CUDA runtime linked).
bool device_timing_available();

/// Asks flashcore::explain, on real device buffers of the case's size, whether `backend` runs the
/// case; *why gets the reason when not. False with a reason when the build has no CUDA runtime.
bool device_supports(const std::string& backend, const Case& c, std::string* why);

/// One repetition of a device benchmark (UseManualTime, Iterations(1)): the first repetition of
/// a benchmark prepares it (inputs, warm-up, graph capture, output check), later ones reuse that.
void device_benchmark(benchmark::State& st, const std::string& backend, const Case& c, const Config& cfg,
                      const DeviceSummary& dev);

/// Frees the device buffers, graphs and streams kept between repetitions (and the buffers of
/// device_supports()).
void release_device_state();

}  // namespace fcbench
