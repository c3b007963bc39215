// CUCO-EXPECT-REJECT: static frozen
// A whole file, not an edit: it edits frozen text (the gathered buffer declared
// RT_SCRATCH instead of RT_RECV, so the runtime stops poisoning it), which the
// patch path an edit goes through refuses.
// workloads/gemm_allgather/seed.cu - device-initiated GEMM + AllGather.
//
// Each rank holds A_r [M/R, K] and B_r [K, N/R] (bf16); C_r = AllGather(A) * B_r.
// A push kernel on a communication stream stores this rank's A block into
// every LSA peer's gathered buffer (symmetric window "Ag") with 16-byte
// stores through ncclGetLsaPointer, and signals completion (LSA barrier,
// per-peer flags or per-chunk flags, see CUCO_SYNC).  The compute stream
// multiplies this rank's own rows straight from A (no self-copy), then each
// peer's block as soon as its data is there, with the shared cuBLASLt core.
//
// Flags carry rt_epoch(): the runtime advances it before every step, so no
// flag ever needs resetting and nothing from an earlier step can satisfy a
// wait.  Code outside the EVOLVE blocks is frozen.
#include <stdlib.h>
#include <string.h>

#include <cuda/atomic>

#include "rt.cuh"
#include "wl_gemm.cuh"

#define SD_FLAG_SLOTS 1024  // flags per source rank (chunks in per_chunk)

struct sd {
  struct wl_shape s;
  cublasLtHandle_t lt;
  void *A, *B, *C, *Ag, *ws;
  size_t ws_bytes;
  unsigned long long *flags;  // window: [R][SD_FLAG_SLOTS], epochs
  unsigned long long *done;   // local: [R] CTA completion counters
  ncclWindow_t ag_win, flag_win;
  ncclDevComm dc;
  cudaStream_t comm;
  cudaEvent_t fork, pushed;
  struct wl_gemm *plans;      // filled by the EVOLVE block's plan()
  int nplans;
};

// EVOLVE-BLOCK-START
// CUCO-DIRECTIVES backend=lsa placement=split sync=per_peer issuer=cta chunk=1MiB
// CUCO-PARAM comm_ctas=8
// CUCO-PARAM push_threads=512
#ifndef CUCO_PARAM_comm_ctas
#define CUCO_PARAM_comm_ctas 8
#endif
#ifndef CUCO_PARAM_push_threads
#define CUCO_PARAM_push_threads 512
#endif
#if CUCO_PLACEMENT == CUCO_PLACEMENT_PER_TILE
#error "placement=per_tile needs the shared GEMM tile core; use deferred or split"
#endif

__device__ static inline __attribute__((unused)) void sd_store_release(unsigned long long *p,
                                               unsigned long long v) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> f(*p);
  f.store(v, cuda::memory_order_release);
}

// Copy BYTES from SRC to DST (both 16-byte aligned when ALIGNED) with the
// issuer the directive chose: whole CTA, one warp per slice, or one thread
// per slice.
__device__ static inline void sd_copy(char *dst, const char *src, size_t bytes,
                                      bool aligned) {
  unsigned tid = threadIdx.x, nt = blockDim.x;
#if CUCO_ISSUER == CUCO_ISSUER_WARP
  // Warps take contiguous slices; lanes stride inside a slice.
  unsigned nw = nt / 32, w = tid / 32;
  size_t slice = (bytes / nw + 15) & ~(size_t)15;
  size_t lo = slice * w, hi = lo + slice < bytes ? lo + slice : bytes;
  if (lo >= bytes) return;
  src += lo, dst += lo, bytes = hi - lo, tid &= 31, nt = 32;
#elif CUCO_ISSUER == CUCO_ISSUER_THREAD
  size_t slice = (bytes / nt + 15) & ~(size_t)15;
  size_t lo = slice * tid, hi = lo + slice < bytes ? lo + slice : bytes;
  if (lo >= bytes) return;
  src += lo, dst += lo, bytes = hi - lo, tid = 0, nt = 1;
#endif
  size_t n16 = aligned ? bytes / 16 : 0;
  for (size_t i = tid; i < n16; i += nt)
    ((uint4 *)dst)[i] = ((const uint4 *)src)[i];
  for (size_t i = n16 * 16 + tid; i < bytes; i += nt) dst[i] = src[i];
}

