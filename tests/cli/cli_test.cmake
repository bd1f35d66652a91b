# One test case of the `flashcore` command-line tool, run as a CMake script (no shell needed):
#
#   cmake -DFLASHCORE=<tool> -DCHECK=<cli_check helper> -DCASE=<name> -DWORK=<scratch dir> -P cli_test.cmake
#
# Each case runs the tool with execute_process and checks its exit status, stdout/stderr and the
# files it writes; tests/cli/cli_check.cpp parses JSON and writes (broken) .npy files. A failed
# check ends the script with FATAL_ERROR (non-zero exit: the test fails).
cmake_minimum_required(VERSION 3.18)

foreach(_v FLASHCORE CHECK CASE WORK)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "cli_test.cmake: -D${_v}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
# Keeps Kokkos' OpenMP advice about OMP_PROC_BIND off stderr.
if(NOT DEFINED ENV{OMP_PROC_BIND})
  set(ENV{OMP_PROC_BIND} "false")
endif()

# fc_run(<expected exit status> <args>...): runs the tool in WORK; sets OUT and ERR.
function(fc_run expected)
  execute_process(COMMAND "${FLASHCORE}" ${ARGN} WORKING_DIRECTORY "${WORK}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" " " _cmd "${ARGN}")
  message("$ flashcore ${_cmd}\n[exit ${rc}]\n--- stdout ---\n${out}--- stderr ---\n${err}")
  if(NOT "${rc}" STREQUAL "${expected}")
    message(FATAL_ERROR "expected exit status ${expected}, got ${rc}")
  endif()
  set(OUT "${out}" PARENT_SCOPE)
  set(ERR "${err}" PARENT_SCOPE)
endfunction()

# fc_expect(<text> <regex> <what>): <text> must match <regex>.
function(fc_expect text regex what)
  if(NOT "${text}" MATCHES "${regex}")
    message(FATAL_ERROR "${what} does not match '${regex}'")
  endif()
endfunction()

# fc_error(<expected exit status> <regex> <args>...): the tool fails with one line on stderr that
# starts with "flashcore: error: " and matches <regex>; nothing on stdout.
function(fc_error expected regex)
  fc_run(${expected} ${ARGN})
  if(NOT "${OUT}" STREQUAL "")
    message(FATAL_ERROR "stdout should be empty on an error")
  endif()
  fc_expect("${ERR}" "^flashcore: error: [^\n]*\n$" "stderr (one line starting with 'flashcore: error: ')")
  fc_expect("${ERR}" "${regex}" "the error message")
endfunction()

# fc_check(<args>...): runs the helper, which must succeed.
function(fc_check)
  execute_process(COMMAND "${CHECK}" ${ARGN} WORKING_DIRECTORY "${WORK}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" " " _cmd "${ARGN}")
  message("$ cli_check ${_cmd}\n[exit ${rc}] ${out}${err}")
  if(NOT "${rc}" STREQUAL "0")
    message(FATAL_ERROR "cli_check ${_cmd} failed")
  endif()
endfunction()

# fc_same(<a> <b>) / fc_differ(<a> <b>): files in WORK are byte-identical / differ.
function(fc_same a b)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${WORK}/${a}" "${WORK}/${b}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${a} and ${b} differ")
  endif()
endfunction()
function(fc_differ a b)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${WORK}/${a}" "${WORK}/${b}" RESULT_VARIABLE rc)
  if(rc EQUAL 0)
    message(FATAL_ERROR "${a} and ${b} are identical")
  endif()
endfunction()

# Three valid (1,8,2,16) '<f2' inputs for the broken-file cases.
macro(fc_good_inputs)
  fc_check(make-npy q.npy <f2 False 1,8,2,16)
  fc_check(make-npy k.npy <f2 False 1,8,2,16)
  fc_check(make-npy v.npy <f2 False 1,8,2,16)
endmacro()
set(QKV --q q.npy --k k.npy --v v.npy)

