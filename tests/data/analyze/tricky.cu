// tricky.cu - analyzer test input: macros, comments, strings, groups,
// several communicators.  Every finding is asserted by test_analyze.c.
#include <cublas_v2.h>
#include <nccl.h>
#include <stdio.h>

#define NCCLCHECK(cmd)                                                     \
  do {                                                                     \
    ncclResult_t r = cmd;                                                  \
    if (r != ncclSuccess) {                                                \
      printf("ncclAllReduce failed: %s\n", ncclGetErrorString(r));        \
      return 1;                                                            \
    }                                                                      \
  } while (0)

/* ncclAllReduce(a, b, n, ncclFloat, ncclSum, comm, s);  -- a comment */
static const char *doc = "ncclBroadcast(x, y, 1, ncclInt, 0, comm, s)";
static const char *raw = R"x(ncclSend(buf, n, ncclFloat, 1, comm, s); )" )x";

template <typename T>
__global__ void produce(T *out, const T *in, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && in[i] > 0) // reads in, writes out
    out[i] = in[i] * 2;
}

__global__ void consume(const float *a, float *b, float *acc, int n)
{
  float *alias = acc + 1;
  int i = threadIdx.x;
  if (a[i] > 0)
    b[i] = a[i];
  atomicAdd(alias, 1.0f);
}

int step(ncclComm_t world, ncclComm_t tp, cudaStream_t s0, cudaStream_t s1,
         cublasHandle_t h, float *x, float *y, float *z, float *w,
         float *acc, cudaEvent_t ev, int n)
{
  const float one = 1.0f, zero = 0.0f;
  cublasSetStream(h, s0);
  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, x, n, w, n, &zero,
              y, n);
  produce<float><<<dim3(n / 256), 256, 0, s0>>>(z, x, n);
  cudaEventRecord(ev, s0);
  cudaStreamWaitEvent(s1, ev, 0);
  NCCLCHECK(ncclAllReduce(y, y, n, ncclFloat, ncclSum, world, s0));
  NCCLCHECK(ncclGroupStart());
  for (int p = 0; p < 2; p++) {
    NCCLCHECK(ncclSend(z + p * n, n, ncclFloat, p, tp, s1));
    NCCLCHECK(ncclRecv(w + p * n, n, ncclFloat, p, tp, s1));
  }
  NCCLCHECK(ncclGroupEnd());
  consume<<<1, 128, 0, s1>>>(w, x, acc, n);
  ncclAllGather((const void *)z, w, n, ncclFloat, world, /* s1 */ s0);
  cudaStreamSynchronize(s0);
  cudaDeviceSynchronize();
  return 0;
}
