// workloads/flash_attn_cp/baseline.cu - baseline A: host-driven ring,
// sequential (workloads.md section 1).  Per step s = 1..R-1, on the step
// stream: ncclGroupStart; ncclSend of the KV shard held now to rank r+1;
// ncclRecv of the next one from rank r-1; ncclGroupEnd; then the frozen
// attention step writes fp32 partials for the pairs this rank computes
// against that shard, and attn_state_merge folds them into the running
// state.  Step 0 folds the own shard straight into the state.  At R = 1
// there is no communication.

#define RT_HOST_ONLY  // host-driven: rt.cuh without the device API (it says why)

#include "wl_attn.cuh"

struct ba {
  struct wa_shape s;
  struct wa_io io;
  struct attn_state st, pt;  // running state, one step's partials
  __nv_bfloat16 *rb[2];      // receive buffers (RECV: poisoned every step)
};

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct ba *u = (struct ba *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  if (wa_shape_get(ctx, p, &u->s) != 0 || wa_alloc_io(ctx, &u->s, &u->io) != 0 ||
      wa_alloc_state(ctx, &u->s, "st", &u->st) != 0 ||
      wa_alloc_state(ctx, &u->s, "pt", &u->pt) != 0)
    return -1;
  for (int i = 0; i < 2 && u->s.R > 1; i++) {
    u->rb[i] = (__nv_bfloat16 *)rt_alloc(ctx, i ? "recv1" : "recv0", wa_kv_elems(&u->s) * 2,
                                         RT_RECV, RT_BF16, 0);
    if (!u->rb[i]) return -1;
  }
  return 0;
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  struct ba *u = (struct ba *)rt_get_user(ctx);
  const struct wa_shape *s = &u->s;
  cudaStream_t st = rt_stream(ctx);
  const size_t n = wa_kv_elems(s);
  if (wa_state_init(ctx, s, u->st, st) != 0 ||
      wa_fold(ctx, s, s->me, u->io.Q, u->io.KV, u->st, -1, st) != 0)
    return -1;
  const __nv_bfloat16 *cur = u->io.KV;
  for (int k = 1; k < s->R; k++) {
    __nv_bfloat16 *next = u->rb[k % 2];
    RT_NCCL(ctx, ncclGroupStart());
    RT_NCCL(ctx, ncclSend(cur, n, ncclBfloat16, (s->me + 1) % s->R, rt_comm(ctx), st));
    RT_NCCL(ctx, ncclRecv(next, n, ncclBfloat16, (s->me + s->R - 1) % s->R, rt_comm(ctx), st));
    RT_NCCL(ctx, ncclGroupEnd());
    if (wa_state_init(ctx, s, u->pt, st) != 0 ||
        wa_fold(ctx, s, wa_src(s->R, s->me, k), u->io.Q, next, u->pt, -1, st) != 0)
      return -1;
    RT_CUDA(ctx, attn_state_merge(u->st, u->pt, (int)s->HQ, (int)s->D, st));
    cur = next;
  }
  return wa_finalize(ctx, s, u->st, &u->io, st);
}

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  free(rt_get_user(ctx));
  rt_set_user(ctx, NULL);
}
