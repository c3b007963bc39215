// tp_gemm_allgather.cu - a tensor-parallel linear layer on the GPUs of one
// node: every GPU owns a block of rows of A, multiplies it by the full B
// with cuBLAS, and ncclAllGather assembles the whole C on every GPU.
// One process drives all GPUs (ncclCommInitAll), as in NCCL's
// "single process, multiple devices" example.
//
//   nvcc -O3 -o tp_gemm_allgather tp_gemm_allgather.cu -lcublas -lnccl
//   ./tp_gemm_allgather -m 8192 -n 8192 -k 8192 -g 8 -i 20
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <getopt.h>
#include <math.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#define CUDACHECK(cmd)                                                       \
  do {                                                                       \
    cudaError_t e = cmd;                                                     \
    if (e != cudaSuccess) {                                                  \
      printf("Failed: Cuda error %s:%d '%s'\n", __FILE__, __LINE__,          \
             cudaGetErrorString(e));                                         \
      exit(EXIT_FAILURE);                                                    \
    }                                                                        \
  } while (0)

#define NCCLCHECK(cmd)                                                       \
  do {                                                                       \
    ncclResult_t r = cmd;                                                    \
    if (r != ncclSuccess) {                                                  \
      printf("Failed, NCCL error %s:%d '%s'\n", __FILE__, __LINE__,          \
             ncclGetErrorString(r));                                         \
      exit(EXIT_FAILURE);                                                    \
    }                                                                        \
  } while (0)

#define CUBLASCHECK(cmd)                                                     \
  do {                                                                       \
    cublasStatus_t s = cmd;                                                  \
    if (s != CUBLAS_STATUS_SUCCESS) {                                        \
      printf("Failed, cuBLAS error %s:%d %d\n", __FILE__, __LINE__, (int)s); \
      exit(EXIT_FAILURE);                                                    \
    }                                                                        \
  } while (0)

#define MAX_GPUS 16

// Deterministic pseudo-random values in [-1, 1): the host check below
// regenerates them with the same hash.
__host__ __device__ inline float hash_val(unsigned long long i, unsigned seed)
{
  unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return (float)(x % 2001) / 1000.0f - 1.0f;
}

__global__ void fill_kernel(float *p, size_t n, size_t offset, unsigned seed)
{
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = hash_val(offset + i, seed);
}

static double now_ms(void)
{
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return tv.tv_sec * 1e3 + tv.tv_usec * 1e-3;
}

