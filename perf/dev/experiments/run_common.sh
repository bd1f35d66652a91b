# The shared start of the GPU run scripts (perf/dev/experiments/*_gpu-run*.sh, from the sixty-third session on),
# sourced from the repository root on the GPU machine with the run's name and its bundle's:
#
#   . perf/dev/experiments/run_common.sh r64d s64d     # bundle build/gpu-s64d.txz, made on the CPU machine
#
# It extracts the bundle (bin/, lib/, commit) to build/<bundle>, records the commit and the device, and defines:
#   t0, LIM (seconds the call may use; default 560), R=/tmp/<run> (results), S=build/<bundle>, h200 (1 on an H200),
#   pack (R -> $OUT/<run>.tgz: call it after each stage, so a cut-off call keeps what ran), el (seconds since the
#   start), left (seconds of LIM left), cap N (N, or what is left less 5 s), gpu_tests NAME FILTER LIMIT
#   (S/bin/flashcore_gpu_tests on a gtest filter, its summary printed), ab_rounds NEED LIMIT ARGS... (the bundle's
#   bin_base/ and bin/ flashcore_bench with ARGS, alternated twice, each call cut to LIMIT s, into R/ab_<bin>_<round>.txt;
#   stops when fewer than NEED s are left).
RUN_NAME=$1
RUN_BUNDLE=$2
set -u
t0=$(date +%s)
LIM=${LIM:-560}
R=/tmp/$RUN_NAME
mkdir -p "$R"
pack() { (cd /tmp && tar czf "$OUT/$RUN_NAME.tgz" "$RUN_NAME"); }
el() { echo "$(( $(date +%s) - t0 ))"; }
left() { echo "$(( LIM - $(el) ))"; }
cap() { local r=$(( $(left) - 5 )); [ "$r" -lt "$1" ] && echo "$r" || echo "$1"; }
tar xJf "build/gpu-$RUN_BUNDLE.txz" -C build
S=build/$RUN_BUNDLE
export LD_LIBRARY_PATH=$PWD/$S/lib
cp "$S/commit" "$R/"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$R/device.txt"
h200=0
grep -q H200 "$R/device.txt" && h200=1
gpu_tests() {  # name, gtest filter, limit (s)
  [ "$(left)" -lt 20 ] && return
  timeout "$(cap "$3")" "$S/bin/flashcore_gpu_tests" --gtest_filter="$2" --gtest_brief=1 > "$R/tests_$1.txt" 2>&1
  echo "tests $1 rc=$? at $(el) s"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|FAILED  \]' "$R/tests_$1.txt" | head -8
  pack
}
ab_rounds() {  # need (s), limit (s), flashcore_bench arguments
  local need=$1 lim=$2 round v
  shift 2
  for round in 1 2; do
    for v in bin_base bin; do
      [ "$(left)" -lt "$need" ] && return
      timeout "$(cap "$lim")" "$S/$v/flashcore_bench" "$@" > "$R/ab_${v}_$round.txt" 2>&1
      echo "ab $v round $round rc=$? at $(el) s"
      pack
    done
  done
}
