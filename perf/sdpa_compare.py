#!/usr/bin/env python3
"""Time PyTorch SDPA next to FlashCore and write a table, a JSON and plots.

Runs where torch and a CUDA GPU are (the GPU machine). For every case (B,H,L,D; fp16/bf16;
causal or not) it times torch.nn.functional.scaled_dot_product_attention restricted to one
backend at a time -- FlashAttention-2 (SDPBackend.FLASH_ATTENTION), cuDNN (CUDNN_ATTENTION) and
memory-efficient (EFFICIENT_ATTENTION) -- with the method flashcore_bench uses:

  * inputs in (B, H, L, D) layout (what torch expects), Q, K ~ normal(0,1), V ~ uniform(-1,1);
    rotated over several input sets when one set is smaller than 3x L2;
  * warm-up calls, then a CUDA graph of N back-to-back calls (call i on set i % sets, N a
    multiple of the set count, one replay >= 1 ms), replayed M times between two CUDA events
    per repetition (M x replay >= 10 ms); time per call = elapsed / (M x N); median over the
    repetitions. A path that cannot be captured is timed eagerly between the same events.

It merges those numbers with flashcore_bench's JSON (--ours FILE, several allowed: the median
aggregate of every attn/<backend>/<dtype>/<causal|full>/B_H_L_D benchmark) and writes
PREFIX.md (table), PREFIX.json (everything), PREFIX_tflops.png and PREFIX_gap.png.

A torch path that does not support a case is recorded as n/a with its reason; a missing or
truncated JSON of ours is read as far as it goes.

  sdpa_compare.py --ours bench.json --out-prefix perf/results/tmp/2026-11-21_h100
  sdpa_compare.py --self-test [--out-prefix DIR/x]     (no torch, no GPU: fabricated inputs)
  sdpa_compare.py --ours ... --torch-from PREFIX.json --out-prefix NEW   (remake: torch numbers of an earlier run)
"""

import argparse
import datetime
import json
import math
import os
import re
import statistics
import sys
import tempfile

GPU_SHAPES = [
    (1, 8, 512, 64), (1, 8, 1024, 64), (1, 8, 2048, 64), (4, 16, 1024, 64), (16, 16, 512, 64),
    (2, 16, 4096, 64), (2, 16, 4096, 128), (1, 16, 16384, 128), (8, 32, 2048, 128),
]
DTYPES = ["fp16", "bf16"]
TORCH_PATHS = [  # (our column name, SDPBackend member)
    ("torch-flash", "FLASH_ATTENTION"),
    ("torch-cudnn", "CUDNN_ATTENTION"),
    ("torch-efficient", "EFFICIENT_ATTENTION"),
]
TIME_UNIT_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
SHAPE_RE = re.compile(r"^B(\d+)_H(\d+)_L(\d+)_D(\d+)$")


def flops(shape, causal):
    b, h, l, d = shape
    f = 4.0 * b * h * l * l * d
    return f / 2 if causal else f


# torch SDPA has no fp8 kernel ("No available kernel" for float8_e4m3fn inputs): ours on fp8_e4m3 rows
# are set beside torch's paths on bf16 inputs of the same shape.
TORCH_DTYPE_OF = {"fp8_e4m3": "bf16"}


def nbytes(shape, dtype):
    b, h, l, d = shape
    if dtype == "fp8_e4m3":
        return (3 * 1 + 2) * 1.0 * b * h * l * d  # Q, K, V e4m3, O 16-bit
    es = 4 if dtype == "fp32" else 2
    return es * 4.0 * b * h * l * d  # Q, K, V read once, O written once


def shape_str(shape):
    return "B%d_H%d_L%d_D%d" % shape


def case_key(shape, dtype, causal):
    return "%s/%s/%s" % (shape_str(shape), dtype, "causal" if causal else "full")


def device_slug(name):
    n = (name or "unknown").lower()
    m = re.search(r"\b([ahlbgv]\d{2,3}[a-z]?|gh200|gb200|l40s?|rtx ?\d{4})\b", n)
    if m:
        return m.group(1).replace(" ", "")
    n = re.sub(r"^nvidia\s+", "", n)
    return re.sub(r"[^a-z0-9]+", "-", n).strip("-") or "unknown"


# ------------------------------------------------------------------------------------------
# Our JSON (Google Benchmark format)
# ------------------------------------------------------------------------------------------

