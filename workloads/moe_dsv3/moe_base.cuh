// workloads/moe_dsv3/moe_base.cuh - host glue shared by the two host-driven
// baselines (baseline.cu = A, baseline_overlap.cu = B): the layout kernel,
// the permute+quantize kernel, the count exchange with its one host sync,
// the NCCL dispatch and combine.  Not used by the seed.
//
// Send side: records for destination d sit at SEND[DOFF[d] + POS[t][d]] in
// token order.  Receive side: records from source s at RECV[ROFF[s] + i],
// in the source's token order (NCCL keeps the order).  Combine returns the
// pre-reduced row of record i to RET[DOFF[d] + POS[t][d]] on the source.
#ifndef MOE_BASE_CUH
#define MOE_BASE_CUH

#include "wl_moe.cuh"

struct mb {
  struct moe_core c;  // first: the routing hook finds it
  int *pos;           // device [T][R]: position among my tokens for d, or -1
  unsigned *lay;      // device [R][1+El]: per destination: tokens, pairs per expert
  unsigned *cnt;      // device RECV counts [R][1+El] from every source
  unsigned *lay_h, *cnt_h;  // pinned
  long long *doff;    // device [R]
  long long *doff_h;  // pinned [R]
  unsigned char *send, *recv;  // records [R*T][RB]
  __nv_bfloat16 *red, *ret;    // [R*T][H] pre-reduced rows out / returned rows in
  long long n_to[MOE_MAX_RANKS], n_from[MOE_MAX_RANKS], roff[MOE_MAX_RANKS + 1];
  long long nin;               // records received
  cudaStream_t side, comm;
  cudaEvent_t fork, join, ev_comm, ev_side;
};

// Layout, one CTA of 1024 threads: POS[t][d] (token order), and LAY[d] =
// {tokens for d, pairs for each of d's experts}.  Dynamic shared memory:
// (R + E + 64) unsigned.
static __global__ void __launch_bounds__(1024)
mb_layout_kernel(const int32_t *ridx, long long T, int K, long long El, int R, int *pos,
                 unsigned *lay) {
  extern __shared__ unsigned mb_sh[];
  unsigned *tok = mb_sh, *pairs = mb_sh + R, *wsum = pairs + (long long)R * El;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  for (long long i = threadIdx.x; i < R + (long long)R * El; i += blockDim.x) mb_sh[i] = 0;
  __syncthreads();
  for (long long t0 = 0; t0 < T; t0 += blockDim.x) {
    const long long t = t0 + threadIdx.x;
    unsigned long long m = 0;
    if (t < T) {
      m = moe_dest_mask(ridx, t, K, El);
      for (int k = 0; k < K; k++) atomicAdd(&pairs[ridx[t * K + k]], 1u);
    }
    for (int d = 0; d < R; d++) {
      const bool has = (m >> d) & 1;
      const unsigned b = __ballot_sync(0xffffffffu, has);
      if (lane == 0) wsum[warp] = __popc(b);
      __syncthreads();
      unsigned before = 0, total = 0;
      for (int w = 0; w < nwarps; w++) {
        if (w < warp) before += wsum[w];
        total += wsum[w];
      }
      if (t < T) pos[t * R + d] = has ? (int)(tok[d] + before + __popc(b & ((1u << lane) - 1))) : -1;
      __syncthreads();
      if (threadIdx.x == 0) tok[d] += total;
      __syncthreads();
    }
  }
  for (long long i = threadIdx.x; i < (long long)R * (1 + El); i += blockDim.x) {
    long long d = i / (1 + El), j = i % (1 + El);
    lay[i] = j == 0 ? tok[d] : pairs[d * El + j - 1];
  }
}

