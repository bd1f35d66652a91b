// The few places where Kokkos 3.4 and Kokkos 4.x/5.x differ, for FlashCore's use of them.
// Everything else in FlashCore uses API common to all these versions.
#pragma once

#include <Kokkos_Core.hpp>

#include <cmath>
#include <string>
#include <type_traits>

#ifndef KOKKOS_VERSION
#error "Kokkos_Core.hpp did not define KOKKOS_VERSION"
#endif
// Compatibility checks pass the major version they mean to compile against.
#if defined(FLASHCORE_EXPECT_KOKKOS_MAJOR) && KOKKOS_VERSION / 10000 != FLASHCORE_EXPECT_KOKKOS_MAJOR
#error "compiled against a Kokkos of another major version than FLASHCORE_EXPECT_KOKKOS_MAJOR"
#endif

namespace flashcore::kc {

// Math functions: Kokkos::Experimental:: in 3.4-3.6, Kokkos:: from 3.7 (Experimental aliases
// removed in 4.3).
#if KOKKOS_VERSION >= 30700
template <class T>
KOKKOS_INLINE_FUNCTION T exp(T x) { return Kokkos::exp(x); }
template <class T>
KOKKOS_INLINE_FUNCTION T exp2(T x) { return Kokkos::exp2(x); }
template <class T>
KOKKOS_INLINE_FUNCTION T log(T x) { return Kokkos::log(x); }
template <class T>
KOKKOS_INLINE_FUNCTION T tanh(T x) { return Kokkos::tanh(x); }
#else
template <class T>
KOKKOS_INLINE_FUNCTION T exp(T x) { return Kokkos::Experimental::exp(x); }
template <class T>
KOKKOS_INLINE_FUNCTION T exp2(T x) { return Kokkos::Experimental::exp2(x); }
template <class T>
KOKKOS_INLINE_FUNCTION T log(T x) { return Kokkos::Experimental::log(x); }
template <class T>
KOKKOS_INLINE_FUNCTION T tanh(T x) { return Kokkos::Experimental::tanh(x); }
#endif

// -infinity usable in device code without relaxed constexpr.
template <class T>
KOKKOS_INLINE_FUNCTION T neg_inf() { return -static_cast<T>(HUGE_VALF); }

inline std::string version_string() {
  return std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
         std::to_string(KOKKOS_VERSION % 100);
}

// Whether the default host execution space accepts a launch from the calling thread. Kokkos 3.x's
// OpenMP backend does so only on the thread that initialized Kokkos, outside parallel regions.
inline bool default_host_space_usable_here() {
#if defined(KOKKOS_ENABLE_OPENMP) && KOKKOS_VERSION < 40000
  if (std::is_same<Kokkos::DefaultHostExecutionSpace, Kokkos::OpenMP>::value) return !Kokkos::OpenMP::in_parallel();
#endif
  return true;
}

// True when an execution space runs on the host (Serial, OpenMP, Threads).
template <class ExecSpace>
constexpr bool is_host_space() {
  return Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
}

}  // namespace flashcore::kc
