#!/usr/bin/env python3
"""tests/gpu/moe_torch.py - outside anchors for moe_dsv3 (not part of cuco):
torch._grouped_mm for the routed experts' GEMM1 + GEMM2 (bf16, DeepSeek-V3
H=7168, F=2048) on the same shapes as workloads/moe_dsv3/tools/gemm_bench.cu,
and a loop of torch.matmul.  Prints one JSON object: {"E x N": {...}}.
Shapes: argv pairs E:N (default 256:128 128:256 32:1024 256:4)."""
import json
import sys

import torch


def timed(fn, iters=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def one(E, N, H=7168, F=2048):
    dev = "cuda"
    x = torch.randn(E * N, H, device=dev, dtype=torch.bfloat16)
    w13 = torch.randn(E, H, 2 * F, device=dev, dtype=torch.bfloat16) * 0.02
    w2 = torch.randn(E, F, H, device=dev, dtype=torch.bfloat16) * 0.02
    offs = torch.arange(1, E + 1, device=dev, dtype=torch.int32) * N
    h = torch.randn(E * N, F, device=dev, dtype=torch.bfloat16)
    flop = 2.0 * E * N * (H * 2 * F + F * H)
    out = {"experts": E, "rows": N}
    # _grouped_mm wants the second operand "transposed" (K-major) on some
    # versions: try the natural layout, then the transposed view.
    for name, (b1, b2) in (("natural", (w13, w2)),
                           ("transposed", (w13.transpose(-2, -1).contiguous().transpose(-2, -1),
                                           w2.transpose(-2, -1).contiguous().transpose(-2, -1)))):
        try:
            f = lambda: (torch._grouped_mm(x, b1, offs=offs), torch._grouped_mm(h, b2, offs=offs))
            ms = timed(f)
            out["grouped_mm_ms"] = round(ms, 4)
            out["grouped_mm_tflops"] = round(flop / ms / 1e9, 1)
            out["grouped_mm_layout"] = name
            break
        except Exception as e:  # report, try the other layout
            out["grouped_mm_error_" + name] = str(e).splitlines()[0][:200]
    xs = x.view(E, N, H)
    hs = h.view(E, N, F)
    ms = timed(lambda: [(xs[e] @ w13[e], hs[e] @ w2[e]) for e in range(E)])
    out["matmul_loop_ms"] = round(ms, 4)
    out["matmul_loop_tflops"] = round(flop / ms / 1e9, 1)
    del x, w13, w2, h
    torch.cuda.empty_cache()
    return out


def main():
    shapes = [tuple(int(v) for v in a.split(":")) for a in sys.argv[1:]] or \
        [(256, 128), (128, 256), (32, 1024), (256, 4)]
    res = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    for E, N in shapes:
        try:
            res[f"{E}x{N}"] = one(E, N)
        except Exception as e:
            res[f"{E}x{N}"] = {"error": str(e).splitlines()[0][:300]}
    print(json.dumps(res))


if __name__ == "__main__":
    main()
