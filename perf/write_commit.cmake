# Writes OUT = '#define FLASHCORE_GIT_COMMIT "<short hash>[-dirty]"' for the checkout at SRC, at build
# time (so an incremental build after a commit names the new commit). Rewrites OUT only when the text
# changes, so an unchanged commit does not rebuild the benchmark.
#   cmake -DSRC=<repo> -DOUT=<header> [-DGIT=<git>] -P write_commit.cmake
set(commit "unknown")
if(NOT GIT)
  find_program(GIT git)
endif()
if(GIT)
  execute_process(COMMAND ${GIT} rev-parse --short HEAD WORKING_DIRECTORY ${SRC}
                  OUTPUT_VARIABLE c OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND NOT c STREQUAL "")
    set(commit "${c}")
    # Tracked files modified at build time: mark the commit, the numbers are not from it alone.
    execute_process(COMMAND ${GIT} diff --quiet HEAD -- WORKING_DIRECTORY ${SRC} RESULT_VARIABLE dirty ERROR_QUIET)
    if(NOT dirty EQUAL 0)
      set(commit "${commit}-dirty")
    endif()
  endif()
endif()
set(text "#define FLASHCORE_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
