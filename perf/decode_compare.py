#!/usr/bin/env python3
"""Decode, paged, mixed-length and varlen rows (issue 11): FlashCore (flashcore_bench JSON of the same
--decode/--paged/--mixed/--varlen flags) next to PyTorch's flash and cuDNN SDPA paths timed here, in
the same run, with achieved bandwidth against the GPU's peak.

  decode_compare.py --ours BENCH.json --decode "B,Hq,Hkv,Lq,Lk,D;..." [--paged 16,64,256]
                    [--mixed "Hq,Hkv,Lq,D:l1,l2,...;..."] [--varlen "H,D:l1,l2,...;..."]
                    [--backend cuda-flash] [--device NAME] [--peak-gbs X] --out PREFIX
                    -> PREFIX.md (table and targets) and PREFIX.json (everything)
  decode_compare.py --self-test [--out PREFIX]    (no torch, no GPU: fabricated inputs, checks the outputs)

The case list, names and byte counts are flashcore_bench's (perf/bench_support.cpp: sequence_cases,
Layout::name, Geometry); give both programs the same flag strings (perf/run_decode.sh does).

FlashCore: the median of flashcore_bench (CUDA graphs of N calls over rotated buffer sets), its
bytes_per_call (Q read, O written, K and V read for the valid keys only) and its flop counter.
torch: perf/dev/torch_sdpa_time.py's time_graph (a CUDA graph of 20 calls, median of replays), each
call on the next of enough input sets to exceed 3x the L2, inside sdpa_kernel(FLASH_ATTENTION) or
sdpa_kernel(CUDNN_ATTENTION), (B, H, L, D) tensors:
  decode       Q (B, Hq, Lq, D), K/V (B, Hkv, Lk, D) with enable_gqa=True (K/V heads repeated to Hq,
               materialized, where a path refuses enable_gqa: said in the row's note); non-causal
               (torch's is_causal is top-left aligned for Lq != Lk: the bottom-right mask of an Lq > 1
               decode hides Lq(Lq-1)/2 of Lq*Lk pairs, so the work is the same to < 0.1 %)
  paged        torch has no paged K/V: the contiguous decode row's torch numbers
  mixed        torch has no per-sequence cache lengths: one SDPA call per sequence (B calls in one
               graph, Lk = its length) for flash and cuDNN; and, column "torch other", the batch padded
               to the longest cache with a boolean mask (memory-efficient path, the one that takes a mask)
  varlen       one causal SDPA call per sequence (B calls in one graph); the fixed-length row of the
               same tokens is one ordinary causal call
ratio = fastest torch time / FlashCore time (> 1: FlashCore faster).
"""
import argparse
import json
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from sdpa_compare import device_slug, load_bench_json  # noqa: E402,F401  (device_slug: run_decode.sh)

TIME_UNIT_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}

# Peak DRAM bandwidth by device name (GB/s), first match of a lower-case substring; the vendor's
# datasheet numbers. --peak-gbs overrides.
PEAKS = [
    ("gh200", 4000.0, "GH200 (96 GB HBM3): 4.0 TB/s"),
    ("h200", 4800.0, "H200 (HBM3e): 4.8 TB/s"),
    ("h100 nvl", 3900.0, "H100 NVL: 3.9 TB/s"),
    ("h100 pcie", 2000.0, "H100 PCIe: 2.0 TB/s"),
    ("h100", 3350.0, "H100 SXM5 (HBM3): 3.35 TB/s"),
    ("a100-sxm4-80gb", 2039.0, "A100 SXM4 80 GB: 2.039 TB/s"),
    ("a100 80gb pcie", 1935.0, "A100 PCIe 80 GB: 1.935 TB/s"),
    ("a100", 1555.0, "A100 40 GB: 1.555 TB/s"),
    ("l40s", 864.0, "L40S: 864 GB/s"),
]

TARGET_PEAK = 0.90   # decode rows: >= 90 % of the peak
TARGET_PAGED = 1.05  # paged time <= 1.05 x contiguous
TARGET_VARLEN = 0.95  # varlen TF/s >= 0.95 x fixed


def peak_for(name, override=None):
    """(GB/s, source) for a device name; (None, why) when unknown."""
    if override:
        return float(override), "given (--peak-gbs)"
    n = (name or "").lower()
    for key, gbs, what in PEAKS:
        if key in n:
            return gbs, what
    return None, "unknown device %r: give --peak-gbs" % name


