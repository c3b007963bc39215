// workloads/kv_transfer/baseline.cu - baseline A, host-driven and deferred.
//
// Prefill ranks: every layer's [K|V] = X * W_l plus RoPE into contiguous
// staging [L][S][2W]; then ONE ncclGroup with the sends of all layers to
// every decode rank (a single send per (p, d) pair when one prefill rank
// feeds one decode rank: all layers are contiguous), matched by receives
// into staging [L][rows][2W] on the decode rank; then a scatter kernel per
// layer moves the rows into the shuffled pages of the pool.  At R = 1 the
// rank sends to itself through NCCL, so the data takes the same path.
#define RT_HOST_ONLY  // host-driven: rt.cuh without the device API (it says why)

#include "kv_base.cuh"

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct kb *u = (struct kb *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  return kb_setup(ctx, p, u, 0);
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  struct kb *u = (struct kb *)rt_get_user(ctx);
  const struct kv_shape *s = &u->s;
  cudaStream_t st = rt_stream(ctx);
  const long long n = 2 * s->W;
  if (s->is_prefill)
    for (long long l = 0; l < s->L; l++)
      if (kv_compute_layer(ctx, s, &u->core, u->X, u->W, l,
                           (char *)u->stage + (size_t)l * s->S * n * 2, st) != 0)
        return -1;
  RT_NCCL(ctx, ncclGroupStart());
  if (s->P == 1 && s->D == 1) {  // one pair: all layers in one message
    const size_t count = (size_t)s->L * s->S * n;
    if (s->is_prefill)
      RT_NCCL(ctx, ncclSend(u->stage, count, ncclBfloat16, s->R - 1, rt_comm(ctx), st));
    if (s->is_decode)
      RT_NCCL(ctx, ncclRecv(u->recv, count, ncclBfloat16, 0, rt_comm(ctx), st));
  } else {
    for (long long l = 0; l < s->L; l++)
      if (kb_xfer_layer(ctx, u, l, (int)l, st) != 0) {
        ncclGroupEnd();
        return -1;
      }
  }
  RT_NCCL(ctx, ncclGroupEnd());
  for (long long l = 0; l < s->L; l++)
    if (kb_scatter_layer(ctx, u, l, (int)l, st) != 0) return -1;
  return 0;
}

extern "C" void wl_teardown(struct wl_ctx *ctx) { kb_teardown(ctx); }