def load_bench_json(path):
    """Google Benchmark JSON; a truncated file (killed run) is read up to its last full entry."""
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        text = f.read()
    try:
        doc = json.loads(text)
        doc.setdefault("benchmarks", [])
        return doc, False
    except ValueError:
        pass
    dec = json.JSONDecoder()
    doc = {"context": {}, "benchmarks": []}
    m = re.search(r'"context"\s*:\s*', text)
    if m:
        try:
            doc["context"], _ = dec.raw_decode(text, m.end())
        except ValueError:
            pass
    m = re.search(r'"benchmarks"\s*:\s*\[', text)
    if m:
        pos = m.end()
        while True:
            while pos < len(text) and text[pos] in " \t\r\n,":
                pos += 1
            if pos >= len(text) or text[pos] != "{":
                break
            try:
                obj, pos = dec.raw_decode(text, pos)
            except ValueError:
                break
            doc["benchmarks"].append(obj)
    return doc, True


def parse_ours(paths):
    """-> (contexts, results) with results[case_key][backend] = dict(us, tflops, ...) or dict(error)."""
    contexts, results = [], {}
    iteration_times = {}  # (key, backend) -> [us] when a run had no aggregates (1 repetition)
    extra = {}
    for path in paths:
        if not path or not os.path.exists(path):
            print("sdpa_compare: our JSON %s does not exist; skipped" % path, file=sys.stderr)
            continue
        try:
            doc, truncated = load_bench_json(path)
        except OSError as e:
            print("sdpa_compare: cannot read %s: %s" % (path, e), file=sys.stderr)
            continue
        if truncated and os.path.getsize(path) == 0:
            print("sdpa_compare: %s is empty (no benchmark ran)" % path, file=sys.stderr)
            continue
        if truncated:
            print("sdpa_compare: %s was truncated (run killed?); read %d entries" %
                  (path, len(doc["benchmarks"])), file=sys.stderr)
        ctx = dict(doc.get("context", {}))
        ctx["_file"] = path
        ctx["_truncated"] = truncated
        contexts.append(ctx)
        for b in doc["benchmarks"]:
            name = b.get("run_name") or b.get("name", "")
            parts = name.split("/")
            if len(parts) < 5 or parts[0] != "attn":
                continue
            backend, dtype, mode, sh = parts[1], parts[2], parts[3], parts[4]
            m = SHAPE_RE.match(sh)
            if not m or mode not in ("full", "causal"):
                continue
            shape = tuple(int(x) for x in m.groups())
            causal = mode == "causal"
            key = case_key(shape, dtype, causal)
            extra[key] = (shape, dtype, causal)
            slot = results.setdefault(key, {})
            if b.get("error_occurred"):
                if backend not in slot or "error" in slot[backend]:
                    slot[backend] = {"error": str(b.get("error_message", "error"))}
                continue
            unit = TIME_UNIT_US.get(b.get("time_unit", "ns"), 1e-3)
            rt = b.get("run_type", "iteration")
            agg = b.get("aggregate_name", "")
            if rt == "aggregate" and agg == "median":
                us = float(b["real_time"]) * unit
                entry = slot.get(backend, {})
                if "error" in entry:
                    entry = {}
                entry.update(_result(us, shape, dtype, causal))
                entry["label"] = b.get("label", "")
                entry["repetitions"] = b.get("repetitions")
                for c in ("graph", "calls_per_replay", "sets"):
                    if c in b:
                        entry[c] = b[c]
                slot[backend] = entry
            elif rt == "aggregate" and agg == "cv":
                slot.setdefault(backend, {})["cv"] = float(b["real_time"])
            elif rt == "iteration":
                iteration_times.setdefault((key, backend), []).append(float(b["real_time"]) * unit)
                slot.setdefault(backend, {}).setdefault("label", b.get("label", ""))
    for (key, backend), times in iteration_times.items():
        entry = results[key].get(backend, {})
        if "us" not in entry and "error" not in entry:
            shape, dtype, causal = extra[key]
            entry.update(_result(statistics.median(times), shape, dtype, causal))
            entry["repetitions"] = len(times)
            results[key][backend] = entry
    for key in list(results):  # drop half entries (a cv without a median)
        for backend in list(results[key]):
            e = results[key][backend]
            if "us" not in e and "error" not in e:
                del results[key][backend]
    return contexts, results, extra


def _result(us, shape, dtype, causal):
    s = us * 1e-6
    return {"us": us, "tflops": flops(shape, causal) / s / 1e12, "gbps": nbytes(shape, dtype) / s / 1e9}


# ------------------------------------------------------------------------------------------
# Torch timing
# ------------------------------------------------------------------------------------------

