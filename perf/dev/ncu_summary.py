#!/usr/bin/env python3
"""Tables of the Nsight Compute raw pages that perf/dev/ncu_forward.sh wrote: one row per case, ours
(ours_*.csv) beside torch's kernel on the same case (torch_cudnn_<dtype>.csv, or torch_flash_<dtype>.csv:
FlashAttention-2, from TORCH_PATH=flash; paired through the CASE lines of its log), and the metrics that say
what bounds each kernel.

  python3 perf/dev/ncu_summary.py NCU_DIR [--device=NAME] > table.md

Columns:
- us: gpu__time_duration; GHz: the SM clock during the kernel (gpc__cycles_elapsed per second; the
  clocks were left alone, so a power-limited kernel shows a lower clock);
- peak%: the problem's FLOPs (4·B·H·L²·D, halved when causal) over what the tensor cores do in the
  kernel's cycles at that clock (132 SMs x 4096 dense fp16/bf16 FLOP per SM and cycle, 8192 for fp8):
  the share of the clock's peak the kernel reached;
- tensor%: tensor pipe active cycles over elapsed cycles (sm__pipe_tensor_cycles_active);
- SM busy%: SM active cycles over elapsed (idle SMs: a grid short of the SM count, or a tail);
- issue%: instructions issued per scheduler cycle; xu%/fma%/alu%: pipe utilization (xu: exp2, the
  conversions);
- warps: active warps per scheduler; stalls: the three largest warp stall reasons, warps per issued
  instruction (smsp__average_warps_issue_stalled_*_per_issue_active).
"""
import csv
import glob
import os
import re
import sys

SMS = 132


def read_csv(path):
    rows = list(csv.reader(open(path)))
    if len(rows) < 3:
        return []
    head, units = rows[0], rows[1]
    out = []
    for r in rows[2:]:
        d = {h: v for h, v in zip(head, r)}
        d["_units"] = dict(zip(head, units))
        out.append(d)
    return out


def num(d, key):
    v = d.get(key, "")
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return float("nan")


