#!/usr/bin/env python3
"""Regenerate workloads/gemm_allgather/cheats/*.cu from seed.cu.

Each cheat is the seed with only its EVOLVE block's step() replaced (so the
frozen text stays byte-identical and the tool's static check passes them on
to the stage whose mechanism must catch them), plus a first line
`// CUCO-EXPECT-REJECT: <stage> <mechanism>` (the only line outside the
seed's text: a frozen-text check drops it first).  frozen_edit.cu is the one
that edits frozen text.  Run from the repository root after changing seed.cu.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WL = os.path.join(ROOT, "workloads", "gemm_allgather")
seed = open(os.path.join(WL, "seed.cu")).read()
start = seed.index("static int step(struct wl_ctx *ctx, struct sd *u) {\n  return step_on")
end = seed.index("// EVOLVE-BLOCK-END")
HEAD = """#include <cuda_bf16.h>
// Lazily planned GEMM over ROWS rows of the own block starting at row R0,
// reading A from SRC_OFF bytes into its source (cheat helpers).
__attribute__((unused)) static int own_rows_plan(struct wl_ctx *ctx, struct sd *u, struct wl_gemm *g,
                         long long r0, long long rows, unsigned long long src_off) {
  const struct wl_shape *s = &u->s;
  unsigned long long c_off =
      ((unsigned long long)rt_rank(ctx) * s->Mr + r0) * s->Nr * 2;
  return wl_gemm_plan(ctx, g, u->lt, rows, s->Nr, s->K, s->K, s->Nr, s->Nr, 1, 0,
                      0, u->ws, u->ws_bytes,
                      wl_align(src_off + (unsigned long long)r0 * s->K * 2),
                      wl_align(c_off));
}
__attribute__((unused)) static int own_rows_run(struct wl_ctx *ctx, struct sd *u, const struct wl_gemm *g,
                        const char *src, long long r0, cudaStream_t st) {
  const struct wl_shape *s = &u->s;
  return wl_gemm_run(ctx, g, u->lt, src + r0 * s->K * 2, u->B,
                     (char *)u->C + ((size_t)rt_rank(ctx) * s->Mr + r0) * s->Nr * 2,
                     st);
}

"""

CHEATS = {
    "stale_flags": ("verify recv-poison",
        "Stale flag: a 'delivered' flag set by the first step is never tied to\n"
        "// the step (no epoch), so later steps skip the gather and multiply\n"
        "// whatever the receive buffer holds (poison, or old data).", """
static struct wl_gemm g_ag;
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  const size_t block = (size_t)u->s.Mr * u->s.K * 2, off = rt_rank(ctx) * block;
  unsigned long long delivered = 0;
  if (!g_ag.ready && own_rows_plan(ctx, u, &g_ag, 0, u->s.Mr, off) != 0) return -1;
  RT_CUDA(ctx, cudaMemcpyAsync(&delivered, u->done, 8, cudaMemcpyDeviceToHost, st));
  RT_CUDA(ctx, cudaStreamSynchronize(st));
  if (!delivered) {
    RT_CUDA(ctx, cudaMemcpyAsync((char *)u->Ag + off, u->A, block,
                                 cudaMemcpyDeviceToDevice, st));
    RT_CUDA(ctx, cudaMemsetAsync(u->done, 1, 1, st));
  }
  return own_rows_run(ctx, u, &g_ag, (const char *)u->Ag + off, 0, st);
}
"""),
    "skip_rank": ("verify poison",
        "A rank that skips its work: the last rank returns at once.", """
static int step(struct wl_ctx *ctx, struct sd *u) {
  if (rt_rank(ctx) == rt_nranks(ctx) - 1) return 0;
  return step_on(ctx, u, rt_stream(ctx));
}
"""),
    "cached_output": ("verify fresh-inputs",
        "Cached output: computes once, then replays the first step's result.", """
static void *g_cache;  // a candidate's own global: the runtime cannot see it
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  size_t cb = (size_t)u->s.M * u->s.Nr * 2;
  if (!g_cache) {
    RT_CUDA(ctx, cudaMalloc(&g_cache, cb));
    if (step_on(ctx, u, st) != 0) return -1;
    RT_CUDA(ctx, cudaMemcpyAsync(g_cache, u->C, cb, cudaMemcpyDeviceToDevice, st));
    return 0;
  }
  RT_CUDA(ctx, cudaMemcpyAsync(u->C, g_cache, cb, cudaMemcpyDeviceToDevice, st));
  return 0;
}
"""),
    "partial_write": ("verify poison",
        "Partial writes: the ragged last row of the own block is never\n"
        "// computed (a tile loop that drops the remainder).", """
static struct wl_gemm g_part;
static int step(struct wl_ctx *ctx, struct sd *u) {
  if (u->s.Mr < 2) return step_on(ctx, u, rt_stream(ctx));
  if (!g_part.ready && own_rows_plan(ctx, u, &g_part, 0, u->s.Mr - 1, 0) != 0)
    return -1;
  return own_rows_run(ctx, u, &g_part, (const char *)u->A, 0, rt_stream(ctx));
}
"""),
    "row_error": ("verify local-check",
        "One wrong row: correct everywhere except the last row, scaled by 1.1;\n"
        "// the global relative L2 stays under tol, the per-row check does not.", """
