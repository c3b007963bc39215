// runtime/rt_vranks.cu - the runtime's virtual-rank mode (--vranks R, binary
// built with -DCUCO_VRANKS): one process, one GPU, R wl_ctx, R streams, the
// device API emulated by vnccl.cuh. A PROTOCOL test: it verifies every
// virtual rank's outputs (fresh inputs, poison, snapshots, input hashes,
// one rank's launch delayed) and writes RESULT.json with
// "protocol_test": true and no timing at all.
//
// Also here, in both builds: rt_coresident_max, rt_check_coresident (rt.cuh),
// and the device communicators (rt_devcomm_create, rt_lsa_size,
// rt_gin_possible): this is the one runtime unit that includes NCCL's device
// API (or, under --vranks, its emulation, which the mode needs here anyway);
// the others compile without it (RT_HOST_ONLY, rt.cuh), ~4.5 s of CPU less
// each.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuco_nccl.cuh"
#include "rt_internal.cuh"

// Under --vranks the R ranks' spinners share one GPU with every rank's
// other kernels.  Spread one per SM, R x grid spinners on nearly all SMs
// left cuBLAS's GEMM CTAs (a whole SM each, or a cluster of two in one
// GPC) no room: moe_dsv3 --vranks 8 with 16 CTAs (128 of 132 SMs) timed
// out in its barriers, with 8 it passed, and 4 x 16 passed (tests/gpu/
// diag2.sh, 2026-12-02).  So the spinners of all ranks get half the SMs;
// a real build gives the rank its GPU.
int rt_coresident_max(struct wl_ctx *ctx, const void *kernel, int block, size_t smem) {
  int ranks = ctx->prob.vranks > 0 ? ctx->prob.vranks : 1;
  int dev = 0, sms = 0, per_sm = 0;
  RT_CUDA(ctx, cudaGetDevice(&dev));
  RT_CUDA(ctx, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  RT_CUDA(ctx, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, smem));
  long cap = (long)per_sm * sms / ranks;
  if (ctx->prob.vranks > 0 && cap > sms / 2 / ranks) cap = sms / 2 / ranks;
  if (cap < 1)
    return rt_fail(ctx,
                   "co-residency: not one CTA of %d threads and %zu bytes smem per rank fits "
                   "(%d per SM x %d SMs, %d rank(s))",
                   block, smem, per_sm, sms, ranks);
  return (int)(cap > 1 << 20 ? 1 << 20 : cap);
}

int rt_check_coresident(struct wl_ctx *ctx, const void *kernel, int grid, int block,
                        size_t smem) {
  int ranks = ctx->prob.vranks > 0 ? ctx->prob.vranks : 1;
  int cap = rt_coresident_max(ctx, kernel, block, smem);
  if (cap < 0) return cap;
  if (grid < 1 || grid > cap)
    return rt_fail(ctx,
                   "co-residency: %d rank(s) x %d CTAs, but at most %d CTAs a rank fit "
                   "(%d threads, %zu bytes smem%s); spinning CTAs would deadlock",
                   ranks, grid, cap, block, smem,
                   ctx->prob.vranks > 0 ? "; virtual ranks: all spinners in half the SMs" : "");
  return 0;
}

// ---------------------------------------------------- device communicators

int rt_lsa_size(struct wl_ctx *ctx) {
#ifdef CUCO_VRANKS  // virtual ranks: one GPU, one LSA team
  return ctx->prob.nranks;
#else
  return ncclTeamLsa(ctx->comm).nRanks;
#endif
}

int rt_gin_possible(struct wl_ctx *ctx) {
  const char *no = getenv("CUCO_NO_GIN");
  if (no && *no && strcmp(no, "0") != 0) return 0;
  return rt_lsa_size(ctx) != ctx->prob.nranks;
}