class TorchTimer:
    def __init__(self, args):
        import torch  # noqa: F401  (ImportError is the caller's business)
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        self.torch, self.F, self.SDPBackend, self.sdpa_kernel = torch, F, SDPBackend, sdpa_kernel
        self.args = args
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.l2 = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
        self.info = {
            "device_name": props.name,
            "compute_capability": "%d.%d" % (props.major, props.minor),
            "sm_count": props.multi_processor_count,
            "l2_bytes": self.l2,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        }

    def _sets(self, shape, dtype):
        set_bytes = nbytes(shape, dtype)
        return max(1, min(256, int(math.ceil(3.0 * self.l2 / set_bytes))))

    def time_case(self, shape, dtype, causal, paths):
        torch = self.torch
        b, h, l, d = shape
        dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
        nsets = self._sets(shape, dtype)
        free, _ = torch.cuda.mem_get_info()
        while nsets > 1 and nsets * nbytes(shape, dtype) > 0.4 * free:
            nsets -= 1
        gen = torch.Generator(device="cuda")
        gen.manual_seed(1234 + l + 7 * d + 13 * b * h)
        q0 = torch.randn(b, h, l, d, device="cuda", dtype=torch.float32, generator=gen).to(dt)
        k0 = torch.randn(b, h, l, d, device="cuda", dtype=torch.float32, generator=gen).to(dt)
        v0 = (torch.rand(b, h, l, d, device="cuda", dtype=torch.float32, generator=gen) * 2 - 1).to(dt)
        qs, ks, vs = [q0], [k0], [v0]
        for _ in range(1, nsets):
            qs.append(q0.clone())
            ks.append(k0.clone())
            vs.append(v0.clone())
        out = {}
        for name, member in paths:
            try:
                out[name] = self._time_path(qs, ks, vs, causal, getattr(self.SDPBackend, member), shape, dtype)
            except Exception as e:  # never crash on one path
                out[name] = {"error": _first_line(e)}
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        del qs, ks, vs, q0, k0, v0
        torch.cuda.empty_cache()
        return out, nsets

    def _time_path(self, qs, ks, vs, causal, backend, shape, dtype):
        torch, F = self.torch, self.F
        a = self.args
        nsets = len(qs)

        def call(i):
            j = i % nsets
            return F.scaled_dot_product_attention(qs[j], ks[j], vs[j], is_causal=causal)

        def events_time(fn):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            return e0.elapsed_time(e1) * 1e-3  # seconds

        with self.sdpa_kernel([backend]):
            try:
                o = call(0)
                torch.cuda.synchronize()
            except RuntimeError as e:
                return {"error": "not supported: " + _first_line(e)}
            if not bool(torch.isfinite(o).all()):
                return {"error": "non-finite output"}
            del o
            # Warm-up on a side stream (needed before capture), then an estimate of one call.
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for i in range(3):
                    call(i)
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            est = events_time(lambda: [call(i) for i in range(5)]) / 5
            slow = est > 0.05
            target = a.replay_ms * 1e-3
            n = 1 if slow else max(1, min(4096, int(math.ceil(target / max(est, 1e-7)))))
            if nsets > 1 and not slow:
                n = int(math.ceil(n / nsets) * nsets)

            graph, note = None, ""

            def capture(n):
                g = torch.cuda.CUDAGraph()
                keep = []
                with torch.cuda.graph(g):
                    for i in range(n):
                        keep.append(call(i))  # distinct outputs, as our rotated O buffers
                del keep
                g.replay()
                torch.cuda.synchronize()
                return g

            try:
                graph = capture(n)
                t = events_time(graph.replay)
                if not slow and t < 0.9 * target and n < 4096:
                    n2 = min(4096, max(n + 1, int(math.ceil(n * 1.05 * target / max(t, 1e-7)))))
                    if nsets > 1:
                        n2 = int(math.ceil(n2 / nsets) * nsets)
                    del graph
                    graph = capture(n2)
                    n = n2
            except Exception as e:  # capture not possible: eager launches
                note = _first_line(e)
                graph = None
                torch.cuda.synchronize()

            def replay():
                if graph is not None:
                    graph.replay()
                else:
                    for i in range(n):
                        call(i)

            t_replay = events_time(replay)
            if slow:
                m, reps = 1, min(a.reps, 3)
            else:
                warm = int(min(50, math.ceil(0.025 / max(t_replay, 1e-6))))
                for _ in range(warm):
                    replay()
                m = int(max(1, min(1000, math.ceil(a.rep_ms * 1e-3 / max(t_replay, 1e-6)))))
                reps = a.reps
            times = []
            for _ in range(reps):
                times.append(events_time(lambda: [replay() for _ in range(m)]) / (m * n) * 1e6)
            del graph
            us = statistics.median(times)
            r = _result(us, shape, dtype, causal)
            r.update({"graph": 1 if note == "" else 0, "calls_per_replay": n, "replays": m, "sets": nsets,
                      "repetitions": reps,
                      "cv": (statistics.pstdev(times) / statistics.mean(times)) if len(times) > 1 else 0.0})
            if note:
                r["note"] = "graph capture failed, eager launches: " + note
            return r


def _first_line(e):
    s = str(e).strip().splitlines()
    return (s[0] if s else type(e).__name__)[:300]


# ------------------------------------------------------------------------------------------
# Merge, table, JSON, plots
# ------------------------------------------------------------------------------------------

