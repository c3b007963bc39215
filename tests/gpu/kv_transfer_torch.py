# tests/gpu/kv_transfer_torch.py - outside anchors for kv_transfer at R=1:
# torch bf16 KV-projection GEMMs (L layers of [S,DM]x[DM,2W]) plus a
# rotate-half RoPE on K, the same shapes as the workload sizes, and the
# device-to-device copy bandwidth.  Prints one JSON object.
import json
import sys

import torch

sizes = {"short": (32, 4096, 8, 128, 2048), "mid": (32, 4096, 8, 128, 8192),
         "long": (32, 4096, 8, 128, 32768)}
out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}


def timeit(fn, reps=10):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


for name, (L, DM, HKV, HD, S) in sizes.items():
    W = HKV * HD
    x = torch.randn(S, DM, device="cuda", dtype=torch.bfloat16)
    ws = [torch.randn(DM, 2 * W, device="cuda", dtype=torch.bfloat16) for _ in range(L)]
    kv = torch.empty(L, S, 2 * W, device="cuda", dtype=torch.bfloat16)
    pos = torch.arange(S, device="cuda", dtype=torch.float64)
    inv = 500000.0 ** (-torch.arange(0, HD, 2, device="cuda", dtype=torch.float64) / HD)
    ang = pos[:, None] * inv[None, :]
    cos = ang.cos().float().to(torch.bfloat16)[:, None, :]
    sin = ang.sin().float().to(torch.bfloat16)[:, None, :]

    def gemm():
        for l in range(L):
            torch.matmul(x, ws[l], out=kv[l])

    def gemm_rope():
        for l in range(L):
            torch.matmul(x, ws[l], out=kv[l])
            k = kv[l, :, :W].view(S, HKV, HD)
            a, b = k[..., : HD // 2], k[..., HD // 2:]
            k.copy_(torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1))

    out[name] = {"gemm_ms": timeit(gemm), "gemm_rope_ms": timeit(gemm_rope),
                 "tflops_gemm": 2.0 * S * DM * 2 * W * L / timeit(gemm) / 1e9}
    del x, ws, kv
    torch.cuda.empty_cache()

buf = torch.empty(256 << 20, device="cuda", dtype=torch.uint8)
dst = torch.empty_like(buf)
ms = timeit(lambda: dst.copy_(buf))
out["d2d_copy_GBps"] = 2 * buf.numel() / ms / 1e6  # read + write
json.dump(out, sys.stdout)
print()