# ------------------------------------------------------------------------------------------
# The cases (mirror of flashcore_bench's sequence_cases)
# ------------------------------------------------------------------------------------------

def parse_lengths(text):
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if "x" in item:
            length, n = item.split("x")
            out += [int(length)] * int(n)
        else:
            out.append(int(item))
    return out


def _split(spec):
    return [s.strip() for s in (spec or "").replace("/", ";").split(";") if s.strip()]


def shape_name(shape, six=True):
    b, hq, hkv, lq, lk, d = shape
    if six:
        return "B%d_Hq%d_Hkv%d_Lq%d_Lk%d_D%d" % shape
    return "B%d_H%d_L%d_D%d" % (b, hq, lk, d)


def build_cases(decode="", paged="", mixed="", varlen=""):
    """The rows in flashcore_bench's order: dicts with kind (decode, paged, mixed, mixed-paged,
    varlen, fixed), shape (B, Hq, Hkv, Lq, Lk, D), six (name form), layout, page, lens_q, lens_k,
    base (the contiguous row's key for a paged row, the varlen row's key for its fixed row)."""
    pages = [int(x) for x in (paged or "").split(",") if x.strip()]
    rows, seen = [], set()

    def add(r):
        key = shape_name(r["shape"], r["six"]) + "/" + r["layout"]
        if key in seen:
            return None
        seen.add(key)
        r["key"] = key
        rows.append(r)
        return key

    def with_pages(r):
        base = add(r)
        for p in pages:
            q = dict(r, page=p, kind=("mixed-paged" if r["kind"] == "mixed" else "paged"),
                     layout=(r["layout"] + "+" if r["kind"] == "mixed" else "") + "paged:%d" % p, base=base)
            add(q)

    for s in _split(decode):
        b, hq, hkv, lq, lk, d = (int(x) for x in s.replace("x", ",").split(","))
        with_pages({"kind": "decode", "shape": (b, hq, hkv, lq, lk, d), "six": True, "layout": "contiguous",
                    "page": 0, "lens_q": [lq] * b, "lens_k": [lk] * b, "base": None})
    for s in _split(mixed):
        head, _, tail = s.partition(":")
        hq, hkv, lq, d = (int(x) for x in head.split(","))
        lens = parse_lengths(tail)
        b = len(lens)
        with_pages({"kind": "mixed", "shape": (b, hq, hkv, lq, max(1, max(lens)), d), "six": True,
                    "layout": "mixed:T%d" % sum(lens), "page": 0, "lens_q": [lq] * b, "lens_k": lens,
                    "base": None})
    for s in _split(varlen):
        head, _, tail = s.partition(":")
        h, d = (int(x) for x in head.split(","))
        lens = parse_lengths(tail)
        b, total = len(lens), sum(lens)
        lmax = max(1, max(lens))
        vkey = add({"kind": "varlen", "shape": (b, h, h, lmax, lmax, d), "six": False,
                    "layout": "varlen:T%d" % total, "page": 0, "lens_q": lens, "lens_k": lens, "base": None})
        lf = max(1, (total + b // 2) // b)
        add({"kind": "fixed", "shape": (b, h, h, lf, lf, d), "six": False, "layout": "contiguous", "page": 0,
             "lens_q": [lf] * b, "lens_k": [lf] * b, "base": vkey})
    return rows


def row_bytes(r, es=2):
    """Bytes of the row as flashcore_bench counts them (Geometry::bytes)."""
    b, hq, hkv, lq, lk, d = r["shape"]
    return es * (2.0 * sum(r["lens_q"]) * hq * d + 2.0 * sum(r["lens_k"]) * hkv * d)


def row_flops(r, causal):
    """FLOPs as flashcore_bench counts them (Geometry::flops, no window)."""
    b, hq, hkv, lq, lk, d = r["shape"]
    total = 0.0
    for a, k in zip(r["lens_q"], r["lens_k"]):
        if a <= 0 or k <= 0:
            continue
        if not causal:
            pairs = a * k
        elif a == k:
            pairs = a * k / 2.0
        else:
            pairs = sum(min(k, max(0, i + k - a + 1)) for i in range(a))
        total += 4.0 * hq * d * pairs
    return total


# ------------------------------------------------------------------------------------------
# FlashCore's numbers
# ------------------------------------------------------------------------------------------

def load_ours(paths):
    """-> (contexts, {name without the Google Benchmark suffixes: entry}); an entry has us, gbps,
    tflops, bytes_per_call, graph, sets, label, or error."""
    contexts, out = [], {}
    for path in paths:
        if not path or not os.path.exists(path):
            print("decode_compare: %s does not exist; skipped" % path, file=sys.stderr)
            continue
        doc, truncated = load_bench_json(path)
        if truncated:
            print("decode_compare: %s was truncated (run killed?); read %d entries" % (path, len(doc["benchmarks"])),
                  file=sys.stderr)
        contexts.append(doc.get("context", {}))
        for b in doc["benchmarks"]:
            name = (b.get("run_name") or b.get("name", "")).split("/min_time:")[0].split("/iterations:")[0]
            name = name.split("/repeats:")[0].split("/manual_time")[0].split("/real_time")[0]
            if b.get("error_occurred"):
                out.setdefault(name, {"error": str(b.get("error_message", "error"))})
                continue
            agg = b.get("aggregate_name", "")
            if b.get("run_type") == "aggregate" and agg != "median":
                continue
            if b.get("run_type") != "aggregate" and "us" in out.get(name, {}):
                continue
            us = float(b["real_time"]) * TIME_UNIT_US.get(b.get("time_unit", "ns"), 1e-3)
            out[name] = {"us": us, "gbps": b.get("bytes", 0.0) / 1e9, "tflops": b.get("flop", 0.0) / 1e12,
                         "bytes_per_call": b.get("bytes_per_call"), "graph": b.get("graph"), "sets": b.get("sets"),
                         "label": b.get("label", "")}
    return contexts, out


# ------------------------------------------------------------------------------------------
# torch
# ------------------------------------------------------------------------------------------

class Torch:
    def __init__(self):
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        sys.path.insert(0, os.path.join(HERE, "dev"))
        from torch_sdpa_time import time_graph  # (median us, iqr us) of a CUDA graph of 20 calls
        self.torch, self.F, self.sdpa_kernel, self.time_graph = torch, F, sdpa_kernel, time_graph
        self.paths = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]
        self.efficient = SDPBackend.EFFICIENT_ATTENTION
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        props = torch.cuda.get_device_properties(0)
        self.l2 = int(getattr(props, "L2_cache_size", 0) or 50 * 2 ** 20)
        self.info = {"device_name": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
                     "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
                     "l2_bytes": self.l2}
        self.gen = torch.Generator(device="cuda")
        self.gen.manual_seed(1234)

    def sets_for(self, nbytes):
        n = max(1, min(16, int(math.ceil(3.0 * self.l2 / max(nbytes, 1.0)))))
        free, _ = self.torch.cuda.mem_get_info()
        while n > 1 and n * nbytes > 0.3 * free:
            n -= 1
        return n

    def rand(self, *shape, uniform=False):
        t = self.torch
        x = t.rand(*shape, device="cuda", generator=self.gen) * 2 - 1 if uniform else \
            t.randn(*shape, device="cuda", generator=self.gen)
        return x.to(t.float16)

    def timed(self, make_call, nsets, backend):
        """time_graph of calls cycling over the input sets, inside sdpa_kernel(backend); make_call(j)
        runs the work on set j. -> {us, how} or {error}."""
        state = {"i": 0}

        def fn():
            j = state["i"] % nsets
            state["i"] += 1
            with self.sdpa_kernel(backend):
                return make_call(j)
        try:
            us, _ = self.time_graph(fn)
            return {"us": us, "sets": nsets}
        except Exception as ex:  # the path refuses the case
            return {"error": "%s: %s" % (type(ex).__name__, (str(ex).strip().splitlines() or [""])[0][:160])}
        finally:
            self.torch.cuda.synchronize()

    def sdpa(self, q, k, v, causal=False, mask=None, gqa=True):
        g = q.shape[1] // k.shape[1]
        if g == 1:
            return self.F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        if gqa:
            return self.F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=True)
        return self.F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

    def with_gqa_fallback(self, sets, backend, call):
        """Times call(set, gqa=True); where the path refuses enable_gqa (or the torch has none), again
        with K/V heads repeated (materialized) to Hq."""
        r = self.timed(lambda j: call(sets[j], True), len(sets), backend)
        if "us" in r:
            r["how"] = "enable_gqa" if sets[0]["g"] > 1 else ""
            return r
        if sets[0]["g"] == 1:
            return r
        first = r["error"]
        expanded = [dict(s, k=[x.repeat_interleave(s["g"], dim=1) for x in s["k"]],
                         v=[x.repeat_interleave(s["g"], dim=1) for x in s["v"]]) for s in sets]
        r = self.timed(lambda j: call(expanded[j], False), len(expanded), backend)
        if "us" in r:
            r["how"] = "K/V heads repeated to Hq (enable_gqa refused: %s)" % first[:80]
        del expanded
        self.torch.cuda.empty_cache()
        return r

    def first_refused(self, s, backend, causal):
        """' (first sequence refused: Lq a, Lk b)' for a per-sequence set a path failed on, else ''."""
        for q, k, v in zip(s["q"], s["k"], s["v"]):
            try:
                with self.sdpa_kernel(backend):
                    g = q.shape[1] // k.shape[1]
                    self.sdpa(q, k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1), causal, gqa=False)
            except Exception:  # this one
                return " (first sequence refused, with K/V repeated: Lq %d, Lk %d)" % (q.shape[2], k.shape[2])
        return ""

    def batch_sets(self, r, per_sequence):
        """Input sets of a row: per sequence (q (1,Hq,Lq_b,D), k/v (1,Hkv,Lk_b,D)) or batched
        (B, ., max L, D) with the lengths for a mask."""
        b, hq, hkv, lq, lk, d = r["shape"]
        nbytes = row_bytes(r)
        nsets = self.sets_for(nbytes if per_sequence else 4.0 * (b * lq * hq * d + b * lk * hkv * d))
        sets = []
        for _ in range(nsets):
            if per_sequence:
                seqs = [(a, k) for a, k in zip(r["lens_q"], r["lens_k"]) if a > 0 and k > 0]
                sets.append({"g": hq // hkv, "q": [self.rand(1, hq, a, d) for a, _ in seqs],
                             "k": [self.rand(1, hkv, k, d) for _, k in seqs],
                             "v": [self.rand(1, hkv, k, d, uniform=True) for _, k in seqs]})
            else:
                sets.append({"g": hq // hkv, "q": [self.rand(b, hq, lq, d)], "k": [self.rand(b, hkv, lk, d)],
                             "v": [self.rand(b, hkv, lk, d, uniform=True)]})
        return sets

    def row(self, r, causal):
        """{flash: {...}, cudnn: {...}, other: {...}?, method: str} for one row."""
        torch = self.torch
        b, hq, hkv, lq, lk, d = r["shape"]
        out = {}
        if r["kind"] in ("decode", "fixed"):
            sets = self.batch_sets(r, per_sequence=False)
            square_causal = causal and lq == lk
            for name, be in self.paths:
                out[name] = self.with_gqa_fallback(
                    sets, be, lambda s, gqa: self.sdpa(s["q"][0], s["k"][0], s["v"][0], square_causal, gqa=gqa))
            out["method"] = "one SDPA call, (B,H,L,D) contiguous" + (
                ", non-causal for Lq > 1 (torch's is_causal is top-left aligned)" if causal and 1 < lq < lk else "")
        elif r["kind"] in ("mixed", "varlen"):
            sets = self.batch_sets(r, per_sequence=True)
            seq_causal = causal and r["kind"] == "varlen"

            def per_seq(s, gqa):
                return [self.sdpa(q, k, v, seq_causal, gqa=gqa) for q, k, v in zip(s["q"], s["k"], s["v"])]
            for name, be in self.paths:
                out[name] = self.with_gqa_fallback(sets, be, per_seq)
                if "error" in out[name]:
                    out[name]["error"] += self.first_refused(sets[0], be, seq_causal)
            out["method"] = "one SDPA call per sequence (%d calls)" % len(sets[0]["q"]) + (
                ", non-causal (Lq != Lk: torch's is_causal is top-left aligned)" if causal and r["kind"] == "mixed"
                and lq > 1 else "")
            sets = None
            torch.cuda.empty_cache()
            if r["kind"] == "mixed":  # padded to the longest cache, boolean mask: the efficient path
                sets = self.batch_sets(r, per_sequence=False)
                i = torch.arange(lq, device="cuda").view(1, 1, lq, 1)
                j = torch.arange(lk, device="cuda").view(1, 1, 1, lk)
                lens = torch.tensor(r["lens_k"], device="cuda").view(b, 1, 1, 1)
                visible = j < lens
                if causal:
                    visible = visible & (j <= i + lens - lq)  # bottom-right, per sequence
                out["other"] = self.with_gqa_fallback(
                    sets, self.efficient, lambda s, gqa: self.sdpa(s["q"][0], s["k"][0], s["v"][0], mask=visible,
                                                                    gqa=gqa))
                out["other"]["what"] = "padded to Lk=%d, boolean mask, memory-efficient SDPA" % lk
        sets = None
        torch.cuda.empty_cache()
        return out


