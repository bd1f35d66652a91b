#!/usr/bin/env bash
# Run 28f: the turns (s28a) against s27a: kernel A/B and QUICK=1 perf/run_forward.sh alternating, torch in each run.

set -u
tar xJf build/gpu-s27a.txz && tar xJf build/gpu-b28a.txz && cp build/s28a/bin/flashcore_bench build/s27a/bin/flashcore_bench.28a
for v in 27a 28a; do rm -rf .g$v && mkdir -p .g$v/bin && tar xzf build/gpu-lib.tgz -C .g$v; done
cp build/s27a/bin/flashcore_bench .g27a/bin/ && cp build/s27a/bin/flashcore_bench.28a .g28a/bin/flashcore_bench
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
S="1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;16,16,512,128;2,16,4096,128;1,16,16384,128"
for r in 1 2; do ord="27a 28a"; [[ $r == 2 ]] && ord="28a 27a"; for v in $ord; do
  LD_LIBRARY_PATH=$PWD/.g$v/lib timeout 60 .g$v/bin/flashcore_bench --device-only --no-check --backends=cuda-flash-hopper --dtypes=fp16 --causal=both --shapes="$S" --benchmark_out=$OUT/k_${v}_$r.json --benchmark_out_format=json > /dev/null 2>&1; echo "kernel $v $r rc=$? ${SECONDS}s"
done; done
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
python3 - $OUT <<'PY'
import json, sys, glob, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + "/k_*.json")):
    v = f.split("k_")[1].split("_")[0]
    for b in json.load(open(f))["benchmarks"]:
        if b.get("aggregate_name") == "median":
            t[b["name"].replace("_median", "").split("/iter")[0].replace("attn/cuda-flash-hopper/fp16/", "")][v].append(b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b.get("time_unit", "us")])
print("| kernel (cuda-flash-hopper, fp16) | s27a µs | s28a µs | ratio |\n|---|---|---|---|")
for k, d in t.items():
    if d["27a"] and d["28a"]: print(f"| {k} | {' / '.join('%.1f' % x for x in d['27a'])} | {' / '.join('%.1f' % x for x in d['28a'])} | {min(d['28a'])/min(d['27a']):.3f} |")
PY
cd $OUT && tar czf all.tgz fwd_* k_*.json && rm -rf fwd_* k_*.json
