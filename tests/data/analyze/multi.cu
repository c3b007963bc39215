// multi.cu - analyzer test input: one thread driving several GPUs and
// communicators, grouped window registration, a launch through
// cudaLaunchKernel, an unterminated-looking string inside a comment: "
#include <nccl.h>

#define CUDACHECK(x) x
#define N_GPUS 4

__global__ void fill(float *dst, int n) { dst[threadIdx.x] = (float)n; }

int setup(ncclComm_t *comms, int *devs, void **bufs, ncclWindow_t *wins,
          size_t bytes)
{
  ncclCommInitAll(comms, N_GPUS, devs);
  for (int i = 0; i < N_GPUS; i++)
    ncclMemAlloc(&bufs[i], bytes);
  ncclGroupStart();
  for (int i = 0; i < N_GPUS; i++)
    ncclCommWindowRegister(comms[i], bufs[i], bytes, &wins[i],
                           NCCL_WIN_COLL_SYMMETRIC);
  ncclGroupEnd();
  return 0;
}

int run(ncclComm_t *comms, ncclComm_t *sub, float **in, float **out,
        cudaStream_t *s, int n)
{
  void *args[] = {&in[0], &n};
  CUDACHECK(cudaLaunchKernel((void *)fill, dim3(1), dim3(32), args, 0,
                             s[0]));
  ncclGroupStart();
  for (int i = 0; i < N_GPUS; i++)
    ncclReduceScatter(in[i], out[i], n, ncclFloat, ncclSum, comms[i], s[i]);
  ncclGroupEnd();
  ncclBroadcast(out[0], out[0], n, ncclFloat, 0, sub[0], s[0]);
  cudaMemcpyAsync(in[1], out[0], n * sizeof(float), cudaMemcpyDeviceToDevice,
                  s[1]);
  return 0;
}

void teardown(ncclComm_t *comms)
{
  for (int i = 0; i < N_GPUS; i++) {
    ncclCommFinalize(comms[i]);
    ncclCommDestroy(comms[i]);
  }
}