# ---------------------------------------------------------------------------------------------
if(CASE STREQUAL "noargs")
  # The main job: B=1, H=8, L=512, D=64, fp16, validated, 10 timed calls.
  fc_run(0)
  fc_expect("${OUT}" "B=1 Hq=8 Hkv=8 Lq=512 Lk=512 D=64 fp16 non-causal" "the problem line")
  fc_expect("${OUT}" "10 timed calls" "the timing line")
  fc_expect("${OUT}" "result: PASS" "the validation result")

elseif(CASE STREQUAL "json_bf16_gqa_causal")
  fc_run(0 run --json -b 1 --hq 4 --hkv 2 -l 33 -d 32 --dtype bf16 --causal --validate --repeat 2)
  fc_expect("${OUT}" "\"passed\": true" "stdout")
  file(WRITE "${WORK}/run.json" "${OUT}")
  fc_check(json run.json passed=true validated=true B=1 Hq=4 Hkv=2 Lq=33 Lk=33 D=32 dtype=bf16 causal=true
           layout=bshd seed=0 repeat=2 backend:string device:string median_us:number tflops:number
           max_abs_err:number rel_l2_err:number lse_max_abs_err:number bound:string selection:array)
  # Without --validate the validation fields are null.
  fc_run(0 run --json -l 16 -d 16 --repeat 1 --seed 3)
  file(WRITE "${WORK}/novalidate.json" "${OUT}")
  fc_check(json novalidate.json validated=false passed=null max_abs_err=null rel_l2_err=null seed=3 repeat=1
           dtype=fp16 median_us:number tflops:number)

elseif(CASE STREQUAL "variants")
  # Every variant at once, validated against the fp64 oracle (which computes them too).
  fc_run(0 run --json -b 2 --hq 4 --hkv 2 --seqlen-q 37 --seqlen-k 61 -d 32 --causal --window-left 13 --softcap 20
         --alibi --sinks 1.5 --validate --repeat 1)
  file(WRITE "${WORK}/variants.json" "${OUT}")
  fc_check(json variants.json passed=true validated=true causal=true window_left=13 window_right=-1 softcap=20
           alibi=true sinks=1.5 tflops:number)
  fc_run(0 run -l 40 -d 16 --window-left 3 --window-right 5 --validate --repeat 1)
  fc_expect("${OUT}" "variants  : window=\\(3,5\\)" "the variants line")
  fc_expect("${OUT}" "result: PASS" "the validation result")

elseif(CASE STREQUAL "backward")
  # The backward pass after the forward, validated against the fp64 backward oracle: every variant
  # with GQA, then varlen; --no-lse and --page-size are usage errors.
  fc_run(0 run -b 2 --hq 4 --hkv 2 --seqlen-q 37 --seqlen-k 61 -d 32 --causal --window-left 13 --softcap 20
         --alibi --sinks 1.5 --backward --validate --repeat 1)
  fc_expect("${OUT}" "backward: +reference-host" "the backward line")
  fc_expect("${OUT}" "gradients: +vs the fp64 backward oracle: dQ max err" "the gradients line")
  fc_expect("${OUT}" "bound reference[^\n]*: PASS" "the gradients' result")
  fc_run(0 run --json --seqlens-q 30,1,50 --seqlens-k 40,5,60 --varlen-k -d 16 --dtype bf16 --backward --validate
         --repeat 1)
  file(WRITE "${WORK}/backward.json" "${OUT}")
  fc_expect("${OUT}" "\"backward\": {[^}]*\"passed\": true" "the JSON's backward object")
  fc_run(0 run -b 1 --hq 2 -l 40 -d 32 --backward --deterministic --validate --repeat 1)
  fc_expect("${OUT}" "bound reference[^\n]*: PASS" "the deterministic backward's result")
  fc_error(2 "--deterministic applies to --backward only" run --deterministic)
  fc_error(2 "--backward needs the forward's LSE" run --backward --no-lse)
  fc_error(2 "--backward: the backward pass has no paged K/V" run --backward --seqlens-k 30,40 --page-size 16)

