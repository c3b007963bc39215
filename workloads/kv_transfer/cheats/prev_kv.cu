// CUCO-EXPECT-REJECT: verify fresh-inputs rel-l2 (KV computed once and replayed)
// workloads/kv_transfer/seed.cu - device-initiated KV handoff (LSA push).
//
// Prefill ranks compute every layer's [K|V] = X * W_l and RoPE (the frozen
// core in wl_kv.cuh) into staging; a push kernel on a communication stream
// copies each token's K and V rows straight into the decode rank's paged
// pool (symmetric window "pool") through ncclGetLsaPointer with 16-byte
// stores, then release-stores the layer's ready flag(s) on that decode rank
// with the current epoch (nccl-device-api.md 3.6 / 5.3).  The decode rank's
// wait kernel spins until every flag of every layer from every sender
// carries the epoch; only then does its step stream move on, so its clock
// stops when all KV is in place.  At R = 1 the rank pushes into its own
// pool through the same window path and waits on its own flags.
//
// Flags carry rt_epoch(): the runtime advances it before every step, so no
// flag is ever reset and nothing from an earlier step satisfies a wait.
// Code outside the EVOLVE blocks is frozen.
#include <stdlib.h>
#include <string.h>

#include <cuda/atomic>

#include "rt.cuh"
#include "wl_kv.cuh"

#define SD_FLAG_SLOTS 16  // flags per (sender, layer): one per comm CTA at most

struct sd {
  struct kv_shape s;
  struct kv_core core;
  void *X, *W, *pool, *stage;
  unsigned long long *flags;  // window [R][L][SD_FLAG_SLOTS]: epochs
  unsigned long long *done;   // local [L]: CTA completion counters
  int *dst;                   // device [S]: decode (LSA) rank of each row
  long long *slot;            // device [S]: slab offset of each row
  unsigned long long dmask;   // decode ranks I send to
  unsigned long long pmask;   // prefill ranks that send to me
  ncclWindow_t pool_win, flag_win, stage_win;
  ncclDevComm dc;
  cudaStream_t comm;
  cudaEvent_t fork, join, *layer;
};

// EVOLVE-BLOCK-START
// CUCO-DIRECTIVES backend=lsa placement=deferred sync=per_peer issuer=cta chunk=1MiB
// CUCO-PARAM comm_ctas=8
// CUCO-PARAM push_threads=512
// CHEAT cheats/prev_kv.cu (must be rejected; made by tools/make_cheats.py):
// the KV projection runs only in the first step; later steps push the
// staging left from it (the previous step's KV) into the fresh pool.
#ifndef CUCO_PARAM_comm_ctas
#define CUCO_PARAM_comm_ctas 8
#endif
#ifndef CUCO_PARAM_push_threads
#define CUCO_PARAM_push_threads 512
#endif
#if CUCO_PLACEMENT == CUCO_PLACEMENT_PER_TILE
#error "placement=per_tile needs the shared GEMM tile core (runtime/gemm_tile.cuh); use deferred or split"
#endif
// sync=global is not in this workload's space (a barrier over all ranks
// would also stall prefill ranks on each other); it builds as per_peer.
#if CUCO_PARAM_comm_ctas > SD_FLAG_SLOTS
#error "comm_ctas must be at most SD_FLAG_SLOTS"
#endif

__device__ static inline void sd_store_release(unsigned long long *p, unsigned long long v) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> f(*p);
  f.store(v, cuda::memory_order_release);
}

// Copy one token row (K and V, W elements each) of layer L to its slot in
// the decode rank's pool; VEC16 = W / 8 uint4 per half; lanes [LANE, .. by
// NLANES) of the issuer take the 16-byte pieces.
__device__ static inline void sd_row(ncclWindow_t pool_win, const uint4 *src, int d,
                                     long long slot, long long l, long long slab,
                                     long long vec16, unsigned lane, unsigned nlanes) {
  // The peer's K and V rows of this token (a window maps contiguously).
  uint4 *kd = (uint4 *)ncclGetLsaPointer(pool_win, ((size_t)(l * 2) * slab + slot) * 2, d);
  uint4 *vd = kd + (size_t)slab / 8;  // slab elements of bf16 = slab / 8 uint4
  for (long long k = lane; k < 2 * vec16; k += nlanes)
    (k < vec16 ? kd : vd - vec16)[k] = src[k];
}

