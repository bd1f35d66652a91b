// Where the Kokkos backends (reference, portable) run their launches, stated once for both.
//   on_host(who, launch): the default host execution space (OpenMP or Serial), synchronously,
//     one host launch at a time; Kokkos::Serial from threads the default space refuses (Kokkos 3.x
//     OpenMP accepts work only from the thread that initialized it).
//   cuda_instance(stream): the Kokkos::Cuda instance on a CUDA stream, made once per stream.
#pragma once

#include <mutex>
#include <string>

#include "backends/reference/kokkos_compat.hpp"
#include "flashcore/flashcore.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace flashcore::kexec {

/// The mutex that serializes host launches of every Kokkos backend.
std::mutex& host_launch_mutex();

/// Runs launch(exec) to completion on a host execution space (see above).
template <class Launch>
void on_host([[maybe_unused]] const char* who, Launch&& launch) {
  std::lock_guard<std::mutex> lock(host_launch_mutex());
  if (kc::default_host_space_usable_here()) {
    Kokkos::DefaultHostExecutionSpace exec;
    launch(exec);
    exec.fence();
    return;
  }
#if defined(KOKKOS_ENABLE_SERIAL)
  Kokkos::Serial exec;
  launch(exec);
  exec.fence();
#else
  throw Error("backend", std::string(who) + ": Kokkos' " + Kokkos::DefaultHostExecutionSpace::name() +
                             " backend accepts work only from the thread that initialized Kokkos");
#endif
}

#if defined(KOKKOS_ENABLE_CUDA)
/// One Kokkos::Cuda instance per CUDA stream, made on first use: constructing one allocates and
/// clears device memory (Kokkos 3.4), too costly per call and not allowed inside graph capture.
/// The instances are released by a Kokkos finalize hook, before Kokkos shuts down.
Kokkos::Cuda cuda_instance(cudaStream_t stream);

/// Yes when there is a current CUDA device and the problem's own limits (`why`, "" = none) allow it.
Support on_current_cuda_device(const std::string& why);

/// Enqueues launch(exec) on the Kokkos::Cuda instance of the caller's stream (Options::stream;
/// nullptr is CUDA's default stream, not Kokkos' own default instance, so the ordering is the one a
/// CUDA user expects); a failed launch is an Error naming the backend (`who`) and `what`.
template <class Launch>
void enqueue_cuda(const char* who, const Options& opts, const char* what, Launch&& launch) {
  launch(cuda_instance(static_cast<cudaStream_t>(opts.stream)));
  const cudaError_t err = cudaPeekAtLastError();
  if (err != cudaSuccess) throw Error("backend", std::string(who) + ": " + what + " failed: " + cudaGetErrorString(err));
}
#endif

}  // namespace flashcore::kexec
