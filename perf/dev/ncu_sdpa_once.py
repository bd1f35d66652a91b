#!/usr/bin/env python3
"""Runs torch SDPA once per shape on one path (cuDNN by default) inside an NVTX range "sdpa", for
Nsight Compute: perf/dev/ncu_forward.sh profiles what runs inside the ranges (ncu --nvtx --nvtx-include
'sdpa/'), and perf/dev/ncu_summary.py pairs the kernels with the cases by the order of the CASE lines
this prints after each range (ncu's log shows each profiled kernel before them).

  python3 perf/dev/ncu_sdpa_once.py --shapes="B,H,L,D;..." [--dtype=fp16|bf16] [--causal=0|1|both] [--path=cudnn|flash]

Each case runs twice outside a range first (cuDNN builds its plan on the first call), then once in it."""
import argparse
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

PATHS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--dtype", default="fp16", choices=sorted(DTYPES))
    ap.add_argument("--causal", default="both", choices=["0", "1", "both"])
    ap.add_argument("--path", default="cudnn", choices=sorted(PATHS))
    args = ap.parse_args()
    causals = {"0": [False], "1": [True], "both": [False, True]}[args.causal]
    for s in args.shapes.split(";"):
        B, H, L, D = (int(x) for x in s.split(","))
        q, k, v = (torch.randn(B, H, L, D, device="cuda").to(DTYPES[args.dtype]) for _ in range(3))
        for causal in causals:
            name = f"sdpa {args.path} {args.dtype} {'causal' if causal else 'full'} B{B}_H{H}_L{L}_D{D}"
            with sdpa_kernel(PATHS[args.path]):
                for _ in range(2):
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_push("sdpa")
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_pop()
            print("CASE", name, flush=True)


if __name__ == "__main__":
    main()
