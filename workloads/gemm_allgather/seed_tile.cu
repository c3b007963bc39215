// workloads/gemm_allgather/seed_tile.cu - GEMM + AllGather, placement=per_tile:
// the all-gather lands chunk by chunk and every GEMM tile waits, inside the
// GEMM kernel, only for the A rows it needs (shared tensor-core tile library,
// runtime/gemm_tile_v2.cuh: wgmma + TMA, built for sm_90a, through its prologue hook).
//
// Each rank holds A_r [M/R, K] and B_r [K, N/R] (bf16); C_r = AllGather(A) * B_r.
// A push kernel on a communication stream copies this rank's A block into its
// own slot of the gathered buffer Ag (local copy, so that one GEMM covers all M
// rows) and stores it into every LSA peer's Ag with ncclGetLsaPointer, raising
// an epoch-valued flag per chunk of whole rows (flags window [R][SLOTS]).  One
// persistent GEMM over Ag [M, K] runs on the compute stream beside it; before
// a tile's main loop the prologue hook polls (acquire, system scope) the flags
// of the chunks that the tile's rows [m0, m_end) touch.  Tiles start with the
// own block (rotated schedule), whose data arrives first.
//
// At one rank there is nothing to gather: the GEMM multiplies A at once on
// every SM, with no push and no SMs held back for one (as seed.cu does).
// Built with -DST_R1_GATHER (tests/gpu/gemm_ag.sh: seed_tile_gather), one
// rank takes the gather path instead (own block copied into Ag chunk by
// chunk, every tile waiting on its chunk flags), so that a 1-rank verify
// still exercises the hook; the negative control (ST_CONTROL_NO_WAIT)
// always takes it.
//
// Deadlock rule (gemm_tile.cuh): the GEMM spins on data that a kernel on the
// same GPU produces, so the push kernel is launched first and the GEMM gets
// (SMs - comm_ctas) CTAs (one CTA per SM), leaving the push kernel room.
//
// Requirements of the tile library: K and N/R multiples of 8 (16-byte
// cp.async rows); otherwise wl_setup fails naming them.  Flags carry
// rt_epoch(): no reset, nothing from an earlier step satisfies a wait.
#include <stdlib.h>
#include <string.h>

#include <cuda/atomic>

#include "gemm_tile_v2.cuh"  // wgmma + TMA (sm_90a; includes gemm_tile.cuh)
#include "rt.cuh"
#include "wl_gemm.cuh"

#define ST_FLAG_SLOTS 1024  // chunk flags per source rank

struct st_state {
  struct wl_shape s;
  void *A, *B, *C, *Ag;
  unsigned long long *flags;  // window: [R][ST_FLAG_SLOTS], epochs
  ncclWindow_t ag_win, flag_win;
  ncclDevComm dc;
  cudaStream_t comm;
  cudaEvent_t fork, pushed;
  int sms;
};

// EVOLVE-BLOCK-START
// CUCO-DIRECTIVES backend=lsa placement=per_tile sync=per_chunk issuer=cta chunk=1MiB
// CUCO-PARAM comm_ctas=8
// CUCO-PARAM push_threads=512
// CUCO-PARAM gemm_grid=tiles
// CUCO-PARAM gemm_raster=8
#ifndef CUCO_PARAM_comm_ctas
#define CUCO_PARAM_comm_ctas 8
#endif
#ifndef CUCO_PARAM_push_threads
#define CUCO_PARAM_push_threads 512
#endif
// gemm_grid=persistent|tiles (a word): the one-rank GEMM on one CTA an SM,
// each looping over tiles b, b+132, ..., or on one CTA a tile (the block
// scheduler hands out tiles as SMs free up; each CTA pays its pipeline fill).
#ifndef CUCO_PARAM_gemm_grid
#define CUCO_PARAM_gemm_grid tiles
#endif
// gemm_raster=16|8|4|2: the one-rank GEMM's tile order, panels of that many
// M tiles (GemmRasterSched): tiles that share a B panel are adjacent.
#ifndef CUCO_PARAM_gemm_raster
#define CUCO_PARAM_gemm_raster 8
#endif
#if CUCO_PARAM_gemm_raster != 16 && CUCO_PARAM_gemm_raster != 8 && \
    CUCO_PARAM_gemm_raster != 4 && CUCO_PARAM_gemm_raster != 2
#error "CUCO-PARAM gemm_raster must be 16, 8, 4 or 2"
#endif
#define ST_CAT2(a, b) a##b
#define ST_CAT(a, b) ST_CAT2(a, b)
#define ST_GG_persistent 1
#define ST_GG_tiles 2
#define ST_GG ST_CAT(ST_GG_, CUCO_PARAM_gemm_grid)
#if ST_GG != 1 && ST_GG != 2
#error "CUCO-PARAM gemm_grid must be persistent or tiles"
#endif

__device__ static inline void st_store_release(unsigned long long *p, unsigned long long v) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> f(*p);
  f.store(v, cuda::memory_order_release);
}

