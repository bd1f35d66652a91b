# Installs the build tree into a scratch prefix and builds tests/consumer against it with
# find_package(FlashCore): the package an application links, from C++, C and (when the build has
# the Fortran module) Fortran. Then runs the consumers, unless the build needs a GPU (Kokkos with
# CUDA) and this machine has none: then building and linking them is the check, and
# scripts/fc gpu-build stages them for the GPU machine.
#   cmake -DBUILD=<build dir> -DSRC=<repo> -DWORK=<scratch> -DKOKKOS_DIR=... -DCXX=... [-DFC=...]
#         [-DFORTRAN=ON] [-DNEEDS_GPU=ON] -P install_consumer.cmake
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${out}${err}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix)
set(fortran_args -DWITH_FORTRAN=OFF)
if(FORTRAN)
  set(fortran_args -DWITH_FORTRAN=ON -DCMAKE_Fortran_COMPILER=${FC})
endif()
run(${CMAKE_COMMAND} -S ${SRC}/tests/consumer -B ${WORK}/build -DCMAKE_CXX_COMPILER=${CXX} ${fortran_args}
    -DCMAKE_PREFIX_PATH=${WORK}/prefix -DKokkos_DIR=${KOKKOS_DIR} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK}/build)
set(consumers consumer_cpp consumer_c)
if(FORTRAN)
  list(APPEND consumers consumer_f)
endif()
foreach(c IN LISTS consumers)
  if(NOT EXISTS ${WORK}/build/${c})
    message(FATAL_ERROR "consumer ${c} was not built")
  endif()
endforeach()
set(run_them ON)
if(NEEDS_GPU)
  execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE gpu_rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT gpu_rc EQUAL 0)
    set(run_them OFF)
    message(STATUS "built and linked ${consumers} against the installed CUDA configuration; "
                   "no GPU here to run them (Kokkos with CUDA): scripts/fc gpu-build stages them")
  endif()
endif()
if(run_them)
  foreach(c IN LISTS consumers)
    set(ENV{OMP_PROC_BIND} spread)
    set(ENV{OMP_PLACES} threads)
    run(${WORK}/build/${c})
  endforeach()
endif()