elseif(CASE STREQUAL "varlen")
  # Varlen Q and K/V (packed by the lengths), causal per sequence, validated against the fp64
  # oracle of src/verify; the JSON says the layout, GB/s is reported.
  fc_run(0 run --json --hq 4 --hkv 2 -d 16 --seqlens-q 1,3,0,7 --seqlens-k 9,17,0,33 --varlen-k --causal --validate
         --repeat 2 --out-o o.npy --out-lse lse.npy)
  file(WRITE "${WORK}/varlen.json" "${OUT}")
  fc_check(json varlen.json passed=true validated=true B=4 Lq=7 Lk=33 q_layout=packed kv_layout=packed total_q=11
           total_k=59 page_size=0 seqlens_q:array seqlens_k:array bytes:number gbps:number tflops:number
           oracle:string)
  fc_expect("${OUT}" "\"seqlens_q\": \\[1, 3, 0, 7\\]" "the JSON's query lengths")
  fc_check(npy-header o.npy <f2 11,4,16)
  fc_check(npy-header lse.npy <f4 4,11)
  # The text report: the layout line, GB/s, the oracle.
  fc_run(0 run --hq 2 -d 16 --seqlens-q 2,5 --seqlens-k 4,6 --varlen-k --validate --repeat 1)
  fc_expect("${OUT}" "sequences : varlen Q packed \\(cu_seqlens_q\\), query lengths 2,5, total_q 7; K/V packed \\(cu_seqlens_k\\), total_k 10"
            "the sequences line")
  fc_expect("${OUT}" "GB/s \\([0-9.e+]+ bytes: Q, O and the K/V rows the queries see\\)" "the timing line")
  fc_expect("${OUT}" "validation: against the fp64 oracle of src/verify" "the validation line")
  fc_expect("${OUT}" "result: PASS" "the validation result")
  # Decode on a dense K/V cache with cache lengths (one of them 0: its row gives O = 0, LSE = -inf),
  # bf16, (B,H,S,D): K/V dense, seqlens_k.
  fc_run(0 run --json --seqlen-q 1 --hq 4 --hkv 1 -d 32 --seqlens-k 5,0,12 --dtype bf16 --layout bhsd --validate
         --repeat 1)
  file(WRITE "${WORK}/decode.json" "${OUT}")
  fc_check(json decode.json passed=true B=3 Lq=1 Lk=12 q_layout=dense kv_layout=dense total_q=0 seqlens_q=null
           seqlens_k:array)

elseif(CASE STREQUAL "paged")
  # Paged K/V (pools of 16-row pages, a shuffled block table) with cache lengths and varlen Q,
  # bf16, (B,H,S,D): validated; the JSON says the layout.
  fc_run(0 run --json --hq 4 --hkv 2 -d 16 --seqlens-q 2,1,3 --seqlens-k 37,0,80 --page-size 16 --causal
         --dtype bf16 --layout bhsd --validate --repeat 1 --out-k k.npy --out-q q.npy)
  file(WRITE "${WORK}/paged.json" "${OUT}")
  fc_check(json paged.json passed=true validated=true B=3 Lq=3 Lk=80 q_layout=packed kv_layout=paged page_size=16
           pages_per_seq=5 num_pages=15 total_q=6 total_k=0 seqlens_k:array gbps:number)
  fc_check(npy-header k.npy <u2 15,2,16,16)   # (num_pages, Hkv, page_size, D) for bhsd
  fc_check(npy-header q.npy <u2 4,6,16)       # (Hq, total_q, D) for bhsd
  fc_run(0 run --hq 2 -d 16 --seqlens-k 20,3 --page-size 16 --validate --repeat 1)
  fc_expect("${OUT}" "K/V paged: page_size 16, 2 pages per sequence, 4 pages, block table a random permutation, cache lengths \\(seqlens_k\\) 20,3"
            "the sequences line")
  fc_expect("${OUT}" "result: PASS" "the validation result")
  # The same seed gives the same keys and values through the block table as in the dense cache:
  # paged and dense runs write the same O and LSE, with cache lengths and without.
  set(decode --seqlen-q 3 --hq 4 --hkv 2 -d 16 --causal --repeat 1 --seed 5)
  fc_run(0 run ${decode} --seqlens-k 37,0,80 --out-o dense.npy --out-lse dense_lse.npy)
  fc_run(0 run ${decode} --seqlens-k 37,0,80 --page-size 32 --out-o paged.npy --out-lse paged_lse.npy)
  fc_same(dense.npy paged.npy)
  fc_same(dense_lse.npy paged_lse.npy)
  fc_run(0 run ${decode} -b 2 --seqlen-k 40 --out-o dense2.npy)
  fc_run(0 run ${decode} -b 2 --seqlen-k 40 --page-size 16 --out-o paged2.npy)
  fc_same(dense2.npy paged2.npy)
  fc_differ(dense.npy dense2.npy)

