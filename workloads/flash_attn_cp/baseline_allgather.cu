// workloads/flash_attn_cp/baseline_allgather.cu - baseline C (Llama-3
// style, workloads.md section 1): ncclAllGather of every rank's KV shard
// into one receive buffer, then the frozen attention step for the pairs
// this rank computes against each shard, folded into one fp32 state (the
// own shard straight from the input).  Cheap under GQA: the shards are
// small next to the compute.

#define RT_HOST_ONLY  // host-driven: rt.cuh without the device API (it says why)

#include "wl_attn.cuh"

struct bc {
  struct wa_shape s;
  struct wa_io io;
  struct attn_state st;
  __nv_bfloat16 *all;  // [R][KV shard], RECV
};

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct bc *u = (struct bc *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  if (wa_shape_get(ctx, p, &u->s) != 0 || wa_alloc_io(ctx, &u->s, &u->io) != 0 ||
      wa_alloc_state(ctx, &u->s, "st", &u->st) != 0)
    return -1;
  if (u->s.R > 1) {
    u->all = (__nv_bfloat16 *)rt_alloc(ctx, "kv_all", wa_kv_elems(&u->s) * 2 * u->s.R, RT_RECV,
                                       RT_BF16, 0);
    if (!u->all) return -1;
  }
  return 0;
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  struct bc *u = (struct bc *)rt_get_user(ctx);
  const struct wa_shape *s = &u->s;
  cudaStream_t st = rt_stream(ctx);
  const size_t n = wa_kv_elems(s);
  if (s->R > 1)
    RT_NCCL(ctx, ncclAllGather(u->io.KV, u->all, n, ncclBfloat16, rt_comm(ctx), st));
  if (wa_state_init(ctx, s, u->st, st) != 0) return -1;
  for (int k = 0; k < s->R; k++) {
    const int src = wa_src(s->R, s->me, k);
    const __nv_bfloat16 *kv = src == s->me ? u->io.KV : u->all + (size_t)src * n;
    if (wa_fold(ctx, s, src, u->io.Q, kv, u->st, -1, st) != 0) return -1;
  }
  return wa_finalize(ctx, s, u->st, &u->io, st);
}

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  free(rt_get_user(ctx));
  rt_set_user(ctx, NULL);
}
