#!/bin/bash
# GPU run 61a (sixty-first session, issue 19; carry build/gpu-s61a.txz: flashcore_bench, flash_dev and
# flashcore_gpu_tests of main 76e27cf, libbenchmark and libgomp in lib/):
# (1) Nsight Compute (clocks left alone, SourceCounters) of the forced mma.sync path (cuda-flash-allwarps: the wide
#     kernel) and of torch's FlashAttention-2 kernel on the same cases: (2,16,4096,64), (16,16,512,64),
#     (2,16,4096,128), fp16, non-causal (the staged 2026-12-07_gpu-ncu-wide64_staged.sh, with FA2 beside it);
# (2) perf/run_forward.sh, the forced mma.sync path beside torch's flash and cuDNN paths (the table after E4).
# Each stage re-packs $OUT/r61a.tgz, so a cut-off call keeps what ran.
set -u
t0=$(date +%s)
R=/tmp/r61a; mkdir -p $R
pack() { (cd /tmp && tar czf $OUT/r61a.tgz r61a); }
el() { echo "$(( $(date +%s) - t0 )) s"; }
tar xJf build/gpu-s61a.txz -C build
S=build/s61a; export LD_LIBRARY_PATH=$PWD/$S/lib
cp $S/commit $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
OUT=$R BACKEND=cuda-flash-allwarps SHAPES="2,16,4096,64;16,16,512,64;2,16,4096,128" DTYPES=fp16 CAUSAL=0 TORCH=1 \
  TORCH_PATH=flash FP8_SHAPES= SOURCE=1 timeout 260 perf/dev/ncu_forward.sh $S/bin > $R/ncu.console 2>&1
echo "ncu rc=$? at $(el)"; tail -n 4 $R/ncu.console
python3 perf/dev/ncu_summary.py $R/ncu --device="$dev" > $R/ncu_summary.md 2>&1
for f in $R/ncu/*.sass.csv; do echo "== $f"; python3 perf/dev/ncu_sass_stalls.py "$f" --top=16; done > $R/stalls.txt 2>&1
cat $R/ncu_summary.md; pack
OUT=$R/fwd NAME=forced-mma BACKENDS=cuda-flash-allwarps,cuda-flash-warpspec QUICK=1 timeout $((550 - $(date +%s) + t0)) perf/run_forward.sh $S/bin > $R/fwd.console 2>&1
echo "run_forward rc=$? at $(el)"; grep -E "^\| [0-9]" $R/fwd/*.md | cut -d"|" -f2-5,7,11 | head -34; pack
echo "done at $(el)"
