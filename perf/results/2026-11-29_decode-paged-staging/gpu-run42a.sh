#!/bin/bash
# GPU run 42a. (1) HEAD 8cefba5 as built with compressed fatbins (first GPU run of that build): the CLI, each
# process timed (first call: modules decompress as they load), and the tuned/determinism/graph/decode GPU tests.
# (2) Paged decode with block-table entries staged in shared memory a ring ahead ("ring": decode instances
# replaced): decode_dev check and the paged sequence GPU tests. (3) The decode merges in their own file
# ("merge" patch): decode_dev check. (4) decode_dev pages (contiguous / pages 16,32,64; auto, 1/SM, 2/SM)
# for base, ring, merge, ring, base.
set -u
R=$OUT/r42a; mkdir -p $R
tar xJf build/gpu-s42a.txz -C build
B=build/s42a/bin; export LD_LIBRARY_PATH=$PWD/build/s42a/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s)
el() { echo $(( $(date +%s)-T0 )); }
TIMEFORMAT='process wall %R s'
run() { echo "== flashcore $*"; time timeout 20 $B/flashcore "$@"; echo "rc=$?"; }
{ run; run -d 128 -l 1024 --causal; run -d 96 -l 1000 --hq 16 --hkv 4
  run -b 8 --hq 32 --hkv 8 --seqlen-q 1 --seqlen-k 8192 -d 128 --page-size 16
  run -d 128 -l 512 --backward; } > $R/cli.txt 2>&1
echo "cli $(el) s"
timeout 40 $B/decode_dev_base pages > $R/pages_base1.txt 2>&1; echo "pages base $(el) s"
timeout 40 $B/decode_dev_ring pages > $R/pages_ring1.txt 2>&1; echo "pages ring $(el) s"
timeout 40 $B/decode_dev_merge pages > $R/pages_merge1.txt 2>&1; echo "pages merge $(el) s"
timeout 90 $B/decode_dev_ring check > $R/check_ring.txt 2>&1; echo "check ring rc=$? $(el) s"
timeout 90 $B/decode_dev_merge check > $R/check_merge.txt 2>&1; echo "check merge rc=$? $(el) s"
F='Gpu.TunedMatchesDeviceReferenceEverywhere:Gpu.TunedKernelsAreDeterministic:Gpu.GraphsCaptured*:Gpu/DeviceCases.*/cuda_flash_B*Lq1_*'
timeout 60 $B/flashcore_gpu_tests --gtest_filter="$F" > $R/tests_base.log 2>&1; echo "tests base rc=$? $(el) s" | tee -a $R/tests_base.log
FR='Gpu/SequenceCases.*/cuda_flash_B*page*:Gpu/DeviceCases.*/cuda_flash_B*Lq1_*'
timeout $(( 480 - $(el) )) $B/flashcore_gpu_tests_ring --gtest_filter="$FR" > $R/tests_ring.log 2>&1; echo "tests ring rc=$? $(el) s" | tee -a $R/tests_ring.log
[ $(el) -lt 500 ] && { timeout 40 $B/decode_dev_ring pages > $R/pages_ring2.txt 2>&1; echo "pages ring2 $(el) s"; }
[ $(el) -lt 540 ] && { timeout 40 $B/decode_dev_base pages > $R/pages_base2.txt 2>&1; echo "pages base2 $(el) s"; }
gzip -f $R/tests_*.log
(cd $OUT && tar czf r42a.tgz r42a && rm -rf r42a)
