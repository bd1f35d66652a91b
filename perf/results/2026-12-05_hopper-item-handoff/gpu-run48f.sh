#!/bin/bash
# GPU run 48f: the epilogue split up (a diagnostic build, not committed: the D = 64 instances of the landed kernel with
# the timeline's two first-tile marks moved into the epilogue: t_k0 := after sm.finish, t_s0 := after the staging, the
# LSE and the __syncwarp, before store_o_rows; t_end after the stores' last __syncwarp as always).
set -u
R=$OUT/r48f; mkdir -p $R
tar xJf build/gpu-s48f.txz -C build
S=build/s48f; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
for b in hdim64 hdim64_wg3; do
  for sh in 16,16,512,64 4,16,1024,64; do
    for c in 0 1; do
      tag=${b}_$(echo $sh | tr , _)_c$c
      if [ $c = 1 ]; then export HOPPER_DEV_CAUSAL=1; else unset HOPPER_DEV_CAUSAL; fi
      HOPPER_DEV_SHAPE=$sh timeout 60 $S/hopper_dev_diag_$b timeline > $R/tl_$tag.csv 2> $R/tl_$tag.err
      nl=$(wc -l < $R/tl_$tag.csv); echo "$tag rows $nl"; (( nl > 10 )) || rm -f $R/tl_$tag.csv
    done
  done
done
unset HOPPER_DEV_CAUSAL
python3 - $R <<'PY'
import sys, glob, statistics as st
for f in sorted(glob.glob(sys.argv[1] + "/tl_*.csv")):
    fin, stg, sto, tot = [], [], [], []
    for l in open(f):
        x = l.strip().split(",")
        if len(x) != 12 or not x[0].isdigit(): continue
        tq, tpv, tend, tk0, ts0 = map(int, x[7:12])
        if not (tpv and tk0 and ts0 and tend): continue
        fin.append((tk0 - tpv) / 1e3); stg.append((ts0 - tk0) / 1e3); sto.append((tend - ts0) / 1e3); tot.append((tend - tpv) / 1e3)
    q = lambda v: "%.3f/%.3f/%.3f" % (st.median(v), sorted(v)[int(len(v) * .9)], max(v))
    print(f.split("/")[-1], "warps", len(tot), "| finish", q(fin), "| stage+lse", q(stg), "| store", q(sto), "| total", q(tot), "(med/p90/max us)")
PY
gzip -f $R/*.csv
(cd $OUT && tar czf r48f.tgz r48f && rm -rf r48f)
