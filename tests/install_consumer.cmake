# Installs the build tree into a scratch prefix and builds + runs tests/consumer against it with
# find_package(FlashCore): the package an application links.
#   cmake -DBUILD=<build dir> -DSRC=<repo> -DWORK=<scratch> -DKOKKOS_DIR=... -DCXX=... -P install_consumer.cmake
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${out}${err}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix)
run(${CMAKE_COMMAND} -S ${SRC}/tests/consumer -B ${WORK}/build -DCMAKE_CXX_COMPILER=${CXX}
    -DCMAKE_PREFIX_PATH=${WORK}/prefix -DKokkos_DIR=${KOKKOS_DIR} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/consumer_cpp)
run(${WORK}/build/consumer_c)
