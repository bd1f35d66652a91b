import json,glob,gzip,sys
# python3 ab.py DIR v1 v2 ...: min over rounds of each row's median, µs, and the ratios to v1 (time_<v>_<round>.json[.gz])
d=sys.argv[1]; vs=sys.argv[2:]
res={}
for v in vs:
    for f in sorted(glob.glob(f"{d}/time_{v}_*.json*")):
        s=(gzip.open(f,'rt') if f.endswith('.gz') else open(f)).read(); s=s[s.index('{'):]
        for b in json.loads(s)['benchmarks']:
            if b.get('run_type')=='aggregate' and b.get('aggregate_name')!='median': continue
            name=b.get('run_name',b['name'])
            t=b['real_time']*({'ns':1e-3,'us':1,'ms':1e3}[b['time_unit']])
            res.setdefault(name,{}).setdefault(v,[]).append(t)
print(f"{'row':40s} "+" ".join(f"{v:>9s}" for v in vs))
for n,r in res.items():
    m=[min(r[v]) for v in vs]
    short=n.replace('attn/cuda-flash-allwarps/','').replace('/iterations:1/repeats:5/manual_time','')
    print(f"{short:40s} "+" ".join(f"{x:9.1f}" for x in m)+"  "+" ".join(f"{x/m[0]:.3f}" for x in m[1:]))