int rt_devcomm_create(struct wl_ctx *ctx, const ncclDevCommRequirements *reqs,
                      ncclDevComm *out) {
  if (!ctx->in_setup)
    return rt_fail(ctx, "rt_devcomm_create: only allowed in wl_setup");
  if (ctx->ndevcomms >= RT_MAX_DEVCOMMS)
    return rt_fail(ctx, "rt_devcomm_create: too many device communicators");
  if (reqs->lsaMultimem)
    return rt_fail(ctx, "rt_devcomm_create: multimem is forbidden (NVLS off)");
  if ((reqs->ginSignalCount || reqs->ginCounterCount || reqs->ginForceEnable) &&
      !rt_gin_possible(ctx))
    return rt_fail(ctx,
                   "rt_devcomm_create: GIN requested on a single LSA domain "
                   "(no GIN here; guard with rt_gin_possible)");
  // ctx->devcomms is a pointer: struct wl_ctx is declared where ncclDevComm
  // is incomplete (rt_internal.cuh)
  if (!ctx->devcomms) {
    ctx->devcomms = (ncclDevComm *)calloc(RT_MAX_DEVCOMMS, sizeof *ctx->devcomms);
    if (!ctx->devcomms) return rt_fail(ctx, "rt_devcomm_create: out of memory");
  }
#ifdef CUCO_VRANKS  // the emulated comm of this virtual rank (rt_vranks.cu)
  if (rt_vranks_devcomm(ctx, reqs, out) != 0) return -1;
#else
  ncclResult_t r = ncclDevCommCreate(ctx->comm, reqs, out);
  if (r != ncclSuccess)
    return rt_fail(ctx, "ncclDevCommCreate: %s", ncclGetErrorString(r));
#endif
  ctx->devcomms[ctx->ndevcomms++] = *out;
  return 0;
}

void rt_devcomms_release(struct wl_ctx *ctx) {
#ifndef CUCO_VRANKS  // virtual comms belong to the vranks world
  for (int i = 0; i < ctx->ndevcomms; i++)
    ncclDevCommDestroy(ctx->comm, &ctx->devcomms[i]);
#endif
  ctx->ndevcomms = 0;
  free(ctx->devcomms);
  ctx->devcomms = NULL;
}

#ifdef CUCO_VRANKS
#include <pthread.h>
#include <strings.h>
#include <unistd.h>

#include "vnccl_host.h"

#define VR_MAX_DC 8
#define VR_MAX_RES 64

// World-level bookkeeping: rank 0's k-th window / devComm call allocates the
// R-slice object; rank r's k-th call must ask for the same and gets slice r.
struct vr_dcset {
  ncclDevComm comms[VNCCL_MAX_RANKS];
  int nbar, nres;
  size_t res_bytes[VR_MAX_RES];
  ncclDevResourceHandle_t handles[VR_MAX_RES];
};
static struct {
  struct vnccl_world *world;
  int R;
  struct vnccl_window *wins[RT_MAX_BUFS];
  size_t win_bytes[RT_MAX_BUFS];
  int nwins;
  struct vr_dcset dcs[VR_MAX_DC];
  int ndcs;
  int win_seq[VNCCL_MAX_RANKS], dc_seq[VNCCL_MAX_RANKS];
  cudaStream_t aux; // every rank's ref/hog/bar stream (used between steps only)
} g_vr;

int rt_vranks_window(struct wl_ctx *ctx, struct rt_buf *b) {
  int r = ctx->prob.rank, k = g_vr.win_seq[r]++;
  char err[256];
  if (r == 0) {
    if (g_vr.nwins >= RT_MAX_BUFS) return rt_fail(ctx, "vranks: too many windows");
    if (vnccl_window_alloc(g_vr.world, b->bytes, &g_vr.wins[k], err, sizeof err) != 0)
      return rt_fail(ctx, "rt_alloc(%s): %s", b->name, err);
    g_vr.win_bytes[k] = b->bytes;
    g_vr.nwins++;
  } else if (k >= g_vr.nwins || g_vr.win_bytes[k] != b->bytes) {
    return rt_fail(ctx,
                   "rt_alloc(%s): virtual rank %d's window #%d (%zu bytes) does not match rank "
                   "0's (%zu bytes): WINDOW buffers must have the same sizes in the same order "
                   "on every rank",
                   b->name, r, k, b->bytes, k < g_vr.nwins ? g_vr.win_bytes[k] : (size_t)0);
  }
  b->dev = vnccl_window_local(g_vr.wins[k], r);
  b->win = vnccl_window_handle(g_vr.wins[k], r);
  return 0;
}

