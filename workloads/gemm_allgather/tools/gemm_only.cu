// workloads/gemm_allgather/tools/gemm_only.cu - NOT an implementation: the
// GEMM-alone probe of the overlap bound (issue 8).  At 1 rank the gathered
// A is A itself, so this is the baseline's local GEMM (the frozen
// cuBLASLt plan of wl_gemm.cuh, same shape and workspace) without the
// all-gather, and it passes verification.  tests/gpu/two_rank.sh runs it
// at 1 rank with N = N/R to get "GEMM alone" of an R-rank run:
//   bound(R) = max(GEMM alone on [M,K] x [K,N/R], ncclAllGather of A_r).
// More than one rank is refused (it would skip the all-gather).

// No device-API code here: rt.cuh without <nccl_device.h> (rt.cuh says
// why: ~4.5 s of CPU less a compile).
#define RT_HOST_ONLY

#include <stdlib.h>
#include <string.h>

#include "rt.cuh"
#include "wl_gemm.cuh"

struct go {
  struct wl_shape s;
  cublasLtHandle_t lt;
  struct wl_gemm g;
  void *A, *B, *C;
};

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  if (p->nranks != 1)
    return rt_fail(ctx, "tools/gemm_only.cu is the 1-rank GEMM-alone probe (got %d ranks); "
                        "run it with N = N/R at 1 rank",
                   p->nranks);
  struct go *u = (struct go *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  if (wl_shape_get(ctx, p, &u->s) != 0) return -1;
  const struct wl_shape *s = &u->s;
  size_t ws_bytes = (size_t)32 << 20;  // as baseline.cu
  u->A = rt_alloc(ctx, "A", (size_t)s->Mr * s->K * 2, RT_INPUT, RT_BF16, 0);
  u->B = rt_alloc(ctx, "B", (size_t)s->K * s->Nr * 2, RT_INPUT, RT_BF16, 0);
  u->C = rt_alloc(ctx, "C", (size_t)s->M * s->Nr * 2, RT_OUTPUT, RT_BF16, 0);
  void *ws = rt_alloc(ctx, "ws", ws_bytes, RT_SCRATCH, RT_U8, 0);
  if (!u->A || !u->B || !u->C || !ws) return -1;
  if (rt_output_shape(ctx, "C", s->M, s->Nr) != 0) return -1;
  WL_LT(ctx, cublasLtCreate(&u->lt));
  return wl_gemm_plan(ctx, &u->g, u->lt, s->M, s->Nr, s->K, s->K, s->Nr, s->Nr, 1, 0, 0, ws,
                      ws_bytes, 256, 256);
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  struct go *u = (struct go *)rt_get_user(ctx);
  return wl_gemm_run(ctx, &u->g, u->lt, u->A, u->B, u->C, rt_stream(ctx));
}

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  struct go *u = (struct go *)rt_get_user(ctx);
  if (!u) return;
  wl_gemm_free(&u->g);
  if (u->lt) cublasLtDestroy(u->lt);
  free(u);
  rt_set_user(ctx, NULL);
}
