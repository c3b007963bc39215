// runtime/vnccl_host.cu - host side of the virtual-rank emulation: worlds,
// R-slice windows, per-rank device communicators, co-residency, delays.
// See vnccl_host.h for the interface.
#ifdef CUCO_VRANKS

#include <cuda.h> // CU_MODULE_LAZY_LOADING (types only; no libcuda link)
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnccl_host.h"

// One device allocation the world owns: a window or a comm's resource
// window. descs holds nranks descriptors (device memory).
struct vnccl_window {
  char *base;                      // slice 0 of the whole world
  struct ncclWindow_vidmem *descs; // device: descs[r] is rank r's descriptor
  size_t stride, bytes;
  int nranks, lsa_size;
  struct vnccl_window *next;
  bool is_resource;
};

struct vnccl_world {
  int nranks, lsa_size, device;
  struct vnccl_window *allocs;
};

static void say(char *err, size_t errlen, const char *fmt, ...) {
  if (err == NULL || errlen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

// cuda_ok: true on cudaSuccess; otherwise names the call and the CUDA error.
static bool cuda_ok(cudaError_t rc, const char *what, char *err, size_t errlen) {
  if (rc == cudaSuccess)
    return true;
  say(err, errlen, "vranks: %s failed: %s", what, cudaGetErrorString(rc));
  return false;
}

void vnccl_prepare_env(void) {
  // 1 (overwrite): a user's smaller value (8, or the 1 some training setups
  // export) lets ranks' streams share hardware queues, and a launch queued
  // behind another rank's spinning kernel deadlocks (vnccl_host.h).
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1);
  // 1: lazy loading can deadlock spinning ranks (see vnccl_host.h), so a
  // user's LAZY is overridden: this mode is a protocol test, never timed.
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);
}

int vnccl_reserve_stack(char *err, size_t errlen) {
  size_t cur = 0;
  if (!cuda_ok(cudaDeviceGetLimit(&cur, cudaLimitStackSize), "cudaDeviceGetLimit(stack)", err,
               errlen))
    return -1;
  if (cur >= VNCCL_STACK_BYTES)
    return 0;
  char what[96];
  snprintf(what, sizeof what, "cudaDeviceSetLimit(stack size %d bytes per thread)",
           VNCCL_STACK_BYTES);
  return cuda_ok(cudaDeviceSetLimit(cudaLimitStackSize, VNCCL_STACK_BYTES), what, err, errlen)
             ? 0
             : -1;
}

// Never runs its body (never is 0): only that it uses printf (assert's
// channel too) and the device heap, whose buffers the driver sets up at the
// first launch of a kernel that uses them, and that launch waits for the
// device to idle.
static __global__ void vnccl_warm_kernel(int never, void **sink) {
  if (never) {
    printf("vnccl: %d\n", never);
    void *p = malloc(16);
    *sink = p;
    free(p);
  }
}

int vnccl_warm_device(char *err, size_t errlen) {
  vnccl_warm_kernel<<<1, 1>>>(0, NULL);
  if (!cuda_ok(cudaGetLastError(), "launch of the warm-up kernel", err, errlen))
    return -1;
  return cuda_ok(cudaDeviceSynchronize(), "the warm-up kernel", err, errlen) ? 0 : -1;
}

int vnccl_check_eager(char *err, size_t errlen) {
  // Through the runtime's entry-point query: no link against libcuda.
  typedef int (*get_mode_fn)(int *);
  void *fn = NULL;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", &fn, 12000, cudaEnableDefault,
                                       &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || fn == NULL)
    return 0; // an old driver without lazy loading at all
  int mode = 0;
  if (((get_mode_fn)fn)(&mode) != 0)
    return 0;
  if (mode == (int)CU_MODULE_LAZY_LOADING) {
    say(err, errlen,
        "vranks: CUDA loads modules lazily (CUDA was initialised before "
        "vnccl_prepare_env set CUDA_MODULE_LOADING=EAGER): a kernel's first launch could "
        "wait for spinning kernels of other virtual ranks and deadlock; run with "
        "CUDA_MODULE_LOADING=EAGER");
    return -1;
  }
  return 0;
}

