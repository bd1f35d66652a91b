#!/bin/bash
# GPU run 44c: decode_dev prefill-pages with the gather by warps 1-3 (rows unrolled).
set -u
R=$OUT/r44c; mkdir -p $R
tar xJf build/gpu-s44c.txz -C build
S=build/s44c; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
timeout 400 $S/bin/decode_dev prefill-pages > $R/prefill_pages.txt 2>&1; echo "prefill-pages rc=$? $(el) s"
grep -E "FAIL|check:|DECLINED" $R/prefill_pages.txt | head -20
grep -E "^PASS" $R/prefill_pages.txt | wc -l
grep -E "contiguous|paged:" $R/prefill_pages.txt | tail -45 | cut -c1-110
(cd $OUT && tar czf r44c.tgz r44c && rm -rf r44c)