int rt_vranks_devcomm(struct wl_ctx *ctx, const ncclDevCommRequirements *reqs,
                      ncclDevComm *out) {
  int r = ctx->prob.rank, k = g_vr.dc_seq[r]++;
  int nbar = reqs->barrierCount > reqs->lsaBarrierCount ? reqs->barrierCount
                                                        : reqs->lsaBarrierCount;
  char err[256];
  if (r == 0) {
    if (g_vr.ndcs >= VR_MAX_DC) return rt_fail(ctx, "vranks: too many device communicators");
    struct vr_dcset *d = &g_vr.dcs[k];
    if (vnccl_devcomm_create(g_vr.world, reqs, d->comms, err, sizeof err) != 0)
      return rt_fail(ctx, "rt_devcomm_create: %s", err);
    d->nbar = nbar;
    for (ncclDevResourceRequirements *q = reqs->resourceRequirementsList; q; q = q->next) {
      if (d->nres >= VR_MAX_RES) return rt_fail(ctx, "vranks: too many resource buffers");
      d->res_bytes[d->nres] = q->bufferSize;
      d->handles[d->nres++] = q->outBufferHandle ? *q->outBufferHandle : 0;
    }
    g_vr.ndcs++;
  } else {
    if (k >= g_vr.ndcs)
      return rt_fail(ctx, "rt_devcomm_create: virtual rank %d creates more device "
                          "communicators than rank 0 (collective: same sequence on every rank)",
                     r);
    struct vr_dcset *d = &g_vr.dcs[k];
    int n = 0;
    for (ncclDevResourceRequirements *q = reqs->resourceRequirementsList; q; q = q->next, n++) {
      if (n >= d->nres || q->bufferSize != d->res_bytes[n])
        return rt_fail(ctx, "rt_devcomm_create: virtual rank %d's resource buffer #%d differs "
                            "from rank 0's",
                       r, n);
      if (q->outBufferHandle) *q->outBufferHandle = d->handles[n];
    }
    if (n != d->nres || nbar != d->nbar)
      return rt_fail(ctx, "rt_devcomm_create: virtual rank %d asks for %d barriers / %d "
                          "resource buffers, rank 0 for %d / %d",
                     r, nbar, n, d->nbar, d->nres);
  }
  *out = g_vr.dcs[k].comms[r];
  return 0;
}

// ---------------------------------------------------------------- steps


struct vr_run {
  struct rt_opts *o;
  int R;
  struct wl_ctx **ctx;
  unsigned long long **hash; // per rank: [2 * RT_MAX_BUFS] device
  cudaEvent_t *prepared;     // per rank: end of its preparation (perturbed steps)
  struct rt_check *checks;
  int nchecks, maxchecks, failed;
  char first[320];
};

// One record per (rank, kind, output): worst values kept.
static struct rt_check *vr_get(struct vr_run *v, int rank, int kind, const char *output) {
  for (int i = 0; i < v->nchecks; i++)
    if (v->checks[i].rank == rank && v->checks[i].kind == kind &&
        !strcmp(v->checks[i].output, output))
      return &v->checks[i];
  struct rt_check *c = &v->checks[v->nchecks < v->maxchecks ? v->nchecks++ : v->maxchecks - 1];
  memset(c, 0, sizeof *c);
  c->rank = rank;
  c->kind = kind;
  c->passed = 1;
  snprintf(c->output, sizeof c->output, "%s", output);
  return c;
}

static void vr_note(struct vr_run *v, const struct rt_check *c) {
  if (c->passed || v->failed) return;
  v->failed = 1;
  snprintf(v->first, sizeof v->first, "virtual rank %d %s %s: %s", c->rank,
           rt_step_kind_name[c->kind], c->output, c->reason);
}

// Appended to workload errors that mention NCCL: the usual cause here.
static const char *nccl_hint(const char *e) {
  return strcasestr(e, "nccl") ? " [--vranks: host NCCL calls are unavailable (one process, "
                                 "no real ranks): baselines cannot run in this mode]"
                               : "";
}

static int vr_prepare(struct vr_run *v, struct wl_ctx *ctx, unsigned long long step) {
  ctx->step = step;
  ctx->epoch++;
  int reset_rc;
  RT_CAND(ctx, reset_rc = ctx->reset_fn ? ctx->reset_fn(ctx) : 0);
  if (reset_rc != 0) {
    rt_errorf("virtual rank %d: reset hook: %s", ctx->prob.rank, ctx->err);
    return -1;
  }
  // --skip-check switches a check off only to show the others catch a cheat.
  int skip = v->o->skip;
  if (step == 1 || !(skip & RT_CK_FRESH)) {
    ctx->input_step = step;
    RT_TRY(rt_inputs_fill(ctx, ctx->stream, NULL));
  }
  for (int i = 0; i < ctx->nbufs; i++) {
    struct rt_buf *b = &ctx->bufs[i];
    if ((b->kind == RT_OUTPUT && !(skip & RT_CK_POISON)) ||
        (b->kind == RT_RECV && !(skip & RT_CK_RECV_POISON)))
      RT_TRY(rt_poison(b->dev, b->bytes, b->dtype, b->flags & RT_COUNTS, ctx->stream));
    if (b->kind == RT_INPUT && !(skip & RT_CK_INPUT_HASH))
      RT_TRY(rt_hash(b->dev, b->bytes, &v->hash[ctx->prob.rank][2 * i], ctx->stream));
  }
  return 0;
}

