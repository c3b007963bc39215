// workloads/kv_transfer/baseline_streamed.cu - baseline B, host-driven and
// streamed per layer (the vLLM KV-connector pattern; the stronger baseline).
//
// Per layer l: the compute stream runs the GEMM and RoPE of layer l and
// records an event; the communication stream waits for it, runs one
// ncclGroup with layer l's sends (prefill) and receives into one of
// KB_SLOTS staging slots (decode), then a scatter kernel moves the slot
// into the pages.  Layer l+1 computes while layer l moves.  The step stream
// joins the communication stream at the end.  At R = 1 the rank sends to
// itself through NCCL.
#define RT_HOST_ONLY  // host-driven: rt.cuh without the device API (it says why)

#include "kv_base.cuh"

#define KB_SLOTS 4

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct kb *u = (struct kb *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  return kb_setup(ctx, p, u, KB_SLOTS);
}

extern "C" int wl_step(struct wl_ctx *ctx) {
  struct kb *u = (struct kb *)rt_get_user(ctx);
  const struct kv_shape *s = &u->s;
  cudaStream_t st = rt_stream(ctx);
  const long long n = 2 * s->W;
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
  for (long long l = 0; l < s->L; l++) {
    if (s->is_prefill) {
      if (kv_compute_layer(ctx, s, &u->core, u->X, u->W, l,
                           (char *)u->stage + (size_t)l * s->S * n * 2, st) != 0)
        return -1;
      RT_CUDA(ctx, cudaEventRecord(u->layer[l], st));
      RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->layer[l], 0));
    }
    const int slot = (int)(l % u->nslots);
    RT_NCCL(ctx, ncclGroupStart());
    if (kb_xfer_layer(ctx, u, l, slot, u->comm) != 0) {
      ncclGroupEnd();
      return -1;
    }
    RT_NCCL(ctx, ncclGroupEnd());
    if (kb_scatter_layer(ctx, u, l, slot, u->comm) != 0) return -1;
  }
  RT_CUDA(ctx, cudaEventRecord(u->join, u->comm));
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->join, 0));
  return 0;
}

extern "C" void wl_teardown(struct wl_ctx *ctx) { kb_teardown(ctx); }
