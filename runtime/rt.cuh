// runtime/rt.cuh - the C++ side of the runtime for workload .cu files.
//
// Include this (not nccl.h / nccl_device.h) from baseline.cu, seed.cu,
// candidates and reference.cu.  It adds to runtime.h what needs CUDA/NCCL
// types: the step stream, the communicator, symmetric windows, device
// communicators, and checked-call macros.
#ifndef CUCO_RT_CUH
#define CUCO_RT_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuco_directives.h"
#include "runtime.h"

// NCCL's device API (or its emulation, vnccl.cuh) costs a unit about 4.5 s
// of CPU to compile: its utility.h includes <cuda/atomic> whenever nvcc
// compiles, kernels or not.  A unit with no device-API code (the runtime's
// own units, a reference) defines RT_HOST_ONLY before including this: it
// gets NCCL's host API and the two device-API types named below, incomplete
// (pointers only), and a use of the device API fails to compile there.
#ifdef RT_HOST_ONLY
#include <nccl.h>
struct ncclDevComm;
struct ncclDevCommRequirements;
#else
#include "cuco_nccl.cuh"
#endif

// The stream a step is enqueued on (created by the runtime, non-blocking).
cudaStream_t rt_stream(struct wl_ctx *ctx);
// The stream the reference and input regeneration run on (not timed).
cudaStream_t rt_ref_stream(struct wl_ctx *ctx);
// This rank's NCCL communicator (owned by the runtime).
ncclComm_t rt_comm(struct wl_ctx *ctx);
// Window of a buffer declared with RT_WINDOW, or NULL.  The window spans
// the whole buffer; offsets are bytes from rt_buffer(ctx, name).
ncclWindow_t rt_window(struct wl_ctx *ctx, const char *name);

// Create a device communicator with REQS (zeroed by the caller with memset,
// then filled).  Collective.  The runtime owns it and destroys it after
// wl_teardown; the virtual-rank mode substitutes its emulation here, so
// workloads never call ncclDevCommCreate themselves.  Never ask for GIN
// resources unless rt_gin_possible(ctx) says so (a failed GIN activation
// breaks later registrations on the communicator).  0 or rt_fail(...).
int rt_devcomm_create(struct wl_ctx *ctx, const ncclDevCommRequirements *reqs,
                      ncclDevComm *out);
// Whether GIN could be requested: false when all ranks are one LSA domain
// (single node: no GIN NIC on our machines) or when CUCO_NO_GIN is set.
int rt_gin_possible(struct wl_ctx *ctx);
// Check before launching a kernel that spins on other ranks (barriers,
// flags): all GRID CTAs of BLOCK threads and SMEM bytes of KERNEL (a
// __global__ function) must be co-resident -- R times over in the --vranks
// mode, where R virtual ranks share the GPU (rt_coresident_max).  0 or
// rt_fail(...) naming both numbers.
int rt_check_coresident(struct wl_ctx *ctx, const void *kernel, int grid,
                        int block, size_t smem);
// The largest GRID that check accepts for KERNEL (>= 1), or rt_fail(...):
// a kernel whose CTA count is a tuning choice takes min(choice, this).
// Under --vranks all ranks' spinners get half the SMs (the rest is for the
// GEMMs they wait on), so the choice can be smaller there.
int rt_coresident_max(struct wl_ctx *ctx, const void *kernel, int block, size_t smem);
// LSA team size of the communicator (host view).
int rt_lsa_size(struct wl_ctx *ctx);

// Optional input hook of the trusted reference.cu (a weak symbol: a
// workload that does not define it gets the runtime's random inputs
// unchanged).  Called after the runtime filled INPUT NAME of rank RANK for
// step STEP with its seeded random data, both before the step (on the step
// stream) and in rt_input_regen (on the reference stream): it may enqueue
// deterministic edits of DEV on STREAM (flash_attn_cp plants its needles).
// Candidates never define it (cuco's static check forbids the name).
extern "C" int wl_input_post(struct wl_ctx *ctx, const char *name, int rank, void *dev,
                             unsigned long long step, cudaStream_t stream)
    __attribute__((weak));

// State slot for the trusted reference (separate from the workload's user
// state so a candidate cannot reach it by accident).
void rt_set_ref_state(struct wl_ctx *ctx, void *state);
void *rt_get_ref_state(struct wl_ctx *ctx);

// Checked calls inside functions that take `struct wl_ctx *ctx` and return
// int: on failure record "file:line: call: message" and return -1.
#define RT_CUDA(ctx, call)                                                   \
  do {                                                                       \
    cudaError_t rt_e_ = (call);                                              \
    if (rt_e_ != cudaSuccess)                                                \
      return rt_fail((ctx), "%s:%d: %s: %s", __FILE__, __LINE__, #call,     \
                     cudaGetErrorString(rt_e_));                             \
  } while (0)
#define RT_NCCL(ctx, call)                                                   \
  do {                                                                       \
    ncclResult_t rt_r_ = (call);                                             \
    if (rt_r_ != ncclSuccess)                                                \
      return rt_fail((ctx), "%s:%d: %s: %s", __FILE__, __LINE__, #call,     \
                     ncclGetErrorString(rt_r_));                             \
  } while (0)
// Same for the last kernel launch.
#define RT_LAUNCH(ctx) RT_CUDA(ctx, cudaGetLastError())

#endif  // CUCO_RT_CUH