int vnccl_world_create(int nranks, int lsa_size, struct vnccl_world **out, char *err,
                       size_t errlen) {
  if (out == NULL) {
    say(err, errlen, "vranks: world_create: out is NULL");
    return -1;
  }
  *out = NULL;
  if (nranks < 1 || nranks > VNCCL_MAX_RANKS) {
    say(err, errlen, "vranks: %d virtual ranks is out of range 1..%d", nranks, VNCCL_MAX_RANKS);
    return -1;
  }
  if (lsa_size == 0)
    lsa_size = nranks;
  if (lsa_size < 1 || nranks % lsa_size != 0) {
    say(err, errlen, "vranks: LSA team size %d must divide the %d virtual ranks", lsa_size,
        nranks);
    return -1;
  }
  vnccl_prepare_env();
  int dev = 0;
  if (!cuda_ok(cudaGetDevice(&dev), "cudaGetDevice", err, errlen))
    return -1;
  struct vnccl_world *w = (struct vnccl_world *)calloc(1, sizeof *w);
  if (w == NULL) {
    say(err, errlen, "vranks: out of host memory");
    return -1;
  }
  w->nranks = nranks;
  w->lsa_size = lsa_size;
  w->device = dev;
  *out = w;
  return 0;
}

static void free_alloc(struct vnccl_window *a) {
  cudaFree(a->base);
  cudaFree(a->descs);
  free(a);
}

void vnccl_world_destroy(struct vnccl_world *w) {
  if (w == NULL)
    return;
  cudaDeviceSynchronize(); // no kernel may still touch what is freed below
  struct vnccl_window *a = w->allocs;
  while (a != NULL) {
    struct vnccl_window *next = a->next;
    free_alloc(a);
    a = next;
  }
  free(w);
}

int vnccl_world_nranks(const struct vnccl_world *w) { return w->nranks; }
int vnccl_world_lsa_size(const struct vnccl_world *w) { return w->lsa_size; }

// alloc_slices: one allocation of nranks slices of `bytes` (stride rounded to
// 4096, NCCL's window alignment), zeroed, plus one descriptor per rank. The
// descriptor of rank r points its lsaFlatBase at the first slice of r's LSA
// team, so LSA peer i of r is slice (r - lsaRank + i).
static struct vnccl_window *alloc_slices(struct vnccl_world *w, size_t bytes, bool is_resource,
                                         char *err, size_t errlen) {
  const size_t align = 4096;
  if (bytes == 0 || bytes > ((size_t)1 << 40)) {
    say(err, errlen, "vranks: window size %zu bytes is out of range 1..2^40", bytes);
    return NULL;
  }
  struct vnccl_window *a = (struct vnccl_window *)calloc(1, sizeof *a);
  struct ncclWindow_vidmem *host = (struct ncclWindow_vidmem *)calloc(
      (size_t)w->nranks, sizeof(struct ncclWindow_vidmem));
  if (a == NULL || host == NULL) {
    free(a);
    free(host);
    say(err, errlen, "vranks: out of host memory");
    return NULL;
  }
  a->stride = (bytes + align - 1) / align * align;
  a->bytes = bytes;
  a->nranks = w->nranks;
  a->lsa_size = w->lsa_size;
  a->is_resource = is_resource;
  char what[96];
  snprintf(what, sizeof what, "cudaMalloc of %d slices x %zu bytes", w->nranks, a->stride);
  if (!cuda_ok(cudaMalloc((void **)&a->base, a->stride * (size_t)w->nranks), what, err, errlen))
    goto fail;
  if (!cuda_ok(cudaMemset(a->base, 0, a->stride * (size_t)w->nranks), "cudaMemset(window)", err,
               errlen))
    goto fail;
  if (!cuda_ok(cudaMalloc((void **)&a->descs, sizeof(struct ncclWindow_vidmem) * w->nranks),
               "cudaMalloc(window descriptors)", err, errlen))
    goto fail;
  for (int r = 0; r < w->nranks; ++r) {
    int lsa_rank = r % w->lsa_size;
    host[r].winHost = a;
    host[r].lsaFlatBase = a->base + (size_t)(r - lsa_rank) * a->stride;
    host[r].lsaRank = lsa_rank;
    host[r].worldRank = r;
    host[r].lsaSize = w->lsa_size;
    host[r].sliceStride = a->stride;
    host[r].sliceBytes = bytes;
  }
  if (!cuda_ok(cudaMemcpy(a->descs, host, sizeof(struct ncclWindow_vidmem) * w->nranks,
                          cudaMemcpyHostToDevice),
               "cudaMemcpy(window descriptors)", err, errlen))
    goto fail;
  free(host);
  a->next = w->allocs;
  w->allocs = a;
  return a;
fail:
  free(host);
  free_alloc(a);
  return NULL;
}

