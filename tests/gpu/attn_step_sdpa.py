# tests/gpu/attn_step_sdpa.py - the outside anchor for the attention step:
# torch.nn.functional.scaled_dot_product_attention, causal, bf16, B=1, Hq=32,
# Hkv=8 (enable_gqa=True), D=128, at the bench's sequence lengths; each SDPA
# backend that accepts the shape (flash, cuDNN, efficient, and torch's own
# choice), plus the default backend on K/V expanded to Hq heads (MHA).  Median
# of timed runs after warm-up; FLOP = 2*S^2*Hq*D (the causal half), as in
# bench/attn_step_bench.cu; without a mask (MASKS "none") 4*S^2*Hq*D.
# Prints one JSON object.
#   python3 attn_step_sdpa.py [S1,S2,...] [reps] [causal|none|causal,none]
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sizes = [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "8192,16384,32768").split(",")]
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
masks = (sys.argv[3] if len(sys.argv) > 3 else "causal").split(",")
HQ, HKV, D = 32, 8, 128
out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
       "hq": HQ, "hkv": HKV, "d": D, "reps": reps, "results": []}


def timeit(fn):
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


backends = [("default", None), ("flash", SDPBackend.FLASH_ATTENTION),
            ("cudnn", SDPBackend.CUDNN_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION)]


def one(S, causal):
    g = torch.Generator(device="cuda").manual_seed(S)
    q = torch.randn(1, HQ, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(1, HKV, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(1, HKV, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
    flop = (2.0 if causal else 4.0) * S * S * HQ * D
    # GQA (enable_gqa) and MHA (K/V expanded to Hq heads), every backend
    ke = k.repeat_interleave(HQ // HKV, dim=1)
    ve = v.repeat_interleave(HQ // HKV, dim=1)
    for gqa, kk, vv in ((True, k, v), (False, ke, ve)):
        for name, be in backends:
            row = {"S": S, "backend": name, "gqa": gqa, "causal": causal, "flop": flop}
            try:
                def run():
                    return F.scaled_dot_product_attention(q, kk, vv, is_causal=causal,
                                                          enable_gqa=gqa)
                if be is None:
                    ms = timeit(run)
                else:
                    with sdpa_kernel([be]):
                        ms = timeit(run)
                row.update({"median_ms": ms, "tflops": flop / ms * 1e-9})
            except Exception as e:  # a backend that refuses the shape
                row["error"] = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
            out["results"].append(row)
    del q, k, v, ke, ve
    torch.cuda.empty_cache()


for m in masks:
    for S in sizes:
        one(S, m == "causal")
print(json.dumps(out, indent=1))
