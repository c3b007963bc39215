// workloads/gemm_allgather seed (from cuco transform): all-gather of A
// into the gathered buffer, then one cuBLASLt bf16 GEMM
// (fp32 accumulate, bf16 output) of the whole gathered A with this rank's B.
// Device-initiated: the all-gather is done by ag_push_kernel with LSA
// stores into the peers' symmetric window, then the same GEMM.
#include <stdlib.h>
#include <string.h>

#include "rt.cuh"
#include "wl_gemm.cuh"

#define AG_MAX_CTAS 128

struct bl {
  struct wl_shape s;
  cublasLtHandle_t lt;
  struct wl_gemm g;
  void *A, *B, *C, *Ag;
  ncclWindow_t ag_win;
  ncclDevComm dc;
};

// CUCO-DIRECTIVES backend=lsa placement=deferred sync=global issuer=cta chunk=64MiB
// CUCO-PARAM comm_ctas=1
// CUCO-PARAM push_threads=128
#ifndef CUCO_PARAM_comm_ctas
#define CUCO_PARAM_comm_ctas 1
#endif
#ifndef CUCO_PARAM_push_threads
#define CUCO_PARAM_push_threads 128
#endif
#define AG_CTAS (4 * CUCO_PARAM_comm_ctas) // <= AG_MAX_CTAS barriers

// Deferred all-gather over LSA: CTA b copies its slice of this rank's shard
// into every peer's gathered buffer at this rank's offset, with an LSA
// barrier (index b) before (peers are done reading the previous step's
// data) and after (publish the stores; the GEMM in the next kernel reads).
__global__ void __launch_bounds__(1024)
ag_push_kernel(const uint4 *src, ncclWindow_t ag_win, ncclDevComm dc,
               size_t shard_bytes) {
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(),
                                         blockIdx.x);
  bar.sync(ncclCoopCta(), cuda::memory_order_relaxed);
  size_t n16 = shard_bytes / 16;
  size_t base = (size_t)dc.lsaRank * shard_bytes;
  for (int k = 1; k <= dc.lsaSize; k++) {
    int peer = (dc.lsaRank + k) % dc.lsaSize;
    uint4 *dst = (uint4 *)ncclGetLsaPointer(ag_win, base, peer);
    if (shard_bytes % 16 == 0) { // 16-byte stores: every offset aligned
      for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16;
           i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
    } else { // odd shard sizes leave peer offsets unaligned: bytes
      const unsigned char *s8 = (const unsigned char *)src;
      unsigned char *d8 = (unsigned char *)dst;
      for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
           i < shard_bytes; i += (size_t)gridDim.x * blockDim.x)
        d8[i] = s8[i];
    }
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct bl *u = (struct bl *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  if (wl_shape_get(ctx, p, &u->s) != 0) return -1;
  const struct wl_shape *s = &u->s;
  size_t ws_bytes = (size_t)32 << 20;
  u->A = rt_alloc(ctx, "A", (size_t)s->Mr * s->K * 2, RT_INPUT, RT_BF16, 0);
  u->B = rt_alloc(ctx, "B", (size_t)s->K * s->Nr * 2, RT_INPUT, RT_BF16, 0);
  u->C = rt_alloc(ctx, "C", (size_t)s->M * s->Nr * 2, RT_OUTPUT, RT_BF16, 0);
  u->Ag = rt_alloc(ctx, "Ag", (size_t)s->M * s->K * 2, RT_RECV, RT_BF16,
                   RT_WINDOW);
  void *ws = rt_alloc(ctx, "ws", ws_bytes, RT_SCRATCH, RT_U8, 0);
  if (!u->A || !u->B || !u->C || !u->Ag || !ws) return -1;
  if (rt_output_shape(ctx, "C", s->M, s->Nr) != 0) return -1;
  u->ag_win = rt_window(ctx, "Ag");
  if (!u->ag_win) return rt_fail(ctx, "no window for Ag");
  ncclDevCommRequirements reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.lsaBarrierCount = AG_MAX_CTAS;
  if (rt_devcomm_create(ctx, &reqs, &u->dc) != 0) return -1;
  WL_LT(ctx, cublasLtCreate(&u->lt));
  return wl_gemm_plan(ctx, &u->g, u->lt, s->M, s->Nr, s->K, s->K, s->Nr, s->Nr,
                      1, 0, 0, ws, ws_bytes, 256, 256);
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  struct bl *u = (struct bl *)rt_get_user(ctx);
  cudaStream_t st = rt_stream(ctx);
  size_t shard_bytes = (size_t)u->s.Mr * u->s.K * 2;
  ag_push_kernel<<<AG_CTAS, CUCO_PARAM_push_threads, 0, st>>>((const uint4 *)u->A, u->ag_win,
                                          u->dc, shard_bytes);
  RT_LAUNCH(ctx);
  return wl_gemm_run(ctx, &u->g, u->lt, u->Ag, u->B, u->C, st);
}

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  struct bl *u = (struct bl *)rt_get_user(ctx);
  if (!u) return;
  wl_gemm_free(&u->g);
  if (u->lt) cublasLtDestroy(u->lt);
  free(u);
  rt_set_user(ctx, NULL);
}