def order_backends(names, contexts):
    """The Kokkos tiers first (references, then the portable tier), then the tuned backends in
    registry order (context 'backends'). The first list is never 'best'."""
    reg = []
    for c in contexts:
        for n in str(c.get("backends", "")).split(","):
            if n and n not in reg:
                reg.append(n)
    refs = sorted(n for n in names if n.startswith("reference")) + sorted(n for n in names if n.startswith("portable"))
    tuned = [n for n in reg if n in names and n not in refs]
    tuned += sorted(n for n in names if n not in refs and n not in tuned)
    return refs, tuned


def merge(cases, ours, torch_res, contexts):
    names = set()
    for k in ours.values():
        names.update(k.keys())
    refs, tuned = order_backends(names, contexts)
    rows = []
    for shape, dtype, causal in cases:
        key = case_key(shape, dtype, causal)
        o = ours.get(key, {})
        t = torch_res.get(key, {})
        row = {"key": key, "shape": list(shape), "dtype": dtype, "causal": causal,
               "flops": flops(shape, causal), "bytes": nbytes(shape, dtype), "ours": o, "torch": t}
        ok_tuned = [(o[n]["us"], n) for n in tuned if n in o and "us" in o[n]]
        best = min(ok_tuned) if ok_tuned else None
        row["best_ours"] = best[1] if best else None
        row["best_ours_us"] = best[0] if best else None
        for tp, col in (("torch-flash", "speedup_vs_flash"), ("torch-cudnn", "speedup_vs_cudnn"),
                        ("torch-efficient", "speedup_vs_efficient")):
            tt = t.get(tp, {})
            row[col] = (tt["us"] / best[0]) if best and "us" in tt else None
        ref = next((o[n] for n in refs if n.startswith("reference") and n in o and "us" in o[n]), None)
        row["reference_over_tuned"] = (ref["us"] / best[0]) if best and ref else None
        port = next((o[n] for n in refs if n.startswith("portable") and n in o and "us" in o[n]), None)
        row["portable_over_tuned"] = (port["us"] / best[0]) if best and port else None
        rows.append(row)
    return rows, refs, tuned


def _cell(e):
    if not e:
        return "-"
    if "us" not in e:
        return "n/a"
    us = e["us"]
    t = ("%.1f" % us) if us < 1000 else ("%.0f" % us)
    mark = "" if e.get("graph", 1) else "*"
    tf = e["tflops"]
    tfs = ("%.0f" % tf) if tf >= 10 else ("%.2f" % tf) if tf >= 0.1 else ("%.2g" % tf)
    return "%s%s / %s" % (t, mark, tfs)


def _ratio(x):
    return "-" if x is None else "%.2fx" % x


def write_markdown(path, rows, refs, tuned, meta):
    paths = [p for p, _ in TORCH_PATHS]
    cols = refs + tuned + paths
    lines = []
    lines.append("# FlashCore vs PyTorch SDPA on %s" % meta.get("device_name", "unknown device"))
    lines.append("")
    lines.append("- date: %s; flashcore commit: %s (%s build, Kokkos: %s)" % (
        meta.get("date"), meta.get("git_commit", "unknown"), meta.get("build_type", "?"),
        meta.get("kokkos_version", "?")))
    lines.append("- device: %s (cc %s, %s SMs); torch %s, CUDA %s, cuDNN %s" % (
        meta.get("device_name", "?"), meta.get("compute_capability", "?"), meta.get("sm_count", "?"),
        meta.get("torch", "n/a"), meta.get("cuda", "n/a"), meta.get("cudnn", "n/a")))
    lines.append("- cells: median microseconds per call / TFLOP/s (FLOPs 4*B*H*L*L*D, halved when causal); "
                 "`*` = timed without a CUDA graph (eager launches); n/a = not supported or failed (see notes); "
                 "`-` = not run")
    lines.append("- ours: inputs (B,L,H,D); torch: inputs (B,H,L,D). best = fastest tuned backend of ours; "
                 "vs flash / vs cuDNN = torch time / best time (>1: we are faster); ref gap = reference time / "
                 "best time; portable gap = portable tier time / best time")
    if any(r["dtype"] in TORCH_DTYPE_OF for r in rows):
        lines.append("- fp8_e4m3 rows: ours with e4m3 Q, K, V (O bf16); torch's columns are its paths on bf16 inputs of "
                     "the same shape (torch SDPA has no fp8 kernel)")
    lines.append("")
    has_portable = any(n.startswith("portable") for n in refs)
    gaps = ["ref gap"] + (["portable gap"] if has_portable else [])
    head = ["shape (B,H,L,D)", "dtype", "causal"] + cols + ["best", "vs flash", "vs cuDNN"] + gaps
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] * 3 + ["--:"] * len(cols) + ["---"] + ["--:"] * (2 + len(gaps))) + "|")
    notes = []
    for r in rows:
        cells = ["%d,%d,%d,%d" % tuple(r["shape"]), r["dtype"], "yes" if r["causal"] else "no"]
        for c in cols:
            e = r["ours"].get(c) if c in refs + tuned else r["torch"].get(c)
            cells.append(_cell(e))
            if e and "error" in e:
                notes.append("%s %s: %s" % (r["key"], c, e["error"]))
            elif e and e.get("note"):
                notes.append("%s %s: %s" % (r["key"], c, e["note"]))
        cells += [r["best_ours"] or "-", _ratio(r["speedup_vs_flash"]), _ratio(r["speedup_vs_cudnn"]),
                  _ratio(r["reference_over_tuned"])]
        if has_portable:
            cells.append(_ratio(r.get("portable_over_tuned")))
        lines.append("| " + " | ".join(cells) + " |")
    if notes:
        lines.append("")
        lines.append("Notes (n/a and fallbacks):")
        lines.append("")
        seen = set()
        for n in notes:
            if n not in seen:
                seen.add(n)
                lines.append("- " + n.replace("|", "/"))
    if meta.get("warnings"):
        lines.append("")
        for w in meta["warnings"]:
            lines.append("- WARNING: " + w)
    text = "\n".join(lines) + "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return text