// Permute + quantize: one warp per token; its record goes to every
// destination in its mask (codes, scales, meta for that destination).
static __global__ void __launch_bounds__(256)
mb_pack_kernel(const __nv_bfloat16 *X, const int32_t *ridx, const float *rw, const int *pos,
               const long long *doff, long long T, long long H, long long RB, long long META,
               int K, long long El, int R, unsigned char *send) {
  const int lane = threadIdx.x & 31;
  const long long wid = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32,
                  nw = (long long)gridDim.x * blockDim.x / 32;
  for (long long t = wid; t < T; t += nw) {
    const unsigned long long m = moe_dest_mask(ridx, t, K, El);
    for (long long ch = 0; ch * 512 < H; ch++) {
      uint4 codes;
      float sc;
      const bool on = moe_q8_chunk(X + (size_t)t * H, H, ch, lane, &codes, &sc);
      if (!on) continue;
      const long long c0 = ch * 512 + lane * 16;
      for (int d = 0; d < R; d++) {
        if (!(m >> d & 1)) continue;
        unsigned char *rec = send + (size_t)(doff[d] + pos[t * R + d]) * RB;
        *(uint4 *)(rec + c0) = codes;
        if ((lane & 7) == 0) *(float *)(rec + H + 4 * (c0 / MOE_Q8_BLOCK)) = sc;
      }
    }
    for (int d = lane; d < R; d += 32)
      if (m >> d & 1)
        moe_meta_write((int *)(send + (size_t)(doff[d] + pos[t * R + d]) * RB + META), t, ridx,
                       rw, K, El, d);
  }
}

// wl_setup of a baseline.  0 or rt_fail.
static inline int mb_setup(struct wl_ctx *ctx, const struct wl_problem *p, struct mb *u) {
  struct moe_core *c = &u->c;
  if (moe_core_init(ctx, p, c) != 0) return -1;
  const struct moe_shape *s = &c->s;
  const long long recs = moe_recs_cap(s), R = s->R, El = s->El;
  u->pos = (int *)rt_alloc(ctx, "mb_pos", sizeof(int) * s->T * R, RT_SCRATCH, RT_I32, 0);
  u->lay = (unsigned *)rt_alloc(ctx, "mb_lay", sizeof(unsigned) * R * (1 + El), RT_SCRATCH,
                                RT_U32, 0);
  u->cnt = (unsigned *)rt_alloc(ctx, "counts", sizeof(unsigned) * R * (1 + El), RT_RECV, RT_U32,
                                RT_COUNTS);
  u->doff = (long long *)rt_alloc(ctx, "mb_doff", sizeof(long long) * R, RT_SCRATCH, RT_I64, 0);
  u->send = (unsigned char *)rt_alloc(ctx, "mb_send", (size_t)recs * s->RB, RT_SCRATCH, RT_U8, 0);
  u->recv = (unsigned char *)rt_alloc(ctx, "recv", (size_t)recs * s->RB, RT_RECV, RT_U8, 0);
  u->red = (__nv_bfloat16 *)rt_alloc(ctx, "mb_red", (size_t)recs * s->H * 2, RT_SCRATCH, RT_BF16,
                                     0);
  u->ret = (__nv_bfloat16 *)rt_alloc(ctx, "ret", (size_t)recs * s->H * 2, RT_RECV, RT_BF16, 0);
  if (!u->pos || !u->lay || !u->cnt || !u->doff || !u->send || !u->recv || !u->red || !u->ret)
    return -1;
  RT_CUDA(ctx, cudaMallocHost((void **)&u->lay_h, sizeof(unsigned) * R * (1 + El)));
  RT_CUDA(ctx, cudaMallocHost((void **)&u->cnt_h, sizeof(unsigned) * R * (1 + El)));
  RT_CUDA(ctx, cudaMallocHost((void **)&u->doff_h, sizeof(long long) * R));
  RT_CUDA(ctx, cudaStreamCreateWithFlags(&u->side, cudaStreamNonBlocking));
  RT_CUDA(ctx, cudaStreamCreateWithFlags(&u->comm, cudaStreamNonBlocking));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->fork, cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->join, cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->ev_comm, cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->ev_side, cudaEventDisableTiming));
  return 0;
}

