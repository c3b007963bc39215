// workloads/kv_transfer/kv_base.cuh - host glue shared by the two
// host-driven baselines (baseline.cu: deferred, baseline_streamed.cu:
// streamed per layer): buffers, the row/run plan, NCCL send/recv of a
// layer, the scatter into the pages.  Not used by the seed.
#ifndef KV_BASE_CUH
#define KV_BASE_CUH

#include "wl_kv.cuh"

struct kb {
  struct kv_shape s;
  struct kv_core core;
  void *X, *W, *pool, *stage, *recv;
  long long *rslot;  // device: slab offset of every incoming row
  long long nrecv;   // incoming rows (decode ranks)
  int nslots;        // recv staging slots (layers held at once)
  int nsr[KV_MAX_RANKS], nrr[KV_MAX_RANKS];
  long long *sr_start[KV_MAX_RANKS], *sr_len[KV_MAX_RANKS];  // my sends to d
  long long *rr_len[KV_MAX_RANKS], *rr_roff[KV_MAX_RANKS];   // my receives from p
  cudaStream_t comm;
  cudaEvent_t fork, join, *layer;
};

// wl_setup of a baseline: NSLOTS recv staging slots (0 = one per layer).
static inline int kb_setup(struct wl_ctx *ctx, const struct wl_problem *p, struct kb *u,
                           int nslots) {
  struct kv_shape *s = &u->s;
  if (kv_shape_get(ctx, p, s) != 0) return -1;
  const long long n = 2 * s->W;
  u->nslots = nslots <= 0 || nslots > s->L ? (int)s->L : nslots;
  u->X = rt_alloc(ctx, "X", (size_t)s->S * s->DM * 2, RT_INPUT, RT_BF16, 0);
  u->W = rt_alloc(ctx, "W", (size_t)s->L * s->DM * n * 2, RT_INPUT, RT_BF16, 0);
  u->pool = rt_alloc(ctx, "pool", kv_pool_bytes(s), RT_OUTPUT, RT_BF16, 0);
  if (!u->X || !u->W || !u->pool) return -1;
  if (rt_output_shape(ctx, "pool", s->L * 2 * s->NB, (long long)KV_BLOCK * s->W) != 0)
    return -1;
  int *dst = (int *)malloc(sizeof(int) * s->S);
  int *pos = (int *)malloc(sizeof(int) * s->S);
  long long *slot = (long long *)malloc(sizeof(long long) * s->S);
  if (!dst || !pos || !slot ||
      kv_plan_rows(s, p->seed, s->me, dst, slot, pos, -1, NULL, NULL, NULL, NULL) != 0) {
    free(dst), free(pos), free(slot);
    return rt_fail(ctx, "out of memory");
  }
  int rc = s->is_prefill ? kv_core_init(ctx, s, &u->core, pos) : 0;
  free(dst), free(pos), free(slot);
  if (rc) return -1;
  if (s->is_prefill) {
    u->stage = rt_alloc(ctx, "stage", (size_t)s->L * s->S * n * 2, RT_SCRATCH, RT_BF16, 0);
    if (!u->stage) return -1;
    for (int d = 0; d < s->R; d++) {
      u->sr_start[d] = (long long *)malloc(sizeof(long long) * s->NREQ);
      u->sr_len[d] = (long long *)malloc(sizeof(long long) * s->NREQ);
      long long *tmp = (long long *)malloc(sizeof(long long) * s->NREQ);
      if (!u->sr_start[d] || !u->sr_len[d] || !tmp) return rt_fail(ctx, "out of memory");
      u->nsr[d] = kv_runs(s, p->seed, s->me, d, u->sr_start[d], u->sr_len[d], tmp);
      free(tmp);
      if (u->nsr[d] < 0) return rt_fail(ctx, "out of memory");
    }
  }
  if (s->is_decode) {
    u->nrecv = kv_recv_rows(s, s->me);
    if (u->nrecv > 0) {
      long long *rs = (long long *)malloc(sizeof(long long) * u->nrecv);
      if (!rs || kv_plan_rows(s, p->seed, -1, NULL, NULL, NULL, s->me, rs, NULL, NULL, NULL)) {
        free(rs);
        return rt_fail(ctx, "out of memory");
      }
      u->rslot = (long long *)rt_alloc(ctx, "rslot", sizeof(long long) * u->nrecv, RT_SCRATCH,
                                       RT_I64, 0);
      u->recv = rt_alloc(ctx, "recv", (size_t)u->nslots * u->nrecv * n * 2, RT_RECV, RT_BF16, 0);
      if (!u->rslot || !u->recv) {
        free(rs);
        return -1;
      }
      cudaError_t e = cudaMemcpy(u->rslot, rs, sizeof(long long) * u->nrecv,
                                 cudaMemcpyHostToDevice);
      free(rs);
      RT_CUDA(ctx, e);
    }
    for (int q = 0; q < s->P; q++) {
      long long *tmp = (long long *)malloc(sizeof(long long) * s->NREQ);
      u->rr_len[q] = (long long *)malloc(sizeof(long long) * s->NREQ);
      u->rr_roff[q] = (long long *)malloc(sizeof(long long) * s->NREQ);
      if (!tmp || !u->rr_len[q] || !u->rr_roff[q]) return rt_fail(ctx, "out of memory");
      u->nrr[q] = kv_runs(s, p->seed, q, s->me, tmp, u->rr_len[q], u->rr_roff[q]);
      free(tmp);
      if (u->nrr[q] < 0) return rt_fail(ctx, "out of memory");
    }
  }
  RT_CUDA(ctx, cudaStreamCreateWithFlags(&u->comm, cudaStreamNonBlocking));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->fork, cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->join, cudaEventDisableTiming));
  u->layer = (cudaEvent_t *)calloc(s->L, sizeof(cudaEvent_t));
  if (!u->layer) return rt_fail(ctx, "out of memory");
  for (long long l = 0; l < s->L; l++)
    RT_CUDA(ctx, cudaEventCreateWithFlags(&u->layer[l], cudaEventDisableTiming));
  return 0;
}