elseif(CASE STREQUAL "fp8")
  # fp8 e4m3 inputs: GQA, causal with Lq != Lk, descales, fp16 output, validated against the fp64
  # oracle (the portable tier on host data: the output dtype's reference bound); the inputs written
  # as e4m3 bytes ('|u1'), O in its own dtype, and read back to the same O.
  set(fp8 --dtype fp8_e4m3 --out-dtype fp16 --descale-q 0.5 --descale-k 2 --descale-v 0.25 --causal --repeat 1)
  fc_run(0 run --json -b 2 --hq 4 --hkv 2 --seqlen-q 21 --seqlen-k 50 -d 32 ${fp8} --validate --out-q q.npy
         --out-k k.npy --out-v v.npy --out-o o1.npy --out-lse lse1.npy)
  file(WRITE "${WORK}/fp8.json" "${OUT}")
  fc_check(json fp8.json passed=true validated=true dtype=fp8_e4m3 out_dtype=fp16 descale_q=0.5 descale_k=2
           descale_v=0.25 causal=true Hq=4 Hkv=2 Lq=21 Lk=50 bound=reference)
  fc_check(npy-header q.npy |u1 2,21,4,32)
  fc_check(npy-header v.npy |u1 2,50,2,32)
  fc_check(npy-header o1.npy <f2 2,21,4,32)
  fc_check(npy-header lse1.npy <f4 2,4,21)
  fc_run(0 run ${QKV} --dtype e4m3 --out-dtype fp16 --descale-q 0.5 --descale-k 2 --descale-v 0.25 --causal
         --repeat 1 --validate --out-o o2.npy --out-lse lse2.npy)
  fc_expect("${OUT}" "fp8_e4m3 causal" "the problem line")
  fc_expect("${OUT}" "fp8       : e4m3 inputs, O fp16, descale_q=0.5 descale_k=2 descale_v=0.25" "the fp8 line")
  fc_expect("${OUT}" "result: PASS" "the validation result")
  fc_same(o1.npy o2.npy)
  fc_same(lse1.npy lse2.npy)
  # The descales are read: descale_v doubled doubles O (another file), the LSE stays; descale_q
  # changes the LSE too.
  fc_run(0 run ${QKV} --dtype fp8 --out-dtype fp16 --descale-q 0.5 --descale-k 2 --descale-v 0.5 --causal --repeat 1
         --out-o o3.npy --out-lse lse3.npy)
  fc_differ(o1.npy o3.npy)
  fc_same(lse1.npy lse3.npy)
  fc_run(0 run ${QKV} --dtype fp8 --out-dtype fp16 --descale-q 1 --descale-k 2 --descale-v 0.25 --causal --repeat 1
         --out-lse lse4.npy)
  fc_differ(lse1.npy lse4.npy)
  # bf16 output (the default), (B,H,S,D), on the reference: validated, O as '<u2'.
  fc_run(0 run --json --layout bhsd --dtype float8_e4m3fn --hq 2 -l 40 -d 16 --descale-v 3 --backend reference-host
         --validate --repeat 1 --out-o o5.npy)
  file(WRITE "${WORK}/fp8_ref.json" "${OUT}")
  fc_check(json fp8_ref.json passed=true dtype=fp8_e4m3 out_dtype=bf16 descale_v=3 layout=bhsd backend=reference-host
           bound=reference)
  fc_check(npy-header o5.npy <u2 1,2,40,16)
  # Files written by the helper: '|u1' needs --dtype fp8_e4m3.
  fc_check(make-npy q.npy |u1 False 1,8,2,16)
  fc_check(make-npy k.npy |u1 False 1,12,1,16)
  fc_check(make-npy v.npy |i1 False 1,12,1,16)
  fc_run(0 run ${QKV} --dtype fp8_e4m3 --validate --repeat 1 --json)
  file(WRITE "${WORK}/fp8_ext.json" "${OUT}")
  fc_check(json fp8_ext.json passed=true dtype=fp8_e4m3 out_dtype=bf16 Hq=2 Hkv=1 Lq=8 Lk=12 D=16)
  fc_error(1 "--q q\\.npy: dtype '\\|u1' holds bytes; pass --dtype fp8_e4m3" run ${QKV})
  fc_error(1 "--q q\\.npy: dtype '\\|u1' does not match --dtype bf16" run ${QKV} --dtype bf16)
  # The fp8 flags' errors name the flag or the field.
  fc_error(2 "--out-dtype: 'fp32' is not fp16 or bf16" run --dtype fp8 --out-dtype fp32)
  fc_error(2 "--out-dtype applies to fp8_e4m3 inputs only \\(O has the inputs' dtype, here fp16\\)" run --out-dtype bf16)
  fc_error(2 "descale_q 0 must be finite and > 0" run --dtype fp8 --descale-q 0)
  fc_error(2 "descale_v -1 must be finite and > 0" run --dtype fp8 --descale-v -1)
  fc_error(2 "descale_k applies to fp8_e4m3 inputs only, got 2" run --descale-k 2)
  fc_error(2 "--descale-v: 'x' is not a number" run --dtype fp8 --descale-v x)
  fc_error(2 "--backward: fp8_e4m3 inputs have no backward pass" run --dtype fp8 --backward)