int vnccl_window_alloc(struct vnccl_world *w, size_t bytes, struct vnccl_window **out, char *err,
                       size_t errlen) {
  if (w == NULL || out == NULL) {
    say(err, errlen, "vranks: window_alloc: NULL world or out");
    return -1;
  }
  *out = alloc_slices(w, bytes, false, err, errlen);
  return *out != NULL ? 0 : -1;
}

// unlink_alloc: removes `a` from the world's list; false if it is not there.
static bool unlink_alloc(struct vnccl_world *w, struct vnccl_window *a) {
  for (struct vnccl_window **p = &w->allocs; *p != NULL; p = &(*p)->next) {
    if (*p == a) {
      *p = a->next;
      return true;
    }
  }
  return false;
}

void vnccl_window_free(struct vnccl_world *w, struct vnccl_window *win) {
  if (w == NULL || win == NULL || !unlink_alloc(w, win))
    return;
  cudaDeviceSynchronize();
  free_alloc(win);
}

void *vnccl_window_local(const struct vnccl_window *win, int rank) {
  if (win == NULL || rank < 0 || rank >= win->nranks)
    return NULL;
  return win->base + (size_t)rank * win->stride;
}

ncclWindow_t vnccl_window_handle(const struct vnccl_window *win, int rank) {
  if (win == NULL || rank < 0 || rank >= win->nranks)
    return NULL;
  return win->descs + rank;
}

size_t vnccl_window_stride(const struct vnccl_window *win) { return win->stride; }
size_t vnccl_window_bytes(const struct vnccl_window *win) { return win->bytes; }

// check_reqs: refuses what the emulation cannot honour, with the reason.
static int check_reqs(const ncclDevCommRequirements *reqs, char *err, size_t errlen) {
  if (reqs->lsaMultimem) {
    say(err, errlen, "vranks: lsaMultimem requested; multimem/NVLS is not emulated (and is off "
                     "limits on our machines)");
    return -1;
  }
  if (reqs->ginForceEnable || reqs->ginSignalCount > 0 || reqs->ginCounterCount > 0) {
    say(err, errlen,
        "vranks: the requirements turn GIN on (ginForceEnable=%d ginSignalCount=%d "
        "ginCounterCount=%d); GIN is not emulated: test the LSA path in virtual mode",
        (int)reqs->ginForceEnable, reqs->ginSignalCount, reqs->ginCounterCount);
    return -1;
  }
  if (reqs->barrierCount < 0 || reqs->lsaBarrierCount < 0 || reqs->barrierCount > (1 << 20) ||
      reqs->lsaBarrierCount > (1 << 20)) {
    say(err, errlen, "vranks: barrier counts out of range (barrierCount=%d lsaBarrierCount=%d)",
        reqs->barrierCount, reqs->lsaBarrierCount);
    return -1;
  }
  for (const ncclTeamRequirements *t = reqs->teamRequirementsList; t != NULL; t = t->next) {
    if (t->multimem) {
      say(err, errlen, "vranks: a team requirement asks for multimem; not emulated");
      return -1;
    }
  }
  int n = 0;
  for (const ncclDevResourceRequirements *r = reqs->resourceRequirementsList; r != NULL;
       r = r->next) {
    if (++n > 4096) {
      say(err, errlen, "vranks: more than 4096 resource requirements (a cycle in the list?)");
      return -1;
    }
    if (r->ginSignalCount > 0 || r->ginCounterCount > 0) {
      say(err, errlen, "vranks: resource requirement %d asks for GIN signals/counters; GIN is "
                       "not emulated (and 2.28.9 silently drops them)",
          n);
      return -1;
    }
    if (r->bufferAlign != 0 && (r->bufferAlign & (r->bufferAlign - 1)) != 0) {
      say(err, errlen, "vranks: resource requirement %d: bufferAlign %zu is not a power of two",
          n, r->bufferAlign);
      return -1;
    }
    if (r->bufferSize > ((size_t)1 << 36)) {
      say(err, errlen, "vranks: resource requirement %d: bufferSize %zu is too large", n,
          r->bufferSize);
      return -1;
    }
  }
  return 0;
}

