// ring_attention.cu - ring attention (context parallelism) on the GPUs of
// one node, forward pass, non-causal.
//
// The sequence is split evenly: GPU g holds the queries Q_g and the keys and
// values KV_g of its seq_per_gpu tokens.  In ngpus steps every GPU attends
// its queries to the KV block it holds, then passes that block to the next
// GPU of the ring with ncclSend/ncclRecv while receiving the previous GPU's
// block into the other half of a double buffer.  An online softmax keeps a
// running max, sum and accumulator per query row; a last kernel normalises.
// One process drives all GPUs (ncclGetUniqueId + ncclCommInitRank).
//
//   nvcc -O3 -o ring_attention ring_attention.cu -lnccl
//   ./ring_attention [seq_per_gpu] [heads] [head_dim] [iters] [gpus]
#include <cuda_runtime.h>
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

#define MAX_GPUS 8
#define MAX_D 128

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

__global__ void init_state_kernel(float *m, float *l, float *acc, int rows,
                                  int d)
{
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
       i < (size_t)rows * d; i += (size_t)gridDim.x * blockDim.x) {
    acc[i] = 0.0f;
    if (i < (size_t)rows) {
      m[i] = -INFINITY;
      l[i] = 0.0f;
    }
  }
}

// One block per (query row, head), one thread per head dimension: the
// query row against all seq keys of the block kv ([2][seq][heads][d]: K then
// V), folded into the running (m, l, acc) of the row.
__global__ void attn_block_kernel(const float *q, const float *kv, float *m,
                                  float *l, float *acc, int seq, int heads,
                                  int d, float scale)
{
  __shared__ float red[MAX_D];
  __shared__ float p_sh;
  int row = blockIdx.x; // token * heads + head
  int head = row % heads, j = threadIdx.x;
  const float *k = kv, *v = kv + (size_t)seq * heads * d;
  float qj = q[(size_t)row * d + j];
  float mi = m[row], li = l[row], a = acc[(size_t)row * d + j];

  for (int t = 0; t < seq; t++) {
    red[j] = qj * k[((size_t)t * heads + head) * d + j];
    __syncthreads();
    if (j == 0) {
      float s = 0.0f;
      for (int i = 0; i < d; i++)
        s += red[i];
      p_sh = s * scale;
    }
    __syncthreads();
    float s = p_sh, mnew = fmaxf(mi, s);
    float corr = expf(mi - mnew), p = expf(s - mnew);
    li = li * corr + p;
    a = a * corr + p * v[((size_t)t * heads + head) * d + j];
    mi = mnew;
    __syncthreads();
  }
  acc[(size_t)row * d + j] = a;
  if (j == 0) {
    m[row] = mi;
    l[row] = li;
  }
}

__global__ void normalize_kernel(const float *acc, const float *l, float *o,
                                 int rows, int d)
{
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
       i < (size_t)rows * d; i += (size_t)gridDim.x * blockDim.x)
    o[i] = acc[i] / l[i / d];
}

static double wall_ms(void)
{
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return tv.tv_sec * 1e3 + tv.tv_usec * 1e-3;
}

