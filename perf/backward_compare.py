#!/usr/bin/env python3
"""PyTorch SDPA backward beside FlashCore's (perf/run_backward.sh runs both in one device call).

Reads flashcore_bench_backward's JSON lines (--flashcore FILE), times torch's backward of the same
shapes, one SDPA backend at a time -- FlashAttention-2 (SDPBackend.FLASH_ATTENTION) and cuDNN
(CUDNN_ATTENTION) -- and writes a markdown table (--out-md) and a JSON of everything (--out-json).

Timing of torch: out = sdpa(q, k, v) once (forward, not timed), then out.backward(dO, retain_graph=True)
back to back between two CUDA events, enough calls for >= 1 ms per repetition, median over
repetitions within --seconds. Backward FLOPs = 2.5 x the forward's 4·B·H·L²·D, halved when causal.
"""
import argparse
import json
import statistics
import sys


def time_torch(torch, F, sdpa_kernel, backend, shape, dtype, seconds):
    B, H, L, D, causal = shape
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(1234)
    mk = lambda: (torch.rand(B, H, L, D, device=dev, generator=g, dtype=torch.float32) * 2 - 1).to(dtype)
    q, k, v, do = mk().requires_grad_(), mk().requires_grad_(), mk().requires_grad_(), mk()
    with sdpa_kernel([backend]):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        out.backward(do, retain_graph=True)  # warm-up
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        out.backward(do, retain_graph=True)
        e1.record()
        torch.cuda.synchronize()
        one_ms = e0.elapsed_time(e1)
        calls = max(1, int(1.0 / max(one_ms, 1e-4)))
        per_call, spent = [], 0.0
        while len(per_call) < 5 or (len(per_call) < 50 and spent < seconds * 1e3):
            e0.record()
            for _ in range(calls):
                out.backward(do, retain_graph=True)
            e1.record()
            torch.cuda.synchronize()
            ms = e0.elapsed_time(e1)
            spent += ms
            per_call.append(1e3 * ms / calls)
    return statistics.median(per_call)


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
    torch_rows = {}
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[ours[0]["dtype"]]
        for s in shapes:
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
    head = ["B,H,L,D", "causal"] + [f"{b} µs (TF/s)" for b in backends] + ["torch flash µs (TF/s)", "torch cuDNN µs (TF/s)"]
    lines = [f"Backward pass, {ours[0]['dtype']}, {a.device_name}; torch {torch_version}, same run.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out = {"device": a.device_name, "torch": torch_version, "rows": []}
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
        for name in ("torch-flash", "torch-cudnn"):
            us = torch_rows.get((s, name))
            cells.append("—" if us is None else f"{us:.1f} ({tflops(s, us):.0f})")
            row["torch"][name] = us
        lines.append("| " + " | ".join(cells) + " |")
        out["rows"].append(row)
    open(a.out_md, "w").write("\n".join(lines) + "\n")
    json.dump(out, open(a.out_json, "w"), indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
