// workloads/moe_dsv3/baseline.cu - baseline A, host-driven (Megatron-style).
//
// layout kernel -> ncclAlltoAll of per-expert counts -> device-to-host copy
// and host sync -> permute + FP8 quantize -> per-peer ncclSend/ncclRecv in
// one group, exact sizes -> dequantize + expand -> cuBLAS GEMM1 per expert,
// SwiGLU, GEMM2 per expert -> weighted pre-reduce -> ncclSend/ncclRecv back
// -> shared expert -> final sum.  All on the step stream.  At R = 1 the
// rank sends to itself through NCCL, so the data takes the same path.
#define RT_HOST_ONLY  // host-driven: rt.cuh without the device API (it says why)

#include "moe_base.cuh"

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct mb *u = (struct mb *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  return mb_setup(ctx, p, u);
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  struct mb *u = (struct mb *)rt_get_user(ctx);
  struct moe_core *c = &u->c;
  const long long El = c->s.El;
  cudaStream_t st = rt_stream(ctx);
  if (mb_layout(ctx, u, st) != 0 || mb_pack(ctx, u, st) != 0 || mb_dispatch(ctx, u, st, 0) != 0)
    return -1;
  if (moe_expand(ctx, c, st, u->recv, NULL, u->nin, 0, c->eoff, c->eoff + 1, c->cursor) != 0 ||
      moe_experts(ctx, c, st, c->eoff_h, c->eoff_h + 1) != 0 || mb_reduce(ctx, u, st, 0, u->nin) != 0 ||
      mb_combine(ctx, u, st) != 0 || moe_shared(ctx, c, st) != 0 || mb_final(ctx, u, st) != 0)
    return -1;
  (void)El;
  return 0;
}

extern "C" void wl_teardown(struct wl_ctx *ctx) { mb_teardown(ctx); }