// Push layers [L0, L1) of this prefill rank: CTA b takes items b, b+G, ...
// of TPI rows each; then signals (sync=per_chunk: its own flag; per_peer:
// the last CTA of the layer raises the layer flag) on every decode rank in
// DMASK.
__global__ void __launch_bounds__(1024)
sd_push(ncclWindow_t pool_win, ncclWindow_t flag_win, const __nv_bfloat16 *stage,
        const int *dst, const long long *slot, long long S, long long W, long long slab,
        long long L, long long l0, long long l1, long long tpi, int me,
        unsigned long long dmask, unsigned long long epoch, unsigned long long *done) {
  const long long vec16 = W / 8, items = (S + tpi - 1) / tpi;
  for (long long l = l0; l < l1; l++) {
    const uint4 *lay = (const uint4 *)(stage + (size_t)l * S * 2 * W);
    for (long long it = blockIdx.x; it < items; it += gridDim.x) {
      long long r0 = it * tpi, r1 = r0 + tpi < S ? r0 + tpi : S;
#if CUCO_ISSUER == CUCO_ISSUER_CTA
      for (long long r = r0; r < r1; r++)
        sd_row(pool_win, lay + r * 2 * vec16, dst[r], slot[r], l, slab, vec16, threadIdx.x,
               blockDim.x);
#elif CUCO_ISSUER == CUCO_ISSUER_WARP
      for (long long r = r0 + threadIdx.x / 32; r < r1; r += blockDim.x / 32)
        sd_row(pool_win, lay + r * 2 * vec16, dst[r], slot[r], l, slab, vec16,
               threadIdx.x & 31, 32);
#else
      for (long long r = r0 + threadIdx.x; r < r1; r += blockDim.x)
        sd_row(pool_win, lay + r * 2 * vec16, dst[r], slot[r], l, slab, vec16, 0, 1);
#endif
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
#if CUCO_SYNC == CUCO_SYNC_PER_CHUNK
      for (int d = 0; d < 64; d++)
        if (dmask >> d & 1)
          sd_store_release((unsigned long long *)ncclGetLsaPointer(
                               flag_win, (((size_t)me * L + l) * SD_FLAG_SLOTS + blockIdx.x) * 8,
                               d),
                           epoch);
#else
      unsigned long long old = atomicAdd(&done[l], 1ull);
      if (old == epoch * gridDim.x - 1) {  // the last CTA of layer l
        __threadfence_system();
        for (int d = 0; d < 64; d++)
          if (dmask >> d & 1)
            sd_store_release((unsigned long long *)ncclGetLsaPointer(
                                 flag_win, (((size_t)me * L + l) * SD_FLAG_SLOTS) * 8, d),
                             epoch);
      }
#endif
    }
  }
}

// Decode side: spin until every flag of every layer from every sender in
// PMASK holds EPOCH (NF flags per layer).
__global__ void sd_wait(const unsigned long long *flags, unsigned long long pmask, long long L,
                        int nf, unsigned long long epoch) {
  for (int p = 0; p < 64; p++) {
    if (!(pmask >> p & 1)) continue;
    for (long long k = threadIdx.x; k < L * nf; k += blockDim.x) {
      cuda::atomic_ref<const unsigned long long, cuda::thread_scope_system> f(
          flags[((size_t)p * L + k / nf) * SD_FLAG_SLOTS + k % nf]);
      while (f.load(cuda::memory_order_acquire) < epoch) __nanosleep(64);
    }
  }
  __syncthreads();
}

#if CUCO_BACKEND == CUCO_BACKEND_GIN
// GIN variant (multi-node; compiled, not exercised on one node): one put
// per row half from the staging window, one signal per (CTA, layer) and
// decode rank; signal id = sender * L + layer counts G arrivals per step.
__global__ void sd_push_gin(ncclDevComm dc, ncclWindow_t pool_win, ncclWindow_t stage_win,
                            const int *dst, const long long *slot, long long S, long long W,
                            long long slab, long long L, long long l0, long long l1,
                            long long tpi, int me, unsigned long long dmask) {
  if (dc.ginContextCount == 0) return;
  ncclGin gin(dc, 0);
  const long long items = (S + tpi - 1) / tpi;
  for (long long l = l0; l < l1; l++) {
    for (long long it = blockIdx.x; it < items; it += gridDim.x)
      for (long long r = it * tpi; r < (it + 1) * tpi && r < S; r++)
        for (int kv = 0; kv < 2; kv++)
          gin.put(ncclTeamWorld(dc), dst[r], pool_win,
                  ((size_t)(l * 2 + kv) * slab + slot[r]) * 2, stage_win,
                  ((size_t)l * S * 2 * W + r * 2 * W + kv * W) * 2, (size_t)W * 2,
                  ncclGin_None{}, ncclGin_None{}, ncclCoopCta());
    for (int d = 0; d < 64; d++)
      if (dmask >> d & 1)
        gin.signal(ncclTeamWorld(dc), d, ncclGin_SignalInc{(unsigned)(me * L + l)},
                   ncclCoopCta());
  }
  gin.flush(ncclCoopCta());
}