elseif(CASE STREQUAL "bad_sequences")
  fc_error(2 "--seqlens-q: 'x' is not an integer" run --seqlens-q 1,x)
  fc_error(2 "--seqlens-q: '1,,2' is not a comma-separated list of lengths" run --seqlens-q 1,,2)
  fc_error(2 "--seqlens-k: -3 is out of range" run --seqlens-k 4,-3)
  fc_error(2 "--seqlens-q: the lengths add up to 0" run --seqlens-q 0,0)
  fc_error(2 "--batch \\(-b\\) 3 contradicts --seqlens-q \\(2 lengths" run -b 3 --seqlens-q 1,2)
  fc_error(2 "--seqlens-k: 3 lengths, but --seqlens-q has 2" run --seqlens-q 1,2 --seqlens-k 1,2,3)
  fc_error(2 "--seqlens-k: length 100 exceeds --seqlen-k 50" run --seqlens-k 100,3 --seqlen-k 50)
  fc_error(2 "--seqlens-q: length 9 exceeds the bound --seqlen-q 5" run --seqlens-q 9,1 --seqlen-q 5)
  fc_error(2 "--varlen-k and --page-size exclude each other" run --varlen-k --page-size 16)
  fc_error(2 "--page-size: 0 is out of range" run --page-size 0)
  fc_error(2 "page_size 24 must be 0 \\(not paged\\) or a multiple of 16" run --seqlens-k 3,4 --page-size 24)
  fc_error(2 "--varlen-k: takes no value" run --varlen-k=1)
  fc_good_inputs()
  fc_error(2 "\\.npy inputs take no --seqlens-q, --seqlens-k, --varlen-k or --page-size" run ${QKV} --page-size 16)