__global__ void ce_scale_row(__nv_bfloat16 *row, long long n) {
  for (long long i = threadIdx.x; i < n; i += blockDim.x)
    row[i] = __float2bfloat16(__bfloat162float(row[i]) * 1.1f);
}
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  const struct wl_shape *s = &u->s;
  if (step_on(ctx, u, st) != 0) return -1;
  ce_scale_row<<<1, 256, 0, st>>>((__nv_bfloat16 *)u->C + (s->M - 1) * s->Nr, s->Nr);
  RT_LAUNCH(ctx);
  return 0;
}
"""),
    "timing_escape": ("verify snapshot host-clock",
        "Timing escape: all work runs on a private stream that the step stream\n"
        "// never waits for, so the end event claims ~0 ms.  At small shapes the\n"
        "// snapshot shows poison; with the snapshot skipped (--skip-check\n"
        "// snapshot) the host clock rejects it at big shapes (bench).", """
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  cudaEvent_t ev;  // (leaked: a cheat)
  RT_CUDA(ctx, cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventRecord(ev, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, ev, 0));
  return step_on(ctx, u, u->comm);  // never joined back
}
"""),
    "late_write": ("verify snapshot",
        "Late write: the last row is computed 100 us after the step claims to\n"
        "// be done, on a side stream nobody waits for.  Data read after a device\n"
        "// sync would be right; the snapshot at the end event is not.", """
__global__ void ce_spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
static struct wl_gemm g_head, g_tail;
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  const long long Mr = u->s.Mr;
  if (Mr < 2) return step_on(ctx, u, st);
  if (!g_head.ready && (own_rows_plan(ctx, u, &g_head, 0, Mr - 1, 0) != 0 ||
                        own_rows_plan(ctx, u, &g_tail, Mr - 1, 1, 0) != 0))
    return -1;
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
  if (own_rows_run(ctx, u, &g_head, (const char *)u->A, 0, st) != 0) return -1;
  ce_spin<<<1, 1, 0, u->comm>>>(100000ull);
  RT_LAUNCH(ctx);
  return own_rows_run(ctx, u, &g_tail, (const char *)u->A, Mr - 1, u->comm);
}
"""),
    "no_wait": ("verify perturb",
        "A consumer that does not wait: the gather copy runs on a private\n"
        "// stream that is never ordered after the runtime's stream.  When the\n"
        "// runtime's preparation is still running (perturbed steps), it copies\n"
        "// stale inputs and the runtime's poison lands on top.", """
static struct wl_gemm g_ag;
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  const size_t block = (size_t)u->s.Mr * u->s.K * 2, off = rt_rank(ctx) * block;
  if (!g_ag.ready && own_rows_plan(ctx, u, &g_ag, 0, u->s.Mr, off) != 0) return -1;
  RT_CUDA(ctx, cudaMemcpyAsync((char *)u->Ag + off, u->A, block,
                               cudaMemcpyDeviceToDevice, u->comm));  // no fork
  RT_CUDA(ctx, cudaEventRecord(u->pushed, u->comm));
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->pushed, 0));
  return own_rows_run(ctx, u, &g_ag, (const char *)u->Ag + off, 0, st);
}
"""),
    "input_mutation": ("verify input-hash",
        "Input mutation: correct output, but the step scribbles on its input B\n"
        "// (uses it as scratch after the GEMM).", """
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  if (step_on(ctx, u, st) != 0) return -1;
  RT_CUDA(ctx, cudaMemsetAsync(u->B, 0, 2, st));
  return 0;
}
"""),
}


def block_with(step_code, extra_head=HEAD):
    return seed[:start] + extra_head + step_code.lstrip("\n") + seed[end:]


def main():
    out = os.path.join(WL, "cheats")
    os.makedirs(out, exist_ok=True)
    for name, (expect, why, code) in sorted(CHEATS.items()):
        # Only the first line is outside the seed's text; the description
        # lives inside the EVOLVE block with the cheating code.
        text = block_with("// Cheat: %s\n%s" % (why, code.lstrip("\n")))
        hdr = "// CUCO-EXPECT-REJECT: %s\n" % expect
        with open(os.path.join(out, name + ".cu"), "w") as f:
            f.write(hdr + text)
    # frozen_edit: the step is honest, but frozen text (the setup) is edited
    # to drop the RECV kind of the gathered buffer (no more poison).
    text = seed.replace('RT_RECV, RT_BF16, RT_WINDOW);',
                        'RT_SCRATCH, RT_BF16, RT_WINDOW);  // edited', 1)
    if text == seed:
        sys.exit("gen-cheats: frozen_edit pattern not found in seed.cu")
    with open(os.path.join(out, "frozen_edit.cu"), "w") as f:
        # Cheat: edits frozen text (declares the receive buffer as SCRATCH
        # so the runtime stops poisoning it).
        f.write("// CUCO-EXPECT-REJECT: static frozen\n" + text)


if __name__ == "__main__":
    main()
