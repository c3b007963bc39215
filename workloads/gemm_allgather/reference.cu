// workloads/gemm_allgather/reference.cu - the TRUSTED reference (frozen,
// never part of a candidate).  Expected C_r = AllGather(A) * B_r, computed
// from inputs the runtime regenerates from their seeds (so nothing a
// candidate did to its buffers can leak in): cuBLAS, bf16 inputs, fp32
// accumulation AND fp32 output (no bf16 rounding in the expectation).
// For tiny shapes a few entries are also recomputed in fp64 on the CPU and
// the cuBLAS result must match them (a self-check of the reference).

// No device-API code here: rt.cuh without <nccl_device.h> (rt.cuh says
// why: ~4.5 s of CPU less a compile).
#define RT_HOST_ONLY

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt.cuh"
#include "wl_work.h"
#include "wl_gemm.cuh"

struct ref_state {
  cublasHandle_t h;
};

#define REF_BLAS(ctx, call)                                                   \
  do {                                                                        \
    cublasStatus_t s_ = (call);                                               \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                          \
      return rt_fail((ctx), "reference %s:%d: %s: status %d", __FILE__,      \
                     __LINE__, #call, (int)s_);                               \
  } while (0)

static float bf2f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// fp64 CPU recomputation of 64 seeded entries of EXP (fp32, [M, Nr]).
static int cpu_spot_check(struct wl_ctx *ctx, const struct wl_shape *s,
                          const void *ag_dev, const void *b_dev,
                          const float *exp_dev) {
  size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->Nr;
  uint16_t *a = (uint16_t *)malloc(na * 2), *b = (uint16_t *)malloc(nb * 2);
  int rc = 0;
  if (!a || !b) {
    rc = rt_fail(ctx, "reference: out of host memory");
    goto out;
  }
  if (cudaMemcpy(a, ag_dev, na * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(b, b_dev, nb * 2, cudaMemcpyDeviceToHost) != cudaSuccess) {
    rc = rt_fail(ctx, "reference: copy for the CPU check failed");
    goto out;
  }
  for (int t = 0; t < 64; t++) {
    long long i = (long long)((t * 2654435761ull + 17) % s->M);
    long long j = (long long)((t * 40503ull + 5) % s->Nr);
    if (t == 0) i = s->M - 1, j = s->Nr - 1;  // the ragged corner
    double acc = 0, mag = 0;
    for (long long k = 0; k < s->K; k++) {
      double x = (double)bf2f(a[i * s->K + k]) * bf2f(b[k * s->Nr + j]);
      acc += x;
      mag += fabs(x);
    }
    float got;
    if (cudaMemcpy(&got, exp_dev + i * s->Nr + j, sizeof got,
                   cudaMemcpyDeviceToHost) != cudaSuccess) {
      rc = rt_fail(ctx, "reference: copy for the CPU check failed");
      goto out;
    }
    if (!(fabs(got - acc) <= 1e-4 * mag + 1e-6)) {
      rc = rt_fail(ctx, "reference self-check: C[%lld][%lld] cuBLAS %.8g vs fp64 %.8g",
                   i, j, (double)got, acc);
      goto out;
    }
  }
out:
  free(a);
  free(b);
  return rc;
}

extern "C" int wl_reference(struct wl_ctx *ctx, const struct wl_problem *p,
                            const char *output, void *expected_dev) {
  struct wl_shape s;
  if (wl_shape_get(ctx, p, &s) != 0) return -1;
  if (strcmp(output, "C") != 0)
    return rt_fail(ctx, "reference: unknown output %s", output);
  struct ref_state *st = (struct ref_state *)rt_get_ref_state(ctx);
  cudaStream_t rs = rt_ref_stream(ctx);
  if (!st) {
    st = (struct ref_state *)calloc(1, sizeof *st);
    if (!st) return rt_fail(ctx, "reference: out of memory");
    REF_BLAS(ctx, cublasCreate(&st->h));
    REF_BLAS(ctx, cublasSetMathMode(st->h, CUBLAS_PEDANTIC_MATH));
    rt_set_ref_state(ctx, st);
  }
  REF_BLAS(ctx, cublasSetStream(st->h, rs));
  size_t a_bytes = (size_t)s.Mr * s.K * 2, b_bytes = (size_t)s.K * s.Nr * 2;
  void *ag = NULL, *b = NULL;
  RT_CUDA(ctx, cudaMallocAsync(&ag, a_bytes * s.R, rs));
  RT_CUDA(ctx, cudaMallocAsync(&b, b_bytes, rs));
  for (int q = 0; q < s.R; q++)
    if (rt_input_regen(ctx, "A", q, (char *)ag + a_bytes * q) != 0) return -1;
  if (rt_input_regen(ctx, "B", p->rank, b) != 0) return -1;
  const float one = 1.0f, zero = 0.0f;
  // Row-major C[M, Nr] = Ag[M, K] * B[K, Nr] as column-major C^T = B^T Ag^T.
  REF_BLAS(ctx, cublasGemmEx(st->h, CUBLAS_OP_N, CUBLAS_OP_N, (int)s.Nr,
                             (int)s.M, (int)s.K, &one, b, CUDA_R_16BF, (int)s.Nr,
                             ag, CUDA_R_16BF, (int)s.K, &zero, expected_dev,
                             CUDA_R_32F, (int)s.Nr, CUBLAS_COMPUTE_32F_PEDANTIC,
                             CUBLAS_GEMM_DEFAULT));
  int rc = 0;
  if ((double)s.M * s.K * s.Nr <= 64.0 * 1024 * 1024) {
    RT_CUDA(ctx, cudaStreamSynchronize(rs));
    rc = cpu_spot_check(ctx, &s, ag, b, (const float *)expected_dev);
  }
  RT_CUDA(ctx, cudaFreeAsync(ag, rs));
  RT_CUDA(ctx, cudaFreeAsync(b, rs));
  return rc;
}

// The minimal work of one step (speed-of-light bound; wl_work.h).
extern "C" int wl_work(const struct wl_problem *p, struct wl_work *w) { return gemm_ag_work(p, w); }

// The state wl_reference cached (runtime.h): freed before the next size of
// a --plan run.
extern "C" void wl_reference_release(struct wl_ctx *ctx) {
  struct ref_state *st = (struct ref_state *)rt_get_ref_state(ctx);
  if (!st) return;
  cudaStreamSynchronize(rt_ref_stream(ctx));
  cublasDestroy(st->h);
  free(st);
  rt_set_ref_state(ctx, NULL);
}
