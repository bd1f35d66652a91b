#!/bin/bash
# GPU run 43a: what a captured call's extra nodes (alloc, memset, free) cost and what PDL takes back
# (perf/dev/graph_nodes_dev.cu), and flashcore_bench's decode rows graph-timed vs back-to-back launches (ee07ea8).
set -u
R=$OUT/r43a; mkdir -p $R
tar xJf build/gpu-s43a.txz -C build
S=build/s43a; export LD_LIBRARY_PATH=$PWD/$S/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/device.txt
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
for w in 20 60; do timeout 60 $S/bin/graph_nodes_dev $w > $R/nodes_$w.txt 2>&1; echo "nodes $w rc=$? $(el) s"; done
cat $R/nodes_20.txt
LOW="1,8,1,1,65536,128;1,32,2,1,32768,128;1,8,1,1,16384,128;1,8,1,1,65536,64"
DEC="8,32,8,1,8192,128;1,32,8,1,32768,128;64,32,8,1,2048,128;16,64,8,1,4096,128;8,32,8,4,8192,128;$LOW"
n=0
for t in graph launches launches graph; do
  n=$((n+1))
  timeout 60 $S/bin/flashcore_bench --device-only --no-check --quick --backends=cuda-flash --timing=$t \
    --decode="$DEC" --benchmark_color=false --benchmark_format=json > $R/time_${t}_$n.json 2> $R/err_${t}_$n.txt
  echo "$t $n rc=$? $(el) s"
done
python3 - $R <<'PY'
import json,sys,glob,collections
d=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1]+"/time_*.json")):
    t=f.split("time_")[1].split("_")[0]
    try: js=json.load(open(f))
    except Exception as e: print(f,e); continue
    for b in js["benchmarks"]:
        if b.get("aggregate_name")!="median": continue
        d[b["run_name"].split("/repeats")[0]][t].append(b["real_time"]*{"ns":1e-3,"us":1,"ms":1e3}[b["time_unit"]])
for k,v in d.items(): print("%-70s graph %s  launches %s"%(k[:70]," ".join("%.1f"%x for x in v["graph"])," ".join("%.1f"%x for x in v["launches"])))
PY
(cd $OUT && tar czf r43a.tgz r43a && rm -rf r43a)
