#!/usr/bin/env bash
# Run 28h: the portable team kernel, one step() site for CO <= 4 and two for CO >= 8 (the phases as lambdas):
# portable-cuda GPU tests, A/B against s27a (two step() sites), alternating twice.
set -u
tar xJf build/gpu-b27a.txz && tar xJf build/gpu-s28g.txz && rm -rf .g28g && mkdir -p .g28g
cp -r build/s28g/* .g28g/ && cp build/s27a/bin/flashcore_bench .g28g/c_bench
tar xzf build/gpu-lib.tgz -C .g28g
export LD_LIBRARY_PATH=$PWD/.g28g/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=$OUT; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
timeout 200 .g28g/bin/flashcore_gpu_tests --gtest_filter='*portable*' --gtest_brief=1 > $R/tests.txt 2>&1
echo "tests rc=$? ${SECONDS}s"; tail -3 $R/tests.txt; grep -E "^\[  FAILED" $R/tests.txt | head; echo "checks: $(grep -c '^\[gpu\]' $R/tests.txt)"
S="2,16,4096,128;2,16,4096,64;2,16,2048,256;4,16,1024,64"
for r in 1 2; do ord="c new"; [[ $r == 2 ]] && ord="new c"; for v in $ord; do
  b=.g28g/bin/flashcore_bench; [[ $v == c ]] && b=.g28g/c_bench
  timeout 120 $b --device-only --no-check --quick --backends=portable-cuda --dtypes=fp32,fp16 --causal=both --variants="none;softcap:30+alibi" --shapes="$S" \
    --benchmark_out=$R/fwd_${v}_$r.json --benchmark_out_format=json > /dev/null 2>&1
  echo "fwd $v $r rc=$? ${SECONDS}s"
done; done
python3 - "$R" <<'PY' | tee $R/ab.md
import json, sys, glob, collections
R = sys.argv[1]
t = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(R + "/fwd_*.json")):
    v = f.split("fwd_")[1].split("_")[0]
    try: bs = json.load(open(f))["benchmarks"]
    except Exception as e: print(f, e); continue
    for b in bs:
        if b.get("aggregate_name") != "median": continue
        t[b["name"].replace("_median", "").split("/iter")[0].replace("attn/portable-cuda/", "")][v].append(b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b.get("time_unit", "us")])
print("| portable-cuda | two step() sites (s27a) µs | one site µs | ratio (min) |\n|---|---|---|---|")
for k, d in t.items():
    f = lambda v: ' / '.join('%.1f' % x for x in d[v])
    if d["c"] and d["new"]: print(f"| {k} | {f('c')} | {f('new')} | {min(d['new'])/min(d['c']):.3f} |")
PY
