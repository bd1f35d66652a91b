// Kokkos Tools profiling regions around FlashCore's work (no Kokkos include here).
//
// Every flashcore::run() opens a region named "flashcore::<backend that ran>" (e.g.
// "flashcore::cuda-flash", "flashcore::reference-host"), so a Kokkos Tools kernel timer or
// space-time stack attributes FlashCore's share of an application's time to the path it took,
// whether that path launches Kokkos kernels (the reference) or not (the tuned CUDA kernels).
#pragma once

#include <string>

namespace flashcore::detail {

/// Whether a Kokkos Tools library is loaded (then regions are worth naming).
bool profiling_active();
void push_profiling_region(const std::string& name);
void pop_profiling_region();

/// Opens the region on construction, closes it on destruction (also when the work throws).
class ProfilingRegion {
 public:
  explicit ProfilingRegion(const std::string& backend) : open_(profiling_active()) {
    if (open_) push_profiling_region("flashcore::" + backend);
  }
  ~ProfilingRegion() {
    if (open_) pop_profiling_region();
  }
  ProfilingRegion(const ProfilingRegion&) = delete;
  ProfilingRegion& operator=(const ProfilingRegion&) = delete;

 private:
  bool open_;
};

}  // namespace flashcore::detail