elseif(CASE STREQUAL "npy_roundtrip")
  # fp16, (B,S,H,D), GQA, Lq != Lk, causal: write the inputs and O, read the inputs back, same O.
  set(shape -b 2 --hq 4 --hkv 2 --seqlen-q 24 --seqlen-k 40 -d 16 --causal --repeat 1)
  fc_run(0 run ${shape} --seed 7 --out-q q.npy --out-k k.npy --out-v v.npy --out-o o1.npy --out-lse lse1.npy)
  fc_check(npy-header q.npy <f2 2,24,4,16)
  fc_check(npy-header k.npy <f2 2,40,2,16)
  fc_check(npy-header o1.npy <f2 2,24,4,16)
  fc_check(npy-header lse1.npy <f4 2,4,24)
  fc_run(0 run ${QKV} --causal --repeat 1 --validate --json --out-o o2.npy --out-lse lse2.npy --out-q q2.npy)
  file(WRITE "${WORK}/run2.json" "${OUT}")
  fc_check(json run2.json passed=true inputs=files seed=null B=2 Hq=4 Hkv=2 Lq=24 Lk=40 D=16 dtype=fp16 causal=true)
  fc_same(o1.npy o2.npy)
  fc_same(lse1.npy lse2.npy)
  fc_same(q.npy q2.npy)
  # Another seed gives other inputs.
  fc_run(0 run ${shape} --seed 8 --out-o o3.npy)
  fc_differ(o1.npy o3.npy)

elseif(CASE STREQUAL "bhsd_roundtrip")
  # bf16 bits in '<u2', (B,H,S,D).
  set(common --layout bhsd --dtype bf16 --repeat 1)
  fc_run(0 run ${common} --hq 6 --hkv 3 --seqlen-q 10 --seqlen-k 20 -d 8 --out-q q.npy --out-k k.npy --out-v v.npy
         --out-o o1.npy --out-lse lse1.npy)
  fc_check(npy-header q.npy <u2 1,6,10,8)
  fc_check(npy-header v.npy <u2 1,3,20,8)
  fc_check(npy-header o1.npy <u2 1,6,10,8)
  fc_check(npy-header lse1.npy <f4 1,6,10)
  fc_run(0 run ${common} ${QKV} --validate --out-o o2.npy --out-lse lse2.npy)
  fc_expect("${OUT}" "B=1 Hq=6 Hkv=3 Lq=10 Lk=20 D=8 bf16 non-causal layout=bhsd" "the problem line")
  fc_expect("${OUT}" "result: PASS" "the validation result")
  fc_same(o1.npy o2.npy)
  fc_same(lse1.npy lse2.npy)

elseif(CASE STREQUAL "npy_external")
  # Files written by the helper (format 1.0 and 2.0), not by the tool.
  fc_check(make-npy q.npy <f4 False 1,12,4,32)
  fc_check(make-npy k.npy <f4 False 1,20,2,32 0 2)
  fc_check(make-npy v.npy <f4 False 1,20,2,32)
  fc_run(0 run ${QKV} --validate --repeat 1 --json)
  file(WRITE "${WORK}/f32.json" "${OUT}")
  fc_check(json f32.json passed=true dtype=fp32 B=1 Hq=4 Hkv=2 Lq=12 Lk=20 D=32 layout=bshd)
  fc_check(make-npy q.npy <f2 False 2,3,5,8)
  fc_check(make-npy k.npy <f2 False 2,3,7,8)
  fc_check(make-npy v.npy <f2 False 2,3,7,8)
  fc_run(0 run ${QKV} --layout bhsd --causal --validate --repeat 1 --json)
  file(WRITE "${WORK}/f16.json" "${OUT}")
  fc_check(json f16.json passed=true dtype=fp16 B=2 Hq=3 Hkv=3 Lq=5 Lk=7 D=8 layout=bhsd causal=true)
  fc_check(make-npy q.npy <i2 False 1,4,2,8)
  fc_check(make-npy k.npy <i2 False 1,6,1,8)
  fc_check(make-npy v.npy <u2 False 1,6,1,8)
  fc_run(0 run ${QKV} --dtype bf16 --validate --repeat 1 --json)
  file(WRITE "${WORK}/bf16.json" "${OUT}")
  fc_check(json bf16.json passed=true dtype=bf16 Hq=2 Hkv=1 Lq=4 Lk=6 D=8)

elseif(CASE STREQUAL "bad_flag")
  fc_error(2 "unknown flag '--bogus'" run --bogus)
  fc_error(2 "unknown flag '--bogus'" --bogus)
  fc_error(2 "unexpected argument 'extra'" run extra)
  fc_error(2 "unknown command 'frobnicate'" frobnicate)
  fc_error(2 "--causal: takes no value" run --causal=yes)

