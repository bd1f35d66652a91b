def ss(n, ty, tname):
    nreg = n // 2
    regs = ", ".join(f"%{i}" for i in range(nreg))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(nreg))
    a, b, sc = nreg, nreg + 1, nreg + 2
    return f'''// D[64 x {n}] (+)= A[64 x 16] (smem, K-major) * B[16 x {n}] (smem, K-major), {tname}.
__device__ __forceinline__ void wgmma_ss_m64n{n}k16(float (&d)[{nreg}], uint64_t da, uint64_t db, int accumulate, {tname}) {{
  asm volatile(
      "{{\\n .reg .pred p;\\n setp.ne.b32 p, %{sc}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{regs}}}, %{a}, %{b}, p, 1, 1, 0, 0;\\n}}\\n"
      : {outs}
      : "l"(da), "l"(db), "r"(accumulate));
}}
'''
def rs(n, ty, tname):
    nreg = n // 2
    regs = ", ".join(f"%{i}" for i in range(nreg))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(nreg))
    a0 = nreg
    b = nreg + 4
    return f'''// D[64 x {n}] += A[64 x 16] (registers) * B[16 x {n}] (smem, MN-major: transposed), {tname}.
__device__ __forceinline__ void wgmma_rs_m64n{n}k16(float (&d)[{nreg}], const uint32_t* a, uint64_t db, {tname}) {{
  asm volatile(
      "{{\\n .reg .pred p;\\n setp.ne.b32 p, %{b+1}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{regs}}}, {{%{a0}, %{a0+1}, %{a0+2}, %{a0+3}}}, %{b}, p, 1, 1, 1;\\n}}\\n"
      : {outs}
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}}
'''

def ss0(n, ty, tname):
    nreg = n // 2
    regs = ", ".join(f"%{i}" for i in range(nreg))
    outs = ", ".join(f'"=f"(d[{i}])' for i in range(nreg))
    a, b, sc = nreg, nreg + 1, nreg + 2
    return f'''// D[64 x {n}] = A[64 x 16] (smem, K-major) * B[16 x {n}] (smem, K-major), {tname}: D is write-only.
__device__ __forceinline__ void wgmma_ss_m64n{n}k16_init(float (&d)[{nreg}], uint64_t da, uint64_t db, {tname}) {{
  asm volatile(
      "{{\\n .reg .pred p;\\n setp.ne.b32 p, %{sc}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{regs}}}, %{a}, %{b}, p, 1, 1, 0, 0;\\n}}\\n"
      : {outs}
      : "l"(da), "l"(db), "r"(0));
}}
'''

def rsk(n, ty, tname, init):
    # A from registers, B K-major (imm-trans-b = 0); init: D is write-only (scale-d = 0)
    nreg = n // 2
    regs = ", ".join(f"%{i}" for i in range(nreg))
    outs = ", ".join(f'"{"=" if init else "+"}f"(d[{i}])' for i in range(nreg))
    a0 = nreg
    b = nreg + 4
    name = f"wgmma_rsk_m64n{n}k16" + ("_init" if init else "")
    what = "=" if init else "+="
    return f'''// D[64 x {n}] {what} A[64 x 16] (registers) * B[16 x {n}] (smem, K-major), {tname}.
__device__ __forceinline__ void {name}(float (&d)[{nreg}], const uint32_t* a, uint64_t db, {tname}) {{
  asm volatile(
      "{{\\n .reg .pred p;\\n setp.ne.b32 p, %{b+1}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{regs}}}, {{%{a0}, %{a0+1}, %{a0+2}, %{a0+3}}}, %{b}, p, 1, 1, 0;\\n}}\\n"
      : {outs}
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"({0 if init else 1}));
}}
'''

def sstt(n, ty, tname, init):
    # A and B from shared memory, both MN-major (imm-trans-a = imm-trans-b = 1): the backward's
    # dQ = dS·K, A = dS read from the staged dSᵀ (keys on rows), B = K (head dim contiguous).
    nreg = n // 2
    regs = ", ".join(f"%{i}" for i in range(nreg))
    outs = ", ".join(f'"{"=" if init else "+"}f"(d[{i}])' for i in range(nreg))
    a, b, sc = nreg, nreg + 1, nreg + 2
    name = f"wgmma_sstt_m64n{n}k16" + ("_init" if init else "")
    what = "=" if init else "+="
    return f'''// D[64 x {n}] {what} A[64 x 16] (smem, MN-major: transposed) * B[16 x {n}] (smem, MN-major: transposed), {tname}.
__device__ __forceinline__ void {name}(float (&d)[{nreg}], uint64_t da, uint64_t db, {tname}) {{
  asm volatile(
      "{{\\n .reg .pred p;\\n setp.ne.b32 p, %{sc}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{regs}}}, %{a}, %{b}, p, 1, 1, 1, 1;\\n}}\\n"
      : {outs}
      : "l"(da), "l"(db), "r"({0 if init else 1}));
}}
'''

