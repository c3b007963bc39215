// workloads/gemm_allgather/baseline.cu - host-driven baseline:
// ncclAllGather of A into the gathered buffer, then one cuBLASLt bf16 GEMM
// (fp32 accumulate, bf16 output) of the whole gathered A with this rank's B.

#define RT_HOST_ONLY  // host-driven: rt.cuh without the device API (it says why)

#include <stdlib.h>
#include <string.h>

#include "rt.cuh"
#include "wl_gemm.cuh"

struct bl {
  struct wl_shape s;
  cublasLtHandle_t lt;
  struct wl_gemm g;
  void *A, *B, *C, *Ag;
};

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct bl *u = (struct bl *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  if (wl_shape_get(ctx, p, &u->s) != 0) return -1;
  const struct wl_shape *s = &u->s;
  size_t ws_bytes = (size_t)32 << 20;
  u->A = rt_alloc(ctx, "A", (size_t)s->Mr * s->K * 2, RT_INPUT, RT_BF16, 0);
  u->B = rt_alloc(ctx, "B", (size_t)s->K * s->Nr * 2, RT_INPUT, RT_BF16, 0);
  u->C = rt_alloc(ctx, "C", (size_t)s->M * s->Nr * 2, RT_OUTPUT, RT_BF16, 0);
  u->Ag = rt_alloc(ctx, "Ag", (size_t)s->M * s->K * 2, RT_RECV, RT_BF16, 0);
  void *ws = rt_alloc(ctx, "ws", ws_bytes, RT_SCRATCH, RT_U8, 0);
  if (!u->A || !u->B || !u->C || !u->Ag || !ws) return -1;
  if (rt_output_shape(ctx, "C", s->M, s->Nr) != 0) return -1;
  if (rt_output_blocks(ctx, "C", s->M < 16 ? s->M : 16) != 0) return -1;  // 16-row blocks
  WL_LT(ctx, cublasLtCreate(&u->lt));
  return wl_gemm_plan(ctx, &u->g, u->lt, s->M, s->Nr, s->K, s->K, s->Nr, s->Nr,
                      1, 0, 0, ws, ws_bytes, 256, 256);
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  struct bl *u = (struct bl *)rt_get_user(ctx);
  cudaStream_t st = rt_stream(ctx);
  RT_NCCL(ctx, ncclAllGather(u->A, u->Ag, (size_t)u->s.Mr * u->s.K,
                             ncclBfloat16, rt_comm(ctx), st));
  return wl_gemm_run(ctx, &u->g, u->lt, u->Ag, u->B, u->C, st);
}

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  struct bl *u = (struct bl *)rt_get_user(ctx);
  if (!u) return;
  wl_gemm_free(&u->g);
  if (u->lt) cublasLtDestroy(u->lt);
  free(u);
  rt_set_user(ctx, NULL);
}