elseif(CASE STREQUAL "missing_value")
  fc_error(2 "--seqlen: missing value" run --seqlen)
  fc_error(2 "--out-o: missing value" run -l 4 --out-o)
  fc_error(2 "--q, --k and --v must be given together" run --q q.npy)

elseif(CASE STREQUAL "non_numeric")
  fc_error(2 "-d: '6x4' is not an integer" run -d 6x4)
  fc_error(2 "--scale: 'abc' is not a number" run --scale abc)
  fc_error(2 "--repeat: -1 is out of range" run --repeat -1)
  fc_error(2 "--batch: 99999999999 is out of range" run --batch 99999999999)
  fc_error(2 "--dtype: dtype 'fp4' is not one of fp32, fp16, bf16, fp8_e4m3" run --dtype fp4)
  fc_error(2 "--layout: 'sbhd' is not bshd or bhsd" run --layout sbhd)

elseif(CASE STREQUAL "bad_head_dim")
  fc_error(2 "head_dim" run --head-dim 0)
  fc_error(2 "head_dim 300" run -d 300)
  fc_error(2 "batch" run -b 0)
  fc_error(2 "scale" run --scale -1)

elseif(CASE STREQUAL "bad_variants")
  fc_error(2 "window_left -4" run --window-left -4)
  fc_error(2 "window_right 2 contradicts causal" run --causal --window-right 2)
  fc_error(2 "softcap -3" run --softcap -3)
  fc_error(2 "--sinks: 'x' is not a number" run --sinks x)
  fc_error(2 "--alibi: takes no value" run --alibi=1)

elseif(CASE STREQUAL "bad_heads_kv")
  fc_error(2 "heads_kv" run --hq 8 --hkv 3)

elseif(CASE STREQUAL "bad_backend")
  fc_error(2 "backend 'no-such-backend' \\(forced by --backend\\) is not registered" run -l 8 -d 8 --repeat 1
           --backend no-such-backend)
  # A forced run says how it was forced in the CLI's terms (the flag), in the report and the JSON.
  fc_run(0 run -l 8 -d 8 --repeat 1 --backend reference-host)
  fc_expect("${OUT}" "selection : backend: reference-host \\(forced by --backend\\)" "the selection line")
  if("${OUT}" MATCHES "Options::backend")
    message(FATAL_ERROR "the report names the library's Options::backend instead of the flag")
  endif()
  fc_run(0 run -l 8 -d 8 --repeat 1)  # automatic: forced-only backends say which flag forces them
  if("${OUT}" MATCHES "Options::backend")
    message(FATAL_ERROR "the report names the library's Options::backend instead of the flag")
  endif()
  fc_run(0 run -l 8 -d 8 --repeat 1 --backend reference-host --json)
  fc_expect("${OUT}" "\"how\": \"forced by --backend\"" "the JSON's how")
  if("${OUT}" MATCHES "Options::backend")
    message(FATAL_ERROR "the JSON names the library's Options::backend instead of the flag")
  endif()

elseif(CASE STREQUAL "npy_truncated")
  fc_good_inputs()
  fc_check(make-npy q.npy <f2 False 1,8,2,16 10)
  fc_error(1 "--q q\\.npy: truncated data: shape \\(1, 8, 2, 16\\) of '<f2' needs 512 bytes, the file holds 502" run ${QKV})
  fc_check(make-npy k.npy <f2 False 1,8,2,16 560)
  fc_error(1 "--q q\\.npy: truncated data" run ${QKV})  # q is checked first
  fc_check(make-npy q.npy <f2 False 1,8,2,16)
  fc_error(1 "--k k\\.npy: truncated \\.npy header" run ${QKV})
  fc_check(make-npy k.npy <f2 False 1,8,2,16)
  file(WRITE "${WORK}/v.npy" "")
  fc_error(1 "--v v\\.npy: not a \\.npy file" run ${QKV})

