# Sourced by the perf scripts (run_gpu.sh, run_decode.sh, run_variants.sh, run_backward.sh,
# run_ring.sh): GPU_NAME, the first GPU's name ("" without one), and SLUG, its short name for the
# result files (sdpa_compare.device_slug: h100, h200, a100, ...; "unknown" without a GPU).
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)
SLUG=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[2]); from sdpa_compare import device_slug; print(device_slug(sys.argv[1]))' \
  "${GPU_NAME:-unknown}" "$(dirname "${BASH_SOURCE[0]}")" 2>/dev/null || echo unknown)
