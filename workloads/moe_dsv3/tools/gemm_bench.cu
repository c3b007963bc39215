// workloads/moe_dsv3/tools/gemm_bench.cu - not an implementation: times the
// routed experts' two GEMMs alone (bf16 in/out, fp32 accumulate, the same
// cuBLAS calls as moe_gemm in wl_moe.cuh) for E experts of N rows each:
//   loop:    one cublasGemmEx per expert and GEMM (what the baselines and
//            the seed run today);
//   grouped: two cublasGemmGroupedBatchedEx calls (one group of E problems
//            per GEMM), the host-sized grouped path of workloads.md.
// Usage: gemm_bench E N [H F ITERS].  Prints one JSON line (times are
// medians over ITERS after 3 warm-ups, CUDA events).  Exit 1 on a CUDA
// error; a cuBLAS status other than success for the grouped call is
// reported in "grouped_error" (the loop must work).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                 \
  do {                                                                        \
    cudaError_t e_ = (x);                                                     \
    if (e_ != cudaSuccess) {                                                  \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,              \
              cudaGetErrorString(e_));                                        \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

static __global__ void fill(__nv_bfloat16 *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    p[i] = __float2bfloat16(((int)(h & 0xFFFF) - 32768) / 32768.0f);
  }
}

static int cmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: gemm_bench E N [H F ITERS]\n");
    return 2;
  }
  const long long E = atoll(argv[1]), N = atoll(argv[2]);
  const long long H = argc > 3 ? atoll(argv[3]) : 7168, F = argc > 4 ? atoll(argv[4]) : 2048;
  const int iters = argc > 5 ? atoi(argv[5]) : 20;
  if (E < 1 || N < 1 || H < 8 || F < 8 || iters < 1 || iters > 1000) {
    fprintf(stderr, "gemm_bench: bad arguments\n");
    return 2;
  }
  __nv_bfloat16 *A, *W13, *W2, *H1, *O;
  CK(cudaMalloc(&A, sizeof(*A) * E * N * H));
  CK(cudaMalloc(&W13, sizeof(*A) * E * H * 2 * F));
  CK(cudaMalloc(&W2, sizeof(*A) * E * F * H));
  CK(cudaMalloc(&H1, sizeof(*A) * E * N * 2 * F));
  CK(cudaMalloc(&O, sizeof(*A) * E * N * H));
  fill<<<4096, 256>>>(A, (size_t)E * N * H, 1);
  fill<<<4096, 256>>>(W13, (size_t)E * H * 2 * F, 2);
  fill<<<4096, 256>>>(W2, (size_t)E * F * H, 3);
  fill<<<4096, 256>>>(H1, (size_t)E * N * 2 * F, 4);  // GEMM2 reads the first F columns' worth
  CK(cudaDeviceSynchronize());
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  void *ws;
  CK(cudaMalloc(&ws, 32 << 20));
  cublasSetWorkspace(h, ws, 32 << 20);
  const float one = 1.0f, zero = 0.0f;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float *t = (float *)malloc(sizeof(float) * iters);
  // ---- loop (the ACT input of GEMM2 is H1 read as [N][F] rows of stride F)
  float loop_ms = -1;
  for (int it = -3; it < iters; it++) {
    CK(cudaEventRecord(e0));
    for (long long e = 0; e < E; e++)
      if (cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)(2 * F), (int)N, (int)H, &one,
                       W13 + e * H * 2 * F, CUDA_R_16BF, (int)(2 * F), A + e * N * H,
                       CUDA_R_16BF, (int)H, &zero, H1 + e * N * 2 * F, CUDA_R_16BF,
                       (int)(2 * F), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != 0)
        return fprintf(stderr, "GEMM1 failed\n"), 1;
    for (long long e = 0; e < E; e++)
      if (cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)H, (int)N, (int)F, &one,
                       W2 + e * F * H, CUDA_R_16BF, (int)H, H1 + e * N * F, CUDA_R_16BF, (int)F,
                       &zero, O + e * N * H, CUDA_R_16BF, (int)H, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) != 0)
        return fprintf(stderr, "GEMM2 failed\n"), 1;
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    if (it >= 0) CK(cudaEventElapsedTime(&t[it], e0, e1));
  }
  qsort(t, iters, sizeof(float), cmp);
  loop_ms = t[iters / 2];
  // ---- grouped: one group of E same-shaped problems per GEMM
  const void **ptr_h = (const void **)malloc(sizeof(void *) * 6 * E);
  for (long long e = 0; e < E; e++) {
    ptr_h[e] = W13 + e * H * 2 * F, ptr_h[E + e] = A + e * N * H, ptr_h[2 * E + e] = H1 + e * N * 2 * F;
    ptr_h[3 * E + e] = W2 + e * F * H, ptr_h[4 * E + e] = H1 + e * N * F, ptr_h[5 * E + e] = O + e * N * H;
  }
  const void **ptr_d;
  CK(cudaMalloc(&ptr_d, sizeof(void *) * 6 * E));
  CK(cudaMemcpy(ptr_d, ptr_h, sizeof(void *) * 6 * E, cudaMemcpyHostToDevice));
  cublasOperation_t op = CUBLAS_OP_N;
  int m1 = (int)(2 * F), n1 = (int)N, k1 = (int)H, m2 = (int)H, n2 = (int)N, k2 = (int)F;
  int gs = (int)E;
  float grouped_ms = -1;
  int gerr = 0;
  for (int it = -3; it < iters && !gerr; it++) {
    CK(cudaEventRecord(e0));
    gerr = cublasGemmGroupedBatchedEx(h, &op, &op, &m1, &n1, &k1, &one, ptr_d, CUDA_R_16BF, &m1,
                                      ptr_d + E, CUDA_R_16BF, &k1, &zero, (void *const *)(ptr_d + 2 * E),
                                      CUDA_R_16BF, &m1, 1, &gs, CUBLAS_COMPUTE_32F);
    if (!gerr)
      gerr = cublasGemmGroupedBatchedEx(h, &op, &op, &m2, &n2, &k2, &one, ptr_d + 3 * E,
                                        CUDA_R_16BF, &m2, ptr_d + 4 * E, CUDA_R_16BF, &k2, &zero,
                                        (void *const *)(ptr_d + 5 * E), CUDA_R_16BF, &m2, 1, &gs,
                                        CUBLAS_COMPUTE_32F);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    if (it >= 0 && !gerr) CK(cudaEventElapsedTime(&t[it], e0, e1));
  }
  if (!gerr) {
    qsort(t, iters, sizeof(float), cmp);
    grouped_ms = t[iters / 2];
  }
  const double flop = 2.0 * E * N * (H * 2.0 * F + F * (double)H);
  printf("{\"experts\": %lld, \"rows\": %lld, \"H\": %lld, \"F\": %lld, \"iters\": %d, "
         "\"loop_ms\": %.4f, \"loop_tflops\": %.1f, ",
         E, N, H, F, iters, loop_ms, flop / loop_ms / 1e9);
  if (gerr)
    printf("\"grouped_ms\": null, \"grouped_error\": %d}\n", gerr);
  else
    printf("\"grouped_ms\": %.4f, \"grouped_tflops\": %.1f}\n", grouped_ms,
           flop / grouped_ms / 1e9);
  return 0;
}
