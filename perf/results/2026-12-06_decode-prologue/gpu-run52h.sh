#!/bin/bash
# GPU run 52h (fifty-second session), issue 11: T on equal cache lengths where B · Hkv is near the slots ((9|10,32,8,1,8192,128)
# through cache lengths): `decode_dev mixed` of main (T) twice; in it "auto" is T, "waves 2" the tps before T, "fixed x3"
# one wave of 3 pieces a (b, kv head) (the one-wave analogue NOTES' Next names). Staging: build/gpu-s52h.txz.
set -u
R=$OUT/r52h; mkdir -p $R
tar xJf build/gpu-s52h.txz -C build
S=build/s52h
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
SECONDS=0
for i in 1 2; do
  timeout 60 $S/decode_dev_t mixed > $R/mixed_$i.txt 2>&1; echo "mixed $i rc=$? ${SECONDS}s"; grep -E "^\(9|^\(10|16 x 1..8192  " $R/mixed_$i.txt | cut -c1-110
done
(cd $OUT && tar czf r52h.tgz r52h && rm -rf r52h)
