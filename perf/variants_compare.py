#!/usr/bin/env python3
"""The attention variants side by side: FlashCore's tuned path (flashcore_bench --variants JSON) and
what PyTorch offers for the same problem, timed here in the same run.

torch paths per variant (fp16, (B, H, L, D) tensors, bottom-right aligned masks as FlashCore's):
  none            SDPA FLASH_ATTENTION and CUDNN_ATTENTION (causal flag)
  window, alibi   SDPA with an explicit attn_mask (boolean window / additive ALiBi bias): torch picks
                  the memory-efficient kernel ("efficient"), the only fused path that takes a mask
  softcap, sinks  no fused path: plain torch ops ("math": Q·Kᵀ, tanh cap, mask, fp32 softmax with the
                  sink as an extra column, ·V), what a model written in torch runs
Timing: perf/dev/torch_sdpa_time.py's (CUDA graph of 20 calls, median of replays).

  variants_compare.py --ours BENCH.json --shapes B,H,L,D;... --variants "none;window:255,0;..."
                      --causal 1 --out PREFIX     writes PREFIX.md and PREFIX.json
"""
import argparse
import json
import math
import sys

def parse_variant(text):
    v = {"window": None, "softcap": 0.0, "alibi": False, "sink": None}
    for part in text.split("+"):
        key, _, arg = part.partition(":")
        if key == "none":
            continue
        if key == "window":
            left, right = (int(x) for x in arg.split(","))
            v["window"] = (left, right)
        elif key == "softcap":
            v["softcap"] = float(arg)
        elif key == "alibi":
            v["alibi"] = True
        elif key == "sinks":
            v["sink"] = float(arg)
        else:
            raise SystemExit(f"bad variant part {part!r}")
    return v


def variant_name(v):
    """The suffix flashcore_bench gives the variant (bench_support.cpp, Variant::name)."""
    parts = []
    if v["window"] is not None:
        parts.append(f"win{v['window'][0]}_{v['window'][1]}")
    if v["softcap"] > 0:
        parts.append("cap%g" % v["softcap"])
    if v["alibi"]:
        parts.append("alibi")
    if v["sink"] is not None:
        parts.append("sinks%g" % v["sink"])
    return "+".join(parts)


def visible_pairs(L, causal, window):
    """(query, key) pairs a square problem shows (flops of a windowed problem, as Problem::flops)."""
    left, right = window if window is not None else (-1, -1)
    if causal:
        right = 0
    pairs = 0
    for i in range(L):
        lo = 0 if left < 0 else max(0, i - left)
        hi = L if right < 0 else min(L, i + right + 1)
        pairs += max(0, hi - lo)
    return pairs


def torch_times(shape, causal, v):
    """{path: microseconds or 'unavailable: why'} for one shape and variant."""
    import os
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "dev"))
    from torch_sdpa_time import time_graph  # (median us, iqr us)

    B, H, L, D = shape
    dev, dt = "cuda", torch.float16
    q, k, v_ = (torch.randn(B, H, L, D, device=dev, dtype=dt) for _ in range(3))
    scale = 1.0 / math.sqrt(D)
    i = torch.arange(L, device=dev).view(L, 1)
    j = torch.arange(L, device=dev).view(1, L)
    left, right = v["window"] if v["window"] is not None else (-1, -1)
    if causal:
        right = 0
    visible = torch.ones(L, L, dtype=torch.bool, device=dev)
    if left >= 0:
        visible &= j >= i - left
    if right >= 0:
        visible &= j <= i + right
    out = {}

    def attempt(name, fn):
        try:
            out[name] = time_graph(fn)[0]
        except Exception as ex:  # a path that refuses the case
            out[name] = f"unavailable ({type(ex).__name__}: {str(ex).splitlines()[0][:100]})"
        torch.cuda.empty_cache()

    plain = v["window"] is None and not v["alibi"] and v["softcap"] == 0 and v["sink"] is None
    if plain:
        for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            def run(be=be):
                with sdpa_kernel(be):
                    return F.scaled_dot_product_attention(q, k, v_, is_causal=bool(causal))
            attempt(name, run)
        return out
    if v["softcap"] == 0 and v["sink"] is None:
        # window and/or ALiBi as an attn_mask (additive fp16 bias: -inf outside the window)
        bias = torch.zeros(L, L, device=dev, dtype=torch.float32)
        if v["alibi"]:
            slopes = torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)], device=dev).view(H, 1, 1)
            bias = -slopes * (j - i).abs().float()
        else:
            bias = bias.view(1, L, L)
        bias = bias.masked_fill(~visible, float("-inf")).to(dt).view(1, -1, L, L).expand(B, bias.shape[0], L, L)
        for name, be in (("efficient", SDPBackend.EFFICIENT_ATTENTION),):
            def run(be=be):
                with sdpa_kernel(be):
                    return F.scaled_dot_product_attention(q, k, v_, attn_mask=bias)
            attempt(name, run)
        return out
    # softcap / sinks (and anything combined with them): torch ops
    slopes = (torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)], device=dev).view(1, H, 1, 1)
              if v["alibi"] else None)
    dist = (j - i).abs().float() if v["alibi"] else None

    def math_path():
        s = torch.matmul(q, k.transpose(-1, -2)).float() * scale
        if v["softcap"] > 0:
            s = v["softcap"] * torch.tanh(s / v["softcap"])
        if slopes is not None:
            s = s - slopes * dist
        s = s.masked_fill(~visible, float("-inf"))
        if v["sink"] is not None:
            s = torch.cat([s, torch.full((B, H, L, 1), v["sink"], device=dev)], dim=-1)
            p = torch.softmax(s, dim=-1)[..., :L]
        else:
            p = torch.softmax(s, dim=-1)
        return torch.matmul(p.to(dt), v_)
    attempt("math", math_path)
    return out