__global__ void sd_wait_gin(ncclDevComm dc, unsigned long long pmask, long long L, int g,
                            unsigned long long epoch) {
  if (dc.ginContextCount == 0) return;
  ncclGin gin(dc, 0);
  for (int p = 0; p < 64; p++)
    if (pmask >> p & 1)
      for (long long l = 0; l < L; l++)
        gin.waitSignal(ncclCoopCta(), (unsigned)(p * L + l), epoch * g);
}
#endif

static int push(struct wl_ctx *ctx, struct sd *u, long long l0, long long l1,
                unsigned long long ep) {
  const struct kv_shape *s = &u->s;
  long long tpi = CUCO_CHUNK_BYTES / (4 * s->W);
  if (tpi < 1) tpi = 1;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  sd_push_gin<<<CUCO_PARAM_comm_ctas, 32, 0, u->comm>>>(
      u->dc, u->pool_win, u->stage_win, u->dst, u->slot, s->S, s->W,
      (long long)kv_slab_elems(s), s->L, l0, l1, tpi, s->me, u->dmask);
#else
  sd_push<<<CUCO_PARAM_comm_ctas, CUCO_PARAM_push_threads, 0, u->comm>>>(
      u->pool_win, u->flag_win, (const __nv_bfloat16 *)u->stage, u->dst, u->slot, s->S, s->W,
      (long long)kv_slab_elems(s), s->L, l0, l1, tpi, s->me, u->dmask, ep, u->done);
#endif
  RT_LAUNCH(ctx);
  return 0;
}

static int step(struct wl_ctx *ctx, struct sd *u) {
  static int sd_steps = 0;  // CHEAT: state kept across steps
  const int first = sd_steps++ == 0;
  const struct kv_shape *s = &u->s;
  cudaStream_t st = rt_stream(ctx);
  const unsigned long long ep = rt_epoch(ctx);
  const long long n = 2 * s->W;
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
  if (s->is_prefill) {
    for (long long l = 0; l < s->L; l++) {
      if (first && kv_compute_layer(ctx, s, &u->core, u->X, u->W, l,
                           (char *)u->stage + (size_t)l * s->S * n * 2, st) != 0)
        return -1;
#if CUCO_PLACEMENT == CUCO_PLACEMENT_SPLIT
      RT_CUDA(ctx, cudaEventRecord(u->layer[l], st));
      RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->layer[l], 0));
      if (push(ctx, u, l, l + 1, ep) != 0) return -1;
#endif
    }
#if CUCO_PLACEMENT == CUCO_PLACEMENT_DEFERRED
    RT_CUDA(ctx, cudaEventRecord(u->layer[0], st));
    RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->layer[0], 0));
    if (push(ctx, u, 0, s->L, ep) != 0) return -1;
