// moe_dispatch.cu - expert-parallel MoE dispatch on the GPUs of one node.
//
// Every GPU holds `tokens` tokens of width `hidden` and `experts / ngpus`
// experts.  Per iteration each GPU
//   1. routes its tokens: a gate kernel scores every token against every
//      expert (x . Wg) and keeps the top-k experts;
//   2. counts the rows it sends to each GPU and exchanges the counts with
//      ncclAlltoAll;
//   3. packs the rows by destination and dispatches them (rows and their
//      token/expert ids) with ncclSend/ncclRecv inside one group;
//   4. runs its experts on the rows it received (here a scaled copy: each
//      expert e multiplies by (e + 1), standing in for the expert FFN).
// One process drives all GPUs (ncclGetUniqueId + ncclCommInitRank in a
// group).  The host copy of the counts between steps 2 and 3 is the usual
// synchronisation point of a host-driven dispatch.
//
//   nvcc -O3 -o moe_dispatch moe_dispatch.cu -lnccl
//   ./moe_dispatch --tokens 4096 --hidden 2048 --experts 64 --topk 8
#include <cuda_runtime.h>
#include <math.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
#define MAX_TOPK 8

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

// One block per token: scores against every expert, then the top-k.
__global__ void gate_kernel(const float *x, const float *wg, int *topk_ids,
                            int tokens, int hidden, int experts, int topk)
{
  extern __shared__ float score[];
  int t = blockIdx.x;
  for (int e = threadIdx.x; e < experts; e += blockDim.x) {
    float s = 0.0f;
    for (int h = 0; h < hidden; h++)
      s += x[(size_t)t * hidden + h] * wg[(size_t)e * hidden + h];
    score[e] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int k = 0; k < topk; k++) {
      int best = 0;
      for (int e = 1; e < experts; e++)
        if (score[e] > score[best])
          best = e;
      topk_ids[t * topk + k] = best;
      score[best] = -INFINITY;
    }
  }
}

// Rows per destination GPU.
__global__ void count_kernel(const int *topk_ids, int *send_counts, int n,
                             int experts_per_gpu)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    atomicAdd(&send_counts[topk_ids[i] / experts_per_gpu], 1);
}

// Pack (token, k) rows grouped by destination; offsets are the exclusive
// prefix sums of the counts, cursor starts at zero.
__global__ void permute_kernel(const float *x, const int *topk_ids,
                               const int *offsets, int *cursor,
                               float *send_rows, int *send_meta, int tokens,
                               int hidden, int topk, int experts_per_gpu,
                               int token_base)
{
  __shared__ int slot;
  int t = blockIdx.x / topk, k = blockIdx.x % topk;
  int e = topk_ids[t * topk + k], dst = e / experts_per_gpu;
  if (threadIdx.x == 0) {
    slot = offsets[dst] + atomicAdd(&cursor[dst], 1);
    send_meta[2 * slot] = token_base + t;
    send_meta[2 * slot + 1] = e;
  }
  __syncthreads();
  for (int h = threadIdx.x; h < hidden; h += blockDim.x)
    send_rows[(size_t)slot * hidden + h] = x[(size_t)t * hidden + h];
}

// The experts of this GPU on the rows it received.
__global__ void expert_kernel(const float *recv_rows, const int *recv_meta,
                              float *out, int nrows, int hidden)
{
  int r = blockIdx.x;
  if (r >= nrows)
    return;
  float scale = (float)(recv_meta[2 * r + 1] + 1);
  for (int h = threadIdx.x; h < hidden; h += blockDim.x)
    out[(size_t)r * hidden + h] = recv_rows[(size_t)r * hidden + h] * scale;
}

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void usage(const char *prog)
{
  fprintf(stderr,
          "usage: %s [--tokens T] [--hidden H] [--experts E] [--topk K] "
          "[--iters I] [--gpus G] [--check 0|1]\n",
          prog);
}