// One step of every virtual rank. LATE (or -1) starts DELAY_MS late; odd
// steps launch in reverse rank order. Plain steps prepare every rank and
// synchronise the device first. Perturbed steps (LATE >= 0) enqueue the
// preparation asynchronously on each rank's step stream followed by a
// GPU-side all-rank barrier (every stream waits for every rank's
// "prepared" event), like the runtime's perturbed steps with their
// ncclAllReduce: work a step does not order after its rt_stream then races
// the preparation and is caught.
//
// Each rank's launches are enqueued by its own host thread, as each real
// rank is its own process: a host call inside one rank's wl_step that
// blocks until running kernels finish then cannot keep the OTHER ranks'
// kernels from being enqueued. (Before, one thread enqueued rank after
// rank: on the H200 rank 1's cuBLASLt call blocked while its push kernel
// spun on rank 0's, never enqueued: every barrier timed out.) It still
// holds up its own rank's later launches, and all ranks share one context:
// a call that waits for the whole device (a context synchronisation: lazy
// module loading, a local-memory resize, cudaMalloc/cudaFree, a
// synchronous copy or memset, NULL-stream work) waits for other ranks'
// kernels that spin on this rank's next launch, which a real GPU never
// does. vr_boot removes the runtime's sources of such waits (eager
// loading, the stack reserved up front, 32 hardware queues, few streams);
// a workload must not make those calls inside wl_step (docs/vranks.md).
struct vr_launch {
  struct vr_run *v;
  int r, late, device, rc;
  int host_late;  // order kind: this rank's host thread launches DELAY_MS late
  double delay_ms;
  char err[320];
};

static void *vr_launch_rank(void *arg) {
  struct vr_launch *L = (struct vr_launch *)arg;
  struct wl_ctx *ctx = L->v->ctx[L->r];
  L->rc = -1;
  if (cudaSetDevice(L->device) != cudaSuccess) {
    snprintf(L->err, sizeof L->err, "virtual rank %d: cudaSetDevice failed", L->r);
    return NULL;
  }
  if (L->host_late) usleep((useconds_t)(L->delay_ms * 1000));
  if (L->r == L->late) {
    char err[256];
    if (vnccl_delay(ctx->stream, (unsigned long long)(L->delay_ms * 1e6), err, sizeof err)) {
      snprintf(L->err, sizeof L->err, "%s", err);
      return NULL;
    }
  }
  int step_rc;
  RT_CAND(ctx, step_rc = wl_step(ctx));
  if (step_rc != 0) {
    snprintf(L->err, sizeof L->err, "virtual rank %d: wl_step: %s%s", L->r, ctx->err,
             nccl_hint(ctx->err));
    return NULL;
  }
  for (int b = 0; b < ctx->nbufs; b++)
    if (ctx->bufs[b].kind == RT_OUTPUT && !(L->v->o->skip & RT_CK_SNAPSHOT)) {
      cudaError_t e = cudaMemcpyAsync(ctx->bufs[b].snap, ctx->bufs[b].dev, ctx->bufs[b].bytes,
                                      cudaMemcpyDeviceToDevice, ctx->stream);
      if (e != cudaSuccess) {
        snprintf(L->err, sizeof L->err, "virtual rank %d: snapshot copy: %s", L->r,
                 cudaGetErrorString(e));
        return NULL;
      }
    }
  L->rc = 0;
  return NULL;
}

