#!/usr/bin/env bash
# Run 28a: Hopper forward with tensor-core turns between the consumer warpgroups (HopperConfig::kTurns,
# D <= 128, 16-bit): racecheck + synccheck on Hopper D = 32/64/128 cases, the Hopper tests, and an A/B of
# cuda-flash-hopper against s27a (the landed kernels, no turns), alternating twice.
set -u
tar xJf build/gpu-s27a.txz && tar xJf build/gpu-s28a.txz && rm -rf .g28 && mkdir -p .g28
cp -r build/s28a/* .g28/ && cp build/s27a/bin/flashcore_bench .g28/c_bench
tar xzf build/gpu-lib.tgz -C .g28
export LD_LIBRARY_PATH=$PWD/.g28/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=/tmp/r28a; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
F='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*_D32_*:Gpu/SequenceCases.MatchesFp64Oracle/cuda_flash_hopper*_D64_*:Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*Lq1000_Lk1000_D64*:Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*Lq77*D128*'
timeout 100 $SAN --tool racecheck --error-exitcode 9 --print-limit 20 .g28/bin/flashcore_gpu_tests --gtest_filter="$F" --gtest_brief=1 > $R/racecheck.log 2>&1
echo "racecheck rc=$? ${SECONDS}s"; tail -3 $R/racecheck.log; grep "Race reported" -A1 $R/racecheck.log | sort | uniq -c | sort -rn | head -6
timeout 60 $SAN --tool synccheck --error-exitcode 9 --print-limit 20 .g28/bin/flashcore_gpu_tests --gtest_filter='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*_D32_*:Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*Lq77*D64*' --gtest_brief=1 > $R/synccheck.log 2>&1
echo "synccheck rc=$? ${SECONDS}s"; tail -3 $R/synccheck.log
timeout 130 .g28/bin/flashcore_gpu_tests --gtest_filter='Gpu/DeviceCases.*cuda_flash_hopper*:Gpu/VariantCases.*cuda_flash_hopper*:Gpu/SequenceCases.*cuda_flash_hopper*:*Fp8*:Gpu.GraphsCapturedOnOneStreamReplayAtOnce:Gpu.TunedKernelsAreDeterministic:Gpu.LargeProblemsOnSampledRows:-*Backward*' --gtest_brief=1 > $R/tests.txt 2>&1
echo "tests rc=$? ${SECONDS}s"; tail -3 $R/tests.txt; grep -E "^\[  FAILED" $R/tests.txt | head
S="4,16,2048,32;1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;16,16,512,128;2,16,4096,128;1,16,16384,128"
for r in 1 2; do ord="c new"; [[ $r == 2 ]] && ord="new c"; for v in $ord; do
  b=.g28/bin/flashcore_bench; [[ $v == c ]] && b=.g28/c_bench
  timeout 60 $b --device-only --no-check --backends=cuda-flash-hopper --dtypes=fp16 --causal=both --shapes="$S" \
    --benchmark_out=$R/fwd_${v}_$r.json --benchmark_out_format=json > $R/fwd_${v}_$r.log 2>&1
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
        t[b["name"].replace("_median", "").split("/iter")[0]][v].append(b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b.get("time_unit", "us")])
print("| forward (cuda-flash-hopper, fp16) | before us | turns us | ratio (min) |\n|---|---|---|---|")
for k, d in t.items():
    f = lambda v: ' / '.join('%.1f' % x for x in d[v])
    if d["c"] and d["new"]: print(f"| {k} | {f('c')} | {f('new')} | {min(d['new'])/min(d['c']):.3f} |")
PY
cd $R && tar czf $OUT/results.tgz . && ls $OUT
