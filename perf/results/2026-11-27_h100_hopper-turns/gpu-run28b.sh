#!/usr/bin/env bash
# Run 28b: issue 14 forward rows with tensor-core turns (s28a build) beside torch SDPA in the same run.
set -u
tar xJf build/gpu-s28a.txz && rm -rf .g28 && mkdir -p .g28 && cp -r build/s28a/* .g28/
tar xzf build/gpu-lib.tgz -C .g28
export LD_LIBRARY_PATH=$PWD/.g28/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=$OUT/fwd; mkdir -p $R
QUICK=1 OUT=$R timeout 500 bash perf/run_forward.sh .g28/bin > $R/run.log 2>&1
echo "rc=$?"; tail -3 $R/run.log; ls $R; cat $R/*_forward.md | grep -E "^\|" | cut -c1-400 | head -40