// PK: -1 plain, RT_PK_DELAY (LATE's stream delayed on the device, preparation
// asynchronous) or RT_PK_ORDER (plain preparation, LATE's host thread
// launches DELAY_MS late). Odd steps launch in reverse rank order unless
// the launch-order perturbation is switched off (tests only).
static int vr_step(struct vr_run *v, unsigned long long step, int pk, int late,
                   double delay_ms) {
  // Delay kind: the late rank's preparation starts late too (as in the real
  // runtime), so work not ordered after its rt_stream reads stale inputs.
  if (pk == RT_PK_DELAY) RT_TRY(rt_spin(delay_ms, v->ctx[late]->stream));
  for (int r = 0; r < v->R; r++) RT_TRY(vr_prepare(v, v->ctx[r], step));
  int host_late = pk == RT_PK_ORDER ? late : -1;
  if (pk != RT_PK_DELAY) late = -1;
  int reverse = step % 2 && !(v->o->skip & RT_CK_PERTURB_ORDER);
  if (late < 0) {
    CUDA_CHECK(cudaDeviceSynchronize()); // every rank prepared before any step
  } else {
    for (int r = 0; r < v->R; r++) CUDA_CHECK(cudaEventRecord(v->prepared[r], v->ctx[r]->stream));
    for (int r = 0; r < v->R; r++)
      for (int q = 0; q < v->R; q++)
        CUDA_CHECK(cudaStreamWaitEvent(v->ctx[r]->stream, v->prepared[q], 0));
  }
  struct vr_launch L[VNCCL_MAX_RANKS];
  pthread_t th[VNCCL_MAX_RANKS];
  int started[VNCCL_MAX_RANKS], dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  for (int i = 0; i < v->R; i++) { // threads start in rank order, reversed on odd steps
    int r = reverse ? v->R - 1 - i : i;
    memset(&L[r], 0, sizeof L[r]);
    L[r].v = v;
    L[r].r = r;
    L[r].late = late;
    L[r].host_late = r == host_late;
    L[r].device = dev;
    L[r].delay_ms = delay_ms;
    started[r] = pthread_create(&th[r], NULL, vr_launch_rank, &L[r]) == 0;
    if (!started[r]) vr_launch_rank(&L[r]); // no thread: enqueue from here
  }
  int bad = -1;
  for (int r = 0; r < v->R; r++) {
    if (started[r]) pthread_join(th[r], NULL);
    if (L[r].rc != 0 && bad < 0) bad = r;
  }
  if (bad >= 0) {
    cudaDeviceSynchronize(); // let the other ranks' work end (or time out) first
    rt_errorf("%s", L[bad].err);
    return -1;
  }
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    rt_errorf("step %llu of the virtual ranks failed: %s (a message from the emulation, if "
              "any, is on stdout: barrier timeout, bad peer or offset)",
              step, cudaGetErrorString(e));
    return -1;
  }
  for (int r = 0; r < v->R; r++) {
    struct wl_ctx *ctx = v->ctx[r];
    for (int i = 0; i < ctx->nbufs; i++) {
      struct rt_buf *b = &ctx->bufs[i];
      if (b->kind == RT_OUTPUT && (v->o->skip & RT_CK_SNAPSHOT)) // late data wins
        CUDA_CHECK(cudaMemcpy(b->snap, b->dev, b->bytes, cudaMemcpyDeviceToDevice));
    }
    for (int i = 0; i < ctx->nbufs; i++)
      if (ctx->bufs[i].kind == RT_INPUT && !(v->o->skip & RT_CK_INPUT_HASH))
        RT_TRY(rt_hash(ctx->bufs[i].dev, ctx->bufs[i].bytes, &v->hash[r][2 * i + 1],
                       ctx->stream));
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  return 0;
}

static int vr_verify(struct vr_run *v, int kind, int pk) {
  char text[RT_REASON_MAX];
  const char *prefix = pk >= 0 ? rt_pk_name[pk] : NULL;
  for (int r = 0; r < v->R; r++) {
    struct wl_ctx *ctx = v->ctx[r];
    unsigned long long hh[2 * RT_MAX_BUFS];
    CUDA_CHECK(cudaMemcpy(hh, v->hash[r], sizeof(hh[0]) * 2 * ctx->nbufs,
                          cudaMemcpyDeviceToHost));
    for (int i = 0; i < ctx->nbufs && !(v->o->skip & RT_CK_INPUT_HASH); i++)
      if (ctx->bufs[i].kind == RT_INPUT && hh[2 * i] != hh[2 * i + 1]) {
        struct rt_check *c = vr_get(v, r, kind, "(inputs)");
        snprintf(text, sizeof text, "input-hash: INPUT %s changed during the step",
                 ctx->bufs[i].name);
        if (!c->reason[0]) rt_reason_add(c->reason, prefix, text);
        c->passed = 0;
        vr_note(v, c);
      }
    for (int i = 0; i < ctx->nbufs; i++) {
      struct rt_buf *b = &ctx->bufs[i];
      if (b->kind != RT_OUTPUT) continue;
      struct rt_judgement j;
      double j0 = rt_now_ms();
      int jrc = rt_judge_output(ctx, b, v->o, 1, prefix, &j);
      rt_phase_move("judge", j0);
      if (jrc != 0) {
        char e[RT_ERR_MAX];
        snprintf(e, sizeof e, "%s", rt_last_error);
        rt_errorf("virtual rank %d: %s", r, e);
        return -1;
      }
      struct rt_check *c = vr_get(v, r, kind, b->name);
      rt_check_fold(c, &j, 0);
      vr_note(v, c);
    }
  }
  return 0;
}

