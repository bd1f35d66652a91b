#!/usr/bin/env python3
"""PyTorch SDPA backward beside FlashCore's (perf/run_backward.sh runs both in one device call).

Reads flashcore_bench_backward's JSON lines (--flashcore FILE), times torch's backward of the same
shapes, one SDPA backend at a time -- FlashAttention-2 (SDPBackend.FLASH_ATTENTION) and cuDNN
(CUDNN_ATTENTION) -- and writes a markdown table (--out-md) and a JSON of everything (--out-json).

Timing of torch: out = sdpa(q, k, v) once (forward, not timed), then out.backward(dO, retain_graph=True)
back to back between two CUDA events, enough calls for >= 1 ms per repetition (at least 5, after 2
untimed ones, for calls under 20 ms), median over repetitions within --seconds. Backward FLOPs =
2.5 x the forward's 4·B·H·L²·D, halved when causal.
A run with an attention variant (flashcore_bench_backward --variant; its rows name it) times torch's
options for that variant instead (time_torch_variant: windows and ALiBi through the memory-efficient
kernel with an explicit mask, soft-capping and sinks in plain torch ops), µs only.
"""
import argparse
import json
import statistics
import sys


MIN_CALLS, LEAD_CALLS = 5, 2  # as flashcore_bench_backward (kMinCalls, kLeadCalls)


def time_backward(torch, out, do, seconds):
    """Median µs of out.backward(do) back to back (the graph retained). Calls under 20 ms: each
    repetition is at least MIN_CALLS calls, after LEAD_CALLS untimed ones that keep the GPU busy while
    the first event and the timed calls are queued (flashcore_bench_backward times its calls the same
    way)."""
    out.backward(do, retain_graph=True)  # warm-up
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    out.backward(do, retain_graph=True)
    e1.record()
    torch.cuda.synchronize()
    one_ms = e0.elapsed_time(e1)
    short = one_ms < 20.0
    lead = LEAD_CALLS if short else 0
    calls = max(MIN_CALLS if short else 1, int(1.0 / max(one_ms, 1e-4)))
    per_call, spent = [], 0.0
    while len(per_call) < 5 or (len(per_call) < 50 and spent < seconds * 1e3):
        for _ in range(lead):
            out.backward(do, retain_graph=True)
        e0.record()
        for _ in range(calls):
            out.backward(do, retain_graph=True)
        e1.record()
        torch.cuda.synchronize()
        ms = e0.elapsed_time(e1)
        spent += ms
        per_call.append(1e3 * ms / calls)
    return statistics.median(per_call)


def inputs(torch, shape, dtype):
    B, H, L, D, causal = shape
    g = torch.Generator(device="cuda").manual_seed(1234)
    mk = lambda: (torch.rand(B, H, L, D, device="cuda", generator=g, dtype=torch.float32) * 2 - 1).to(dtype)
    return mk().requires_grad_(), mk().requires_grad_(), mk().requires_grad_(), mk()


def time_torch(torch, F, sdpa_kernel, backend, shape, dtype, seconds):
    q, k, v, do = inputs(torch, shape, dtype)
    with sdpa_kernel([backend]):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=shape[4])
        return time_backward(torch, out, do, seconds)


def parse_variant(text):
    """flashcore_bench_backward's variant name ("win255_0+cap30+alibi+sinks1", bench_support.cpp)."""
    v = {"window": None, "softcap": 0.0, "alibi": False, "sink": None}
    for part in filter(None, text.split("+")):
        if part.startswith("win"):
            left, right = part[3:].split("_")
            v["window"] = (int(left), int(right))
        elif part.startswith("cap"):
            v["softcap"] = float(part[3:])
        elif part == "alibi":
            v["alibi"] = True
        elif part.startswith("sinks"):
            v["sink"] = float(part[5:])
    return v