def fp8(n, kind, init):
    # e4m3 x e4m3 -> f32, k = 32 (32 bytes of each operand row per instruction, as k16 is for 16-bit
    # types). FP8 wgmma has no transpose: both operands are K-major (the forward's V is transposed
    # first: sm90/fp8_transpose_v.cuh). kind "ss": A and B from shared memory; "rs": A from registers
    # (4 registers of 4 e4m3 each: the mma.sync m16n8k32 A-fragment layout for the warp's 16 rows).
    nreg = n // 2
    regs = ", ".join(f"%{i}" for i in range(nreg))
    outs = ", ".join(f'"{"=" if init else "+"}f"(d[{i}])' for i in range(nreg))
    name = f"wgmma_{kind}_m64n{n}k32" + ("_init" if init else "")
    what = "=" if init else "+="
    if kind == "ss":
        a, b = nreg, nreg + 1
        ops, ins, src = f"%{a}", '"l"(da), "l"(db)', "smem, K-major"
        sig = "uint64_t da, uint64_t db"
        sc = nreg + 2
    else:
        a0, b = nreg, nreg + 4
        ops, ins, src = f"{{%{a0}, %{a0+1}, %{a0+2}, %{a0+3}}}", '"r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db)', "registers"
        sig = "const uint32_t* a, uint64_t db"
        sc = nreg + 5
    return f'''// D[64 x {n}] {what} A[64 x 32] ({src}) * B[32 x {n}] (smem, K-major), e4m3.
__device__ __forceinline__ void {name}(float (&d)[{nreg}], {sig}, __nv_fp8_e4m3) {{
  asm volatile(
      "{{\\n .reg .pred p;\\n setp.ne.b32 p, %{sc}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{n}k32.f32.e4m3.e4m3 {{{regs}}}, {ops}, %{b}, p, 1, 1;\\n}}\\n"
      : {outs}
      : {ins}, "r"({0 if init else 1}));
}}
'''

out = []
for ty, tname in (("f16", "__half"), ("bf16", "__nv_bfloat16")):
    out.append(ss0(64, ty, tname))
    out.append(rsk(64, ty, tname, True))
    out.append(rsk(64, ty, tname, False))
    out.append(ss(64, ty, tname))
    out.append(rs(32, ty, tname))  # P·V of the D = 32 kernel
    out.append(rs(64, ty, tname))
    out.append(rs(128, ty, tname))
    out.append(ss0(128, ty, tname))
    out.append(ss(128, ty, tname))
    out.append(rs(96, ty, tname))  # P·V of the D = 96 kernel
    out.append(rs(160, ty, tname))  # P·V of the D = 160 kernel
    out.append(rs(192, ty, tname))  # P·V of the D = 192 and 256 kernels (sm90/config.h)
    out.append(rs(256, ty, tname))
    for n in (96,):  # S of the D = 192 kernel (96-key tiles)
        out.append(ss0(n, ty, tname))
        out.append(ss(n, ty, tname))
    out.append(sstt(64, ty, tname, True))  # dQ = dS·K of the Hopper backward (backward/sm90/)
    out.append(sstt(64, ty, tname, False))
# The FP8 forward (D = 128, 128-key tiles): S = Q·Kᵀ and O += P·Vᵀᵀ.
out.append(fp8(128, "ss", True))
out.append(fp8(128, "ss", False))
out.append(fp8(128, "rs", False))
hdr = """// Generated by perf/dev/gen_wgmma.py: the wgmma.mma_async shapes used by the Hopper kernel.
// Accumulator layout per warp w of the warpgroup: rows 16w + lane/4 (+8), columns 8i + 2(lane%4) + {0,1}
// in registers 4i..4i+3 (same as the mma.sync m16n8 C fragment, repeated over the n8 column tiles).
// Register A operands use the mma.sync m16n8k16 A-fragment layout for the warp's 16 rows (m16n8k32 for e4m3).
#pragma once

"""
import sys
open(sys.argv[1] if len(sys.argv) > 1 else "wgmma_gen.inc", "w").write(hdr + "\n".join(out))
