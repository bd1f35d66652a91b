#!/usr/bin/env python3
"""Time torch.nn.functional.scaled_dot_product_attention (FLASH_ATTENTION and CUDNN_ATTENTION backends)
on the same shapes and with the same method as flash_dev (CUDA graph of 20 calls, median of replays),
inputs in (B, H, L, D) layout, random normal data."""
import sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = [(1, 8, 512, 64), (4, 16, 1024, 64), (2, 16, 4096, 128), (1, 16, 16384, 128)]
BIG_SHAPES = [(1, 8, 512, 64), (4, 16, 1024, 64), (2, 16, 4096, 64), (2, 16, 4096, 128), (1, 16, 16384, 128)]
FP8_SHAPES = [(1, 8, 512, 64, False), (4, 16, 1024, 64, False), (2, 16, 4096, 64, False), (2, 16, 4096, 128, False),
              (2, 16, 4096, 128, True), (1, 16, 16384, 128, False), (1, 16, 16384, 128, True), (8, 16, 2048, 128, False)]
BACKENDS = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]
CALLS = 20


def time_graph(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(CALLS):
            fn()
    g.replay()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record(); g.replay(); e1.record(); e1.synchronize()
    reps = max(5, min(100, int(300.0 / max(e0.elapsed_time(e1), 1e-3))))
    ts = []
    for _ in range(reps):
        e0.record(); g.replay(); e1.record(); e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    ts.sort()
    return ts[len(ts) // 2] * 1000.0 / CALLS, (ts[3 * len(ts) // 4] - ts[len(ts) // 4]) * 1000.0 / CALLS


def once():
    """--once: run SDPA (cuDNN, then FlashAttention-2) 3 times each on the main job, e.g. under ncu."""
    q, k, v = (torch.randn(1, 8, 512, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    for be in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
        with sdpa_kernel(be):
            for _ in range(3):
                F.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()


def time_shape(B, H, L, D, dtype, causal):
    """Times both torch paths on one shape and prints a TORCH line each (or why a path refused it)."""
    q, k, v = (torch.randn(B, H, L, D, device="cuda").to(dtype) for _ in range(3))
    flops = 4.0 * B * H * L * L * D * (0.5 if causal else 1.0)
    for name, be in BACKENDS:
        try:
            with sdpa_kernel(be):
                us, iqr = time_graph(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            print(f"TORCH  B{B} H{H:2d} L{L:5d} D{D:3d} {str(dtype)[6:]:8s} {'causal' if causal else 'full':6s} "
                  f"{name:6s} {us:9.2f} us (iqr {iqr:.2f})  {flops / us * 1e-6:6.1f} TF/s", flush=True)
        except Exception as ex:  # backend refused the shape
            print(f"TORCH  B{B} H{H} L{L} D{D} {dtype} causal={causal} {name}: unavailable ({type(ex).__name__}: {str(ex)[:120]})")


def main():
    if "--once" in sys.argv:
        return once()
    print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__, "cudnn", torch.backends.cudnn.version())
    if "--headdims" in sys.argv:  # flash_dev headdims' timing shapes: (4,16,2048,D) fp16
        for D in (32, 64, 80, 96, 128, 160, 192, 256):
            for causal in (False, True):
                time_shape(4, 16, 2048, D, torch.float16, causal)
        return
    if "--fp8" in sys.argv:  # fp8_dev time's shapes: torch's bf16 paths, and whether SDPA takes e4m3 inputs
        for (B, H, L, D, causal) in FP8_SHAPES:
            time_shape(B, H, L, D, torch.bfloat16, causal)
        time_shape(1, 8, 512, 64, torch.float8_e4m3fn, False)
        return
    only_small = "--small" in sys.argv
    big = "--big" in sys.argv  # flash_dev time-big's shapes, fp16 (+ bf16 for two), both backends
    shapes = BIG_SHAPES if big else SHAPES
    for (B, H, L, D) in shapes:
        if only_small and L > 512:
            continue
        for dtype in (torch.float16, torch.bfloat16):
            for causal in (False, True):
                if L == 16384 and dtype == torch.bfloat16:
                    continue
                if big and dtype == torch.bfloat16 and (L < 4096 or causal):
                    continue
                time_shape(B, H, L, D, dtype, causal)


if __name__ == "__main__":
    main()
