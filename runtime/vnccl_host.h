// runtime/vnccl_host.h - host side of the virtual-rank emulation (vnccl.cuh).
//
// One process, one GPU, R virtual ranks. A "world" owns every allocation
// made for its ranks; destroying it frees them all. Each window is ONE
// device allocation of R slices (stride a multiple of 4096); every virtual
// rank gets its own device-resident window descriptor, so the same kernel
// source resolves ncclGetLocalPointer(w, off) to its own slice. Each rank
// gets its own ncclDevComm with its own barrier state (epochs persist in
// device memory between kernels, like NCCL's).
//
// Conventions: functions return 0 on success or -1 on failure and then write
// one line into err[errlen] (never NULL-terminated past errlen); they never
// exit. Include only from CUDA C++ (.cu) files compiled with -DCUCO_VRANKS.
#ifndef CUCO_VNCCL_HOST_H
#define CUCO_VNCCL_HOST_H

#include "vnccl.cuh"

struct vnccl_world;
struct vnccl_window;

// Most virtual ranks a world may hold (one GPU, protocol tests only).
#define VNCCL_MAX_RANKS 64

// vnccl_prepare_env: force CUDA_DEVICE_MAX_CONNECTIONS=32 and
// CUDA_MODULE_LOADING=EAGER (both overriding any value: this mode is a
// protocol test, never timed). In virtual mode every rank shares one
// context, so whatever makes one rank's host call or launch wait for the
// device waits for the other ranks' spinning kernels too, which wait for
// the very launch that is held up: a deadlock no real GPU has (each waits
// only for its own kernels), seen as a barrier timeout.
//  - Hardware queues: two streams that share one of the (default 8)
//    queues are falsely serialised; a rank's launch queued behind another
//    rank's spinning kernel never starts. 32 queues, and the runtime keeps
//    its own streams to one per rank plus one shared (rt_vranks.cu).
//  - Lazy loading: the first launch of a kernel (e.g. cuBLASLt's GEMM
//    inside rank r's step) may synchronise the context.
// Effective only before the first CUDA call of the process;
// vnccl_world_create calls it too.
void vnccl_prepare_env(void);

// vnccl_check_eager: 0 when the driver loads modules eagerly (or cannot
// say), else -1 with a message: CUDA was initialised before
// vnccl_prepare_env, so concurrent virtual ranks could deadlock.
int vnccl_check_eager(char *err, size_t errlen);

// Per-thread stack reserved up front by vnccl_reserve_stack. The driver
// grows the context's local memory when a kernel needs more stack than any
// before it, and that launch blocks until all preceding work has finished
// (cuda.h, CU_LIMIT_STACK_SIZE), i.e. until the other ranks' spinning
// kernels end. Reserved at boot, no launch inside a step resizes it.
#define VNCCL_STACK_BYTES 4096

// vnccl_reserve_stack: raise the current device's stack limit to at least
// VNCCL_STACK_BYTES (about 1 GiB of local memory on an H200) before any
// step runs. 0, or -1 with a message.
int vnccl_reserve_stack(char *err, size_t errlen);

// vnccl_warm_device: launch, at boot, a kernel that uses printf (and so
// assert) and the device heap, and wait for it. The driver sets up the
// printf buffer and the heap at the first launch of a kernel that uses them,
// and that launch waits for all preceding work: inside a step, behind
// another rank's spinning kernel, it never starts (kv_transfer --vranks:
// a printf in the *spinning* kernel cured the hang, one in the pushing
// kernel did not; docs/vranks.md). 0, or -1 with a message.
int vnccl_warm_device(char *err, size_t errlen);

// vnccl_world_create: a world of nranks virtual ranks on the current device,
// in LSA teams of lsa_size consecutive ranks (lsa_size must divide nranks;
// 0 means nranks, i.e. one node). The caller owns *out (vnccl_world_destroy).
int vnccl_world_create(int nranks, int lsa_size, struct vnccl_world **out, char *err,
                       size_t errlen);
// vnccl_world_destroy: synchronises the device, frees every window and comm.
// NULL is a no-op.
void vnccl_world_destroy(struct vnccl_world *w);
int vnccl_world_nranks(const struct vnccl_world *w);
int vnccl_world_lsa_size(const struct vnccl_world *w);

// vnccl_window_alloc: one window of `bytes` per rank (bytes > 0), zeroed.
// The world owns it (freed by vnccl_window_free or vnccl_world_destroy).
int vnccl_window_alloc(struct vnccl_world *w, size_t bytes, struct vnccl_window **out, char *err,
                       size_t errlen);
// vnccl_window_free: frees one window early (after every kernel using it).
void vnccl_window_free(struct vnccl_world *w, struct vnccl_window *win);
// Rank `rank`'s slice (device pointer) and window handle (device descriptor);
// NULL when rank is out of range.
void *vnccl_window_local(const struct vnccl_window *win, int rank);
ncclWindow_t vnccl_window_handle(const struct vnccl_window *win, int rank);
size_t vnccl_window_stride(const struct vnccl_window *win);
size_t vnccl_window_bytes(const struct vnccl_window *win);

// vnccl_devcomm_create: the per-rank device communicators for `reqs`
// (zeroed struct rules as NCCL's): out[0..nranks) are filled, out[r].rank ==
// r. LSA barriers = max(barrierCount, lsaBarrierCount); resource buffers
// from resourceRequirementsList get their handles written through
// outBufferHandle. Refused with a clear message: lsaMultimem, multimem team
// requirements, and anything that turns GIN on (ginForceEnable,
// ginSignalCount, ginCounterCount, per-resource GIN counts). The resource
// window is zeroed. The world owns the state; vnccl_devcomm_destroy frees
// it early.
int vnccl_devcomm_create(struct vnccl_world *w, const ncclDevCommRequirements *reqs,
                         ncclDevComm *out, char *err, size_t errlen);
void vnccl_devcomm_destroy(struct vnccl_world *w, const ncclDevComm *comms);

// vnccl_check_coresident: every rank's CTAs spin on the others', so all
// nranks * grid CTAs of `kernel` (a __global__ function pointer) must be
// resident at once: occupancy(block, smem) * SMs >= nranks * grid, else -1
// with a message that gives both numbers. *capacity (may be NULL) receives
// occupancy * SMs.
int vnccl_check_coresident(const void *kernel, int grid, int block, size_t smem, int nranks,
                           long *capacity, char *err, size_t errlen);

// vnccl_delay: enqueue on `s` a one-thread kernel that spins for `ns`
// nanoseconds (the perturbation: one rank starts late). Returns -1 on a
// launch error.
int vnccl_delay(cudaStream_t s, unsigned long long ns, char *err, size_t errlen);

#endif