int main(int argc, char *argv[])
{
  int seq = argc > 1 ? atoi(argv[1]) : 2048;
  int heads = argc > 2 ? atoi(argv[2]) : 8;
  int d = argc > 3 ? atoi(argv[3]) : 64;
  int iters = argc > 4 ? atoi(argv[4]) : 10;
  int ngpus = 0;
  if (argc > 5)
    ngpus = atoi(argv[5]);
  if (ngpus == 0)
    CUDACHECK(cudaGetDeviceCount(&ngpus));
  if (ngpus < 1 || ngpus > MAX_GPUS || seq < 1 || heads < 1 || d < 1 ||
      d > MAX_D) {
    fprintf(stderr,
            "usage: %s [seq_per_gpu] [heads] [head_dim<=%d] [iters] "
            "[gpus<=%d]\n",
            argv[0], MAX_D, MAX_GPUS);
    return 1;
  }
  const size_t rows = (size_t)seq * heads, blk = rows * d;
  const float scale = 1.0f / sqrtf((float)d);

  ncclUniqueId id;
  ncclComm_t comms[MAX_GPUS];
  cudaStream_t streams[MAX_GPUS];
  float *d_q[MAX_GPUS], *d_kv[MAX_GPUS][2], *d_m[MAX_GPUS], *d_l[MAX_GPUS],
      *d_acc[MAX_GPUS], *d_o[MAX_GPUS];

  NCCLCHECK(ncclGetUniqueId(&id));
  NCCLCHECK(ncclGroupStart());
  for (int g = 0; g < ngpus; g++) {
    CUDACHECK(cudaSetDevice(g));
    NCCLCHECK(ncclCommInitRank(&comms[g], ngpus, id, g));
  }
  NCCLCHECK(ncclGroupEnd());
  for (int g = 0; g < ngpus; g++) {
    CUDACHECK(cudaSetDevice(g));
    CUDACHECK(cudaStreamCreate(&streams[g]));
    CUDACHECK(cudaMalloc(&d_q[g], blk * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_kv[g][0], 2 * blk * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_kv[g][1], 2 * blk * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_m[g], rows * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_l[g], rows * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_acc[g], blk * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_o[g], blk * sizeof(float)));
    fill_kernel<<<1024, 256, 0, streams[g]>>>(d_q[g], blk, g * blk, 1);
  }

  double t0 = 0;
  for (int it = -2; it < iters; it++) {
    if (it == 0) {
      for (int g = 0; g < ngpus; g++) {
        CUDACHECK(cudaSetDevice(g));
        CUDACHECK(cudaStreamSynchronize(streams[g]));
      }
      t0 = wall_ms();
    }
    for (int g = 0; g < ngpus; g++) {
      CUDACHECK(cudaSetDevice(g));
      // K and V of this GPU's tokens ([2][seq][heads][d])
      fill_kernel<<<1024, 256, 0, streams[g]>>>(d_kv[g][0], blk, g * blk, 2);
      fill_kernel<<<1024, 256, 0, streams[g]>>>(d_kv[g][0] + blk, blk,
                                                g * blk, 3);
      init_state_kernel<<<1024, 256, 0, streams[g]>>>(d_m[g], d_l[g],
                                                      d_acc[g], rows, d);
    }
    for (int step = 0; step < ngpus; step++) {
      int cur = step & 1, nxt = cur ^ 1;
      for (int g = 0; g < ngpus; g++) {
        CUDACHECK(cudaSetDevice(g));
        attn_block_kernel<<<rows, d, 0, streams[g]>>>(
            d_q[g], d_kv[g][cur], d_m[g], d_l[g], d_acc[g], seq, heads, d,
            scale);
      }
      if (step == ngpus - 1)
        break;
      NCCLCHECK(ncclGroupStart());
      for (int g = 0; g < ngpus; g++) {
        int next = (g + 1) % ngpus, prev = (g + ngpus - 1) % ngpus;
        NCCLCHECK(ncclSend(d_kv[g][cur], 2 * blk, ncclFloat, next, comms[g],
                           streams[g]));
        NCCLCHECK(ncclRecv(d_kv[g][nxt], 2 * blk, ncclFloat, prev, comms[g],
                           streams[g]));
      }
      NCCLCHECK(ncclGroupEnd());
    }
    for (int g = 0; g < ngpus; g++) {
      CUDACHECK(cudaSetDevice(g));
      normalize_kernel<<<1024, 256, 0, streams[g]>>>(d_acc[g], d_l[g], d_o[g],
                                                     rows, d);
    }
  }
  for (int g = 0; g < ngpus; g++) {
    CUDACHECK(cudaSetDevice(g));
    CUDACHECK(cudaStreamSynchronize(streams[g]));
  }
  double ms = (wall_ms() - t0) / (iters > 0 ? iters : 1);
  double flops = 4.0 * seq * (double)seq * ngpus * heads * d; // per GPU
  printf("ring_attention: seq_per_gpu=%d heads=%d d=%d gpus=%d  %.3f "
         "ms/iter  %.2f TFLOP/s per GPU\n",
         seq, heads, d, ngpus, ms, flops / (ms * 1e-3) / 1e12);

  // a few query rows of every GPU against the whole sequence, in fp64
  int errors = 0;
  double max_err = 0;
  float *o = (float *)malloc(blk * sizeof(float));
  double *p = (double *)malloc((size_t)seq * ngpus * sizeof(double));
  for (int g = 0; g < ngpus; g++) {
    CUDACHECK(cudaSetDevice(g));
    CUDACHECK(cudaMemcpy(o, d_o[g], blk * sizeof(float),
                         cudaMemcpyDeviceToHost));
    for (size_t row = g; row < rows; row += rows / 5 + 1) {
      int head = (int)(row % heads);
      double mx = -1e300, sum = 0;
      for (int t = 0; t < seq * ngpus; t++) {
        int src = t / seq, tt = t % seq;
        double s = 0;
        for (int j = 0; j < d; j++)
          s += (double)hash_val(g * blk + row * d + j, 1) *
               hash_val(src * blk + ((size_t)tt * heads + head) * d + j, 2);
        p[t] = s * scale;
        mx = p[t] > mx ? p[t] : mx;
      }
      for (int t = 0; t < seq * ngpus; t++)
        sum += (p[t] = exp(p[t] - mx));
      for (int j = 0; j < d; j++) {
        double ref = 0;
        for (int t = 0; t < seq * ngpus; t++) {
          int src = t / seq, tt = t % seq;
          ref += p[t] * hash_val(src * blk + ((size_t)tt * heads + head) * d + j, 3);
        }
        double err = fabs(o[row * d + j] - ref / sum);
        if (!(err <= 1e-3))
          errors++;
        if (err > max_err || err != err)
          max_err = err;
      }
    }
  }
  free(o);
  free(p);
  printf("check: max abs err %.3e against fp64 on sampled rows: %s\n", max_err,
         errors ? "FAILED" : "PASSED");

  for (int g = 0; g < ngpus; g++) {
    CUDACHECK(cudaSetDevice(g));
    cudaFree(d_q[g]);
    cudaFree(d_kv[g][0]);
    cudaFree(d_kv[g][1]);
    cudaFree(d_m[g]);
    cudaFree(d_l[g]);
    cudaFree(d_acc[g]);
    cudaFree(d_o[g]);
    cudaStreamDestroy(streams[g]);
    ncclCommDestroy(comms[g]);
  }
  return errors ? 1 : 0;
}