# ------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------

def _us(e):
    return e.get("us") if isinstance(e, dict) else None


def declined_reasons(contexts):
    """{benchmark name: "backend: reason"} from the 'declined' context flashcore_bench writes."""
    out = {}
    for c in contexts:
        for part in (c.get("declined") or "").split(" ;; "):
            reason, _, names = part.rpartition(" [")
            for n in names.rstrip("]").split():
                out[n] = reason
    return out


def merge(rows, ours, torch_rows, backend, dtype, causal, peak, declined=None):
    mode = "causal" if causal else "full"
    out = []
    for r in rows:
        name = "attn/%s/%s/%s/%s" % (backend, dtype, mode, r["key"])
        why = (declined or {}).get(name)
        e = ours.get(name, {"error": ("declined by " + why) if why else
                            "not in the JSON (not run, or filtered)"})
        us = _us(e)
        t = torch_rows.get(r["base"] if r["kind"] in ("paged", "mixed-paged") else r["key"], {})
        nbytes = e.get("bytes_per_call") or row_bytes(r)
        gbps = nbytes / us * 1e-3 if us else None
        tflops = row_flops(r, causal) / us * 1e-6 if us else None
        best = min([x for x in (_us(t.get("flash")), _us(t.get("cudnn")), _us(t.get("other"))) if x], default=None)
        out.append({
            "name": name, "key": r["key"], "base": r["base"], "kind": r["kind"], "shape": list(r["shape"]),
            "layout": r["layout"], "page": r["page"],
            "lens_k": r["lens_k"] if r["kind"] in ("mixed", "mixed-paged", "varlen") else None,
            "bytes_per_call": nbytes, "flop_per_call": row_flops(r, causal),
            "flashcore": e, "us": us, "gbps": gbps, "pct_peak": (gbps / peak * 100.0) if gbps and peak else None,
            "tflops": tflops, "torch": t, "torch_best_us": best,
            "ratio": (best / us) if best and us else None,
            "torch_gbps": {k: nbytes / _us(v) * 1e-3 for k, v in t.items() if _us(v)},
            "torch_from": ("the contiguous row (torch has no paged K/V)" if r["kind"] in ("paged", "mixed-paged")
                           else "this row"),
        })
    return out


