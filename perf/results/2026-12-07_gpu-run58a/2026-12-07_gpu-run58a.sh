#!/bin/bash
# GPU run 58a (fifty-eighth session): run 56c (issue 19: the wide kernel's K/V copies, O/R/C; carry
# build/gpu-s56c.txz), then, while the call has time left, run 55d (issue 11: the split merge through clusters of
# 2-16 blocks spread one an SM; carry build/gpu-s55d.txz; script perf/dev/experiments/2026-12-06_decode-cluster-merge_gpu-run55d.sh).
set -u
t0=$(date +%s)
bash perf/dev/experiments/2026-12-06_wide-kv-copies_gpu-run56c.sh
el=$(( $(date +%s) - t0 )); echo "56c took ${el} s"
if [ "$el" -lt 380 ]; then
  timeout $((560 - el)) bash perf/dev/experiments/2026-12-06_decode-cluster-merge_gpu-run55d.sh
  echo "55d rc=$? after $(( $(date +%s) - t0 )) s"
  [ -d $OUT/r55d ] && (cd $OUT && tar czf r55d.tgz r55d && rm -rf r55d)
fi
