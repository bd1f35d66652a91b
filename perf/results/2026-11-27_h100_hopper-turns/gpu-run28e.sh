#!/usr/bin/env bash
# Run 28e: Hopper forward with the next item's S(0) issued before the current item's epilogue (look-ahead,
# on top of the turns): racecheck + synccheck + memcheck, the forward GPU tests, and an A/B/C of
# cuda-flash-hopper: s27a (no turns), s28a (turns), s28e (turns + look-ahead), alternating twice.
set -u
tar xJf build/gpu-b27a.txz; tar xJf build/gpu-b28a.txz; tar xJf build/gpu-s28e.txz
rm -rf .g28e && mkdir -p .g28e && cp -r build/s28e/* .g28e/ && tar xzf build/gpu-lib.tgz -C .g28e
export LD_LIBRARY_PATH=$PWD/.g28e/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=$OUT; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
T=.g28e/bin/flashcore_gpu_tests
F='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*_D32_*:Gpu/SequenceCases.MatchesFp64Oracle/cuda_flash_hopper*_D64_*:Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*Lq1000_Lk1000_D64*:Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*Lq77*'
timeout 100 $SAN --tool racecheck --error-exitcode 9 --print-limit 20 $T --gtest_filter="$F" --gtest_brief=1 > $R/racecheck.log 2>&1
echo "racecheck rc=$? ${SECONDS}s"; tail -3 $R/racecheck.log
timeout 50 $SAN --tool synccheck --error-exitcode 9 --print-limit 20 $T --gtest_filter='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*_D32_*:Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*Lq77*' --gtest_brief=1 > $R/synccheck.log 2>&1
echo "synccheck rc=$? ${SECONDS}s"; tail -2 $R/synccheck.log
timeout 60 $SAN --tool memcheck --error-exitcode 9 --print-limit 20 $T --gtest_filter='Gpu/DeviceCases.MatchesFp64Oracle/cuda_flash_hopper*Lq77*:Gpu/SequenceCases.MatchesFp64Oracle/cuda_flash_hopper*page16*' --gtest_brief=1 > $R/memcheck.log 2>&1
echo "memcheck rc=$? ${SECONDS}s"; tail -2 $R/memcheck.log
timeout 200 $T --gtest_filter='Gpu/DeviceCases.*cuda_flash_hopper*:Gpu/VariantCases.*cuda_flash_hopper*:Gpu/SequenceCases.*cuda_flash_hopper*:*Fp8*:Gpu.GraphsCapturedOnOneStreamReplayAtOnce:Gpu.TunedKernelsAreDeterministic:Gpu.LargeProblemsOnSampledRows:-*Backward*' --gtest_brief=1 > $R/tests.log 2>&1
echo "tests rc=$? ${SECONDS}s"; tail -3 $R/tests.log; grep -E "^\[  FAILED" $R/tests.log | head; echo "checks: $(grep -c '^\[gpu\]' $R/tests.log)"
S="4,16,2048,32;1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;16,16,512,128;2,16,4096,128;1,16,16384,128"
for r in 1 2; do ord="27a 28a 28e"; [[ $r == 2 ]] && ord="28e 28a 27a"; for v in $ord; do
  timeout 60 build/s$v/bin/flashcore_bench --device-only --no-check --backends=cuda-flash-hopper --dtypes=fp16 --causal=both --shapes="$S" \
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
        t[b["name"].replace("_median", "").split("/iter")[0].replace("attn/cuda-flash-hopper/fp16/", "")][v].append(b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b.get("time_unit", "us")])
print("| forward (cuda-flash-hopper, fp16) | s27a µs | s28a turns µs | s28e look-ahead µs | 28a/27a | 28e/27a | 28e/28a |\n|---|---|---|---|---|---|---|")
for k, d in t.items():
    f = lambda v: ' / '.join('%.1f' % x for x in d[v])
    m = {v: min(d[v]) for v in d if d[v]}
    if len(m) == 3: print(f"| {k} | {f('27a')} | {f('28a')} | {f('28e')} | {m['28a']/m['27a']:.3f} | {m['28e']/m['27a']:.3f} | {m['28e']/m['28a']:.3f} |")
PY