def load_ours(paths):
    """name -> median microseconds (real time, aggregate 'median' or the single run)."""
    out = {}
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as ex:
            print(f"variants_compare: {path}: {ex}", file=sys.stderr)
            continue
        for b in doc.get("benchmarks", []):
            if b.get("error_occurred"):
                continue
            name = b.get("run_name", b["name"]).split("/iterations:")[0]
            if b.get("aggregate_name") == "median" or (b.get("run_type") == "iteration" and name not in out):
                unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
                out[name] = b["real_time"] * unit
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", nargs="*", default=[])
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--variants", required=True)
    ap.add_argument("--causal", type=int, default=1)
    ap.add_argument("--backend", default="cuda-flash")
    ap.add_argument("--device", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--torch-from", help="take the torch times from this earlier output JSON (same run) instead of timing")
    a = ap.parse_args()
    shapes = [tuple(int(x) for x in s.split(",")) for s in a.shapes.split(";") if s]
    variants = [parse_variant(t) for t in a.variants.split(";") if t]
    ours = load_ours(a.ours)
    earlier = {}
    if a.torch_from:
        with open(a.torch_from) as f:
            for r in json.load(f)["rows"]:
                earlier[(tuple(r["shape"]), r["variant"])] = r["torch"]
    rows = []
    for shape in shapes:
        B, H, L, D = shape
        for v in variants:
            vn = variant_name(v)
            name = f"attn/{a.backend}/fp16/{'causal' if a.causal else 'full'}/B{B}_H{H}_L{L}_D{D}" + (f"/{vn}" if vn else "")
            us = ours.get(name)
            pairs = visible_pairs(L, a.causal, v["window"])
            flop = 4.0 * B * H * D * (pairs if v["window"] is not None else L * L * (0.5 if a.causal else 1.0))
            if a.torch_from:
                t = earlier.get((shape, vn or "none"), {})
            else:
                t = {} if a.no_torch else torch_times(shape, a.causal, v)
            rows.append({"shape": shape, "variant": vn or "none", "ours_us": us, "flop": flop, "torch": t})
            best = min([x for x in t.values() if isinstance(x, float)], default=None)
            print(f"{name}: ours {us if us is None else round(us, 2)} us; torch {t}; "
                  f"ours/best-torch {us / best if us and best else float('nan'):.3f}", flush=True)
    with open(a.out + ".json", "w") as f:
        json.dump({"device": a.device, "causal": a.causal, "backend": a.backend, "rows": rows}, f, indent=1)
    lines = [f"# Attention variants: {a.backend} against PyTorch, {a.device}", "",
             f"fp16, {'causal' if a.causal else 'non-causal'}, (B, H, L, D) with H_q = H_kv; FlashCore: "
             "flashcore_bench median (graph replay); torch: median of CUDA-graph replays in the same run. "
             "ratio = FlashCore / fastest torch path (< 1: FlashCore faster).", "",
             "| B, H, L, D | variant | FlashCore us (TF/s) | torch paths us | ratio |", "|---|---|---|---|---|"]
    for r in rows:
        us = r["ours_us"]
        ours_cell = f"{us:.1f} ({r['flop'] / us * 1e-6:.0f})" if us else "n/a"
        tc = ", ".join(f"{k} {x:.1f}" if isinstance(x, float) else f"{k} {x}" for k, x in r["torch"].items())
        best = min([x for x in r["torch"].values() if isinstance(x, float)], default=None)
        ratio = f"{us / best:.2f}" if us and best else "n/a"
        lines.append(f"| {','.join(map(str, r['shape']))} | {r['variant']} | {ours_cell} | {tc} | {ratio} |")
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
