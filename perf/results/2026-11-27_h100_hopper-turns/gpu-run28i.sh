#!/usr/bin/env bash
# Run 28i (asked for an H200): (1) the Hopper turns (b28a) against s27a (b27a): kernel A/B and
# QUICK=1 perf/run_forward.sh alternating, torch in each run; (2) the portable one-step loop (b28g)
# against s27a: kernel A/B alternating.
set -u
tar xJf build/gpu-b27a.txz && tar xJf build/gpu-b28a.txz && tar xJf build/gpu-b28g.txz
for v in 27a 28a 28g; do rm -rf .g$v && mkdir -p .g$v/bin && cp build/s$v/bin/flashcore_bench .g$v/bin/ && tar xzf build/gpu-lib.tgz -C .g$v; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
bench() { LD_LIBRARY_PATH=$PWD/.g$1/lib timeout 150 .g$1/bin/flashcore_bench --device-only --no-check "${@:3}" --benchmark_out=$OUT/$2.json --benchmark_out_format=json > /dev/null 2>&1; echo "$2 rc=$? ${SECONDS}s"; }
S="1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;16,16,512,128;2,16,4096,128;1,16,16384,128"
P="2,16,4096,128;2,16,4096,64;2,16,2048,256;4,16,1024,64"
for r in 1 2; do ord="27a 28a"; [[ $r == 2 ]] && ord="28a 27a"; for v in $ord; do
  bench $v k_${v}_$r --backends=cuda-flash-hopper --dtypes=fp16 --causal=both --shapes="$S"; done; done
for r in 1 2; do ord="27a 28g"; [[ $r == 2 ]] && ord="28g 27a"; for v in $ord; do
  bench $v p_${v}_$r --quick --backends=portable-cuda --dtypes=fp32,fp16 --causal=both --shapes="$P"; done; done
i=0
for v in 27a 28a 28a 27a; do i=$((i+1))
  R=$OUT/fwd_${i}_$v; mkdir -p $R
  LD_LIBRARY_PATH=$PWD/.g$v/lib QUICK=1 OUT=$R timeout 130 bash perf/run_forward.sh .g$v/bin > $R/run.log 2>&1
  echo "$i $v rc=$? ${SECONDS}s"
done
python3 - $OUT <<'PY'
import sys, glob, re, json, collections
O = sys.argv[1]
for pre, b, new in (("k", "27a", "28a"), ("p", "27a", "28g")):
    t = collections.defaultdict(lambda: collections.defaultdict(list))
    for f in sorted(glob.glob(f"{O}/{pre}_*.json")):
        v = f.split(f"{pre}_")[-1].split("_")[0]
        for x in json.load(open(f))["benchmarks"]:
            if x.get("aggregate_name") == "median":
                t[re.sub(r"attn/[^/]*/", "", x["name"].replace("_median", "").split("/iter")[0])][v].append(x["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[x.get("time_unit", "us")])
    print(f"| {pre} | s{b} µs | s{new} µs | ratio |\n|---|---|---|---|")
    for k, d in t.items():
        if d[b] and d[new]: print(f"| {k} | {' / '.join('%.1f' % x for x in d[b])} | {' / '.join('%.1f' % x for x in d[new])} | {min(d[new])/min(d[b]):.3f} |")
rows = collections.defaultdict(dict)
for d in sorted(glob.glob(O + "/fwd_*")):
    tag = d.split("fwd_")[1]
    for f in glob.glob(d + "/*_forward.md"):
        for l in open(f):
            c = [x.strip() for x in l.split("|")]
            if len(c) > 10 and re.match(r"\d+,", c[1]):
                rows[(c[1], c[2], c[3])][tag] = (c[4].split("/")[0].strip(), c[6].split("/")[0].strip())
tags = sorted({t for r in rows.values() for t in r})
print("| shape | dtype | causal | " + " | ".join(f"{t} ours / cuDNN" for t in tags) + " |")
for k, r in rows.items():
    print("| " + " | ".join(k) + " | " + " | ".join(f"{r[t][0]} / {r[t][1]}" if t in r else "-" for t in tags) + " |")
PY
cd $OUT && tar czf all.tgz fwd_* k_*.json p_*.json && rm -rf fwd_* k_*.json p_*.json