// One CTA per chunk slot: push this rank's A block (BLOCK_BYTES) into
// every LSA peer's Ag at offset me*BLOCK_BYTES, CHUNK bytes at a time.
__global__ void __launch_bounds__(1024)
sd_push(ncclDevComm dc, ncclWindow_t ag_win, ncclWindow_t flag_win,
        const char *A, size_t block_bytes, size_t chunk, int nch,
        unsigned long long epoch, unsigned long long *done) {
  const int me = dc.lsaRank, R = dc.lsaSize;
  const bool aligned = (block_bytes % 16) == 0 && (chunk % 16) == 0;
#if CUCO_SYNC == CUCO_SYNC_GLOBAL
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(),
                                         blockIdx.x);
#endif
  for (int i = 1; i < R; i++) {
    const int p = (me + i) % R;  // stagger: not every rank hits one peer
    char *dst = (char *)ncclGetLsaPointer(ag_win, (size_t)me * block_bytes, p);
    for (int k = blockIdx.x; k < nch; k += gridDim.x) {
      size_t lo = (size_t)k * chunk;
      size_t n = lo + chunk < block_bytes ? chunk : block_bytes - lo;
      sd_copy(dst + lo, A + lo, n, aligned);
#if CUCO_SYNC == CUCO_SYNC_PER_CHUNK
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence_system();
        sd_store_release((unsigned long long *)ncclGetLsaPointer(
                             flag_win, ((size_t)me * SD_FLAG_SLOTS + k) * 8, p),
                         epoch);
      }
#endif
    }
#if CUCO_SYNC == CUCO_SYNC_PER_PEER
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      unsigned long long old = atomicAdd(&done[p], 1ull);
      if (old == epoch * gridDim.x - 1) {  // the last CTA for peer p
        __threadfence_system();
        sd_store_release((unsigned long long *)ncclGetLsaPointer(
                             flag_win, (size_t)me * SD_FLAG_SLOTS * 8, p),
                         epoch);
      }
    }
#endif
  }
#if CUCO_SYNC == CUCO_SYNC_GLOBAL
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
#endif
  (void)flag_win;
  (void)epoch;
  (void)done;
}

#if CUCO_BACKEND == CUCO_BACKEND_GIN
// GIN variant (multi-node; compiled, not exercised on one node: no NIC).
// The own block is first copied into the local Ag (a put's source must be
// a window), then put to every peer on context 0 with signal `me` counting
// chunks.  Signals are never reset (2.28.9 keeps stale values): a receiver
// waits for base[q] + epoch * nch, base read once before any put.
__global__ void sd_push_gin(ncclDevComm dc, ncclWindow_t ag_win,
                            size_t block_bytes, size_t chunk, int nch) {
  if (dc.ginContextCount == 0) return;
  ncclGin gin(dc, 0);
  const int me = dc.rank, R = dc.nRanks;
  for (int i = 1; i < R; i++) {
    int p = (me + i) % R;
    for (int k = blockIdx.x; k < nch; k += gridDim.x) {
      size_t lo = (size_t)k * chunk;
      size_t n = lo + chunk < block_bytes ? chunk : block_bytes - lo;
      gin.put(ncclTeamWorld(dc), p, ag_win, (size_t)me * block_bytes + lo, ag_win,
              (size_t)me * block_bytes + lo, n, ncclGin_SignalInc{(unsigned)me},
              ncclGin_None{}, ncclCoopCta());
    }
  }
  gin.flush(ncclCoopCta());
}

