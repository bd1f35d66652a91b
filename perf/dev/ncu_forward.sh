#!/usr/bin/env bash
# Nsight Compute on the forward suite's rows: FlashCore's forward kernel (the first flash_fwd* launch of
# one flashcore_bench process per case) and torch SDPA's cuDNN path on the same cases
# (perf/dev/ncu_sdpa_once.py, NVTX ranges), the same sections for both. On the GPU machine:
#
#   perf/dev/ncu_forward.sh BIN_DIR      BIN_DIR holds flashcore_bench
#
# Writes $OUT/ncu/{ours,torch}_*.ncu-rep and their raw pages as CSV (*.csv); perf/dev/ncu_summary.py
# turns the CSVs into a table. Environment: SHAPES (default the suite's), DTYPES (fp16), FP8_SHAPES
# (fp8_e4m3 rows of ours, non-causal and causal; torch has none), CAUSAL (both), TORCH=0 skips torch,
# BACKEND (cuda-flash; e.g. cuda-flash-allwarps for the forced mma.sync path), SOURCE=1 adds the per-instruction
# stall samples of ours (SourceCounters; *.sass.csv for perf/dev/ncu_sass_stalls.py), TORCH_PATH (cudnn; flash:
# torch's FlashAttention-2 kernel, the issue-19 comparison; with SOURCE=1 its stall samples too).
# Clocks are left alone (--clock-control none), as the GPU machine's METHOD.md asks.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "$ROOT" || exit 2
BIN=${1:?BIN_DIR}
R=${OUT:-perf/results/tmp}/ncu
mkdir -p "$R" || exit 2
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[[ -n $NCU ]] || { echo "no ncu"; exit 2; }
[[ -d $BIN/lib ]] && export LD_LIBRARY_PATH="$(cd "$BIN/lib" && pwd -P)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SHAPES=${SHAPES:-"1,8,512,64;1,8,1024,64;4,16,1024,64;16,16,512,64;2,16,4096,64;2,16,4096,128;1,16,16384,128;8,32,2048,128"}
FP8_SHAPES=${FP8_SHAPES-"2,16,4096,128;1,16,16384,128"}  # FP8_SHAPES= (empty): none
DTYPES=${DTYPES:-fp16}
CAUSAL=${CAUSAL:-both}
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy
          --section LaunchStats --section SchedulerStats --section MemoryWorkloadAnalysis --section InstructionStats)
[[ ${SOURCE:-0} == 1 ]] && sections+=(--section SourceCounters)
causals=(0 1)
[[ $CAUSAL == 0 || $CAUSAL == 1 ]] && causals=("$CAUSAL")
# A report's raw page as CSV; with SOURCE=1 also its SASS source page (per-instruction stall samples).
export_csv() {
  "$NCU" --import "$1.ncu-rep" --page raw --csv > "$1.csv" 2> "$1.err"
  [[ ${SOURCE:-0} == 1 ]] && "$NCU" --import "$1.ncu-rep" --page source --csv --print-source sass > "$1.sass.csv" 2>> "$1.err"
  return 0
}

ours() {  # dtype shape causal
  local tag="ours_$1_$([[ $3 == 1 ]] && echo causal || echo full)_B${2//,/_}"
  timeout 120 "$NCU" --clock-control none -k regex:flash_fwd -c 1 "${sections[@]}" -f -o "$R/$tag" \
    "$BIN/flashcore_bench" --device-only --no-check --quick --reps=1 --backends="${BACKEND:-cuda-flash}" --dtypes="$1" \
    --causal="$3" --shapes="$2" --benchmark_color=false > "$R/$tag.log" 2>&1
  echo "$tag rc=$?"
  export_csv "$R/$tag"
}

IFS=';' read -r -a shapes <<< "$SHAPES"
IFS=',' read -r -a dtypes <<< "$DTYPES"
for dt in "${dtypes[@]}"; do
  for s in "${shapes[@]}"; do
    for c in "${causals[@]}"; do ours "$dt" "$s" "$c"; done
  done
done
if [[ -n $FP8_SHAPES ]]; then
  IFS=';' read -r -a f8 <<< "$FP8_SHAPES"
  for s in "${f8[@]}"; do
    for c in "${causals[@]}"; do ours fp8_e4m3 "$s" "$c"; done
  done
fi
if [[ ${TORCH:-1} == 1 ]]; then
  for dt in "${dtypes[@]}"; do
    tag="torch_${TORCH_PATH:-cudnn}_$dt"
    timeout 300 "$NCU" --clock-control none --nvtx --nvtx-include 'sdpa/' "${sections[@]}" -f -o "$R/$tag" \
      python3 perf/dev/ncu_sdpa_once.py --shapes="$SHAPES" --dtype="$dt" --causal="$CAUSAL" \
      --path="${TORCH_PATH:-cudnn}" > "$R/$tag.log" 2>&1
    echo "$tag rc=$?"
    export_csv "$R/$tag"
  done
fi
ls "$R" | wc -l