// Whole CTA copies BYTES from SRC to DST (16-byte stores when ALIGNED).
__device__ static inline void st_copy(char *dst, const char *src, size_t bytes, bool aligned) {
  size_t n16 = aligned ? bytes / 16 : 0;
  for (size_t i = threadIdx.x; i < n16; i += blockDim.x)
    ((uint4 *)dst)[i] = ((const uint4 *)src)[i];
  for (size_t i = n16 * 16 + threadIdx.x; i < bytes; i += blockDim.x) dst[i] = src[i];
}

// One CTA per chunk slot: chunk k (CHUNK bytes = whole rows) of this rank's A
// block goes to the own slot of the local Ag first, then to every peer; after
// each copy the chunk's flag [me][k] is raised at the destination.
__global__ void __launch_bounds__(1024)
st_push(ncclDevComm dc, ncclWindow_t ag_win, ncclWindow_t flag_win, const char *A,
        char *ag_local, unsigned long long *flags_local, int me, int R, size_t block_bytes,
        size_t chunk, int nch, unsigned long long epoch) {
  const bool aligned = (block_bytes % 16) == 0 && (chunk % 16) == 0;
#ifdef ST_CONTROL_NO_WAIT
  // Test-only negative control (tests/gpu/gemm_ag.sh): the data lands 5 ms
  // late, so a GEMM that does not wait surely reads the poisoned Ag.
  if (threadIdx.x == 0) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < 5000000ull);
  }
  __syncthreads();
#endif
  for (int i = 0; i < R; i++) {
    const int p = (me + i) % R;  // i == 0: self; peers staggered
    char *dst = i == 0 ? ag_local + (size_t)me * block_bytes
                       : (char *)ncclGetLsaPointer(ag_win, (size_t)me * block_bytes, p);
    for (int k = blockIdx.x; k < nch; k += gridDim.x) {
      size_t lo = (size_t)k * chunk;
      size_t n = lo + chunk < block_bytes ? chunk : block_bytes - lo;
      st_copy(dst + lo, A + lo, n, aligned);
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence_system();
        unsigned long long *f =
            i == 0 ? flags_local + (size_t)me * ST_FLAG_SLOTS + k
                   : (unsigned long long *)ncclGetLsaPointer(
                         flag_win, ((size_t)me * ST_FLAG_SLOTS + k) * 8, p);
        st_store_release(f, epoch);
      }
    }
  }
  (void)dc;
}

// The tile library's prologue hook: rows [m0, m_end) of the gathered A lie in
// source blocks of MR rows, each cut into chunks of CR rows with one flag.
struct StWaitChunks {
  const unsigned long long *flags;
  long long Mr, cr;
  unsigned long long epoch;
  __device__ void wait(const cuco_gemm::GemmTile &t) const {
    long long r = t.m0;
    while (r < t.m_end) {
      long long q = r / Mr, k = (r - q * Mr) / cr;
      cuda::atomic_ref<const unsigned long long, cuda::thread_scope_system> f(
          flags[q * ST_FLAG_SLOTS + k]);
#ifndef ST_CONTROL_NO_WAIT
      while (f.load(cuda::memory_order_acquire) < epoch) __nanosleep(64);
#else
      (void)f;  // the negative control skips the wait
#endif
      long long next = q * Mr + (k + 1) * cr, blk_end = (q + 1) * Mr;
      r = next < blk_end ? next : blk_end;
    }
  }
};

static long long st_chunk_rows(const struct wl_shape *s) {
  long long rows = CUCO_CHUNK_BYTES / (s->K * 2);
  if (rows < 1) rows = 1;
  while ((s->Mr + rows - 1) / rows > ST_FLAG_SLOTS) rows *= 2;
  return rows;
}

// C = A * B_r on the v2 tile over all M rows of A (Ag, or A itself at one
// rank), on the step stream: PRO waits per tile, SCHED orders the tiles,
// GRID CTAs (0: one an SM).
template <class Pro, class Sched>
static int st_gemm(struct wl_ctx *ctx, struct st_state *u, const void *A, Pro pro, Sched sched,
                   int grid) {
  const struct wl_shape *s = &u->s;
  cuco_gemm::GemmArgs a{(const __nv_bfloat16 *)A, (const __nv_bfloat16 *)u->B, s->K, s->Nr,
                        (int)s->M, (int)s->Nr, (int)s->K, nullptr, 0, 0};
  cuco_gemm::GemmStoreC store{(__nv_bfloat16 *)u->C, s->Nr};
  RT_CUDA(ctx, cuco_gemm::gemm_tile_v2_run_dense(a, pro, store, sched, grid, rt_stream(ctx)));
  return 0;
}

