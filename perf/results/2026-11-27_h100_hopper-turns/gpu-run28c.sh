#!/usr/bin/env bash
# Run 28c: QUICK=1 perf/run_forward.sh with s27a (no turns) and s28a (turns), alternating c new new c,
# torch SDPA in each run.
set -u
tar xJf build/gpu-s27a.txz && tar xJf build/gpu-s28a.txz
for v in 27a 28a; do rm -rf .g$v && mkdir -p .g$v && cp -r build/s$v/* .g$v/ && tar xzf build/gpu-lib.tgz -C .g$v; done
i=0
for v in 27a 28a 28a 27a; do i=$((i+1))
  R=$OUT/fwd_${i}_$v; mkdir -p $R
  LD_LIBRARY_PATH=$PWD/.g$v/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} QUICK=1 OUT=$R timeout 130 bash perf/run_forward.sh .g$v/bin > $R/run.log 2>&1
  echo "$i $v rc=$? ${SECONDS}s"
done
python3 - $OUT <<'PY'
import sys, glob, re, collections
rows = collections.defaultdict(dict)
for d in sorted(glob.glob(sys.argv[1] + "/fwd_*")):
    tag = d.split("fwd_")[1]
    for f in glob.glob(d + "/*_forward.md"):
        for l in open(f):
            c = [x.strip() for x in l.split("|")]
            if len(c) > 10 and re.match(r"\d+,", c[1]):
                rows[(c[1], c[2], c[3])][tag] = (c[4].split("/")[0].strip(), c[6].split("/")[0].strip(), c[11])
tags = sorted({t for r in rows.values() for t in r})
print("| shape | dtype | causal | " + " | ".join(f"{t} ours / cuDNN (x)" for t in tags) + " |")
for k, r in rows.items():
    print("| " + " | ".join(k) + " | " + " | ".join(f"{r[t][0]} / {r[t][1]} ({r[t][2]})" if t in r else "-" for t in tags) + " |")
PY
