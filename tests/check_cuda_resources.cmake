# Reads ptxas' resource report of the hand-written kernels for one architecture and fails on any
# register spill or stack frame (local memory) in any kernel.
#   cmake -DNVCC=... -DSRC=<repo> -DARCH=89 [-DREPORTS=<build>/CMakeFiles -DBUILD_ARCHS=80-real|90]
#         -P check_cuda_resources.cmake
# Where the build compiled ARCH's machine code (BUILD_ARCHS, CMAKE_CUDA_ARCHITECTURES joined by |) and
# kept ptxas' reports beside its objects (REPORTS; the launcher cmake/ptxas_report.sh, on with
# FLASHCORE_CHECK_SPILLS), it reads those: one per kernel instance, each with ARCH's kernels, or it
# fails. Otherwise it compiles each instance for ARCH with the report on (about 5-9 minutes on 2 cores).
# Known exceptions, allowed at their measured size and no more:
#  - the 16-row warp-specialized kernel at D=128 (flash_fwd_kernel<128, *, true, CausalMask>): since
#    varlen prefill it holds its sequence's lengths (HeldLengths, common/mask.cuh): a 16-byte frame, 24
#    bytes of stores, 44 of loads. Measured on an H100 against the spill-free build before it
#    (perf/dev/NOTES.md): 0.68-0.82x the time at (1,8,2048,128) and (2,16,4096,128).
#  - the 16-row all-warps kernel at D=32 on sm_90 (flash_fwd_kernel<32, *, false, CausalMask>; 16
#    warps cap it at 128 registers): with HeldLengths a 16-byte frame, 12 bytes of stores, 20 of loads
#    (ReadLengths: 40/96). Measured on an H100 against the build before varlen prefill (perf/dev/NOTES.md):
#    0.93-1.06x the time at (1,8,512|2048,32), (4,16,2048,32).
#  - the backward's dK/dV kernels with the dQ atomics at D = 64 and 128 (flash_bwd_dkdv_kernel<64|128,
#    *, *, true>, backward/bwd_dkdv.cuh): 8-16-byte frames, up to 16 bytes of stores and 28 of loads
#    (sm_89: 28-byte loads at D = 128). They run at 255 registers; dQ columns per pass (16-128), a vector
#    red.v4, hoisted or recomputed offsets all kept a spill (only the row-major accumulator, 1.16x
#    slower, had none). Measured with it: perf/results/2026-11-25_h100_backward-atomic.md (GPU run 55).
#    Since the backward takes the mask policies (2026-11-26, twenty-second session), at 255 registers the
#    allocator lands elsewhere: up to a 32-byte frame, 32 bytes of stores, 52 of loads (sm_90, D = 128,
#    CausalMask causal and VariantMask; was 16/12/12; sm_89 up to 24/24/40). Timed against the build before it: perf/dev/NOTES.md, twenty-second session.
#    Since the sequence layouts (2026-11-26, twenty-third session; the fixed-length kernels' code is
#    the same, the parameter block and allocator's choices not): up to 36 bytes of stores and 56 of
#    loads (sm_90, D = 64 with VariantMask; was none). Timed against the build before (GPU run 23f,
#    perf/results/2026-11-26_h100_backward-varlen.md): 1.02-1.05x on cuda-flash-allwarps at D = 64
#    with variants, the other paths 0.98-1.01x.
#  - the backward's deterministic dK/dV kernel at D = 32, causal (flash_bwd_dkdv_kernel<32, *,
#    CausalMaskOf<FixedLengths, 1>, false>, sm_90): ptxas caps it at 128 registers (four blocks an SM)
#    and spilled 8 bytes with the mask policies (none before them, none since the sequence layouts).
#  - the backward's dK/dV kernels of sequence layouts at D = 128 (flash_bwd_dkdv_kernel<128, *,
#    CausalMaskOf<ReadLengths> or VariantMaskOf<ReadLengths>, *>, backward/bwd_sequences.cuh): they
#    read each sequence's lengths and offsets where used; with the dQ atomics a 32-byte frame, 32 bytes
#    of stores, 80 of loads (sm_90; sm_89 28/76); the deterministic ones none (they hold the lengths).
#    Timed against the fixed-length kernels at the same shape (32 sequences of 512, GPU runs 23d-23f):
#    0.91-1.05x.
# (The D=128 Hopper kernels without variants had an 8-byte spill until varlen prefill; they read
# their lengths where used now (ReadLengths) and have none. Those with the variants had a 96-byte frame
# and up to 164 bytes of loads, allowed here, until the softmax lost its P = 0 branch (381e159): none.
# The D = 64 and 256 paged ones with the variants had 12 bytes, allowed here, reloaded by the producer at
# 24 registers, until the persistent kernel's 40-register producer.)
set(allowed_kernel "flash_fwd_kernelILi(128E(6__half|13__nv_bfloat16)Lb1|32E(6__half|13__nv_bfloat16)Lb0)E")
set(allowed_bytes 44)
set(allowed_bwd_kernel "flash_bwd_dkdv_kernelILi(64|128)E.*Lb1EEEv")
set(allowed_bwd_bytes 56)
set(allowed_bwd32_kernel "flash_bwd_dkdv_kernelILi32E.*Li1EEELb0EEEv")
set(allowed_bwd32_bytes 8)
set(allowed_bwd_seq_kernel "flash_bwd_dkdv_kernelILi128E.*ReadLengths.*EEEv")
set(allowed_bwd_seq_bytes 80)
# The mma.sync kernels (sm80/instances/: one file per head dim), the decode kernel (decode/instances/)
# and the backward kernels (backward/instances/) for ARCH; for ARCH 90 also the Hopper kernels (sm90/instances/
# and backward/sm90/instances/, sm_90a).
file(GLOB instances ${SRC}/src/backends/cuda/sm80/instances/*.cu ${SRC}/src/backends/cuda/decode/instances/*.cu
                    ${SRC}/src/backends/cuda/backward/instances/*.cu)
set(use_reports OFF)
if(REPORTS)
  string(REPLACE "|" ";" build_archs "${BUILD_ARCHS}")
  foreach(build_arch IN LISTS build_archs)
    if(build_arch STREQUAL "${ARCH}" OR build_arch STREQUAL "${ARCH}-real")
      set(use_reports ON)
    endif()
  endforeach()
endif()
# unit: name|source|gencode|the object library that builds it
set(units "")
foreach(source IN LISTS instances)
  get_filename_component(name ${source} NAME_WE)
  list(APPEND units "${name}|${source}|arch=compute_${ARCH},code=sm_${ARCH}|flashcore_cuda_kernels")
endforeach()
if(ARCH STREQUAL "90")
  file(GLOB sm90_instances ${SRC}/src/backends/cuda/sm90/instances/*.cu ${SRC}/src/backends/cuda/backward/sm90/instances/*.cu)
  foreach(source IN LISTS sm90_instances)
    get_filename_component(name ${source} NAME_WE)
    list(APPEND units "sm90_${name}|${source}|arch=compute_90a,code=sm_90a|flashcore_cuda_hopper")
  endforeach()
endif()
set(report "")
foreach(unit IN LISTS units)
  string(REPLACE "|" ";" parts "${unit}")
  list(GET parts 0 name)
  list(GET parts 1 source)
  list(GET parts 2 gencode)
  list(GET parts 3 target)
  if(use_reports)
    file(RELATIVE_PATH relative ${SRC} ${source})
    set(kept "${REPORTS}/${target}.dir/${relative}.o.ptxas")
    if(NOT EXISTS "${kept}")
      message(FATAL_ERROR "no ptxas report ${kept}: build the library first (with FLASHCORE_CHECK_SPILLS on, the "
                          "compile keeps one beside each kernel object; delete an object to compile it again)")
    endif()
    file(READ "${kept}" out)
    if(NOT out MATCHES "Compiling entry function '[^']+' for 'sm_${ARCH}a?'")
      message(FATAL_ERROR "${kept} has no sm_${ARCH} kernel: the build compiled ${source} without it")
    endif()
    string(APPEND report "${out}")
    continue()
  endif()
  execute_process(
    COMMAND ${NVCC} -std=c++17 -O3 --expt-relaxed-constexpr -I${SRC}/src -I${SRC}/include
            -gencode ${gencode} -Xptxas -v -c ${source}
            -o ${CMAKE_CURRENT_BINARY_DIR}/${name}_sm${ARCH}_check.o
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nvcc failed on ${source}:\n${out}${err}")
  endif()
  string(APPEND report "${out}${err}")
endforeach()
if(use_reports)
  message(STATUS "sm_${ARCH}: ptxas' reports of this build's own compile (${REPORTS})")
endif()
# A report holds one block per architecture the unit was compiled for (each begins with ptxas' "bytes
# gmem" line); only ARCH's kernels (sm_ARCH, or sm_90a for 90) are checked.
string(REGEX MATCHALL "bytes gmem|Compiling entry function '[^']+' for '[^']+'|Used [0-9]+ registers[^\n]*|[0-9]+ bytes stack frame, [0-9]+ bytes spill stores, [0-9]+ bytes spill loads" lines "${report}")
set(kernels 0)
set(bad "")
set(kernel "")
set(kernel_arch "")
foreach(line IN LISTS lines)
  if(line STREQUAL "bytes gmem")
    set(kernel "")
    set(kernel_arch "")
    continue()
  endif()
  if(line MATCHES "^Compiling entry function '([^']+)' for 'sm_([0-9]+)a?'")
    set(kernel "${CMAKE_MATCH_1}")
    set(kernel_arch "${CMAKE_MATCH_2}")
    if(kernel_arch STREQUAL "${ARCH}")
      math(EXPR kernels "${kernels} + 1")
    endif()
  endif()
  # Lines before a block's first kernel (kernel_arch empty) are checked with no allowance.
  if(NOT kernel_arch STREQUAL "" AND NOT kernel_arch STREQUAL "${ARCH}")
    continue()
  endif()
  message(STATUS "${line}")
  if(line MATCHES "^([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads")
    # Keep the numbers first: the MATCHES test below resets CMAKE_MATCH_<n> (it had made this check
    # pass every kernel).
    set(stack ${CMAKE_MATCH_1})
    set(stores ${CMAKE_MATCH_2})
    set(loads ${CMAKE_MATCH_3})
    set(limit 0)
    if(kernel MATCHES "${allowed_kernel}")
      set(limit ${allowed_bytes})
    elseif(kernel MATCHES "${allowed_bwd_seq_kernel}")
      set(limit ${allowed_bwd_seq_bytes})
    elseif(kernel MATCHES "${allowed_bwd_kernel}")
      set(limit ${allowed_bwd_bytes})
    elseif(kernel MATCHES "${allowed_bwd32_kernel}")
      set(limit ${allowed_bwd32_bytes})
    endif()
    if(stack GREATER limit OR stores GREATER limit OR loads GREATER limit)
      string(APPEND bad "  ${kernel}: ${line}\n")
    endif()
  endif()
endforeach()
if(kernels EQUAL 0)
  message(FATAL_ERROR "no kernel found in the ptxas report:\n${report}")
endif()
if(bad)
  message(FATAL_ERROR "sm_${ARCH}: spills or stack frames in ${kernels} kernels:\n${bad}")
endif()
message(STATUS "sm_${ARCH}: ${kernels} kernels, no spills, no stack frame (beyond the allowances above)")