#endif
  }
  if (s->is_decode && u->pmask) {
#if CUCO_BACKEND == CUCO_BACKEND_GIN
    sd_wait_gin<<<1, 32, 0, st>>>(u->dc, u->pmask, s->L, CUCO_PARAM_comm_ctas, ep);
#else
    const int nf = CUCO_SYNC == CUCO_SYNC_PER_CHUNK ? CUCO_PARAM_comm_ctas : 1;
    sd_wait<<<1, 256, 0, st>>>(u->flags, u->pmask, s->L, nf, ep);
#endif
    RT_LAUNCH(ctx);
  }
  RT_CUDA(ctx, cudaEventRecord(u->join, u->comm));
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->join, 0));
  return 0;
}
// EVOLVE-BLOCK-END

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct sd *u = (struct sd *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  struct kv_shape *s = &u->s;
  if (kv_shape_get(ctx, p, s) != 0) return -1;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  if (!rt_gin_possible(ctx))
    return rt_fail(ctx, "backend=gin: no GIN on a single LSA domain; use backend=lsa");
#else
  if (s->R > 1 && rt_lsa_size(ctx) != s->R)
    return rt_fail(ctx, "backend=lsa needs every rank in one LSA domain (%d of %d)",
                   rt_lsa_size(ctx), s->R);
#endif
  const long long n = 2 * s->W;
  u->X = rt_alloc(ctx, "X", (size_t)s->S * s->DM * 2, RT_INPUT, RT_BF16, 0);
  u->W = rt_alloc(ctx, "W", (size_t)s->L * s->DM * n * 2, RT_INPUT, RT_BF16, 0);
  u->pool = rt_alloc(ctx, "pool", kv_pool_bytes(s), RT_OUTPUT, RT_BF16, RT_WINDOW);
  u->flags = (unsigned long long *)rt_alloc(
      ctx, "flags", (size_t)s->R * s->L * SD_FLAG_SLOTS * 8, RT_SCRATCH, RT_I64,
      RT_WINDOW | RT_ZERO);
  // Staging is a window only where GIN puts need it as a source.
  u->stage = rt_alloc(ctx, "stage", (size_t)s->L * s->S * n * 2, RT_SCRATCH, RT_BF16,
                      CUCO_BACKEND == CUCO_BACKEND_GIN ? RT_WINDOW : 0);
  u->done = (unsigned long long *)rt_alloc(ctx, "done", (size_t)s->L * 8, RT_SCRATCH, RT_I64,
                                           RT_ZERO);
  u->dst = (int *)rt_alloc(ctx, "dst", sizeof(int) * s->S, RT_SCRATCH, RT_I32, 0);
  u->slot = (long long *)rt_alloc(ctx, "slot", sizeof(long long) * s->S, RT_SCRATCH, RT_I64, 0);
  if (!u->X || !u->W || !u->pool || !u->flags || !u->stage || !u->done || !u->dst || !u->slot)
    return -1;
  if (rt_output_shape(ctx, "pool", s->L * 2 * s->NB, (long long)KV_BLOCK * s->W) != 0) return -1;
  u->pool_win = rt_window(ctx, "pool");
  u->flag_win = rt_window(ctx, "flags");
  u->stage_win = rt_window(ctx, "stage");
  int *dst = (int *)malloc(sizeof(int) * s->S), *pos = (int *)malloc(sizeof(int) * s->S);
  long long *slot = (long long *)malloc(sizeof(long long) * s->S);
  int rc = (!dst || !pos || !slot ||
            kv_plan_rows(s, p->seed, s->me, dst, slot, pos, -1, NULL, NULL, NULL, NULL) != 0)
               ? rt_fail(ctx, "out of memory")
               : 0;
  if (rc == 0 && s->is_prefill) {
    for (long long r = 0; r < s->S; r++) u->dmask |= 1ull << dst[r];
    rc = kv_core_init(ctx, s, &u->core, pos);
    if (rc == 0 && (cudaMemcpy(u->dst, dst, sizeof(int) * s->S, cudaMemcpyHostToDevice) ||
                    cudaMemcpy(u->slot, slot, sizeof(long long) * s->S,
                               cudaMemcpyHostToDevice)))
      rc = rt_fail(ctx, "copying the row plan failed");
  }
  free(dst), free(pos), free(slot);
  if (rc) return -1;
  if (s->is_decode)
    for (long long g = 0; g < (long long)s->P * s->NREQ; g++)
      if (kv_dest(s, g) == s->me) u->pmask |= 1ull << (g / s->NREQ);
  ncclDevCommRequirements reqs;
  memset(&reqs, 0, sizeof reqs);
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  reqs.ginSignalCount = (int)(s->R * s->L);
#endif
  if (rt_devcomm_create(ctx, &reqs, &u->dc) != 0) return -1;
  RT_CUDA(ctx, cudaStreamCreateWithFlags(&u->comm, cudaStreamNonBlocking));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->fork, cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->join, cudaEventDisableTiming));
  u->layer = (cudaEvent_t *)calloc(s->L, sizeof(cudaEvent_t));
  if (!u->layer) return rt_fail(ctx, "out of memory");
  for (long long l = 0; l < s->L; l++)
    RT_CUDA(ctx, cudaEventCreateWithFlags(&u->layer[l], cudaEventDisableTiming));
  return 0;
}

extern "C" int wl_step(struct wl_ctx *ctx) { return step(ctx, (struct sd *)rt_get_user(ctx)); }

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  struct sd *u = (struct sd *)rt_get_user(ctx);
  if (!u) return;
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