int main(int argc, char **argv)
{
  int tokens = 4096, hidden = 2048, experts = 64, topk = 8;
  int iters = 20, ngpus = 0, check = 1;

  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tokens") && i + 1 < argc)
      tokens = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--hidden") && i + 1 < argc)
      hidden = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--experts") && i + 1 < argc)
      experts = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--topk") && i + 1 < argc)
      topk = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--gpus") && i + 1 < argc)
      ngpus = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--check") && i + 1 < argc)
      check = atoi(argv[++i]);
    else {
      usage(argv[0]);
      return 1;
    }
  }
  if (ngpus == 0)
    CUDACHECK(cudaGetDeviceCount(&ngpus));
  if (ngpus < 1 || ngpus > MAX_GPUS || experts % ngpus || topk > MAX_TOPK ||
      topk > experts || tokens < 1 || hidden < 1) {
    usage(argv[0]);
    return 1;
  }
  const int epg = experts / ngpus;            // experts per GPU
  const size_t max_rows = (size_t)tokens * topk * ngpus; // worst case

  ncclUniqueId id;
  ncclComm_t comms[MAX_GPUS];
  cudaStream_t streams[MAX_GPUS];
  float *d_x[MAX_GPUS], *d_wg[MAX_GPUS], *d_send[MAX_GPUS], *d_recv[MAX_GPUS],
      *d_out[MAX_GPUS];
  int *d_topk[MAX_GPUS], *d_send_counts[MAX_GPUS], *d_recv_counts[MAX_GPUS],
      *d_offsets[MAX_GPUS], *d_cursor[MAX_GPUS], *d_send_meta[MAX_GPUS],
      *d_recv_meta[MAX_GPUS];
  int h_send_counts[MAX_GPUS][MAX_GPUS], h_recv_counts[MAX_GPUS][MAX_GPUS];
  int h_offsets[MAX_GPUS][MAX_GPUS], nrecv[MAX_GPUS];

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
    CUDACHECK(cudaMalloc(&d_x[g], (size_t)tokens * hidden * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_wg[g], (size_t)experts * hidden * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_topk[g], (size_t)tokens * topk * sizeof(int)));
    CUDACHECK(cudaMalloc(&d_send_counts[g], ngpus * sizeof(int)));
    CUDACHECK(cudaMalloc(&d_recv_counts[g], ngpus * sizeof(int)));
    CUDACHECK(cudaMalloc(&d_offsets[g], ngpus * sizeof(int)));
    CUDACHECK(cudaMalloc(&d_cursor[g], ngpus * sizeof(int)));
    CUDACHECK(cudaMalloc(&d_send[g],
                         (size_t)tokens * topk * hidden * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_send_meta[g], (size_t)tokens * topk * 2 * sizeof(int)));
    CUDACHECK(cudaMalloc(&d_recv[g], max_rows * hidden * sizeof(float)));
    CUDACHECK(cudaMalloc(&d_recv_meta[g], max_rows * 2 * sizeof(int)));
    CUDACHECK(cudaMalloc(&d_out[g], max_rows * hidden * sizeof(float)));
    fill_kernel<<<1024, 256, 0, streams[g]>>>(
        d_x[g], (size_t)tokens * hidden, (size_t)g * tokens * hidden, 1);
    fill_kernel<<<1024, 256, 0, streams[g]>>>(d_wg[g],
                                              (size_t)experts * hidden, 0, 2);
  }

  double t0 = 0;
  for (int it = -3; it < iters; it++) {
    if (it == 0) {
      for (int g = 0; g < ngpus; g++) {
        CUDACHECK(cudaSetDevice(g));
        CUDACHECK(cudaStreamSynchronize(streams[g]));
      }
      t0 = now_ms();
    }
    // 1-2: route, count, exchange the counts
    for (int g = 0; g < ngpus; g++) {
      CUDACHECK(cudaSetDevice(g));
      gate_kernel<<<tokens, 128, experts * sizeof(float), streams[g]>>>(
          d_x[g], d_wg[g], d_topk[g], tokens, hidden, experts, topk);
      CUDACHECK(cudaMemsetAsync(d_send_counts[g], 0, ngpus * sizeof(int),
                                streams[g]));
      count_kernel<<<(tokens * topk + 255) / 256, 256, 0, streams[g]>>>(
          d_topk[g], d_send_counts[g], tokens * topk, epg);
    }
    NCCLCHECK(ncclGroupStart());
    for (int g = 0; g < ngpus; g++)
      NCCLCHECK(ncclAlltoAll(d_send_counts[g], d_recv_counts[g], 1, ncclInt,
                             comms[g], streams[g]));
    NCCLCHECK(ncclGroupEnd());
    for (int g = 0; g < ngpus; g++) {
      CUDACHECK(cudaSetDevice(g));
      CUDACHECK(cudaMemcpyAsync(h_send_counts[g], d_send_counts[g],
                                ngpus * sizeof(int), cudaMemcpyDeviceToHost,
                                streams[g]));
      CUDACHECK(cudaMemcpyAsync(h_recv_counts[g], d_recv_counts[g],
                                ngpus * sizeof(int), cudaMemcpyDeviceToHost,
                                streams[g]));
      CUDACHECK(cudaStreamSynchronize(streams[g]));
    }
    // 3: pack by destination, dispatch rows and ids
    for (int g = 0; g < ngpus; g++) {
      CUDACHECK(cudaSetDevice(g));
      nrecv[g] = 0;
      for (int p = 0; p < ngpus; p++) {
        h_offsets[g][p] = p ? h_offsets[g][p - 1] + h_send_counts[g][p - 1] : 0;
        nrecv[g] += h_recv_counts[g][p];
      }
      CUDACHECK(cudaMemcpyAsync(d_offsets[g], h_offsets[g], ngpus * sizeof(int),
                                cudaMemcpyHostToDevice, streams[g]));
      CUDACHECK(cudaMemsetAsync(d_cursor[g], 0, ngpus * sizeof(int),
                                streams[g]));
      permute_kernel<<<tokens * topk, 128, 0, streams[g]>>>(
          d_x[g], d_topk[g], d_offsets[g], d_cursor[g], d_send[g],
          d_send_meta[g], tokens, hidden, topk, epg, g * tokens);
    }
    NCCLCHECK(ncclGroupStart());
    for (int g = 0; g < ngpus; g++) {
      size_t roff = 0;
      for (int p = 0; p < ngpus; p++) {
        size_t soff = h_offsets[g][p];
        NCCLCHECK(ncclSend(d_send[g] + soff * hidden,
                           (size_t)h_send_counts[g][p] * hidden, ncclFloat, p,
                           comms[g], streams[g]));
        NCCLCHECK(ncclSend(d_send_meta[g] + 2 * soff,
                           2 * (size_t)h_send_counts[g][p], ncclInt, p,
                           comms[g], streams[g]));
        NCCLCHECK(ncclRecv(d_recv[g] + roff * hidden,
                           (size_t)h_recv_counts[g][p] * hidden, ncclFloat, p,
                           comms[g], streams[g]));
        NCCLCHECK(ncclRecv(d_recv_meta[g] + 2 * roff,
                           2 * (size_t)h_recv_counts[g][p], ncclInt, p,
                           comms[g], streams[g]));
        roff += h_recv_counts[g][p];
      }
    }
    NCCLCHECK(ncclGroupEnd());
    // 4: the experts on what arrived
    for (int g = 0; g < ngpus; g++) {
      CUDACHECK(cudaSetDevice(g));
      if (nrecv[g] > 0)
        expert_kernel<<<nrecv[g], 128, 0, streams[g]>>>(
            d_recv[g], d_recv_meta[g], d_out[g], nrecv[g], hidden);
    }
  }
  for (int g = 0; g < ngpus; g++) {
    CUDACHECK(cudaSetDevice(g));
    CUDACHECK(cudaStreamSynchronize(streams[g]));
  }
  double ms = (now_ms() - t0) / (iters > 0 ? iters : 1);
  long long rows = 0;
  for (int g = 0; g < ngpus; g++)
    rows += nrecv[g];
  double gbs = rows * (double)hidden * sizeof(float) / (ms * 1e-3) / 1e9;
  printf("moe_dispatch: tokens=%d hidden=%d experts=%d topk=%d gpus=%d  "
         "%.3f ms/iter  %.1f GB/s dispatched\n",
         tokens, hidden, experts, topk, ngpus, ms, gbs);

  int errors = 0;
  if (check) {
    // every token arrives topk times, at the GPUs owning its experts, with
    // its row intact and scaled by its expert; a sample of routings is
    // recomputed on the host
    int *seen = (int *)calloc((size_t)tokens * ngpus, sizeof(int));
    for (int g = 0; g < ngpus; g++) {
      int *meta = (int *)malloc((size_t)nrecv[g] * 2 * sizeof(int) + 8);
      float *out = (float *)malloc((size_t)nrecv[g] * hidden * sizeof(float) + 8);
      CUDACHECK(cudaSetDevice(g));
      CUDACHECK(cudaMemcpy(meta, d_recv_meta[g], (size_t)nrecv[g] * 2 * sizeof(int),
                           cudaMemcpyDeviceToHost));
      CUDACHECK(cudaMemcpy(out, d_out[g], (size_t)nrecv[g] * hidden * sizeof(float),
                           cudaMemcpyDeviceToHost));
      for (int r = 0; r < nrecv[g]; r++) {
        int tok = meta[2 * r], e = meta[2 * r + 1];
        if (tok < 0 || tok >= tokens * ngpus || e / epg != g) {
          errors++;
          continue;
        }
        seen[tok]++;
        for (int h = 0; h < hidden; h += 61) {
          float want = hash_val((size_t)tok * hidden + h, 1) * (e + 1);
          if (fabsf(out[(size_t)r * hidden + h] - want) > 1e-5f * (e + 1))
            errors++;
        }
      }
      free(meta);
      free(out);
    }
    for (int t = 0; t < tokens * ngpus; t++)
      if (seen[t] != topk)
        errors++;
    free(seen);
    // routing of a few tokens of GPU 0, against fp64 scores
    int *ids = (int *)malloc((size_t)tokens * topk * sizeof(int));
    CUDACHECK(cudaSetDevice(0));
    CUDACHECK(cudaMemcpy(ids, d_topk[0], (size_t)tokens * topk * sizeof(int),
                         cudaMemcpyDeviceToHost));
    for (int t = 0; t < tokens; t += (tokens / 16 > 0 ? tokens / 16 : 1)) {
      double s[1024];
      for (int e = 0; e < experts && e < 1024; e++) {
        s[e] = 0;
        for (int h = 0; h < hidden; h++)
          s[e] += (double)hash_val((size_t)t * hidden + h, 1) *
                  hash_val((size_t)e * hidden + h, 2);
      }
      // the k-th choice scores no lower than every expert not chosen
      double kth = s[ids[t * topk + topk - 1]];
      for (int e = 0; e < experts && e < 1024; e++) {
        int chosen = 0;
        for (int k = 0; k < topk; k++)
          chosen |= ids[t * topk + k] == e;
        if (!chosen && s[e] > kth + 1e-3 * (fabs(kth) + 1))
          errors++;
      }
    }
    free(ids);
    printf("check: %d errors: %s\n", errors, errors ? "FAILED" : "PASSED");
  }

  for (int g = 0; g < ngpus; g++) {
    CUDACHECK(cudaSetDevice(g));
    cudaFree(d_x[g]);
    cudaFree(d_wg[g]);
    cudaFree(d_topk[g]);
    cudaFree(d_send_counts[g]);
    cudaFree(d_recv_counts[g]);
    cudaFree(d_offsets[g]);
    cudaFree(d_cursor[g]);
    cudaFree(d_send[g]);
    cudaFree(d_send_meta[g]);
    cudaFree(d_recv[g]);
    cudaFree(d_recv_meta[g]);
    cudaFree(d_out[g]);
    cudaStreamDestroy(streams[g]);
    ncclCommDestroy(comms[g]);
  }
  return errors ? 1 : 0;
}