int vnccl_devcomm_create(struct vnccl_world *w, const ncclDevCommRequirements *reqs,
                         ncclDevComm *out, char *err, size_t errlen) {
  if (w == NULL || reqs == NULL || out == NULL) {
    say(err, errlen, "vranks: devcomm_create: NULL argument");
    return -1;
  }
  if (check_reqs(reqs, err, errlen) != 0)
    return -1;
  // Layout of the per-rank resource slice, in 128-byte units like NCCL's
  // handles: the LSA barriers first, then each requested buffer.
  int nbar = reqs->barrierCount > reqs->lsaBarrierCount ? reqs->barrierCount
                                                        : reqs->lsaBarrierCount;
  size_t off = (size_t)(3 + w->lsa_size) * (size_t)nbar * sizeof(uint32_t);
  off = (off + 127) / 128 * 128;
  for (ncclDevResourceRequirements *r = reqs->resourceRequirementsList; r != NULL; r = r->next) {
    size_t a = r->bufferAlign > 128 ? r->bufferAlign : 128;
    off = (off + a - 1) / a * a;
    if (r->outBufferHandle != NULL)
      *r->outBufferHandle = (ncclDevResourceHandle_t)(off / 128);
    off += (r->bufferSize + 127) / 128 * 128;
  }
  if (off == 0)
    off = 128; // every comm has a resource window, even an empty one
  struct vnccl_window *res = alloc_slices(w, off, true, err, errlen);
  if (res == NULL)
    return -1;
  struct ncclWindow_vidmem inl[VNCCL_MAX_RANKS];
  if (!cuda_ok(cudaMemcpy(inl, res->descs, sizeof(struct ncclWindow_vidmem) * w->nranks,
                          cudaMemcpyDeviceToHost),
               "cudaMemcpy(resource descriptors)", err, errlen)) {
    vnccl_window_free(w, res);
    return -1;
  }
  for (int r = 0; r < w->nranks; ++r) {
    ncclDevComm *c = &out[r];
    memset(c, 0, sizeof *c);
    c->rank = r;
    c->nRanks = w->nranks;
    c->lsaRank = r % w->lsa_size;
    c->lsaSize = w->lsa_size;
    c->resourceWindow = res->descs + r;
    c->resourceWindow_inlined = inl[r];
    c->lsaBarrier.bufHandle = 0;
    c->lsaBarrier.nBarriers = nbar;
    c->ginContextCount = 0;
  }
  return 0;
}

void vnccl_devcomm_destroy(struct vnccl_world *w, const ncclDevComm *comms) {
  if (w == NULL || comms == NULL || comms[0].resourceWindow_inlined.winHost == NULL)
    return;
  struct vnccl_window *res = (struct vnccl_window *)comms[0].resourceWindow_inlined.winHost;
  vnccl_window_free(w, res);
}

int vnccl_check_coresident(const void *kernel, int grid, int block, size_t smem, int nranks,
                           long *capacity, char *err, size_t errlen) {
  if (kernel == NULL || grid < 1 || block < 1 || nranks < 1) {
    say(err, errlen, "vranks: co-residency check: bad kernel/grid/block/ranks (%d, %d, %d)", grid,
        block, nranks);
    return -1;
  }
  int dev = 0, sms = 0, per_sm = 0;
  if (!cuda_ok(cudaGetDevice(&dev), "cudaGetDevice", err, errlen) ||
      !cuda_ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev),
               "cudaDeviceGetAttribute(SM count)", err, errlen) ||
      !cuda_ok(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, smem),
               "cudaOccupancyMaxActiveBlocksPerMultiprocessor", err, errlen))
    return -1;
  long cap = (long)per_sm * sms;
  long need = (long)grid * nranks;
  if (capacity != NULL)
    *capacity = cap;
  if (need > cap) {
    say(err, errlen,
        "vranks: %d virtual ranks x %d CTAs = %ld CTAs cannot all be resident (%d per SM x %d "
        "SMs = %ld at %d threads, %zu bytes shared memory); spinning ranks would deadlock: use "
        "fewer virtual ranks or a smaller grid",
        nranks, grid, need, per_sm, sms, cap, block, smem);
    return -1;
  }
  return 0;
}

static __global__ void vnccl_delay_kernel(unsigned long long ns) {
  unsigned long long t0 = vnccl_now_ns();
  while (vnccl_now_ns() - t0 < ns)
    __nanosleep(1000);
}

int vnccl_delay(cudaStream_t s, unsigned long long ns, char *err, size_t errlen) {
  vnccl_delay_kernel<<<1, 1, 0, s>>>(ns);
  return cuda_ok(cudaGetLastError(), "launch of the delay kernel", err, errlen) ? 0 : -1;
}

#endif // CUCO_VRANKS