def time_torch_variant(torch, F, sdpa_kernel, SDPBackend, shape, dtype, vtext, seconds):
    """{path: µs or None} of torch's backward of a variant: windows and ALiBi as an explicit attn_mask
    (SDPA's memory-efficient kernel, the only fused torch path with a mask and a backward), soft-capping
    and sinks in plain torch ops (no fused path takes them: "math", fp32 softmax, autograd)."""
    import math
    B, H, L, D, causal = shape
    v = parse_variant(vtext)
    q, k, val, do = inputs(torch, shape, dtype)
    i = torch.arange(L, device="cuda").view(L, 1)
    j = torch.arange(L, device="cuda").view(1, L)
    left, right = v["window"] if v["window"] is not None else (-1, -1)
    if causal:
        right = 0
    visible = torch.ones(L, L, dtype=torch.bool, device="cuda")
    if left >= 0:
        visible &= j >= i - left
    if right >= 0:
        visible &= j <= i + right
    bias = torch.zeros(1, L, L, device="cuda", dtype=torch.float32)
    if v["alibi"]:
        slopes = torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)], device="cuda").view(H, 1, 1)
        bias = -slopes * (j - i).abs().float()
    bias = bias.masked_fill(~visible, float("-inf"))
    out = {}
    if v["softcap"] == 0 and v["sink"] is None:
        mask = bias.to(dtype).view(1, -1, L, L).expand(B, bias.shape[0], L, L)
        try:
            with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
                o = F.scaled_dot_product_attention(q, k, val, attn_mask=mask)
                out["torch efficient+mask"] = time_backward(torch, o, do, seconds)
        except Exception as e:
            print(f"efficient {shape} {vtext}: {e}", file=sys.stderr)
            out["torch efficient+mask"] = None
        return out
    scale = 1.0 / math.sqrt(D)
    try:
        s = (q.float() @ k.float().transpose(-1, -2)) * scale
        if v["softcap"] > 0:
            s = v["softcap"] * torch.tanh(s / v["softcap"])
        s = s + bias
        if v["sink"] is not None:
            sink = torch.full((H, 1, 1), v["sink"], device="cuda", dtype=torch.float32, requires_grad=True)
            sink = sink.expand(B, H, L, 1)  # its gradient too, as FlashCore's dsinks
            p = torch.softmax(torch.cat([s, sink], dim=-1), dim=-1)[..., :L]
        else:
            p = torch.softmax(s, dim=-1)
        o = (p.to(dtype) @ val)
        out["torch math"] = time_backward(torch, o, do, seconds)
    except Exception as e:
        print(f"math {shape} {vtext}: {e}", file=sys.stderr)
        out["torch math"] = None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flashcore", required=True, help="flashcore_bench_backward output (JSON lines)")
    ap.add_argument("--out-md", required=True)
    ap.add_argument("--out-json", required=True)
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--device-name", default="")
    a = ap.parse_args()
    ours = [json.loads(l) for l in open(a.flashcore) if l.startswith("{")]
    shapes = []
    for r in ours:
        s = (r["B"], r["H"], r["L"], r["D"], r["causal"])
        if s not in shapes:
            shapes.append(s)
    vtext = ours[0].get("variant", "")  # one variant per run (--variant)
    torch_rows = {}
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[ours[0]["dtype"]]
        for s in shapes:
            if vtext:
                for name, us in time_torch_variant(torch, F, sdpa_kernel, SDPBackend, s, dtype, vtext, a.seconds).items():
                    torch_rows[(s, name)] = us
                continue
            for name, member in (("torch-flash", "FLASH_ATTENTION"), ("torch-cudnn", "CUDNN_ATTENTION")):
                try:
                    torch_rows[(s, name)] = time_torch(torch, F, sdpa_kernel, getattr(SDPBackend, member), s, dtype, a.seconds)
                except Exception as e:  # a path that cannot run the shape
                    torch_rows[(s, name)] = None
                    print(f"{name} {s}: {e}", file=sys.stderr)
        torch_version = torch.__version__
    except ImportError as e:
        print(f"no torch: {e}", file=sys.stderr)
        torch_version = None

    def tflops(s, us):
        B, H, L, D, causal = s
        f = 2.5 * 4.0 * B * H * L * L * D * (0.5 if causal else 1.0)
        return f / (us * 1e-6) / 1e12

    backends = []
    for r in ours:
        if r["backend"] not in backends:
            backends.append(r["backend"])
    torch_names = sorted({name for (_, name) in torch_rows}) if vtext else ["torch-flash", "torch-cudnn"]
    head = ["B,H,L,D", "causal"] + [f"{b} µs (TF/s)" for b in backends] + [f"{n} µs" for n in torch_names]
    what = f", variant {vtext}" if vtext else ""
    lines = [f"Backward pass, {ours[0]['dtype']}{what}, {a.device_name}; torch {torch_version}, same run.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out = {"device": a.device_name, "torch": torch_version, "variant": vtext, "rows": []}
    for s in shapes:
        cells = [f"{s[0]},{s[1]},{s[2]},{s[3]}", "yes" if s[4] else "no"]
        row = {"shape": list(s), "flashcore": {}, "torch": {}}
        for b in backends:
            r = next(x for x in ours if (x["B"], x["H"], x["L"], x["D"], x["causal"]) == s and x["backend"] == b)
            if "median_us" in r:
                cells.append(f"{r['median_us']:.1f} ({r['tflops']:.0f})")
                row["flashcore"][b] = {"median_us": r["median_us"], "plan": r.get("plan", "")}
            else:
                cells.append("declines")
                row["flashcore"][b] = {"error": r.get("error", "")}
        for name in torch_names:
            us = torch_rows.get((s, name))
            cells.append("—" if us is None else (f"{us:.1f}" if vtext else f"{us:.1f} ({tflops(s, us):.0f})"))
            row["torch"][name] = us
        lines.append("| " + " | ".join(cells) + " |")
        out["rows"].append(row)
    open(a.out_md, "w").write("\n".join(lines) + "\n")
    json.dump(out, open(a.out_json, "w"), indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
