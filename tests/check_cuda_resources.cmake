# Compiles the hand-written kernels for one architecture with ptxas' resource report and fails
# on any register spill or stack frame (local memory) in any kernel.
#   cmake -DNVCC=... -DSRC=<repo> -DARCH=89 -P check_cuda_resources.cmake
execute_process(
  COMMAND ${NVCC} -std=c++17 -O3 --expt-relaxed-constexpr -I${SRC}/src
          -gencode arch=compute_${ARCH},code=sm_${ARCH} -Xptxas -v -c ${SRC}/src/backends/cuda/flash_fwd.cu
          -o ${CMAKE_CURRENT_BINARY_DIR}/flash_fwd_sm${ARCH}_check.o
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(report "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc failed:\n${report}")
endif()
string(REGEX MATCHALL "Compiling entry function '[^']+'|Used [0-9]+ registers[^\n]*|[0-9]+ bytes stack frame, [0-9]+ bytes spill stores, [0-9]+ bytes spill loads" lines "${report}")
set(kernels 0)
set(bad "")
foreach(line IN LISTS lines)
  message(STATUS "${line}")
  if(line MATCHES "^Compiling entry")
    math(EXPR kernels "${kernels} + 1")
  elseif(line MATCHES "^([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads")
    if(NOT CMAKE_MATCH_1 EQUAL 0 OR NOT CMAKE_MATCH_2 EQUAL 0 OR NOT CMAKE_MATCH_3 EQUAL 0)
      string(APPEND bad "  ${line}\n")
    endif()
  endif()
endforeach()
if(kernels EQUAL 0)
  message(FATAL_ERROR "no kernel found in the ptxas report:\n${report}")
endif()
if(bad)
  message(FATAL_ERROR "sm_${ARCH}: spills or stack frames in ${kernels} kernels:\n${bad}")
endif()
message(STATUS "sm_${ARCH}: ${kernels} kernels, no spills, no stack frame")