// Thread q: read (BASE != NULL, setup) or wait for signal q.
__global__ void sd_gin_signals(ncclDevComm dc, unsigned long long *base,
                               const unsigned long long *want_base,
                               unsigned long long add) {
  if (dc.ginContextCount == 0) return;
  ncclGin gin(dc, 0);
  for (int q = threadIdx.x; q < dc.nRanks; q += blockDim.x) {
    if (q == dc.rank) continue;
    if (base) base[q] = gin.readSignal((unsigned)q);
    else gin.waitSignal(ncclCoopThread(), (unsigned)q, want_base[q] + add);
  }
}
#endif

// Spin until flags[i*stride] >= epoch for i in [0, count).
__global__ void sd_wait(const unsigned long long *flags, int count, int stride,
                        unsigned long long epoch) {
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    cuda::atomic_ref<const unsigned long long, cuda::thread_scope_system> f(
        flags[(size_t)i * stride]);
    while (f.load(cuda::memory_order_acquire) < epoch) __nanosleep(100);
  }
}

__attribute__((unused)) static long long sd_chunk_rows(const struct wl_shape *s) {
  long long rows = CUCO_CHUNK_BYTES / (s->K * 2);
  if (rows < 1) rows = 1;
  while ((s->Mr + rows - 1) / rows > SD_FLAG_SLOTS) rows *= 2;
  return rows;
}

// Plans: [0] own rows from A; [1 + q] peer q's block from Ag (per_chunk:
// [1] a full chunk, [2] the tail chunk, conservative alignment).
static int plan(struct wl_ctx *ctx, struct sd *u, int me) {
  const struct wl_shape *s = &u->s;
  u->nplans = (int)s->R + 2;
  u->plans = (struct wl_gemm *)calloc(u->nplans, sizeof *u->plans);
  if (!u->plans) return rt_fail(ctx, "out of memory");
  unsigned long long cb = (unsigned long long)s->Mr * s->Nr * 2;
  if (wl_gemm_plan(ctx, &u->plans[0], u->lt, s->Mr, s->Nr, s->K, s->K, s->Nr, s->Nr,
                   1, 0, 0, u->ws, u->ws_bytes, 256, wl_align(cb * me)) != 0)
    return -1;
  if (s->R == 1) return 0;
#if CUCO_SYNC == CUCO_SYNC_PER_CHUNK && CUCO_BACKEND == CUCO_BACKEND_LSA
  long long cr = sd_chunk_rows(s), tail = s->Mr % cr;
  uint32_t al_a = wl_align((unsigned long long)cr * s->K * 2);
  uint32_t al_c = wl_align((unsigned long long)cr * s->Nr * 2);
  if (wl_align(cb) < al_c) al_c = wl_align(cb);
  if (wl_align((unsigned long long)s->Mr * s->K * 2) < al_a)
    al_a = wl_align((unsigned long long)s->Mr * s->K * 2);
  if (wl_gemm_plan(ctx, &u->plans[1], u->lt, cr < s->Mr ? cr : s->Mr, s->Nr, s->K,
                   s->K, s->Nr, s->Nr, 1, 0, 0, u->ws, u->ws_bytes, al_a, al_c) != 0)
    return -1;
  if (tail && cr < s->Mr &&
      wl_gemm_plan(ctx, &u->plans[2], u->lt, tail, s->Nr, s->K, s->K, s->Nr, s->Nr, 1,
                   0, 0, u->ws, u->ws_bytes, al_a, al_c) != 0)
    return -1;
#else
  for (int q = 0; q < s->R; q++)
    if (q != me &&
        wl_gemm_plan(ctx, &u->plans[1 + q], u->lt, s->Mr, s->Nr, s->K, s->K, s->Nr,
                     s->Nr, 1, 0, 0, u->ws, u->ws_bytes,
                     wl_align((unsigned long long)s->Mr * s->K * 2 * q),
                     wl_align(cb * q)) != 0)
      return -1;
#endif
  return 0;
}