static int step(struct wl_ctx *ctx, struct st_state *u) {
  const struct wl_shape *s = &u->s;
  cudaStream_t st = rt_stream(ctx);
  const int me = rt_rank(ctx), R = (int)s->R;
  const unsigned long long ep = rt_epoch(ctx);
#if !defined(ST_R1_GATHER) && !defined(ST_CONTROL_NO_WAIT)
  if (R == 1) {  // A is the whole gathered matrix: one GEMM on every SM, no waits
    long long tiles = ((s->M + cuco_gemm::v2::BM - 1) / cuco_gemm::v2::BM) *
                      ((s->Nr + cuco_gemm::v2::BN - 1) / cuco_gemm::v2::BN);
    int grid = ST_GG == 2 && tiles < (1LL << 30) ? (int)tiles : 0;
    return st_gemm(ctx, u, u->A, cuco_gemm::GemmNoWait{},
                   cuco_gemm::GemmRasterSched<CUCO_PARAM_gemm_raster>{}, grid);
  }
#endif
  const size_t block = (size_t)s->Mr * s->K * 2;
  const long long cr = st_chunk_rows(s);
  const size_t chunk = (size_t)cr * s->K * 2;
  const int nch = (int)((s->Mr + cr - 1) / cr);
  // Push first (the GEMM spins on its flags), on the comm stream ordered
  // after everything earlier on the compute stream (Ag reuse).
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
  st_push<<<CUCO_PARAM_comm_ctas, CUCO_PARAM_push_threads, 0, u->comm>>>(
      u->dc, u->ag_win, u->flag_win, (const char *)u->A, (char *)u->Ag, u->flags, me, R, block,
      chunk, nch, ep);
  RT_LAUNCH(ctx);
  RT_CUDA(ctx, cudaEventRecord(u->pushed, u->comm));
  // The v2 tile (wgmma + TMA, persistent, one CTA per SM): its producer
  // lane waits for the tile's A chunks (StWaitChunks), the math warps store.
  int grid = u->sms - CUCO_PARAM_comm_ctas;
  if (grid < 1) grid = 1;
  if (st_gemm(ctx, u, u->Ag, StWaitChunks{u->flags, s->Mr, cr, ep},
              cuco_gemm::GemmRotateSched<8>{(int)(me * s->Mr / cuco_gemm::v2::BM)}, grid) != 0)
    return -1;
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->pushed, 0));  // join the comm stream
  return 0;
}
// EVOLVE-BLOCK-END

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct st_state *u = (struct st_state *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  if (wl_shape_get(ctx, p, &u->s) != 0) return -1;
  const struct wl_shape *s = &u->s;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  return rt_fail(ctx, "seed_tile: backend=gin is not implemented; use backend=lsa");
#endif
  if (s->K % 8 != 0 || s->Nr % 8 != 0)
    return rt_fail(ctx, "placement=per_tile (gemm_tile) needs K and N/R multiples of 8 (K=%lld, "
                   "N/R=%lld)", s->K, s->Nr);
  if (s->M > 0x7fffffffLL || s->K > 0x7fffffffLL || s->Nr > 0x7fffffffLL)
    return rt_fail(ctx, "placement=per_tile: M, K and N/R must fit in int");
  if (s->R > 1 && rt_lsa_size(ctx) != s->R)
    return rt_fail(ctx, "backend=lsa needs every rank in one LSA domain (%d of %lld)",
                   rt_lsa_size(ctx), s->R);
  u->A = rt_alloc(ctx, "A", (size_t)s->Mr * s->K * 2, RT_INPUT, RT_BF16, 0);
  u->B = rt_alloc(ctx, "B", (size_t)s->K * s->Nr * 2, RT_INPUT, RT_BF16, 0);
  u->C = rt_alloc(ctx, "C", (size_t)s->M * s->Nr * 2, RT_OUTPUT, RT_BF16, 0);
  u->Ag = rt_alloc(ctx, "Ag", (size_t)s->M * s->K * 2, RT_RECV, RT_BF16, RT_WINDOW);
  u->flags = (unsigned long long *)rt_alloc(ctx, "flags", (size_t)s->R * ST_FLAG_SLOTS * 8,
                                            RT_SCRATCH, RT_I64, RT_WINDOW | RT_ZERO);
  if (!u->A || !u->B || !u->C || !u->Ag || !u->flags) return -1;
  if (rt_output_shape(ctx, "C", s->M, s->Nr) != 0) return -1;
  if (rt_output_blocks(ctx, "C", s->M < 16 ? s->M : 16) != 0) return -1;  // 16-row blocks
  u->ag_win = rt_window(ctx, "Ag");
  u->flag_win = rt_window(ctx, "flags");
  ncclDevCommRequirements reqs;
  memset(&reqs, 0, sizeof reqs);
  if (rt_devcomm_create(ctx, &reqs, &u->dc) != 0) return -1;
  int dev = 0;
  RT_CUDA(ctx, cudaGetDevice(&dev));
  RT_CUDA(ctx, cudaDeviceGetAttribute(&u->sms, cudaDevAttrMultiProcessorCount, dev));
  RT_CUDA(ctx, cudaStreamCreateWithFlags(&u->comm, cudaStreamNonBlocking));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->fork, cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->pushed, cudaEventDisableTiming));
  return 0;
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  return step(ctx, (struct st_state *)rt_get_user(ctx));
}

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  struct st_state *u = (struct st_state *)rt_get_user(ctx);
  if (!u) return;
  if (u->fork) cudaEventDestroy(u->fork);
  if (u->pushed) cudaEventDestroy(u->pushed);
  if (u->comm) cudaStreamDestroy(u->comm);
  free(u);
  rt_set_user(ctx, NULL);
}