// Layout + count exchange + the one host sync, then the host plan: n_to,
// doff (uploaded), n_from, roff, and the expert ranges in c->eoff_h[0..]
// (beg = row 0 of the set: [0][El+1] offsets, all sources) plus, for B,
// [1]/[2] = own rows first then the others.  Enqueued on ST.
static inline int mb_layout(struct wl_ctx *ctx, struct mb *u, cudaStream_t st) {
  struct moe_core *c = &u->c;
  const struct moe_shape *s = &c->s;
  const int R = s->R;
  const long long El = s->El, W = 1 + El;
  const size_t shm = sizeof(unsigned) * (R + (size_t)R * El + 64);
  mb_layout_kernel<<<1, 1024, shm, st>>>(c->ridx, s->T, (int)s->K, El, R, u->pos, u->lay);
  RT_LAUNCH(ctx);
  RT_NCCL(ctx, ncclAlltoAll(u->lay, u->cnt, (size_t)W, ncclUint32, rt_comm(ctx), st));
  RT_CUDA(ctx, cudaMemcpyAsync(u->lay_h, u->lay, sizeof(unsigned) * R * W,
                               cudaMemcpyDeviceToHost, st));
  RT_CUDA(ctx, cudaMemcpyAsync(u->cnt_h, u->cnt, sizeof(unsigned) * R * W,
                               cudaMemcpyDeviceToHost, st));
  RT_CUDA(ctx, cudaStreamSynchronize(st));  // the host needs the counts (cuBLAS sizes)
  long long off = 0;
  for (int d = 0; d < R; d++) {
    u->n_to[d] = u->lay_h[(size_t)d * W];
    u->doff_h[d] = off;
    off += u->n_to[d];
  }
  u->nin = 0;
  for (int q = 0; q < R; q++) {
    unsigned v = u->cnt_h[(size_t)q * W];
    if (v == 0xFFFFFFFFu || v > (unsigned)s->T)
      return rt_fail(ctx, "counts from rank %d did not arrive or are invalid (%u)", q, v);
    u->n_from[q] = v;
    u->roff[q] = u->nin;
    u->nin += v;
  }
  u->roff[R] = u->nin;
  int *beg = c->eoff_h, *beg_own = beg + (El + 1), *beg_rest = beg + 2 * (El + 1);
  long long rows = 0;
  for (long long e = 0; e < El; e++) {
    long long own = 0, all = 0;
    for (int q = 0; q < R; q++) {
      unsigned v = u->cnt_h[(size_t)q * W + 1 + e];
      if (v > (unsigned)s->T) return rt_fail(ctx, "count of expert %lld from rank %d invalid", e, q);
      all += v;
      if (q == s->me) own = v;
    }
    beg[e] = (int)rows;
    beg_own[e] = (int)rows;
    beg_rest[e] = (int)(rows + own);
    rows += all;
  }
  beg[El] = beg_own[El] = beg_rest[El] = (int)rows;
  if (rows > moe_rows_cap(s)) return rt_fail(ctx, "more expert rows than the worst case");
  RT_CUDA(ctx, cudaMemcpyAsync(u->doff, u->doff_h, sizeof(long long) * R, cudaMemcpyHostToDevice,
                               st));
  RT_CUDA(ctx, cudaMemcpyAsync(c->eoff, c->eoff_h, sizeof(int) * 3 * (El + 1),
                               cudaMemcpyHostToDevice, st));
  RT_CUDA(ctx, cudaMemsetAsync(c->cursor, 0, sizeof(int) * 2 * El, st));
  return 0;
}

// Permute + quantize into the send buffer (on ST).
static inline int mb_pack(struct wl_ctx *ctx, struct mb *u, cudaStream_t st) {
  const struct moe_shape *s = &u->c.s;
  mb_pack_kernel<<<moe_grid(s->T * 32, 256), 256, 0, st>>>(
      (const __nv_bfloat16 *)u->c.X, u->c.ridx, u->c.rw, u->pos, u->doff, s->T, s->H, s->RB,
      s->META, (int)s->K, s->El, s->R, u->send);
  RT_LAUNCH(ctx);
  return 0;
}

