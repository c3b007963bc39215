// workloads/moe_dsv3/baseline_overlap.cu - baseline B, host-driven, stronger.
//
// As A (baseline.cu), plus:
//  - the shared expert runs on a second stream from the start of the step
//    (during the layout, the count sync and the dispatch);
//  - this rank's own tokens never go through NCCL: they are expanded
//    straight from the send buffer, and their expert GEMMs run on the step
//    stream while the dispatch of the other ranks' tokens is in flight on a
//    communication stream (the trick CUCo's search found for MoE, done by
//    the host); the other sources' rows follow, expert by expert;
//  - the streams join before the final sum.
// Expert e's rows: [own rows | rows from the other ranks].
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
  const struct moe_shape *s = &c->s;
  const long long El = s->El, W = El + 1;
  const int me = s->me;
  cudaStream_t st = rt_stream(ctx);
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->side, u->fork, 0));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
  if (moe_shared(ctx, c, u->side) != 0) return -1;
  RT_CUDA(ctx, cudaEventRecord(u->ev_side, u->side));
  if (mb_layout(ctx, u, st) != 0 || mb_pack(ctx, u, st) != 0) return -1;
  RT_CUDA(ctx, cudaEventRecord(u->join, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->join, 0));
  if (mb_dispatch(ctx, u, u->comm, 1) != 0) return -1;
  RT_CUDA(ctx, cudaEventRecord(u->ev_comm, u->comm));
  // Own tokens: ids [roff[me], roff[me] + n_me), rows [own ranges].
  const int *own_b = c->eoff + W, *own_e = c->eoff + 2 * W, *rest_b = c->eoff + 2 * W,
            *rest_e = c->eoff + 1;
  if (moe_expand(ctx, c, st, u->send + (size_t)u->doff_h[me] * s->RB, NULL, u->n_to[me],
                 u->roff[me], own_b, own_e, c->cursor) != 0 ||
      moe_experts(ctx, c, st, c->eoff_h + W, c->eoff_h + 2 * W) != 0)
    return -1;
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->ev_comm, 0));
  const long long after = u->roff[me] + u->n_from[me];
  if (moe_expand(ctx, c, st, u->recv, NULL, u->roff[me], 0, rest_b, rest_e, c->cursor + El) != 0 ||
      moe_expand(ctx, c, st, u->recv + (size_t)after * s->RB, NULL, u->nin - after, after,
                 rest_b, rest_e, c->cursor + El) != 0 ||
      moe_experts(ctx, c, st, c->eoff_h + 2 * W, c->eoff_h + 1) != 0)
    return -1;
  if (mb_reduce(ctx, u, st, 0, u->nin) != 0 || mb_combine(ctx, u, st) != 0) return -1;
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->ev_side, 0));
  return mb_final(ctx, u, st);
}

extern "C" void wl_teardown(struct wl_ctx *ctx) { mb_teardown(ctx); }