// One step with the compute on stream ST (rt_stream(ctx) for the real
// thing; ST must be ordered after rt_stream(ctx)).
static int step_on(struct wl_ctx *ctx, struct sd *u, cudaStream_t st) {
  const struct wl_shape *s = &u->s;
  const int me = rt_rank(ctx), R = (int)s->R;
  const unsigned long long ep = rt_epoch(ctx);
  const size_t block = (size_t)s->Mr * s->K * 2;
  const size_t rowb = (size_t)s->K * 2;
  (void)rowb;
#if CUCO_SYNC == CUCO_SYNC_PER_CHUNK
  const size_t chunk = (size_t)sd_chunk_rows(s) * rowb;  // whole rows per flag
#else
  const size_t chunk = CUCO_CHUNK_BYTES < block ? CUCO_CHUNK_BYTES : block;
#endif
  const int nch = (int)((block + chunk - 1) / chunk);
  char *C = (char *)u->C;
  const char *Ag = (const char *)u->Ag;
  if (R > 1) {  // one rank: nothing to send, the own rows are all of C
    RT_CUDA(ctx, cudaEventRecord(u->fork, st));
    RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
#if CUCO_BACKEND == CUCO_BACKEND_GIN
    RT_CUDA(ctx, cudaMemcpyAsync((char *)u->Ag + me * block, u->A, block,
                                 cudaMemcpyDeviceToDevice, u->comm));
    sd_push_gin<<<CUCO_PARAM_comm_ctas, 32, 0, u->comm>>>(u->dc, u->ag_win, block,
                                                          chunk, nch);
#else
    sd_push<<<CUCO_PARAM_comm_ctas, CUCO_PARAM_push_threads, 0, u->comm>>>(
        u->dc, u->ag_win, u->flag_win, (const char *)u->A, block, chunk, nch, ep,
        u->done);
#endif
    RT_LAUNCH(ctx);
    RT_CUDA(ctx, cudaEventRecord(u->pushed, u->comm));
  }
#if CUCO_PLACEMENT == CUCO_PLACEMENT_DEFERRED
  if (R > 1) RT_CUDA(ctx, cudaStreamWaitEvent(st, u->pushed, 0));
#endif
  if (wl_gemm_run(ctx, &u->plans[0], u->lt, u->A, u->B,
                  C + (size_t)me * s->Mr * s->Nr * 2, st) != 0)
    return -1;
  if (R == 1) return 0;
#if CUCO_SYNC == CUCO_SYNC_GLOBAL && CUCO_BACKEND == CUCO_BACKEND_LSA
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->pushed, 0));
#endif
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  sd_gin_signals<<<1, 32, 0, st>>>(u->dc, NULL, u->done, ep * (unsigned long long)nch);
  RT_LAUNCH(ctx);
#endif
  for (int i = 1; i < R; i++) {
    const int q = (me - i + R) % R;  // q sends to me first when i == 1
    const char *a = Ag + (size_t)q * block;
    char *c = C + (size_t)q * s->Mr * s->Nr * 2;
#if CUCO_SYNC == CUCO_SYNC_PER_CHUNK && CUCO_BACKEND == CUCO_BACKEND_LSA
    const long long cr = (long long)(chunk / rowb) < s->Mr ? (long long)(chunk / rowb) : s->Mr;
    for (int k = 0; k < nch; k++) {
      long long r0 = k * cr;
      sd_wait<<<1, 32, 0, st>>>(u->flags + (size_t)q * SD_FLAG_SLOTS + k, 1, 1, ep);
      RT_LAUNCH(ctx);
      const struct wl_gemm *g = r0 + cr <= s->Mr ? &u->plans[1] : &u->plans[2];
      if (wl_gemm_run(ctx, g, u->lt, a + r0 * rowb, u->B, c + r0 * s->Nr * 2, st) != 0)
        return -1;
    }
#else
#if CUCO_SYNC == CUCO_SYNC_PER_PEER && CUCO_BACKEND == CUCO_BACKEND_LSA
    sd_wait<<<1, 32, 0, st>>>(u->flags + (size_t)q * SD_FLAG_SLOTS, 1, 1, ep);
    RT_LAUNCH(ctx);
#endif
    if (wl_gemm_run(ctx, &u->plans[1 + q], u->lt, a, u->B, c, st) != 0) return -1;
#endif
  }
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->pushed, 0));  // join the comm stream
  return 0;
}

