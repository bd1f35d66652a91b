#!/usr/bin/env bash
# sass_diff.sh OLD NEW: do two binaries (executables, libraries or objects with CUDA fatbinaries) hold the
# same machine code? Dumps every kernel's SASS with cuobjdump, drops what names the build rather than
# the code (instruction addresses and encodings' comments, source paths, fatbin headers: compression,
# PTX entries), and diffs what is left. Prints the function counts, then the diff (empty: the same code).
#
# cuobjdump: $CUOBJDUMP, else on PATH, else the one Triton's wheel carries (the CPU machines have no
# cuobjdump of their own: python3 -m venv /tmp/tv && /tmp/tv/bin/pip install triton; perf/README.md).
set -Eeuo pipefail
[[ $# == 2 ]] || { echo "usage: $0 OLD NEW" >&2; exit 2; }
dump=${CUOBJDUMP:-$(command -v cuobjdump || true)}
if [[ -z $dump ]]; then
  dump=$(find /tmp/tv "$HOME"/.local /usr/local/lib -path '*triton/backends/nvidia/bin/cuobjdump' 2>/dev/null | head -n 1 || true)
fi
[[ -x $dump ]] || { echo "sass_diff: no cuobjdump (set CUOBJDUMP)" >&2; exit 2; }
normalize() {
  "$dump" -sass "$1" |
    sed -e 's@/\*[0-9a-f]\{4,\}\*/@@g' -e 's@/\* 0x[0-9a-f]* \*/@@g' |
    grep -v -E '^\s*$|identifier =|^compressed|Fatbin (ptx|elf) code|^=+$|^arch = |code version|^host =|compile_size|ptxasOptions'
}
old=$(mktemp) new=$(mktemp)
trap 'rm -f "$old" "$new"' EXIT
normalize "$1" >"$old"
normalize "$2" >"$new"
echo "functions: $(grep -c 'Function :' "$old") in $1, $(grep -c 'Function :' "$new") in $2"
if diff "$old" "$new"; then echo "same machine code"; else exit 1; fi
