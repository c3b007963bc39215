// runtime/rt_streams.cu - the streams an implementation creates, known to
// the runtime, so that a perturbed step can start them late.
//
// Why: perturb-hog alone could not flip a "done by then" race
// (gemm_allgather's hog_race: a consumer on the step stream waits at most
// 200 us for a producer on the workload's own stream).  The GPU hands out
// SMs to pending grids in launch order, so when the hog ends, the producer
// (launched first) still starts first and the race never shows.  A real
// machine does delay one stream behind another (another tenant, NCCL's own
// kernels, a preempted context); so in a hog step the victim's side
// streams begin with a spin as long as the hog, and every assumption that
// work on another stream "is always done by then" fails verification.
//
// How: cuco links every rank binary with --wrap for the stream-creating
// calls (src/build.c), so the implementation's calls land here.  Streams
// are recorded only while the runtime has handed control to the
// implementation (rt_cand_enter / rt_cand_leave around wl_setup, wl_step,
// wl_teardown), never the runtime's own.  Without --wrap (a hand link) the
// __real_ symbols are weak and nothing here is ever called.
//
// The driver's entry points are wrapped for the same reason: a pointer to
// cuStreamCreate or cuLaunchKernel would be a way around both this file
// and runtime/symbols.allow (which denies the other spellings of the call),
// so implementation code gets only the few a tile kernel needs.
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "rt_internal.cuh"

extern "C" {
cudaError_t __real_cudaStreamCreate(cudaStream_t *s) __attribute__((weak));
cudaError_t __real_cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
    __attribute__((weak));
cudaError_t __real_cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int prio)
    __attribute__((weak));
cudaError_t __real_cudaStreamDestroy(cudaStream_t s) __attribute__((weak));
cudaError_t __real_cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned int ver,
                                                    unsigned long long flags,
                                                    enum cudaDriverEntryPointQueryResult *st)
    __attribute__((weak));
}

#define RT_SIDE_MAX 256
static struct {
  pthread_mutex_t mu;
  int n, overflow;
  struct wl_ctx *ctx[RT_SIDE_MAX];
  cudaStream_t s[RT_SIDE_MAX];
} g_side = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}, {0}};

// The rank whose implementation code runs on this thread (NULL: the
// runtime's own code).  Thread-local: virtual ranks run steps on threads.
static __thread struct wl_ctx *t_cand;

void rt_cand_enter(struct wl_ctx *ctx) { t_cand = ctx; }
void rt_cand_leave(void) { t_cand = NULL; }

static void side_add(cudaStream_t s) {
  struct wl_ctx *ctx = t_cand;
  if (!ctx) return;
  pthread_mutex_lock(&g_side.mu);
  int seen = 0;
  for (int i = 0; i < g_side.n && !seen; i++) seen = g_side.s[i] == s;
  if (!seen && g_side.n < RT_SIDE_MAX) {
    g_side.ctx[g_side.n] = ctx;
    g_side.s[g_side.n++] = s;
  } else if (!seen) {
    g_side.overflow = 1;  // judged at the next perturbed step (rt_side_delay)
  }
  pthread_mutex_unlock(&g_side.mu);
}

static void side_drop(cudaStream_t s) {
  pthread_mutex_lock(&g_side.mu);
  for (int i = 0; i < g_side.n; i++)
    if (g_side.s[i] == s) {
      g_side.n--;
      g_side.s[i] = g_side.s[g_side.n];
      g_side.ctx[i] = g_side.ctx[g_side.n];
      break;
    }
  pthread_mutex_unlock(&g_side.mu);
}

extern "C" cudaError_t __wrap_cudaStreamCreate(cudaStream_t *s) {
  cudaError_t e = __real_cudaStreamCreate(s);
  if (e == cudaSuccess) side_add(*s);
  return e;
}
extern "C" cudaError_t __wrap_cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
  cudaError_t e = __real_cudaStreamCreateWithFlags(s, flags);
  if (e == cudaSuccess) side_add(*s);
  return e;
}
extern "C" cudaError_t __wrap_cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags,
                                                           int prio) {
  cudaError_t e = __real_cudaStreamCreateWithPriority(s, flags, prio);
  if (e == cudaSuccess) side_add(*s);
  return e;
}
extern "C" cudaError_t __wrap_cudaStreamDestroy(cudaStream_t s) {
  side_drop(s);
  return __real_cudaStreamDestroy(s);
}

int rt_side_delay(struct wl_ctx *ctx, double ms) {
  cudaStream_t todo[RT_SIDE_MAX];
  int n = 0, overflow;
  pthread_mutex_lock(&g_side.mu);
  overflow = g_side.overflow;
  for (int i = 0; i < g_side.n; i++)
    if (g_side.ctx[i] == ctx) todo[n++] = g_side.s[i];
  pthread_mutex_unlock(&g_side.mu);
  if (overflow) {
    rt_errorf("the implementation created more than %d streams: the runtime cannot "
              "perturb them all",
              RT_SIDE_MAX);
    return -1;
  }
  for (int i = 0; i < n; i++) RT_TRY(rt_spin(ms, todo[i]));
  // The default streams need no creating: a producer there starts late too.
  // The runtime's own streams are non-blocking, so the legacy stream's spin
  // holds back only blocking streams (the implementation's).
  RT_TRY(rt_spin(ms, cudaStreamPerThread));
  RT_TRY(rt_spin(ms, cudaStreamLegacy));
  return 0;
}

// What implementation code may look up (TMA descriptors for the GEMM and
// attention tiles; the module loading mode the emulation asks about).
static const char *const rt_driver_ok[] = {
    "cuTensorMapEncodeTiled", "cuTensorMapEncodeIm2col", "cuTensorMapEncodeIm2colWide",
    "cuTensorMapReplaceAddress", "cuModuleGetLoadingMode", "cuGetErrorName", "cuGetErrorString",
    NULL};

extern "C" cudaError_t __wrap_cudaGetDriverEntryPointByVersion(
    const char *sym, void **fn, unsigned int ver, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *st) {
  struct wl_ctx *ctx = t_cand;
  int ok = !ctx;
  for (int i = 0; !ok && sym && rt_driver_ok[i]; i++) ok = strcmp(sym, rt_driver_ok[i]) == 0;
  if (!ok) {
    if (fn) *fn = NULL;
    if (st) *st = cudaDriverEntryPointSymbolNotFound;
    rt_fail(ctx, "driver entry point %.64s refused: implementation code may look up only "
                 "the TMA descriptor calls (runtime/rt_streams.cu)",
            sym ? sym : "(null)");
    fprintf(stderr, "rank %d: %s\n", ctx->prob.rank, ctx->err);
    return cudaErrorNotPermitted;
  }
  return __real_cudaGetDriverEntryPointByVersion(sym, fn, ver, flags, st);
}
