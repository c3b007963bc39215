// tests/gpu/vranks_gemm_ag.cu - a device-initiated GEMM+AllGather for the
// runtime's --vranks integration test (until workloads/gemm_allgather has
// its seed.cu). Same ABI as the workload's baseline.cu: A (INPUT, this
// rank's Mr x K rows) is pushed with LSA stores into every peer's Ag
// window, bracketed by LSA barriers, then C = Ag x B with the workload's
// frozen cuBLASLt core. Builds unchanged against real NCCL or, with
// -DCUCO_VRANKS, against the emulation.
//
// -DVR_CHEAT=1 builds a cheat: no barrier at all (push, then compute at
// once). With one rank's launch delayed the others read poisoned Ag rows,
// so the runtime must report verify_failed.
#include <stdlib.h>
#include <string.h>

#include "rt.cuh"
#include "wl_gemm.cuh"

#ifndef VR_CHEAT
#define VR_CHEAT 0
#endif
#define VR_CTAS 8
#define VR_THREADS 256

struct vag {
  struct wl_shape s;
  cublasLtHandle_t lt;
  struct wl_gemm g;
  void *A, *B, *C, *Ag;
  ncclWindow_t agWin;
  ncclDevComm dc;
};

// CTA b of every rank copies the same grid-stride share of A into slot
// `lsaRank` of every peer's Ag. sync #1: peers are in this step (done with
// the last one's Ag); sync #2 (acq_rel): my stores are published and CTA b
// of every peer has finished its share, so when the kernel ends every
// share of every peer has landed here.
__global__ void __launch_bounds__(VR_THREADS)
vag_push(ncclDevComm dc, ncclWindow_t agWin, const uint4 *a, size_t n16) {
#if !VR_CHEAT
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(), blockIdx.x);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
#endif
  size_t off = (size_t)dc.lsaRank * n16 * sizeof(uint4);
  for (int k = 0; k < dc.lsaSize; k++) {
    int q = (dc.lsaRank + 1 + k) % dc.lsaSize;
    uint4 *dst = (uint4 *)ncclGetLsaPointer(agWin, off, q);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16;
         i += (size_t)gridDim.x * blockDim.x)
      dst[i] = a[i];
  }
#if !VR_CHEAT
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
#endif
}

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct vag *u = (struct vag *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  if (wl_shape_get(ctx, p, &u->s) != 0) return -1;
  const struct wl_shape *s = &u->s;
  if (((size_t)s->Mr * s->K * 2) % 16 != 0)
    return rt_fail(ctx, "vranks_gemm_ag: Mr*K*2 must be a multiple of 16 bytes");
  size_t ws_bytes = (size_t)32 << 20;
  u->A = rt_alloc(ctx, "A", (size_t)s->Mr * s->K * 2, RT_INPUT, RT_BF16, 0);
  u->B = rt_alloc(ctx, "B", (size_t)s->K * s->Nr * 2, RT_INPUT, RT_BF16, 0);
  u->C = rt_alloc(ctx, "C", (size_t)s->M * s->Nr * 2, RT_OUTPUT, RT_BF16, 0);
  u->Ag = rt_alloc(ctx, "Ag", (size_t)s->M * s->K * 2, RT_RECV, RT_BF16, RT_WINDOW);
  void *ws = rt_alloc(ctx, "ws", ws_bytes, RT_SCRATCH, RT_U8, 0);
  if (!u->A || !u->B || !u->C || !u->Ag || !ws) return -1;
  if (rt_output_shape(ctx, "C", s->M, s->Nr) != 0) return -1;
  u->agWin = rt_window(ctx, "Ag");
  ncclDevCommRequirements reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.lsaBarrierCount = VR_CTAS;
  if (rt_devcomm_create(ctx, &reqs, &u->dc) != 0) return -1;
  if (rt_check_coresident(ctx, (const void *)vag_push, VR_CTAS, VR_THREADS, 0) != 0) return -1;
  WL_LT(ctx, cublasLtCreate(&u->lt));
  return wl_gemm_plan(ctx, &u->g, u->lt, s->M, s->Nr, s->K, s->K, s->Nr, s->Nr, 1, 0, 0, ws,
                      ws_bytes, 256, 256);
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  struct vag *u = (struct vag *)rt_get_user(ctx);
  cudaStream_t st = rt_stream(ctx);
  vag_push<<<VR_CTAS, VR_THREADS, 0, st>>>(u->dc, u->agWin, (const uint4 *)u->A,
                                             (size_t)u->s.Mr * u->s.K * 2 / 16);
  RT_LAUNCH(ctx);
  return wl_gemm_run(ctx, &u->g, u->lt, u->Ag, u->B, u->C, st);
}

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  struct vag *u = (struct vag *)rt_get_user(ctx);
  if (!u) return;
  wl_gemm_free(&u->g);
  if (u->lt) cublasLtDestroy(u->lt);
  free(u);
  rt_set_user(ctx, NULL);
}