def _shape_label(shape):
    b, h, l, d = shape
    return "L%d\nB%dH%d" % (l, b, h)


def write_plots(prefix, rows, refs, tuned):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter
    made = []
    series = [(n, "o", "-") for n in tuned] + [(p, "s", "--") for p, _ in TORCH_PATHS]
    color = {name: "C%d" % (i % 10) for i, (name, _, _) in enumerate(series)}  # same color in every panel
    groups = sorted({(r["dtype"], r["shape"][3]) for r in rows})
    if groups:
        fig, axes = plt.subplots(2, len(groups), figsize=(4.2 * len(groups) + 1, 8), squeeze=False)
        for ci, (dtype, d) in enumerate(groups):
            for ri, causal in enumerate((False, True)):
                ax = axes[ri][ci]
                sel = [r for r in rows if r["dtype"] == dtype and r["shape"][3] == d and r["causal"] == causal]
                sel.sort(key=lambda r: (r["shape"][2], r["shape"][0] * r["shape"][1]))
                xs = list(range(len(sel)))
                for name, marker, style in series:
                    ys = []
                    for r in sel:
                        e = r["ours"].get(name) if not name.startswith("torch-") else r["torch"].get(name)
                        ys.append(e["tflops"] if e and "tflops" in e else float("nan"))
                    if any(not math.isnan(y) for y in ys):
                        ax.plot(xs, ys, marker=marker, linestyle=style, label=name, color=color[name])
                ax.set_xticks(xs)
                ax.set_xticklabels([_shape_label(r["shape"]) for r in sel], fontsize=7)
                ax.set_title("%s, D=%d, %s" % (dtype, d, "causal" if causal else "non-causal"), fontsize=10)
                ax.set_ylabel("TFLOP/s")
                ax.set_ylim(bottom=0)
                ax.grid(True, alpha=0.3)
        handles, labels = [], []
        for ax in axes.flat:
            for hdl, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(hdl)
                    labels.append(lab)
        if handles:
            fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=8)
        fig.suptitle("Attention forward throughput vs sequence length (x: shapes by L, then B*H)")
        fig.tight_layout(rect=(0, 0.05, 1, 0.96))
        p = prefix + "_tflops.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(p)

    # The gap of each Kokkos tier to the fastest tuned backend: the reference, and the portable tier
    # when it ran (one bar per tier and dtype).
    series = [("reference_over_tuned", "reference")]
    if any(r.get("portable_over_tuned") for r in rows):
        series.append(("portable_over_tuned", "portable"))
    gap_rows = [r for r in rows if any(r.get(k) for k, _ in series)]
    fig, axes = plt.subplots(2, 1, figsize=(max(8, 0.5 * len(rows) + 3), 8), squeeze=False)
    dtypes = sorted({r["dtype"] for r in rows})
    bars_of = [(k, name, dt) for k, name in series for dt in dtypes]
    for ri, causal in enumerate((False, True)):
        ax = axes[ri][0]
        shapes = sorted({tuple(r["shape"]) for r in rows if r["causal"] == causal}, key=lambda s: (s[3], s[2], s[0] * s[1]))
        width = 0.8 / max(1, len(bars_of))
        for bi, (key, name, dtype) in enumerate(bars_of):
            ys = []
            for s in shapes:
                m = [r for r in gap_rows if tuple(r["shape"]) == s and r["dtype"] == dtype and r["causal"] == causal]
                ys.append(m[0].get(key) or float("nan") if m else float("nan"))
            xs = [i + (bi - (len(bars_of) - 1) / 2) * width for i in range(len(shapes))]
            bars = ax.bar(xs, [0 if math.isnan(y) else y for y in ys], width=width, label="%s, %s" % (name, dtype),
                          bottom=0)
            for bar, y in zip(bars, ys):
                if not math.isnan(y):
                    ax.annotate("%.0fx" % y if y >= 10 else "%.1fx" % y, (bar.get_x() + bar.get_width() / 2, y),
                                ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(["%d,%d,%d,%d" % s for s in shapes], fontsize=7, rotation=20)
        finite = [r[k] for r in gap_rows if r["causal"] == causal for k, _ in series if r.get(k)]
        if finite:
            ax.set_yscale("log")
            ax.set_ylim(min(1.0, 0.8 * min(finite)), 2.0 * max(finite))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: "%gx" % y))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylabel("Kokkos tier time / best tuned time")
        ax.set_title("Gap of the Kokkos tiers (%s) to the tuned kernels, %s (log scale)" %
                     (" and ".join(n for _, n in series), "causal" if causal else "non-causal"), fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
        if not gap_rows:
            ax.text(0.5, 0.5, "no case has both a Kokkos tier and a tuned time", transform=ax.transAxes,
                    ha="center", va="center")
    fig.tight_layout()
    p = prefix + "_gap.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    made.append(p)
    return made


def build_meta(contexts, torch_info):
    meta = {"date": datetime.date.today().isoformat()}
    for c in contexts:
        for k in ("device_name", "compute_capability", "sm_count", "clock_mhz", "git_commit", "build_type",
                  "kokkos_version", "flashcore_version"):
            if c.get(k) not in (None, "", "none") and k not in meta:
                meta[k] = c[k]
    for k, v in (torch_info or {}).items():
        if k == "device_name" and "device_name" in meta:
            if v != meta["device_name"]:
                meta.setdefault("warnings", []).append(
                    "torch ran on %s but flashcore_bench reported %s" % (v, meta["device_name"]))
            continue
        meta.setdefault(k, v)
    warn = meta.setdefault("warnings", [])
    for c in contexts:
        if c.get("_truncated"):
            warn.append("%s was truncated (the run was stopped); its missing cases show as '-'" % c["_file"])
        if c.get("build_type") not in (None, "Release", "RelWithDebInfo"):
            warn.append("%s comes from a %s build" % (c["_file"], c.get("build_type")))
    if not warn:
        del meta["warnings"]
    return meta


def report(prefix, cases, ours, torch_res, contexts, torch_info, extra_json=None, plots=True):
    rows, refs, tuned = merge(cases, ours, torch_res, contexts)
    meta = build_meta(contexts, torch_info)
    d = os.path.dirname(prefix)
    if d:
        os.makedirs(d, exist_ok=True)
    md = write_markdown(prefix + ".md", rows, refs, tuned, meta)
    made = []
    if plots:
        try:
            made = write_plots(prefix, rows, refs, tuned)
        except Exception as e:  # plots are a bonus; the table and JSON must come out
            print("sdpa_compare: plots failed: %s" % _first_line(e), file=sys.stderr)
    doc = {"meta": meta, "method": __doc__.split("\n\n")[1], "our_backends": {"reference": refs, "tuned": tuned},
           "torch_paths": [p for p, _ in TORCH_PATHS], "cases": rows,
           "our_contexts": contexts, "plots": [os.path.basename(p) for p in made]}
    if extra_json:
        doc.update(extra_json)
    with open(prefix + ".json", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=False, default=str)
    return md, rows, made


# ------------------------------------------------------------------------------------------
# Self-test (no torch, no GPU)
# ------------------------------------------------------------------------------------------

def _fake_bench_json(path, shapes, truncate=False):
    import random
    rnd = random.Random(7)
    ctx = {"date": "2026-11-21T00:00:00", "host_name": "gpu", "executable": "flashcore_bench",
           "device_name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "sm_count": "132",
           "clock_mhz": "1980", "git_commit": "abc1234", "build_type": "Release", "kokkos_version": "Kokkos 3.4.1",
           "flashcore_version": "0.1.0", "backends": "cuda-flash,cuda-flash-allwarps,cuda-flash-warpspec,"
                                                      "portable-cuda,reference-cuda,reference-host"}
    benches = []
    rates = {"reference-cuda": 8.0, "portable-cuda": 20.0, "cuda-flash": 420.0, "cuda-flash-allwarps": 380.0, "cuda-flash-warpspec": 420.0}
    for shape in shapes:
        for dtype in DTYPES:
            for causal in (False, True):
                for be, rate in rates.items():
                    name = "attn/%s/%s/%s/%s" % (be, dtype, "causal" if causal else "full", shape_str(shape))
                    run = name + "/iterations:1/repeats:10/manual_time"
                    if be == "cuda-flash-warpspec" and shape[3] == 128 and causal:
                        benches.append({"name": run, "run_name": run, "run_type": "iteration", "repetitions": 10,
                                        "error_occurred": True,
                                        "error_message": "output check failed: 16 sampled rows vs fp64: worst ..."})
                        continue
                    if be == "cuda-flash-allwarps" and shape == (1, 16, 16384, 128):
                        continue  # as if declined
                    us = flops(shape, causal) / (rate * 1e12 * (0.6 if shape[2] <= 512 else 1.0)) * 1e6
                    us *= rnd.uniform(0.95, 1.05)
                    for agg, val in (("mean", us * 1.01), ("median", us), ("stddev", us * 0.01), ("cv", 0.01)):
                        benches.append({
                            "name": run + "_" + agg, "run_name": run, "run_type": "aggregate", "repetitions": 10,
                            "threads": 1, "aggregate_name": agg, "aggregate_unit": "percentage" if agg == "cv" else "time",
                            "iterations": 10, "real_time": val, "cpu_time": 5.0, "time_unit": "us",
                            "flop": flops(shape, causal) / (val * 1e-6), "graph": 1.0, "calls_per_replay": 100.0,
                            "sets": 4.0, "label": "%s | NVIDIA H100 80GB HBM3 | graph of 100 calls" % be})
    text = json.dumps({"context": ctx, "benchmarks": benches}, indent=2)
    if truncate:
        text = text[: int(len(text) * 0.6)]
    with open(path, "w") as f:
        f.write(text)
    return len(benches)


def self_test(prefix):
    tmp = tempfile.mkdtemp(prefix="sdpa_selftest_")
    if not prefix:
        prefix = os.path.join(tmp, "selftest")
    shapes = GPU_SHAPES
    full = os.path.join(tmp, "ours.json")
    trunc = os.path.join(tmp, "ours_truncated.json")
    _fake_bench_json(full, shapes)
    _fake_bench_json(trunc, shapes, truncate=True)
    doc, was_trunc = load_bench_json(trunc)
    assert was_trunc and len(doc["benchmarks"]) > 10 and doc["context"].get("device_name"), "truncated JSON repair"
    contexts, ours, extra = parse_ours([full, os.path.join(tmp, "missing.json")])
    assert len(ours) == len(shapes) * 4, "parsed %d cases" % len(ours)
    torch_res = {}
    import random
    rnd = random.Random(3)
    for shape in shapes:
        for dtype in DTYPES:
            for causal in (False, True):
                res = {}
                for p, rate in (("torch-flash", 335.0), ("torch-cudnn", 560.0), ("torch-efficient", 172.0)):
                    if p == "torch-cudnn" and shape == (16, 16, 512, 64) and dtype == "bf16":
                        res[p] = {"error": "not supported: No available kernel. Aborting execution."}
                        continue
                    us = flops(shape, causal) / (rate * 1e12) * 1e6 * rnd.uniform(0.95, 1.05)
                    res[p] = _result(us, shape, dtype, causal)
                    res[p].update({"graph": 1, "calls_per_replay": 10, "sets": 1})
                res["torch-efficient"]["graph"] = 0 if shape[2] == 512 else 1
                torch_res[case_key(shape, dtype, causal)] = res
    cases = [(s, dt, c) for s in shapes for dt in DTYPES for c in (False, True)]
    info = {"device_name": "NVIDIA H100 80GB HBM3", "torch": "2.11.0 (fake)", "cuda": "13.0", "cudnn": 91900}
    md, rows, made = report(prefix, cases, ours, torch_res, contexts, info)
    table_rows = [ln for ln in md.splitlines() if ln.startswith("| ") and ln[2].isdigit()]
    assert len(table_rows) == len(cases), "table has %d rows, want %d" % (len(table_rows), len(cases))
    assert "n/a" in md and "output check failed" in md, "errors must show as n/a with a note"
    with open(prefix + ".json") as f:
        j = json.load(f)
    assert len(j["cases"]) == len(cases)
    r0 = j["cases"][0]
    assert r0["best_ours"] in ("cuda-flash", "cuda-flash-warpspec", "cuda-flash-allwarps")
    assert r0["speedup_vs_flash"] and r0["reference_over_tuned"] > 10
    assert r0["portable_over_tuned"] > 5 and "portable gap" in md, "the portable tier is a column, never 'best'"
    for p in made:
        assert os.path.getsize(p) > 10000, p
    assert len(made) == 2, "plots: %s" % made
    assert device_slug("NVIDIA H100 80GB HBM3") == "h100" and device_slug("NVIDIA H200") == "h200"
    assert device_slug("NVIDIA A100-SXM4-80GB") == "a100" and device_slug("Tesla V100-SXM2-16GB") == "v100"
    print(md)
    print("self-test OK: %s.{md,json} %s" % (prefix, " ".join(made)))
    return 0


# ------------------------------------------------------------------------------------------

def parse_shapes(s):
    out = []
    for part in re.split(r"[;/ ]+", s.strip()):
        if part:
            v = tuple(int(x) for x in re.split(r"[,x]", part))
            if len(v) != 4:
                raise argparse.ArgumentTypeError("shape %r: want B,H,L,D" % part)
            out.append(v)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", action="append", default=[], help="flashcore_bench JSON (repeatable)")
    ap.add_argument("--out-prefix", default="", help="output path prefix (PREFIX.md, .json, _*.png)")
    ap.add_argument("--shapes", type=parse_shapes, default=None, help="B,H,L,D;... (default: GPU list + ours)")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--causal", default="both", choices=["0", "1", "both"])
    ap.add_argument("--paths", default="flash,cudnn,efficient", help="torch paths to time")
    ap.add_argument("--reps", type=int, default=10, help="repetitions (median)")
    ap.add_argument("--rep-ms", type=float, default=10.0, help="GPU time per repetition")
    ap.add_argument("--replay-ms", type=float, default=1.0, help="a graph replay lasts at least this")
    ap.add_argument("--quick", action="store_true", help="5 repetitions of 5 ms")
    ap.add_argument("--no-torch", action="store_true", help="only tabulate ours")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--self-test", action="store_true", help="fabricated inputs, no torch; checks the report code")
    ap.add_argument("--torch-from", default="", help="take torch's numbers from an earlier report (PREFIX.json of the "
                    "same device run) instead of timing torch: remakes the table and plots off the GPU machine")
    a = ap.parse_args(argv)
    if a.self_test:
        return self_test(a.out_prefix)
    if a.quick:
        a.reps, a.rep_ms = min(a.reps, 5), min(a.rep_ms, 5.0)
    if not a.out_prefix:
        ap.error("--out-prefix is required")

    contexts, ours, extra = parse_ours(a.ours)
    dtypes = [x for x in a.dtypes.split(",") if x]
    causals = {"0": [False], "1": [True], "both": [False, True]}[a.causal]
    cases = []
    base = a.shapes if a.shapes is not None else GPU_SHAPES
    for s in base:
        for dt in dtypes:
            for c in causals:
                cases.append((tuple(s), dt, c))
    if a.shapes is None:  # anything else ours measured
        for key, (s, dt, c) in sorted(extra.items(), key=lambda kv: (kv[1][0][3], kv[1][0][2], kv[1][1], kv[1][2])):
            if (s, dt, c) not in cases and dt in dtypes and c in causals:
                cases.append((s, dt, c))

    torch_res, torch_info = {}, {}
    want = [(n, m) for n, m in TORCH_PATHS if n.split("-", 1)[1] in a.paths.split(",")]
    if a.torch_from:
        with open(a.torch_from) as f:
            earlier = json.load(f)
        torch_res = {r["key"]: r["torch"] for r in earlier["cases"]}
        torch_info = {k: v for k, v in earlier.get("meta", {}).items() if k in ("device_name", "torch", "cuda", "cudnn")}
    elif not a.no_torch:
        try:
            timer = TorchTimer(a)
            torch_info = timer.info
        except Exception as e:
            timer = None
            print("sdpa_compare: torch timing unavailable: %s" % _first_line(e), file=sys.stderr)
            torch_info = {"torch": "unavailable: " + _first_line(e)}
        if timer is not None:
            print("sdpa_compare: %s, torch %s, cuDNN %s; %d cases x %d paths" % (
                timer.info["device_name"], timer.info["torch"], timer.info["cudnn"], len(cases), len(want)),
                file=sys.stderr)
            for i, (s, dt, c) in enumerate(cases):
                key = case_key(s, dt, c)
                try:
                    res, nsets = timer.time_case(s, TORCH_DTYPE_OF.get(dt, dt), c, want)
                except Exception as e:
                    res = {n: {"error": _first_line(e)} for n, _ in want}
                    nsets = 0
                torch_res[key] = res
                summary = "  ".join("%s %s" % (n, ("%.1f us %.0f TF/s" % (r["us"], r["tflops"])) if "us" in r else "n/a")
                                    for n, r in res.items())
                print("[%d/%d] %s (%d sets): %s" % (i + 1, len(cases), key, nsets, summary), file=sys.stderr,
                      flush=True)
    md, rows, made = report(a.out_prefix, cases, ours, torch_res, contexts, torch_info, plots=not a.no_plots)
    print("sdpa_compare: wrote %s.md %s.json %s" % (a.out_prefix, a.out_prefix, " ".join(made)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
