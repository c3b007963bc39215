// workloads/kv_transfer/tools/compute_only.cu - NOT an implementation: it
// runs only the frozen compute (every layer's GEMM + RoPE into staging)
// and never writes the pool, so the harness rejects it (poison).  Its
// bench timing is C_prefill, the compute term of the overlap bound
// (workloads.md section 3); tests/gpu/kv_transfer.sh reports it as such.
#include "kv_base.cuh"

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct kb *u = (struct kb *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  return kb_setup(ctx, p, u, 1);
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  struct kb *u = (struct kb *)rt_get_user(ctx);
  const struct kv_shape *s = &u->s;
  const long long n = 2 * s->W;
  if (s->is_prefill)
    for (long long l = 0; l < s->L; l++)
      if (kv_compute_layer(ctx, s, &u->core, u->X, u->W, l,
                           (char *)u->stage + (size_t)l * s->S * n * 2, rt_stream(ctx)) != 0)
        return -1;
  return 0;
}

extern "C" void wl_teardown(struct wl_ctx *ctx) { kb_teardown(ctx); }
