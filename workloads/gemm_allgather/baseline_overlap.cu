// workloads/gemm_allgather/baseline_overlap.cu - host-orchestrated chunked
// overlap: A's rows are cut into NCHUNK pieces; a comm stream all-gathers
// piece c+1 (ncclAllGather) while the compute stream multiplies piece c
// (one strided-batched cuBLASLt GEMM over the R ranks' copies of the piece).
// This rank's own rows need no communication: they are multiplied first,
// straight from A, while the first piece is in flight.

#define RT_HOST_ONLY  // host-driven: rt.cuh without the device API (it says why)

#include <stdlib.h>
#include <string.h>

#include "rt.cuh"
#include "wl_gemm.cuh"

#define OV_MAX_CHUNKS 16

struct ov {
  struct wl_shape s;
  int nchunk;
  long long c0[OV_MAX_CHUNKS + 1];  // piece c = rows [c0[c], c0[c+1]) of A_r
  cublasLtHandle_t lt;
  struct wl_gemm own, lo[OV_MAX_CHUNKS], hi[OV_MAX_CHUNKS];
  void *A, *B, *C, *Ag;
  cudaStream_t comm;
  cudaEvent_t fork, gathered[OV_MAX_CHUNKS], done;
};

static uint32_t min2(uint32_t a, uint32_t b) { return a < b ? a : b; }

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct ov *u = (struct ov *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  if (wl_shape_get(ctx, p, &u->s) != 0) return -1;
  const struct wl_shape *s = &u->s;
  size_t ws_bytes = (size_t)32 << 20;
  u->A = rt_alloc(ctx, "A", (size_t)s->Mr * s->K * 2, RT_INPUT, RT_BF16, 0);
  u->B = rt_alloc(ctx, "B", (size_t)s->K * s->Nr * 2, RT_INPUT, RT_BF16, 0);
  u->C = rt_alloc(ctx, "C", (size_t)s->M * s->Nr * 2, RT_OUTPUT, RT_BF16, 0);
  u->Ag = rt_alloc(ctx, "Ag", (size_t)s->M * s->K * 2, RT_RECV, RT_BF16, 0);
  void *ws = rt_alloc(ctx, "ws", ws_bytes, RT_SCRATCH, RT_U8, 0);
  if (!u->A || !u->B || !u->C || !u->Ag || !ws) return -1;
  if (rt_output_shape(ctx, "C", s->M, s->Nr) != 0) return -1;
  if (rt_output_blocks(ctx, "C", s->M < 16 ? s->M : 16) != 0) return -1;  // 16-row blocks
  WL_LT(ctx, cublasLtCreate(&u->lt));
  u->nchunk = (int)wl_param(p, "chunks", 4);
  if (u->nchunk < 1) u->nchunk = 1;
  if (u->nchunk > OV_MAX_CHUNKS) u->nchunk = OV_MAX_CHUNKS;
  if (u->nchunk > s->Mr) u->nchunk = (int)s->Mr;
  for (int c = 0; c <= u->nchunk; c++) u->c0[c] = s->Mr * c / u->nchunk;
  RT_CUDA(ctx, cudaStreamCreateWithFlags(&u->comm, cudaStreamNonBlocking));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->fork, cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->done, cudaEventDisableTiming));
  // Own rows first (from A), with the output at row block rank*Mr.
  if (wl_gemm_plan(ctx, &u->own, u->lt, s->Mr, s->Nr, s->K, s->K, s->Nr, s->Nr,
                   1, 0, 0, ws, ws_bytes, 256,
                   wl_align((unsigned long long)p->rank * s->Mr * s->Nr * 2)) != 0)
    return -1;
  int me = p->rank;
  for (int c = 0; c < u->nchunk; c++) {
    long long rows = u->c0[c + 1] - u->c0[c];
    RT_CUDA(ctx, cudaEventCreateWithFlags(&u->gathered[c], cudaEventDisableTiming));
    // Piece c of rank q sits at Ag + (R*c0 + q*rows)*K; its output rows are
    // C + (q*Mr + c0)*Nr: one batch over q < me, one over q > me (this
    // rank's own rows were done from A already).
    unsigned long long ab = (unsigned long long)rows * s->K * 2,
                       cb = (unsigned long long)s->Mr * s->Nr * 2;
    uint32_t al_a = min2(wl_align(ab), wl_align((s->R * u->c0[c]) * s->K * 2));
    uint32_t al_c = min2(wl_align(cb), wl_align(u->c0[c] * s->Nr * 2));
    if (me > 0 && wl_gemm_plan(ctx, &u->lo[c], u->lt, rows, s->Nr, s->K, s->K, s->Nr,
                               s->Nr, me, rows * s->K, s->Mr * s->Nr, ws, ws_bytes,
                               al_a, al_c) != 0)
      return -1;
    if (me < s->R - 1 &&
        wl_gemm_plan(ctx, &u->hi[c], u->lt, rows, s->Nr, s->K, s->K, s->Nr, s->Nr,
                     (int)(s->R - 1 - me), rows * s->K, s->Mr * s->Nr, ws, ws_bytes,
                     min2(al_a, wl_align(ab * (me + 1))),
                     min2(al_c, wl_align(cb * (me + 1)))) != 0)
      return -1;
  }
  return 0;
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  struct ov *u = (struct ov *)rt_get_user(ctx);
  const struct wl_shape *s = &u->s;
  cudaStream_t st = rt_stream(ctx);
  int me = rt_rank(ctx);
  const char *A = (const char *)u->A;
  char *Ag = (char *)u->Ag, *C = (char *)u->C;
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
  if (s->R > 1)
    for (int c = 0; c < u->nchunk; c++) {
      long long rows = u->c0[c + 1] - u->c0[c];
      RT_NCCL(ctx, ncclAllGather(A + u->c0[c] * s->K * 2,
                                 Ag + s->R * u->c0[c] * s->K * 2, (size_t)rows * s->K,
                                 ncclBfloat16, rt_comm(ctx), u->comm));
      RT_CUDA(ctx, cudaEventRecord(u->gathered[c], u->comm));
    }
  if (wl_gemm_run(ctx, &u->own, u->lt, A, u->B, C + (long long)me * s->Mr * s->Nr * 2,
                  st) != 0)
    return -1;
  if (s->R > 1) {
    for (int c = 0; c < u->nchunk; c++) {
      RT_CUDA(ctx, cudaStreamWaitEvent(st, u->gathered[c], 0));
      long long rows = u->c0[c + 1] - u->c0[c];
      const char *piece = Ag + s->R * u->c0[c] * s->K * 2;
      char *out = C + u->c0[c] * s->Nr * 2;
      if (me > 0 && wl_gemm_run(ctx, &u->lo[c], u->lt, piece, u->B, out, st) != 0)
        return -1;
      if (me < s->R - 1 &&
          wl_gemm_run(ctx, &u->hi[c], u->lt, piece + (me + 1) * rows * s->K * 2, u->B,
                      out + (me + 1) * s->Mr * s->Nr * 2, st) != 0)
        return -1;
    }
  }
  RT_CUDA(ctx, cudaEventRecord(u->done, u->comm));
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->done, 0));
  return 0;
}

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  struct ov *u = (struct ov *)rt_get_user(ctx);
  if (!u) return;
  wl_gemm_free(&u->own);
  for (int c = 0; c < OV_MAX_CHUNKS; c++) {
    wl_gemm_free(&u->lo[c]);
    wl_gemm_free(&u->hi[c]);
    if (u->gathered[c]) cudaEventDestroy(u->gathered[c]);
  }
  if (u->fork) cudaEventDestroy(u->fork);
  if (u->done) cudaEventDestroy(u->done);
  if (u->comm) cudaStreamDestroy(u->comm);
  if (u->lt) cublasLtDestroy(u->lt);
  free(u);
  rt_set_user(ctx, NULL);
}