// Enqueue (inside the caller's ncclGroupStart/End) the sends and receives
// of layer L on STREAM; received rows go to recv slot SLOT.
static inline int kb_xfer_layer(struct wl_ctx *ctx, struct kb *u, long long l, int slot,
                                cudaStream_t stream) {
  const struct kv_shape *s = &u->s;
  const long long n = 2 * s->W;
  ncclComm_t comm = rt_comm(ctx);
  if (s->is_prefill)
    for (int d = 0; d < s->R; d++)
      for (int k = 0; k < u->nsr[d]; k++)
        RT_NCCL(ctx, ncclSend((const __nv_bfloat16 *)u->stage +
                                  ((size_t)l * s->S + u->sr_start[d][k]) * n,
                              (size_t)u->sr_len[d][k] * n, ncclBfloat16, d, comm, stream));
  if (s->is_decode)
    for (int q = 0; q < s->P; q++)
      for (int k = 0; k < u->nrr[q]; k++)
        RT_NCCL(ctx, ncclRecv((__nv_bfloat16 *)u->recv +
                                  ((size_t)slot * u->nrecv + u->rr_roff[q][k]) * n,
                              (size_t)u->rr_len[q][k] * n, ncclBfloat16, q, comm, stream));
  return 0;
}

// Enqueue the scatter of recv slot SLOT (layer L) into the pool.
static inline int kb_scatter_layer(struct wl_ctx *ctx, struct kb *u, long long l, int slot,
                                   cudaStream_t stream) {
  const struct kv_shape *s = &u->s;
  if (!s->is_decode || u->nrecv == 0) return 0;
  kv_scatter_kernel<<<kv_grid(u->nrecv * 2 * (s->W / 8), 256), 256, 0, stream>>>(
      (__nv_bfloat16 *)u->pool,
      (const __nv_bfloat16 *)u->recv + (size_t)slot * u->nrecv * 2 * s->W, u->rslot, 0,
      u->nrecv, s->W, l, (long long)kv_slab_elems(s));
  RT_LAUNCH(ctx);
  return 0;
}

static inline void kb_teardown(struct wl_ctx *ctx) {
  struct kb *u = (struct kb *)rt_get_user(ctx);
  if (!u) return;
  for (int d = 0; d < KV_MAX_RANKS; d++) {
    free(u->sr_start[d]), free(u->sr_len[d]);
    free(u->rr_len[d]), free(u->rr_roff[d]);
  }
  if (u->layer)
    for (long long l = 0; l < u->s.L; l++)
      if (u->layer[l]) cudaEventDestroy(u->layer[l]);
  free(u->layer);
  if (u->fork) cudaEventDestroy(u->fork);
  if (u->join) cudaEventDestroy(u->join);
  if (u->comm) cudaStreamDestroy(u->comm);
  kv_core_free(&u->core);
  free(u);
  rt_set_user(ctx, NULL);
}

#endif  // KV_BASE_CUH
