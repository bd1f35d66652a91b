#!/bin/bash
# GPU run 52a (fifty-first session): E7, the Hopper D = 64 instance's warpgroup count re-measured after E4 (item
# hand-off) and E5 (O by TMA stores on two warpgroups), which saved more on the two-warpgroup instance's rounds:
# `hopper_dev wgs` (launch_override.hopper_wgs 2 against 3, the Hopper kernel forced, four rounds alternating,
# graph-timed), fp16 then bf16. Staging: build/gpu-s52a.txz (s52a/hopper_dev of main + the override).
set -u
R=$OUT/r52a; mkdir -p $R
tar xJf build/gpu-s52a.txz -C build
S=build/s52a
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
timeout 150 $S/hopper_dev wgs > $R/wgs_fp16.md 2>&1; echo "wgs fp16 rc=$? ${SECONDS}s"; cat $R/wgs_fp16.md
HOPPER_DEV_BF16=1 timeout 150 $S/hopper_dev wgs > $R/wgs_bf16.md 2>&1; echo "wgs bf16 rc=$? ${SECONDS}s"; cat $R/wgs_bf16.md
(cd $OUT && tar czf r52a.tgz r52a && rm -rf r52a)