elseif(CASE STREQUAL "npy_wrong_shape")
  fc_good_inputs()
  fc_check(make-npy q.npy <f2 False 1,8,32)
  fc_error(1 "--q q\\.npy: expected a 4-D array \\(B,S,H,D\\) for layout bshd, got shape \\(1, 8, 32\\)" run ${QKV})
  fc_check(make-npy q.npy <f2 False 1,8,2,32)
  fc_error(1 "--k k\\.npy: head_dim 16 .* differs from the head_dim 32 of --q q\\.npy" run ${QKV})
  fc_check(make-npy q.npy <f2 False 2,8,2,16)
  fc_error(1 "--k k\\.npy: batch 1 .* differs from the batch 2" run ${QKV})
  fc_check(make-npy q.npy <f2 False 1,8,3,16)
  fc_error(2 "heads_kv" run ${QKV})  # 3 query heads, 2 key/value heads

elseif(CASE STREQUAL "npy_shape_mismatch")
  fc_good_inputs()
  fc_check(make-npy v.npy <f2 False 1,9,2,16)
  fc_error(1 "--v v\\.npy: shape \\(1, 9, 2, 16\\) differs from the shape \\(1, 8, 2, 16\\) of --k k\\.npy" run ${QKV})
  fc_check(make-npy v.npy <f2 False 1,8,2,16)
  fc_error(2 "-b 2 contradicts the input files \\(batch 1" run ${QKV} -b 2)

elseif(CASE STREQUAL "npy_fortran")
  fc_good_inputs()
  fc_check(make-npy k.npy <f2 True 1,8,2,16)
  fc_error(1 "--k k\\.npy: Fortran-order arrays are not supported" run ${QKV})

elseif(CASE STREQUAL "npy_wrong_dtype")
  fc_check(make-npy q.npy <f4 False 1,8,2,16)
  fc_check(make-npy k.npy <f4 False 1,8,2,16)
  fc_check(make-npy v.npy <f4 False 1,8,2,16)
  fc_error(1 "--q q\\.npy: dtype '<f4' does not match --dtype fp16 \\(expected '<f2'\\)" run ${QKV} --dtype fp16)
  fc_check(make-npy v.npy <f2 False 1,8,2,16)
  fc_error(1 "--v v\\.npy: dtype '<f2' does not match the dtype of --q, fp32" run ${QKV})
  fc_check(make-npy q.npy <u2 False 1,8,2,16)
  fc_error(1 "--q q\\.npy: dtype '<u2' holds 16-bit integers; pass --dtype bf16" run ${QKV})
  fc_check(make-npy q.npy <f8 False 1,8,2,16)
  fc_error(1 "--q q\\.npy: unsupported dtype '<f8'" run ${QKV})
  fc_check(make-npy q.npy >f4 False 1,8,2,16)
  fc_error(1 "--q q\\.npy: big-endian" run ${QKV})

elseif(CASE STREQUAL "npy_bad_magic")
  fc_good_inputs()
  file(WRITE "${WORK}/q.npy" "this is not a numpy file, only some text\n")
  fc_error(1 "--q q\\.npy: not a \\.npy file \\(the magic string" run ${QKV})

elseif(CASE STREQUAL "npy_missing_file")
  fc_good_inputs()
  fc_error(1 "--k no-such-file\\.npy: cannot open for reading" run --q q.npy --k no-such-file.npy --v v.npy)

elseif(CASE STREQUAL "info")
  fc_run(0 info)
  fc_expect("${OUT}" "FlashCore [0-9]+\\.[0-9]+" "the version line")
  fc_expect("${OUT}" "Kokkos" "the build configuration")
  fc_expect("${OUT}" "CUDA devices:\n" "the device section")
  fc_expect("${OUT}" "\n  reference-host " "the backend list")

elseif(CASE STREQUAL "help")
  fc_run(0 --help)
  fc_expect("${OUT}" "usage: flashcore" "the usage text")
  fc_run(0 run --help)
  fc_expect("${OUT}" "--head-dim" "the run usage text")
  fc_run(0 --version)
  fc_expect("${OUT}" "^flashcore [0-9]" "the version")

else()
  message(FATAL_ERROR "cli_test.cmake: unknown CASE '${CASE}'")
endif()