// RESULT.json as docs/contracts.md section 4, protocol_test true, no timing.
static void vr_write(struct vr_run *v, const char *status, const char *error) {
  rt_result_write(v->o, v->R, v->R, status, error, v->checks, v->nchecks, NULL, NULL);
}

static int vr_boot(struct vr_run *v) {
  struct rt_opts *o = v->o;
  char err[512];
  if (o->vranks < 1 || o->vranks > VNCCL_MAX_RANKS) {
    rt_errorf("--vranks %d: out of range 1..%d", o->vranks, VNCCL_MAX_RANKS);
    return -1;
  }
  if (o->prob.nranks > 1) {
    rt_errorf("--vranks runs all ranks in one process: do not also pass --nranks %d",
              o->prob.nranks);
    return -1;
  }
  vnccl_prepare_env();
  v->R = o->vranks;
  int ndev = 0;
  CUDA_CHECK(cudaGetDeviceCount(&ndev));
  if (ndev < 1) {
    rt_errorf("no CUDA device");
    return -1;
  }
  int dev = o->prob.local_rank % ndev;
  CUDA_CHECK(cudaSetDevice(dev));
  if (vnccl_check_eager(err, sizeof err) != 0 || vnccl_reserve_stack(err, sizeof err) != 0 ||
      vnccl_warm_device(err, sizeof err) != 0) {
    rt_errorf("%s", err);
    return -1;
  }
  // One step stream per rank, and ONE stream shared by all ranks for what
  // runs between steps (the reference, judging; hog and barrier streams are
  // unused here): 4 streams per rank took all 32 hardware queues at R = 8,
  // so a workload's own stream shared a queue with another rank's step
  // stream and could be serialised behind its spinning kernel.
  CUDA_CHECK(cudaStreamCreateWithFlags(&g_vr.aux, cudaStreamNonBlocking));
  if (vnccl_world_create(v->R, 0, &g_vr.world, err, sizeof err) != 0) {
    rt_errorf("%s", err);
    return -1;
  }
  g_vr.R = v->R;
  v->ctx = (struct wl_ctx **)calloc(v->R, sizeof *v->ctx);
  v->hash = (unsigned long long **)calloc(v->R, sizeof *v->hash);
  v->prepared = (cudaEvent_t *)calloc(v->R, sizeof *v->prepared);
  v->maxchecks = v->R * (RT_MAX_BUFS + 1) * 2;
  v->checks = (struct rt_check *)calloc(v->maxchecks, sizeof *v->checks);
  if (!v->ctx || !v->hash || !v->checks || !v->prepared) {
    rt_errorf("out of host memory");
    return -1;
  }
  for (int r = 0; r < v->R; r++) {
    struct wl_ctx *ctx = v->ctx[r] = (struct wl_ctx *)calloc(1, sizeof(struct wl_ctx));
    if (!ctx) {
      rt_errorf("out of host memory");
      return -1;
    }
    ctx->prob = o->prob;
    ctx->prob.rank = r;
    ctx->prob.nranks = v->R;
    ctx->prob.local_rank = 0;
    ctx->prob.vranks = v->R;
    ctx->skip = o->skip;
    ctx->device = dev;
    CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    ctx->ref_stream = ctx->hog_stream = ctx->bar_stream = g_vr.aux;
    CUDA_CHECK(cudaMalloc((void **)&v->hash[r], sizeof(unsigned long long) * 2 * RT_MAX_BUFS));
    CUDA_CHECK(cudaEventCreateWithFlags(&v->prepared[r], cudaEventDisableTiming));
  }
  return 0;
}