def duration_us(d):
    v = num(d, "gpu__time_duration.sum")
    unit = d["_units"].get("gpu__time_duration.sum", "")
    return v * {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(unit, 1.0)


def clock_ghz(d):
    v = num(d, "gpc__cycles_elapsed.avg.per_second")
    unit = d["_units"].get("gpc__cycles_elapsed.avg.per_second", "")
    return v * {"Ghz": 1.0, "Mhz": 1e-3, "hz": 1e-9}.get(unit, 1.0)


def stalls(d, n=3):
    pat = re.compile(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio")
    vals = []
    for k in d:
        m = pat.fullmatch(k)
        if m and m.group(1) not in ("selected", "not_selected"):
            vals.append((num(d, k), m.group(1)))
    vals.sort(reverse=True)
    return ", ".join(f"{name} {v:.2f}" for v, name in vals[:n])


def case_of_ours(path):
    # ours_<dtype>_<full|causal>_B<b>_<h>_<l>_<d>.csv
    m = re.fullmatch(r"ours_(\w+?)_(full|causal)_B(\d+)_(\d+)_(\d+)_(\d+)\.csv", os.path.basename(path))
    dt, mode, b, h, l, dd = m.groups()
    return dt, mode, (int(b), int(h), int(l), int(dd))


def torch_cases(ncu_dir, dtype, path_name):
    """The kernels of torch_<path_name>_<dtype>.csv, each with its case (from the log's PROF/CASE lines)."""
    path = os.path.join(ncu_dir, f"torch_{path_name}_{dtype}.csv")
    if not os.path.exists(path):
        return {}
    kernels = read_csv(path)
    log = open(os.path.join(ncu_dir, f"torch_{path_name}_{dtype}.log")).read().splitlines()
    out, pending, k = {}, [], 0
    for line in log:
        if line.startswith("==PROF== Profiling"):
            pending.append(k)
            k += 1
        m = re.match(r"CASE sdpa \w+ (\w+) (full|causal) B(\d+)_H(\d+)_L(\d+)_D(\d+)", line)
        if m:
            key = (m.group(2), tuple(int(x) for x in m.groups()[2:]))
            # the attention kernel: the longest one profiled in the range
            ks = [kernels[i] for i in pending if i < len(kernels)]
            if ks:
                out[key] = max(ks, key=duration_us)
            pending = []
    return out


def metrics(d, shape, causal, fp8):
    b, h, l, dd = shape
    flops = 4.0 * b * h * l * l * dd * (0.5 if causal else 1.0)
    us, ghz = duration_us(d), clock_ghz(d)
    per_clk = (8192 if fp8 else 4096) * SMS
    peak = flops / (us * 1e-6 * ghz * 1e9 * per_clk) * 100.0
    elapsed = num(d, "gpc__cycles_elapsed.max")
    return {
        "us": us, "tfs": flops / us * 1e-6, "ghz": ghz, "peak": peak,
        "tensor": num(d, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"),
        "busy": num(d, "sm__cycles_active.avg") / elapsed * 100.0 if elapsed else float("nan"),
        "issue": num(d, "smsp__issue_active.avg.pct_of_peak_sustained_active"),
        "xu": num(d, "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"),
        "fma": num(d, "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"),
        "alu": num(d, "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"),
        "warps": num(d, "smsp__warps_active.avg.per_cycle_active"),
        "grid": int(num(d, "launch__grid_size")), "block": int(num(d, "launch__block_size")),
        "regs": int(num(d, "launch__registers_per_thread")),
        "smem": num(d, "launch__shared_mem_per_block"),
        "stalls": stalls(d),
        "kernel": re.sub(r"^void ", "", d.get("Kernel Name", ""))[:48],
    }


def fmt(m):
    return (f"{m['us']:.1f} | {m['tfs']:.0f} | {m['ghz']:.2f} | {m['peak']:.0f} | {m['tensor']:.0f} | {m['busy']:.0f} | "
            f"{m['issue']:.0f} | {m['xu']:.0f} / {m['fma']:.0f} / {m['alu']:.0f} | {m['warps']:.1f} | "
            f"{m['grid']}x{m['block']}, {m['regs']} r, {m['smem']:.0f} KB | {m['stalls']}")


def main():
    ncu_dir = sys.argv[1]
    device = next((a.split("=", 1)[1] for a in sys.argv[2:] if a.startswith("--device=")), "")
    cases = [case_of_ours(p) + (p,) for p in glob.glob(os.path.join(ncu_dir, "ours_*.csv"))
             if not p.endswith(".sass.csv")]  # the SASS source pages (SOURCE=1) are not kernel rows
    order = {"fp16": 0, "bf16": 1, "fp8_e4m3": 2}
    cases.sort(key=lambda c: (order.get(c[0], 9), c[2][3], c[2][0] * c[2][1] * c[2][2] ** 2, c[1] == "causal"))
    paths = {"cudnn": "cuDNN", "flash": "FA2"}
    torch = {(pn, dt): torch_cases(ncu_dir, dt, pn) for pn in paths for dt in {c[0] for c in cases}}
    print(f"Nsight Compute, {device}: one profiled launch per case (`ncu --clock-control none`), "
          "ours and torch's kernels (cuDNN, FlashAttention-2: those profiled) on the same case.\n")
    print("| case | who | kernel | us | TF/s | GHz | peak% | tensor% | SM busy% | issue% | xu / fma / alu % | "
          "warps | grid x block, regs, smem | top stalls (warps per issue) |")
    print("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--|--:|---|---|")
    for dt, mode, shape, path in cases:
        ds = read_csv(path)
        if not ds:
            continue
        causal = mode == "causal"
        name = f"{','.join(map(str, shape))} {dt} {mode}"
        m = metrics(ds[0], shape, causal, dt.startswith("fp8"))
        print(f"| {name} | ours | {m['kernel']} | {fmt(m)} |")
        for pn, who in paths.items():
            t = torch.get((pn, dt), {}).get((mode, shape))
            if t is not None:
                tm = metrics(t, shape, causal, False)
                print(f"| {name} | {who} | {tm['kernel'][:32]} | {fmt(tm)} |")


if __name__ == "__main__":
    main()
