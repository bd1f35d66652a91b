# Min-of-medians comparison of flashcore_bench logs ab_<kind>_<variant>_<round>.log in a folder:
#   python3 ab_compare.py 29b base,lazy2   (the first variant is the base of the ratios)
import re,sys,glob,collections,os
d=sys.argv[1]
res=collections.defaultdict(dict)  # (kind,row) -> {variant_round: us}
for f in glob.glob(os.path.join(d,'ab_*.log')):
    kind,v,rnd=os.path.basename(f)[3:-4].split('_')
    for l in open(f):
        m=re.match(r'attn/([^/]+)/([^/]+)/([^/]+)/(\S+?)/iterations.*manual_time_median\s+([0-9.]+) us.*flop=([0-9.]+)T/s',l)
        if m:
            row=f'{m.group(1)} {m.group(2)} {m.group(3)} {m.group(4)}'
            res[row][(v,rnd)]=(float(m.group(5)),float(m.group(6)))
vs=sys.argv[2].split(',')
base=vs[0]
for row in sorted(res):
    r=res[row]
    def best(v):
        xs=[r[k][0] for k in r if k[0]==v]
        return min(xs) if xs else None
    b=best(base)
    out=f'{row:65s}'
    for v in vs:
        x=best(v)
        if x is None: out+=f' {v}: -'; continue
        tf=max(r[k][1] for k in r if k[0]==v)
        out+=f' {v}: {x:8.1f} ({tf:5.0f})' + (f' {x/b:.3f}' if v!=base else '')
    print(out)