def targets(merged):
    by_key = {m["key"]: m for m in merged}
    res = {"decode_peak": [], "paged_vs_contiguous": [], "varlen_vs_fixed": []}
    for m in merged:
        if m["kind"] in ("decode", "paged", "mixed", "mixed-paged"):
            p = m["pct_peak"]
            res["decode_peak"].append({"row": m["key"], "pct_peak": p,
                                       "met": None if p is None else p >= TARGET_PEAK * 100})
        if m["kind"] in ("paged", "mixed-paged"):
            c = by_key.get(m["base"])
            ratio = m["us"] / c["us"] if c and c["us"] and m["us"] else None
            res["paged_vs_contiguous"].append({"row": m["key"], "vs": c["key"] if c else None, "time_ratio": ratio,
                                               "met": None if ratio is None else ratio <= TARGET_PAGED})
    for v in (m for m in merged if m["kind"] == "varlen"):
        b, h, _, _, _, d = v["shape"]
        lf = max(1, (sum(v["lens_k"]) + b // 2) // b)  # the fixed row of the same tokens (build_cases)
        f = by_key.get(shape_name((b, h, h, lf, lf, d), False) + "/contiguous")
        tf = v["tflops"] / f["tflops"] if f and v["tflops"] and f["tflops"] else None
        res["varlen_vs_fixed"].append({"row": v["key"], "vs": f["key"] if f else None, "tflops_ratio": tf,
                                       "time_ratio": v["us"] / f["us"] if f and v["us"] and f["us"] else None,
                                       "met": None if tf is None else tf >= TARGET_VARLEN})
    return res


def _f(x, fmt):
    return fmt % x if x is not None else "n/a"


def _torch_cell(e):
    if not isinstance(e, dict) or not e:
        return "-"
    if "us" in e:
        return "%.1f" % e["us"] + ("ᵉ" if "repeated" in e.get("how", "") else "")
    return "n/a"


def _met(x):
    return "n/a" if x is None else ("yes" if x else "**no**")


def write_report(prefix, merged, tg, meta):
    lines = ["# Decode, paged, mixed and varlen: %s against PyTorch, %s" % (meta["backend"], meta["device"]), ""]
    lines.append("%s, %s. FlashCore: flashcore_bench median (CUDA graphs of N calls over rotated buffer sets); "
                 "GB/s = (Q read + O written + K and V read for the valid keys) / time; peak %s (%s). torch %s: "
                 "median of CUDA-graph replays of 20 calls in the same run (perf/dev/torch_sdpa_time.py). "
                 "ratio = fastest torch / FlashCore (> 1: FlashCore faster). Shapes (B, Hq, Hkv, Lq, Lk, D); Lk of "
                 "mixed and varlen rows is the longest sequence."
                 % (meta["dtype"], "causal (bottom-right)" if meta["causal"] else "non-causal",
                    _f(meta["peak_gbs"], "%.0f GB/s"), meta["peak_source"], meta.get("torch_version", "n/a")))
    lines += ["", "| shape | layout | FlashCore us | GB/s | % of peak | TF/s | torch flash us | torch cuDNN us | "
              "torch other us | ratio |", "|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for m in merged:
        e = m["flashcore"]
        if "error" in e:
            notes.append("%s: %s" % (m["name"], e["error"][:300]))
        t = m["torch"]
        for k in ("flash", "cudnn", "other"):
            if m["kind"] not in ("paged", "mixed-paged") and isinstance(t.get(k), dict) and "error" in t[k]:
                notes.append("%s torch %s: %s" % (m["name"], k, t[k]["error"]))
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            ",".join(str(x) for x in m["shape"]), m["layout"], _f(m["us"], "%.1f"), _f(m["gbps"], "%.0f"),
            _f(m["pct_peak"], "%.1f"), _f(m["tflops"], "%.1f"), _torch_cell(t.get("flash")),
            _torch_cell(t.get("cudnn")), _torch_cell(t.get("other")), _f(m["ratio"], "%.2f")))
    lines += ["", "torch per row: decode and fixed rows one SDPA call; paged rows show their contiguous row's torch "
              "numbers (torch has no paged K/V); mixed rows one call per sequence (flash, cuDNN) and, as 'other', "
              "the batch padded to the longest cache with a boolean mask on the memory-efficient path; varlen rows "
              "one causal call per sequence. ᵉ: K/V heads repeated to Hq (the path refused enable_gqa)."]
    methods = sorted({"%s: %s" % (m["kind"], m["torch"].get("method")) for m in merged
                      if m["torch"].get("method") and m["kind"] not in ("paged", "mixed-paged")})
    if methods:
        lines += [""] + ["- " + x for x in methods]
    seqs = [m for m in merged if m["lens_k"] and m["kind"] in ("mixed", "varlen")]
    if seqs:
        lines += ["", "Sequence lengths:"]
        for m in seqs:
            lines.append("- %s: %s" % (m["layout"], ",".join(str(x) for x in m["lens_k"])))
    lines += ["", "## Targets (displayed, not asserted)", "",
              "| target | row | value | met |", "|---|---|---|---|"]
    for x in tg["decode_peak"]:
        lines.append("| decode >= %.0f %% of peak | %s | %s | %s |" % (TARGET_PEAK * 100, x["row"],
                                                                       _f(x["pct_peak"], "%.1f %%"), _met(x["met"])))
    for x in tg["paged_vs_contiguous"]:
        lines.append("| paged <= %.2f x contiguous time | %s | %s | %s |" % (TARGET_PAGED, x["row"],
                                                                           _f(x["time_ratio"], "%.3f x"),
                                                                           _met(x["met"])))
    for x in tg["varlen_vs_fixed"]:
        lines.append("| varlen >= %.2f x fixed TF/s | %s (vs %s) | %s TF/s ratio, %s time ratio | %s |" % (
            TARGET_VARLEN, x["row"], x["vs"], _f(x["tflops_ratio"], "%.3f"), _f(x["time_ratio"], "%.3f"),
            _met(x["met"])))
    lines.append("")
    lines.append("varlen vs fixed compares throughput (TF/s): sequences of mixed lengths have more causal work than "
                 "equal ones of the same total; a varlen batch of equal lengths compares times directly.")
    if notes:
        lines += ["", "Notes:", ""] + ["- " + n for n in notes]
    with open(prefix + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(prefix + ".json", "w") as f:
        json.dump({"meta": meta, "rows": merged, "targets": tg}, f, indent=1)
    return "\n".join(lines)


def run(a, torch_results=None):
    rows = build_cases(a.decode, a.paged, a.mixed, a.varlen)
    if not rows:
        raise SystemExit("decode_compare: no rows (give --decode, --mixed or --varlen)")
    contexts, ours = load_ours(a.ours)
    device = a.device or next((c.get("device_name") for c in contexts if c.get("device_name")), "") or "unknown"
    causal = a.causal != 0
    torch_info = {}
    if torch_results is None:
        torch_results = {}
        if not a.no_torch:
            try:
                t = Torch()
                torch_info = t.info
                if not a.device:
                    device = device if device != "unknown" else t.info["device_name"]
                for r in rows:
                    if r["kind"] in ("paged", "mixed-paged"):
                        continue  # the contiguous row's numbers
                    torch_results[r["key"]] = t.row(r, causal)
                    tr = torch_results[r["key"]]
                    print("torch %s: %s" % (r["key"], {k: (round(v["us"], 2) if "us" in v else v.get("error"))
                                                       for k, v in tr.items() if isinstance(v, dict)}), flush=True)
            except Exception as ex:  # no torch, no GPU: our numbers alone
                print("decode_compare: torch not timed: %s: %s" % (type(ex).__name__, ex), file=sys.stderr)
                torch_info = {"error": "%s: %s" % (type(ex).__name__, ex)}
    peak, source = peak_for(device, a.peak_gbs)
    merged = merge(rows, ours, torch_results, a.backend, a.dtype, causal, peak, declined_reasons(contexts))
    tg = targets(merged)
    meta = {"device": device, "peak_gbs": peak, "peak_source": source, "backend": a.backend, "dtype": a.dtype,
            "causal": causal, "flags": {"decode": a.decode, "paged": a.paged, "mixed": a.mixed, "varlen": a.varlen},
            "torch": torch_info, "torch_version": torch_info.get("torch", "n/a"),
            "ours_context": contexts[0] if contexts else {}}
    return write_report(a.out, merged, tg, meta)


def args_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", nargs="*", default=[], help="flashcore_bench JSON file(s)")
    ap.add_argument("--decode", default="")
    ap.add_argument("--paged", default="")
    ap.add_argument("--mixed", default="")
    ap.add_argument("--varlen", default="")
    ap.add_argument("--backend", default="cuda-flash")
    ap.add_argument("--dtype", default="fp16")
    ap.add_argument("--causal", type=int, default=1, help="1 (default, as flashcore_bench) or 0 (its --causal=0)")
    ap.add_argument("--device", default="", help="device name (default: our JSON's, else torch's)")
    ap.add_argument("--peak-gbs", type=float, default=None, help="peak bandwidth in GB/s (default: by device name)")
    ap.add_argument("--out", default="")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    return ap


# ------------------------------------------------------------------------------------------
# Self-test
# ------------------------------------------------------------------------------------------

def self_test(prefix):
    """Fabricated flashcore_bench JSON and torch numbers through merge, targets and the report."""
    d = tempfile.mkdtemp(prefix="decode_compare_")
    prefix = prefix or os.path.join(d, "selftest")
    specs = {"decode": "8,32,8,1,8192,128;8,32,8,4,8192,128", "paged": "16,256", "mixed": "32,8,1,128:1,100,8192",
             "varlen": "16,128:2048x8;16,128:4096,1024,3072,512,2560,1536,2048,1536"}
    rows = build_cases(**specs)
    kinds = [r["kind"] for r in rows]
    assert kinds.count("fixed") == 1, kinds  # two varlen batches of 16384 tokens share one fixed row
    names = [r["key"] for r in rows]
    want = ["B8_Hq32_Hkv8_Lq1_Lk8192_D128/contiguous", "B8_Hq32_Hkv8_Lq1_Lk8192_D128/paged:16",
            "B8_Hq32_Hkv8_Lq1_Lk8192_D128/paged:256", "B3_Hq32_Hkv8_Lq1_Lk8192_D128/mixed:T8293",
            "B3_Hq32_Hkv8_Lq1_Lk8192_D128/mixed:T8293+paged:16", "B8_H16_L2048_D128/varlen:T16384",
            "B8_H16_L2048_D128/contiguous", "B8_H16_L4096_D128/varlen:T16384"]
    for w in want:
        assert w in names, (w, names)
    assert abs(row_bytes(rows[0]) - 2 * (2 * 8 * 32 * 128 + 2 * 8 * 8192 * 8 * 128)) < 1, row_bytes(rows[0])
    assert row_flops(rows[names.index("B8_H16_L2048_D128/varlen:T16384")], True) == \
        row_flops(rows[names.index("B8_H16_L2048_D128/contiguous")], True)
    declined_name = "attn/cuda-flash/fp16/causal/B8_H16_L4096_D128/varlen:T16384"
    bench = {"context": {"device_name": "NVIDIA H100 80GB HBM3",
                         "declined": "cuda-flash: no (x) [a/b] ;; cuda-flash: too long [x %s]" % declined_name},
             "benchmarks": []}
    for i, r in enumerate(rows):
        name = "attn/cuda-flash/fp16/causal/%s" % r["key"]
        if name == declined_name:
            continue
        if i == 2:
            bench["benchmarks"].append({"name": name + "/iterations:1/repeats:10/manual_time", "run_name": name +
                                        "/iterations:1/repeats:10/manual_time", "run_type": "aggregate",
                                        "error_occurred": True, "error_message": "output check failed: x"})
            continue
        us = 100.0 + i
        for agg, f in (("mean", 1.01), ("median", 1.0), ("stddev", 0.01)):
            bench["benchmarks"].append({
                "name": name + "/iterations:1/repeats:10/manual_time_" + agg,
                "run_name": name + "/iterations:1/repeats:10/manual_time", "run_type": "aggregate",
                "aggregate_name": agg, "real_time": us * f, "time_unit": "us",
                "bytes": row_bytes(r) / (us * 1e-6), "flop": row_flops(r, True) / (us * 1e-6),
                "bytes_per_call": row_bytes(r), "graph": 1, "sets": 2, "label": "x"})
    jpath = os.path.join(d, "bench.json")
    with open(jpath, "w") as f:
        json.dump(bench, f)
    fake = {}
    for r in rows:
        if r["kind"] in ("paged", "mixed-paged"):
            continue
        fake[r["key"]] = {"flash": {"us": 120.0, "how": "enable_gqa"}, "cudnn": {"error": "RuntimeError: no"},
                          "method": "fake"}
        if r["kind"] == "mixed":
            fake[r["key"]]["other"] = {"us": 90.0, "how": "K/V heads repeated to Hq (x)"}
    a = args_parser().parse_args(["--ours", jpath, "--out", prefix] +
                                 sum([["--" + k, v] for k, v in specs.items()], []))
    text = run(a, torch_results=fake)
    doc = json.load(open(prefix + ".json"))
    assert doc["meta"]["peak_gbs"] == 3350.0, doc["meta"]
    r0 = doc["rows"][0]
    assert abs(r0["gbps"] - row_bytes(rows[0]) / 100.0 * 1e-3) < 1e-6 and abs(r0["ratio"] - 1.2) < 1e-9, r0
    assert doc["rows"][1]["torch"]["flash"]["us"] == 120.0  # paged: the contiguous row's torch numbers
    assert doc["rows"][2]["us"] is None and "error" in doc["rows"][2]["flashcore"]
    mixed = next(m for m in doc["rows"] if m["kind"] == "mixed")
    assert abs(mixed["ratio"] - 90.0 / mixed["us"]) < 1e-9, mixed
    assert len(doc["targets"]["paged_vs_contiguous"]) == 6 and len(doc["targets"]["varlen_vs_fixed"]) == 2
    vf = doc["targets"]["varlen_vs_fixed"]
    assert all(x["vs"] == "B8_H16_L2048_D128/contiguous" for x in vf), vf
    pv = doc["targets"]["paged_vs_contiguous"][0]
    assert abs(pv["time_ratio"] - 101.0 / 100.0) < 1e-9 and pv["met"], pv
    assert "%s: declined by cuda-flash: too long" % declined_name in text, text
    assert "output check failed" in text and "| 8,32,8,1,8192,128 | contiguous | 100.0 |" in text, text
    assert peak_for("NVIDIA H200")[0] == 4800.0 and peak_for("NVIDIA GH200 480GB")[0] == 4000.0
    assert peak_for("NVIDIA H100 PCIe")[0] == 2000.0 and peak_for("Foo")[0] is None
    print(text)
    print("decode_compare self-test: OK (%s.md, %s.json)" % (prefix, prefix))


def main(argv=None):
    a = args_parser().parse_args(argv)
    if a.self_test:
        return self_test(a.out)
    if not a.out:
        raise SystemExit("decode_compare: --out PREFIX is required")
    print(run(a))


if __name__ == "__main__":
    main()
