# tests/gpu/gemm_torch.py - the outside anchor for gemm_allgather at R = 1:
# torch.matmul of bf16 [M,K] x [K,N] (cuBLAS through torch) at the given
# shapes, median of timed runs after warm-up.  Prints one JSON object.
#   python3 gemm_torch.py NAME:M,K,N ...   (default: the workload's bench sizes)
import json
import sys

import torch

args = sys.argv[1:] or ["full_4k:4096,8192,28672", "full_8k:8192,8192,28672",
                        "full_16k:16384,8192,28672"]
out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "results": []}
for spec in args:
    name, dims = spec.split(":")
    M, K, N = (int(x) for x in dims.split(","))
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    ts = []
    for _ in range(30):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.matmul(a, b)
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    med = ts[len(ts) // 2]
    out["results"].append({"size": name, "M": M, "K": K, "N": N, "median_ms": med,
                           "tflops": 2 * M * K * N / med / 1e9})
    del a, b
    torch.cuda.empty_cache()
print(json.dumps(out, indent=1))
