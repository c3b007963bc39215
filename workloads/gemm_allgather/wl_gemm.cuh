// workloads/gemm_allgather/wl_gemm.cuh - the shared, frozen compute core of
// this workload: a cuBLASLt bf16 GEMM with fp32 accumulation, row-major.
// Baselines, the seed and candidates all use it, so a search improves
// scheduling and communication, not the GEMM itself.  (A tensor-core tile
// for placement=per_tile comes from the gemmtile work.)
#ifndef WL_GEMM_CUH
#define WL_GEMM_CUH

#include <cublasLt.h>

#include "rt.cuh"

struct wl_gemm {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;  // cuBLAS operands: B^T, A^T, C^T
  cublasLtMatmulAlgo_t algo;
  void *ws;
  size_t ws_bytes;
  int ready;
  int empty;  // planned with no rows: running it does nothing
};

#define WL_LT(ctx, call)                                                     \
  do {                                                                       \
    cublasStatus_t wl_s_ = (call);                                           \
    if (wl_s_ != CUBLAS_STATUS_SUCCESS)                                      \
      return rt_fail((ctx), "%s:%d: %s: cublas status %d", __FILE__,        \
                     __LINE__, #call, (int)wl_s_);                           \
  } while (0)

// Largest power of two <= 256 dividing BYTES (0 counts as 256): the pointer
// alignment a GEMM may assume for an operand at that byte offset.
static inline uint32_t wl_align(unsigned long long bytes) {
  uint32_t a = 256;
  while (a > 1 && bytes % a) a >>= 1;
  return a;
}

// Plan C[rows, n] = A[rows, k] * B[k, n], all row-major bf16 with leading
// dimensions lda/ldb/ldc (elements), fp32 accumulate; BATCH > 1 repeats it
// with A advanced by STRIDE_A and C by STRIDE_C elements (B shared).  WS is
// a device workspace of WS_BYTES (the caller's SCRATCH).  ALIGN_A/ALIGN_C:
// the byte alignment of every A / C pointer the plan will be run with
// (wl_align of their byte offsets).  0 or rt_fail.
static inline int wl_gemm_plan(struct wl_ctx *ctx, struct wl_gemm *g,
                               cublasLtHandle_t lt, long long rows,
                               long long n, long long k, long long lda,
                               long long ldb, long long ldc, int batch,
                               long long stride_a, long long stride_c,
                               void *ws, size_t ws_bytes, uint32_t align_a,
                               uint32_t align_c) {
  memset(g, 0, sizeof *g);
  g->ws = ws;
  g->ws_bytes = ws_bytes;
  if (rows <= 0) {  // nothing to compute
    g->empty = 1;
    return 0;
  }
  WL_LT(ctx, cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t nt = CUBLAS_OP_N;
  WL_LT(ctx, cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA,
                                            &nt, sizeof nt));
  WL_LT(ctx, cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB,
                                            &nt, sizeof nt));
  // Column-major view: C^T[n, rows] = B^T[n, k] * A^T[k, rows].
  WL_LT(ctx, cublasLtMatrixLayoutCreate(&g->la, CUDA_R_16BF, n, k, ldb));
  WL_LT(ctx, cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_16BF, k, rows, lda));
  WL_LT(ctx, cublasLtMatrixLayoutCreate(&g->lc, CUDA_R_16BF, n, rows, ldc));
  if (batch > 1) {
    int32_t bc = batch;
    int64_t s0 = 0, sa = stride_a, sc = stride_c;
    WL_LT(ctx, cublasLtMatrixLayoutSetAttribute(
                   g->la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
    WL_LT(ctx, cublasLtMatrixLayoutSetAttribute(
                   g->la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s0,
                   sizeof s0));
    WL_LT(ctx, cublasLtMatrixLayoutSetAttribute(
                   g->lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
    WL_LT(ctx, cublasLtMatrixLayoutSetAttribute(
                   g->lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa,
                   sizeof sa));
    WL_LT(ctx, cublasLtMatrixLayoutSetAttribute(
                   g->lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
    WL_LT(ctx, cublasLtMatrixLayoutSetAttribute(
                   g->lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sc,
                   sizeof sc));
  }
  cublasLtMatmulPreference_t pref;
  WL_LT(ctx, cublasLtMatmulPreferenceCreate(&pref));
  WL_LT(ctx, cublasLtMatmulPreferenceSetAttribute(
                 pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                 sizeof ws_bytes));
  uint32_t al_b = 256;  // B is always a whole buffer
  WL_LT(ctx, cublasLtMatmulPreferenceSetAttribute(
                 pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_b,
                 sizeof al_b));
  WL_LT(ctx, cublasLtMatmulPreferenceSetAttribute(
                 pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_a,
                 sizeof align_a));
  WL_LT(ctx, cublasLtMatmulPreferenceSetAttribute(
                 pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c,
                 sizeof align_c));
  WL_LT(ctx, cublasLtMatmulPreferenceSetAttribute(
                 pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c,
                 sizeof align_c));
  cublasLtMatmulHeuristicResult_t res;
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
      lt, g->op, g->la, g->lb, g->lc, g->lc, pref, 1, &res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found < 1)
    return rt_fail(ctx, "cublasLt: no algorithm for %lldx%lldx%lld (status %d)",
                   rows, n, k, (int)st);
  g->algo = res.algo;
  g->ready = 1;
  return 0;
}

// Enqueue the planned GEMM on STREAM.  0 or rt_fail.
static inline int wl_gemm_run(struct wl_ctx *ctx, const struct wl_gemm *g,
                              cublasLtHandle_t lt, const void *A,
                              const void *B, void *C, cudaStream_t stream) {
  if (g->empty) return 0;
  if (!g->ready) return rt_fail(ctx, "wl_gemm_run: GEMM was never planned");
  const float one = 1.0f, zero = 0.0f;
  WL_LT(ctx, cublasLtMatmul(lt, g->op, &one, B, g->la, A, g->lb, &zero, C,
                            g->lc, C, g->lc, &g->algo, g->ws, g->ws_bytes,
                            stream));
  return 0;
}

static inline void wl_gemm_free(struct wl_gemm *g) {
  if (g->la) cublasLtMatrixLayoutDestroy(g->la);
  if (g->lb) cublasLtMatrixLayoutDestroy(g->lb);
  if (g->lc) cublasLtMatrixLayoutDestroy(g->lc);
  if (g->op) cublasLtMatmulDescDestroy(g->op);
  memset(g, 0, sizeof *g);
}

// The problem of this workload, checked once (shared by every file).
struct wl_shape {
  long long M, K, N, R, Mr, Nr;  // global M, K, N; ranks; per-rank rows/cols
};

static inline int wl_shape_get(struct wl_ctx *ctx, const struct wl_problem *p,
                               struct wl_shape *s) {
  s->M = wl_param(p, "M", -1);
  s->K = wl_param(p, "K", -1);
  s->N = wl_param(p, "N", -1);
  s->R = p->nranks;
  if (s->M < 1 || s->K < 1 || s->N < 1 || s->M > (1 << 20) ||
      s->K > (1 << 20) || s->N > (1 << 20))
    return rt_fail(ctx, "gemm_allgather needs M, K, N in 1..2^20 (got M=%lld K=%lld N=%lld)",
                   s->M, s->K, s->N);
  if (s->M % s->R || s->N % s->R)
    return rt_fail(ctx, "gemm_allgather: M=%lld and N=%lld must be multiples of the rank count %lld",
                   s->M, s->N, s->R);
  s->Mr = s->M / s->R;
  s->Nr = s->N / s->R;
  return 0;
}

#endif  // WL_GEMM_CUH
