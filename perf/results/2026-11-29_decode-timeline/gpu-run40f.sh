#!/bin/bash
# GPU run 40f: why the decode kernel with L2 evict_first K/V copies stops with an illegal instruction (40c, 40d) when
# policy_test's forms run (40e): three more forms (policy made per copy; no -lineinfo; cp.async.ca), the SASS of the
# cp.async.cg form if a disassembler is here; the forms that run timed against base0 (2 rounds).
set -u
R=$OUT/r40f; mkdir -p $R
tar xJf build/gpu-s40f.txz -C build
B=build/s40/bin/decode_dev
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/device.txt
(which cuobjdump nvdisasm; ls /usr/local/cuda*/bin 2>/dev/null | head -40) > $R/tools.txt 2>&1
D=$(which cuobjdump 2>/dev/null || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
[ -n "$D" ] && $D -sass build/s40/bin/dec128_ef.cubin > $R/ef.sass 2>&1
for round in 1 2; do
  for v in base0 efA efC efD; do timeout 120 ${B}_$v time > $R/time_${v}_$round.txt 2>&1; echo "$v $round rc=$?" >> $R/rc.txt; done
done
[ -f $R/ef.sass ] && gzip $R/ef.sass
(cd $OUT && tar czf r40f.tgz r40f && rm -rf r40f)
