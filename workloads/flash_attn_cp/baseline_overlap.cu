// workloads/flash_attn_cp/baseline_overlap.cu - baseline B: host-driven
// ring, overlapped (ring-flash-attention's structure, workloads.md section
// 1).  The ncclSend/ncclRecv of hop k+1 runs on a communication stream
// while the step stream computes step k; the KV is double-buffered (hop k
// lands in recv[k % 2]); events order the streams:
//   hop k+1 waits for the compute of step k-1 (it overwrites the buffer that
//   step read), step k waits for hop k.
// The merge is folded into the step: the frozen attention step reads and
// writes the fp32 state itself.  At R = 1 there is no communication.

#define RT_HOST_ONLY  // host-driven: rt.cuh without the device API (it says why)

#include "wl_attn.cuh"

struct bb {
  struct wa_shape s;
  struct wa_io io;
  struct attn_state st;
  __nv_bfloat16 *rb[2];
  cudaStream_t comm;
  cudaEvent_t fork, hop[2], comp[2], join;
};

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct bb *u = (struct bb *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  if (wa_shape_get(ctx, p, &u->s) != 0 || wa_alloc_io(ctx, &u->s, &u->io) != 0 ||
      wa_alloc_state(ctx, &u->s, "st", &u->st) != 0)
    return -1;
  for (int i = 0; i < 2 && u->s.R > 1; i++) {
    u->rb[i] = (__nv_bfloat16 *)rt_alloc(ctx, i ? "recv1" : "recv0", wa_kv_elems(&u->s) * 2,
                                         RT_RECV, RT_BF16, 0);
    if (!u->rb[i]) return -1;
  }
  RT_CUDA(ctx, cudaStreamCreateWithFlags(&u->comm, cudaStreamNonBlocking));
  cudaEvent_t *ev[6] = {&u->fork, &u->hop[0], &u->hop[1], &u->comp[0], &u->comp[1], &u->join};
  for (int i = 0; i < 6; i++)
    RT_CUDA(ctx, cudaEventCreateWithFlags(ev[i], cudaEventDisableTiming));
  return 0;
}

// Hop K (1..R-1) on the communication stream: send what step K-1 used,
// receive the shard of step K into recv[K % 2].
static int hop(struct wl_ctx *ctx, struct bb *u, int k) {
  const struct wa_shape *s = &u->s;
  const size_t n = wa_kv_elems(s);
  const __nv_bfloat16 *cur = k == 1 ? u->io.KV : u->rb[(k - 1) % 2];
  if (k >= 2) RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->comp[k % 2], 0));  // step k-2 read it
  RT_NCCL(ctx, ncclGroupStart());
  RT_NCCL(ctx, ncclSend(cur, n, ncclBfloat16, (s->me + 1) % s->R, rt_comm(ctx), u->comm));
  RT_NCCL(ctx, ncclRecv(u->rb[k % 2], n, ncclBfloat16, (s->me + s->R - 1) % s->R, rt_comm(ctx),
                        u->comm));
  RT_NCCL(ctx, ncclGroupEnd());
  RT_CUDA(ctx, cudaEventRecord(u->hop[k % 2], u->comm));
  return 0;
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  struct bb *u = (struct bb *)rt_get_user(ctx);
  const struct wa_shape *s = &u->s;
  cudaStream_t st = rt_stream(ctx);
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
  if (s->R > 1 && hop(ctx, u, 1) != 0) return -1;
  if (wa_state_init(ctx, s, u->st, st) != 0 ||
      wa_fold(ctx, s, s->me, u->io.Q, u->io.KV, u->st, -1, st) != 0)
    return -1;
  RT_CUDA(ctx, cudaEventRecord(u->comp[0], st));
  for (int k = 1; k < s->R; k++) {
    // comp[(k+1) % 2] now holds step k-1's record: hop k+1 waits for it.
    if (k + 1 < s->R && hop(ctx, u, k + 1) != 0) return -1;
    RT_CUDA(ctx, cudaStreamWaitEvent(st, u->hop[k % 2], 0));
    if (wa_fold(ctx, s, wa_src(s->R, s->me, k), u->io.Q, u->rb[k % 2], u->st, -1, st) != 0)
      return -1;
    RT_CUDA(ctx, cudaEventRecord(u->comp[k % 2], st));
  }
  RT_CUDA(ctx, cudaEventRecord(u->join, u->comm));
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->join, 0));
  return wa_finalize(ctx, s, u->st, &u->io, st);
}

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  struct bb *u = (struct bb *)rt_get_user(ctx);
  if (!u) return;
  cudaEvent_t ev[6] = {u->fork, u->hop[0], u->hop[1], u->comp[0], u->comp[1], u->join};
  for (int i = 0; i < 6; i++)
    if (ev[i]) cudaEventDestroy(ev[i]);
  if (u->comm) cudaStreamDestroy(u->comm);
  free(u);
  rt_set_user(ctx, NULL);
}