static int step(struct wl_ctx *ctx, struct sd *u) {
  return step_on(ctx, u, rt_stream(ctx));
}
// EVOLVE-BLOCK-END

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct sd *u = (struct sd *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  if (wl_shape_get(ctx, p, &u->s) != 0) return -1;
  const struct wl_shape *s = &u->s;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  if (!rt_gin_possible(ctx))
    return rt_fail(ctx, "backend=gin: no GIN on a single LSA domain; use backend=lsa");
#endif
  if (s->R > 1 && rt_lsa_size(ctx) != s->R && CUCO_BACKEND == CUCO_BACKEND_LSA)
    return rt_fail(ctx, "backend=lsa needs every rank in one LSA domain (%d of %lld)",
                   rt_lsa_size(ctx), s->R);
  u->ws_bytes = (size_t)32 << 20;
  u->A = rt_alloc(ctx, "A", (size_t)s->Mr * s->K * 2, RT_INPUT, RT_BF16, 0);
  u->B = rt_alloc(ctx, "B", (size_t)s->K * s->Nr * 2, RT_INPUT, RT_BF16, 0);
  u->C = rt_alloc(ctx, "C", (size_t)s->M * s->Nr * 2, RT_OUTPUT, RT_BF16, 0);
  u->Ag = rt_alloc(ctx, "Ag", (size_t)s->M * s->K * 2, RT_SCRATCH, RT_BF16, RT_WINDOW);  // edited
  u->flags = (unsigned long long *)rt_alloc(ctx, "flags",
                                            (size_t)s->R * SD_FLAG_SLOTS * 8,
                                            RT_SCRATCH, RT_I64, RT_WINDOW | RT_ZERO);
  u->done = (unsigned long long *)rt_alloc(ctx, "done", (size_t)s->R * 8, RT_SCRATCH,
                                           RT_I64, RT_ZERO);
  u->ws = rt_alloc(ctx, "ws", u->ws_bytes, RT_SCRATCH, RT_U8, 0);
  if (!u->A || !u->B || !u->C || !u->Ag || !u->flags || !u->done || !u->ws) return -1;
  if (rt_output_shape(ctx, "C", s->M, s->Nr) != 0) return -1;
  if (rt_output_blocks(ctx, "C", s->M < 16 ? s->M : 16) != 0) return -1;  // 16-row blocks
  u->ag_win = rt_window(ctx, "Ag");
  u->flag_win = rt_window(ctx, "flags");
  ncclDevCommRequirements reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.lsaBarrierCount = CUCO_PARAM_comm_ctas;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  reqs.ginSignalCount = (int)s->R;
#endif
  if (rt_devcomm_create(ctx, &reqs, &u->dc) != 0) return -1;
  RT_CUDA(ctx, cudaStreamCreateWithFlags(&u->comm, cudaStreamNonBlocking));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->fork, cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->pushed, cudaEventDisableTiming));
  WL_LT(ctx, cublasLtCreate(&u->lt));
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  // Signal baselines before any peer can put (the runtime's barrier before
  // the first step orders this setup before every peer's first step).
  sd_gin_signals<<<1, 32>>>(u->dc, u->done, NULL, 0);
  RT_LAUNCH(ctx);
  RT_CUDA(ctx, cudaDeviceSynchronize());
#endif
  return plan(ctx, u, p->rank);
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  return step(ctx, (struct sd *)rt_get_user(ctx));
}

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  struct sd *u = (struct sd *)rt_get_user(ctx);
  if (!u) return;
  for (int i = 0; u->plans && i < u->nplans; i++) wl_gemm_free(&u->plans[i]);
  free(u->plans);
  if (u->fork) cudaEventDestroy(u->fork);
  if (u->pushed) cudaEventDestroy(u->pushed);
  if (u->comm) cudaStreamDestroy(u->comm);
  if (u->lt) cublasLtDestroy(u->lt);
  free(u);
  rt_set_user(ctx, NULL);
}