int main(int argc, char *argv[])
{
  int m = 4096, n = 4096, k = 4096;
  int iters = 20, warmup = 5, ngpus = 0, check = 1;
  int opt;

  while ((opt = getopt(argc, argv, "m:n:k:i:w:g:c:")) != -1) {
    switch (opt) {
    case 'm': m = atoi(optarg); break;
    case 'n': n = atoi(optarg); break;
    case 'k': k = atoi(optarg); break;
    case 'i': iters = atoi(optarg); break;
    case 'w': warmup = atoi(optarg); break;
    case 'g': ngpus = atoi(optarg); break;
    case 'c': check = atoi(optarg); break;
    default:
      fprintf(stderr,
              "usage: %s [-m M] [-n N] [-k K] [-i iters] [-w warmup] "
              "[-g gpus] [-c 0|1]\n",
              argv[0]);
      return 1;
    }
  }
  if (ngpus == 0)
    CUDACHECK(cudaGetDeviceCount(&ngpus));
  if (ngpus < 1 || ngpus > MAX_GPUS || m % ngpus) {
    fprintf(stderr, "need 1..%d GPUs dividing M=%d (have %d)\n", MAX_GPUS, m,
            ngpus);
    return 1;
  }
  int mloc = m / ngpus;

  int devs[MAX_GPUS];
  ncclComm_t comms[MAX_GPUS];
  cudaStream_t streams[MAX_GPUS];
  cublasHandle_t handles[MAX_GPUS];
  float *d_A[MAX_GPUS], *d_B[MAX_GPUS], *d_Cloc[MAX_GPUS], *d_C[MAX_GPUS];

  for (int g = 0; g < ngpus; g++)
    devs[g] = g;
  NCCLCHECK(ncclCommInitAll(comms, ngpus, devs));

  for (int g = 0; g < ngpus; g++) {
    CUDACHECK(cudaSetDevice(g));
    CUDACHECK(cudaStreamCreate(&streams[g]));
    CUBLASCHECK(cublasCreate(&handles[g]));
    CUBLASCHECK(cublasSetStream(handles[g], streams[g]));
    CUDACHECK(cudaMalloc(&d_A[g], (size_t)mloc * k * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_B[g], (size_t)k * n * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_Cloc[g], (size_t)mloc * n * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_C[g], (size_t)m * n * sizeof(float)));
    // A is row-major M x K, split by rows; B (K x N) is replicated
    fill_kernel<<<1024, 256, 0, streams[g]>>>(d_A[g], (size_t)mloc * k,
                                              (size_t)g * mloc * k, 1);
    fill_kernel<<<1024, 256, 0, streams[g]>>>(d_B[g], (size_t)k * n, 0, 2);
  }

  const float alpha = 1.0f, beta = 0.0f;
  double t0 = 0;
  for (int it = -warmup; it < iters; it++) {
    if (it == 0) {
      for (int g = 0; g < ngpus; g++) {
        CUDACHECK(cudaSetDevice(g));
        CUDACHECK(cudaStreamSynchronize(streams[g]));
      }
      t0 = now_ms();
    }
    // row-major C = A * B is column-major C^T = B^T * A^T
    for (int g = 0; g < ngpus; g++) {
      CUDACHECK(cudaSetDevice(g));
      CUBLASCHECK(cublasSgemm(handles[g], CUBLAS_OP_N, CUBLAS_OP_N, n, mloc,
                              k, &alpha, d_B[g], n, d_A[g], k, &beta,
                              d_Cloc[g], n));
    }
    NCCLCHECK(ncclGroupStart());
    for (int g = 0; g < ngpus; g++)
      NCCLCHECK(ncclAllGather(d_Cloc[g], d_C[g], (size_t)mloc * n, ncclFloat,
                              comms[g], streams[g]));
    NCCLCHECK(ncclGroupEnd());
  }
  for (int g = 0; g < ngpus; g++) {
    CUDACHECK(cudaSetDevice(g));
    CUDACHECK(cudaStreamSynchronize(streams[g]));
  }
  double ms = (now_ms() - t0) / (iters > 0 ? iters : 1);
  double tflops = 2.0 * m * (double)n * k / (ms * 1e-3) / 1e12;
  printf("tp_gemm_allgather: M=%d N=%d K=%d gpus=%d  %.3f ms/iter  %.1f "
         "TFLOP/s\n",
         m, n, k, ngpus, ms, tflops);

  int errors = 0;
  if (check) {
    // every GPU's C against an fp64 host product, on a sample of rows
    float *h_C = (float *)malloc((size_t)m * n * sizeof(float));
    double max_rel = 0;
    for (int g = 0; g < ngpus; g++) {
      CUDACHECK(cudaSetDevice(g));
      CUDACHECK(cudaMemcpy(h_C, d_C[g], (size_t)m * n * sizeof(float),
                           cudaMemcpyDeviceToHost));
      for (int i = g; i < m; i += (m / 7 > 0 ? m / 7 : 1)) {
        for (int j = 0; j < n; j += (n / 5 > 0 ? n / 5 : 1)) {
          double ref = 0, mag = 0;
          for (int p = 0; p < k; p++) {
            double a = hash_val((size_t)i * k + p, 1);
            double b = hash_val((size_t)p * n + j, 2);
            ref += a * b;
            mag += fabs(a * b);
          }
          double rel = fabs(h_C[(size_t)i * n + j] - ref) / (mag + 1e-30);
          if (!(rel <= 1e-4))
            errors++;
          if (rel > max_rel || rel != rel)
            max_rel = rel;
        }
      }
    }
    free(h_C);
    printf("check: max rel err %.3e, %d errors: %s\n", max_rel, errors,
           errors ? "FAILED" : "PASSED");
  }

  for (int g = 0; g < ngpus; g++) {
    CUDACHECK(cudaSetDevice(g));
    CUDACHECK(cudaFree(d_A[g]));
    CUDACHECK(cudaFree(d_B[g]));
    CUDACHECK(cudaFree(d_Cloc[g]));
    CUDACHECK(cudaFree(d_C[g]));
    CUBLASCHECK(cublasDestroy(handles[g]));
    CUDACHECK(cudaStreamDestroy(streams[g]));
    ncclCommDestroy(comms[g]);
  }
  return errors ? 1 : 0;
}
