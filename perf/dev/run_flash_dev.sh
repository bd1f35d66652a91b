#!/usr/bin/env bash
# One device call: correctness, determinism, timing, sweep, torch SDPA comparison, sanitizers.
# Usage (repo root, on the GPU machine): perf/dev/run_flash_dev.sh [steps...]
#   steps: check headdims torch-headdims time time-big hopper-mid ncu-big time-big-old sweep sweep-mid torch torch-big probe ncu ncutorch memcheck racecheck synccheck (default: check time torch)
# Binary: .gpu-dev/flash_dev (built on the CPU machine, see NOTES.md) or built here if missing.
# Logs go to $OUT (or ./.gpu-dev/out).
set -u
OUT=${OUT:-.gpu-dev/out}
mkdir -p "$OUT"
BIN=${BIN:-.gpu-dev/flash_dev}
if [ ! -x "$BIN" ]; then
  mkdir -p .gpu-dev
  bash perf/dev/build_flash_dev.sh || exit 1
fi
steps=${*:-check time torch}
"$BIN" decline 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1
for s in $steps; do
  case $s in
    check)    timeout 240 "$BIN" check > "$OUT/check.log" 2>&1; echo "check rc=$?"; grep -c PASS "$OUT/check.log"; grep -E "FAIL|UNSUPP|error|failure" "$OUT/check.log" | head -20 ;;
    time)     timeout 150 "$BIN" time > "$OUT/time.log" 2>&1; echo "time rc=$?" ;;
    probe)    timeout 100 "$BIN" probe > "$OUT/probe.log" 2>&1; echo "probe rc=$?"; cat "$OUT/probe.log" ;;
    ncu)      NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); uname -r
              timeout 120 $NCU --clock-control none --launch-skip 2 --launch-count 1 --section SpeedOfLight --section LaunchStats \
                --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
                "$BIN" one > "$OUT/ncu.log" 2>&1; echo "ncu rc=$?" ;;
    ncu-big)  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
              timeout 150 $NCU --clock-control none --kernel-name regex:hopper --launch-skip 1 --launch-count 1 --section SpeedOfLight \
                --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section Occupancy \
                "$BIN" one-big > "$OUT/ncu-big.log" 2>&1; echo "ncu-big rc=$?" ;;
    ncutorch) NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
              timeout 120 $NCU --clock-control none --kernel-name regex:"fmha|flash|cudnn|attn|attention" --launch-count 6 \
                --section SpeedOfLight --section LaunchStats --section Occupancy python3 perf/dev/torch_sdpa_time.py --once > "$OUT/ncutorch.log" 2>&1
              echo "ncutorch rc=$?" ;;
    sweep)    timeout 170 "$BIN" sweep > "$OUT/sweep.log" 2>&1; echo "sweep rc=$?" ;;
    hopper-mid) timeout 150 "$BIN" hopper-mid > "$OUT/hopper-mid.log" 2>&1; echo "hopper-mid rc=$?"; cat "$OUT/hopper-mid.log" ;;
    sweep-mid) timeout 170 "$BIN" sweep-mid > "$OUT/sweep-mid.log" 2>&1; echo "sweep-mid rc=$?" ;;
    time-big) timeout 120 "$BIN" time-big > "$OUT/time-big.log" 2>&1; echo "time-big rc=$?"; cat "$OUT/time-big.log" ;;
    time-big-old) [ -x .gpu-dev/flash_dev_old ] && { timeout 100 .gpu-dev/flash_dev_old time-big > "$OUT/time-big-old.log" 2>&1; echo "time-big-old rc=$?"; cat "$OUT/time-big-old.log"; } ;;
    torch-big) PYTHONUNBUFFERED=1 timeout 100 python3 perf/dev/torch_sdpa_time.py --big > "$OUT/torch-big.log" 2>&1; echo "torch-big rc=$?"; cat "$OUT/torch-big.log" ;;
    headdims) timeout 400 "$BIN" headdims > "$OUT/headdims.log" 2>&1; echo "headdims rc=$?"; grep -E "FAIL|UNSUPP|error" "$OUT/headdims.log" | head -20 ;;
    headdims-time) timeout 120 "$BIN" headdims-time > "$OUT/headdims-time.log" 2>&1; echo "headdims-time rc=$?" ;;
    torch-headdims) PYTHONUNBUFFERED=1 timeout 150 python3 perf/dev/torch_sdpa_time.py --headdims > "$OUT/torch-headdims.log" 2>&1; echo "torch-headdims rc=$?" ;;
    torch)    PYTHONUNBUFFERED=1 timeout 120 python3 perf/dev/torch_sdpa_time.py > "$OUT/torch.log" 2>&1; echo "torch rc=$?" ;;
    memcheck|racecheck|synccheck) t=$s
                timeout 90 compute-sanitizer --tool $t "$BIN" sanitize > "$OUT/san.tmp" 2>&1; echo "sanitize $t rc=$?"; tail -3 "$OUT/san.tmp"; cat "$OUT/san.tmp" >> "$OUT/sanitize.log"; rm -f "$OUT/san.tmp" ;;
  esac
done