static int vr_setup(struct vr_run *v) {
  for (int r = 0; r < v->R; r++) {
    struct wl_ctx *ctx = v->ctx[r];
    ctx->in_setup = 1;
    int rc;
    RT_CAND(ctx, rc = wl_setup(ctx, &ctx->prob));
    ctx->in_setup = 0;
    if (rc != 0) {
      const char *e = ctx->err[0] ? ctx->err : rt_last_error;
      rt_errorf("virtual rank %d: wl_setup: %s%s", r, e, nccl_hint(e));
      return -1;
    }
    int nout = 0;
    for (int i = 0; i < ctx->nbufs; i++) nout += ctx->bufs[i].kind == RT_OUTPUT;
    if (!nout) {
      rt_errorf("wl_setup declared no OUTPUT buffer: nothing can be verified");
      return -1;
    }
  }
  for (int r = 1; r < v->R; r++)
    if (g_vr.win_seq[r] != g_vr.nwins || g_vr.dc_seq[r] != g_vr.ndcs) {
      rt_errorf("virtual rank %d declared %d windows / %d device communicators, rank 0 %d / "
                "%d (collective: same on every rank)",
                r, g_vr.win_seq[r], g_vr.dc_seq[r], g_vr.nwins, g_vr.ndcs);
      return -1;
    }
  return 0;
}

// The --vranks entry point, called from main() with parsed options. Runs
// max(2, 1 + min(2, warmup)) plain steps (bench: warmup + iters, capped
// at 200, all verified, none timed), then R steps each delaying one rank.
int rt_vranks_main(struct rt_opts *o) {
  struct vr_run v;
  memset(&v, 0, sizeof v);
  v.o = o;
  const char *status = "error";
  int code = 4, setup_done = 0;
  rt_progress(o, "boot");
  if (vr_boot(&v) != 0) goto out;
  rt_progress(o, "setup");
  if (vr_setup(&v) != 0) goto out;
  setup_done = 1;
  {
    unsigned long long step = 0;
    int plain = 1 + (o->warmup > 2 ? 2 : o->warmup);
    if (plain < 2) plain = 2;
    if (o->mode == RT_MODE_BENCH) plain = o->warmup + o->iters > 200 ? 200 : o->warmup + o->iters;
    for (int i = 0; i < plain; i++) {
      rt_progress(o, "verify");
      if (vr_step(&v, ++step, -1, -1, 0) != 0 || vr_verify(&v, RT_STEP_CHECK, -1) != 0) goto out;
    }
    // Perturbed steps: every rank delayed once on the device, then every
    // rank's launch delayed once on the host (kinds switched off: skipped).
    static const int kinds[2] = {RT_PK_DELAY, RT_PK_ORDER};
    for (int k = 0; k < 2; k++)
      for (int late = 0; late < v.R && !(o->skip & rt_pk_bit[kinds[k]]); late++) {
        rt_progress(o, rt_pk_name[kinds[k]]);
        double ms = 1.0 + (double)(rt_prf(RT_PRF_PERTURB, o->prob.seed, step + 1, late) % 4000) /
                              1000.0;
        if (vr_step(&v, ++step, kinds[k], late, ms) != 0 ||
            vr_verify(&v, RT_STEP_PERTURB, kinds[k]) != 0)
          goto out;
      }
  }
  status = v.failed ? "verify_failed" : "ok";
  code = v.failed ? 3 : 0;
out:
  if (code == 4)
    fprintf(stderr, "vranks: error: %s\n", rt_last_error);
  else if (code == 3)
    fprintf(stderr, "vranks: verification failed: %s\n", v.first);
  vr_write(&v, status, code == 4 ? rt_last_error : v.first);
  rt_progress(o, "teardown");
  // After a failed kernel the context is unusable: skip the workload's
  // teardown then (the process exits and the driver frees everything).
  if (setup_done && code != 4) {
    for (int r = 0; r < v.R; r++) RT_CAND(v.ctx[r], wl_teardown(v.ctx[r]));
    cudaDeviceSynchronize();
    for (int r = 0; r < v.R; r++) rt_ctx_release(v.ctx[r]);
    vnccl_world_destroy(g_vr.world);
  }
  rt_progress(o, code == 4 ? "error" : "done");
  return code;
}
#endif // CUCO_VRANKS
