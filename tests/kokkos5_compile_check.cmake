# Compiles the Kokkos-facing sources against Kokkos 5 headers in C++20 (syntax and template
# instantiation, no link: the Kokkos 5 runtime on Debian needs a newer glibc than CI has).
#   cmake -DCXX=... -DKOKKOS5_INCLUDE=... -DSRC=<repo> -P kokkos5_compile_check.cmake
set(files
  ${SRC}/src/backends/reference/host.cpp        # the reference, instantiated for the host space
  ${SRC}/src/platform/kokkos_runtime.cpp        # initialize/finalize, the configuration line
  ${SRC}/src/platform/profiling.cpp              # the Kokkos Tools regions
  ${SRC}/tests/test_api.cpp                       # the Kokkos View entry point, instantiated
  ${SRC}/tests/test_fp8.cpp)                      # ... with std::uint8_t (fp8) Views
# test_api.cpp includes kokkos_compat.hpp only indirectly; the reference file carries the version check.
foreach(std 20)
  foreach(f IN LISTS files)
    execute_process(
      COMMAND ${CXX} -std=c++${std} -fopenmp -fsyntax-only -Wall -DFLASHCORE_EXPECT_KOKKOS_MAJOR=5 -I${KOKKOS5_INCLUDE} -I${SRC}/include -I${SRC}/src
              -I${SRC}/tests ${f}
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "C++${std} against Kokkos 5 failed for ${f}:\n${out}${err}")
    endif()
    if(err)
      message(STATUS "warnings:\n${err}")
    endif()
    message(STATUS "C++${std}, Kokkos 5: ${f} compiles")
  endforeach()
endforeach()