// One NCCL group on ST: records to every destination (exact sizes) and
// from every source; SKIP_SELF leaves this rank's own records out.
static inline int mb_dispatch(struct wl_ctx *ctx, struct mb *u, cudaStream_t st, int skip_self) {
  const struct moe_shape *s = &u->c.s;
  ncclComm_t comm = rt_comm(ctx);
  RT_NCCL(ctx, ncclGroupStart());
  for (int d = 0; d < s->R; d++) {
    if (skip_self && d == s->me) continue;
    if (u->n_to[d])
      RT_NCCL(ctx, ncclSend(u->send + (size_t)u->doff_h[d] * s->RB, (size_t)u->n_to[d] * s->RB,
                            ncclUint8, d, comm, st));
    if (u->n_from[d])
      RT_NCCL(ctx, ncclRecv(u->recv + (size_t)u->roff[d] * s->RB,
                            (size_t)u->n_from[d] * s->RB, ncclUint8, d, comm, st));
  }
  RT_NCCL(ctx, ncclGroupEnd());
  return 0;
}

// Pre-reduce records [I0, I0+N) into RED (on ST).
static inline int mb_reduce(struct wl_ctx *ctx, struct mb *u, cudaStream_t st, long long i0,
                            long long n) {
  const struct moe_shape *s = &u->c.s;
  if (n <= 0) return 0;
  moe_reduce_kernel<<<moe_grid(n * 32, 256), 256, 0, st>>>(
      (const __nv_bfloat16 *)u->c.O, u->c.rec_rows, u->c.row_w, (int)s->K, s->H, i0, n, u->red);
  RT_LAUNCH(ctx);
  return 0;
}

// Combine: one NCCL group on ST returning every source's pre-reduced rows
// and receiving mine into RET (per-destination order, like SEND).
static inline int mb_combine(struct wl_ctx *ctx, struct mb *u, cudaStream_t st) {
  const struct moe_shape *s = &u->c.s;
  ncclComm_t comm = rt_comm(ctx);
  RT_NCCL(ctx, ncclGroupStart());
  for (int d = 0; d < s->R; d++) {
    if (u->n_from[d])
      RT_NCCL(ctx, ncclSend(u->red + (size_t)u->roff[d] * s->H, (size_t)u->n_from[d] * s->H,
                            ncclBfloat16, d, comm, st));
    if (u->n_to[d])
      RT_NCCL(ctx, ncclRecv(u->ret + (size_t)u->doff_h[d] * s->H, (size_t)u->n_to[d] * s->H,
                            ncclBfloat16, d, comm, st));
  }
  RT_NCCL(ctx, ncclGroupEnd());
  return 0;
}

// Final sum on ST: Y = returned rows + shared expert.
static inline int mb_final(struct wl_ctx *ctx, struct mb *u, cudaStream_t st) {
  const struct moe_shape *s = &u->c.s;
  moe_final_kernel<<<moe_grid(s->T * s->H / 8, 256), 256, 0, st>>>(
      (__nv_bfloat16 *)u->c.Y, u->ret, s->SH ? (const __nv_bfloat16 *)u->c.SHO : NULL, u->c.ridx,
      u->pos, u->doff, s->T, (int)s->K, s->El, s->R, s->H);
  RT_LAUNCH(ctx);
  return 0;
}

static inline void mb_teardown(struct wl_ctx *ctx) {
  struct mb *u = (struct mb *)rt_get_user(ctx);
  if (!u) return;
  if (u->lay_h) cudaFreeHost(u->lay_h);
  if (u->cnt_h) cudaFreeHost(u->cnt_h);
  if (u->doff_h) cudaFreeHost(u->doff_h);
  cudaEvent_t evs[4] = {u->fork, u->join, u->ev_comm, u->ev_side};
  for (int i = 0; i < 4; i++)
    if (evs[i]) cudaEventDestroy(evs[i]);
  if (u->side) cudaStreamDestroy(u->side);
  if (u->comm) cudaStreamDestroy(u->comm);
  moe_core_free(&u->c);
  free(u);
  rt_set_user(ctx, NULL);
}

#endif  // MOE_BASE_CUH
