#!/bin/sh
# Compiler launcher of the tuned kernels' objects when FLASHCORE_CHECK_SPILLS is on (CMakeLists.txt):
# runs the nvcc command it is given (which asks ptxas for its resource report, -v), keeps that report
# beside the object as <object>.ptxas for tests/check_cuda_resources.cmake, and passes every other line
# nvcc wrote to stderr through. The spill checks then read the build's own compile instead of
# compiling every kernel again.
obj=""
prev=""
for arg in "$@"; do
  [ "$prev" = "-o" ] && obj=$arg
  prev=$arg
done
[ -n "$obj" ] || exec "$@"
"$@" 2>"$obj.ptxas.tmp"
rc=$?
grep -Ev '^ptxas info|^ +[0-9]+ bytes stack frame' "$obj.ptxas.tmp" >&2
if [ "$rc" -eq 0 ]; then
  mv -f "$obj.ptxas.tmp" "$obj.ptxas"
else
  rm -f "$obj.ptxas.tmp" "$obj.ptxas"
fi
exit "$rc"
