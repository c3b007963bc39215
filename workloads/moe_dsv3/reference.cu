// workloads/moe_dsv3/reference.cu - the TRUSTED reference (frozen, never
// part of a candidate).  Expected Y of this rank:
//   Y_t = sum_k w_tk * FFN_{e_tk}(x~_t) + FFN_s(x_t)
// from this process's own copy of the routing (moe_routing.c with (seed,
// rank, epoch): never the candidate's device memory), the regenerated
// inputs of every rank that owns one of the experts (rt_input_regen), and
// x~ from the frozen quantizer.
//  - Small problems (<= 1.5 GFLOP): fp64 on the CPU, with x~ from the
//    plain-C twin of the quantizer (bit-exact with the device one); the
//    GPU path below is then run too and must agree (rel L2 <= 1e-4): a
//    self-check of the reference on every small verification.
//  - Otherwise: fp32 on the GPU: per expert, gather its tokens' x~ (fp32),
//    cuBLAS GEMMs in CUBLAS_COMPUTE_32F_PEDANTIC on fp32 copies of the
//    weights (no tensor cores, no reduced precision, fp32 SwiGLU), then
//    y[t] += w * out in expert order.
// The expected buffer is fp32 [T][H].
#define RT_HOST_ONLY  // no device-API code: rt.cuh without it (it says why)

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt.cuh"
#include "wl_work.h"
#include "wl_moe.cuh"

#define REF_CPU_FLOPS 1.5e9

struct ref_state {
  struct moe_shape s;
  cublasHandle_t h;
  int32_t *idx_h;
  float *w_h;
  int *tl_h;    // [T*K] tokens grouped by expert
  float *wl_h;  // [T*K] their weights
  long long *eo_h;  // [E+1]
  long long *fill;  // [E] scratch of ref_group
  int *tl;
  float *wl;
  void *xb, *w13b, *w2b;           // bf16 regen buffers (X, W13/W2 of one owner)
  void *ws13b, *ws2b;              // shared expert regen (bf16)
  float *xq, *xf, *xg, *h1, *act, *out, *w13f, *w2f, *tmp;
  int ready;
};

#define REF_BLAS(ctx, call)                                                  \
  do {                                                                       \
    cublasStatus_t s_ = (call);                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                         \
      return rt_fail((ctx), "reference %s:%d: %s: status %d", __FILE__,     \
                     __LINE__, #call, (int)s_);                              \
  } while (0)

// X (bf16 [T][H]) -> XQ = x~ and XF = x, both fp32: one warp per token,
// through the same frozen quantizer as the implementations.
__global__ void ref_quant_kernel(const __nv_bfloat16 *x, long long T, long long H, float *xq,
                                 float *xf) {
  const int lane = threadIdx.x & 31;
  const long long wid = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32,
                  nw = (long long)gridDim.x * blockDim.x / 32;
  for (long long t = wid; t < T; t += nw)
    for (long long ch = 0; ch * 512 < H; ch++) {
      uint4 codes;
      float sc;
      if (!moe_q8_chunk(x + t * H, H, ch, lane, &codes, &sc)) continue;
      const long long c0 = ch * 512 + lane * 16;
      const unsigned char *q = (const unsigned char *)&codes;
      for (int i = 0; i < 16; i++) {
        xq[t * H + c0 + i] = __bfloat162float(moe_q8_decode(q[i], sc));
        xf[t * H + c0 + i] = __bfloat162float(x[t * H + c0 + i]);
      }
    }
}

__global__ void ref_bf16_to_f32(const __nv_bfloat16 *in, float *out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    out[i] = __bfloat162float(in[i]);
}

// OUT[i][:] = SRC[TL[i]][:] for N rows of H.
__global__ void ref_gather(const float *src, const int *tl, long long n, long long H, float *out) {
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n * H;
       k += (long long)gridDim.x * blockDim.x)
    out[k] = src[(long long)tl[k / H] * H + k % H];
}

// ACT[r][f] = silu(g) * u in fp32 (no rounding to bf16).
__global__ void ref_swiglu(const float *h1, float *act, long long n, long long F) {
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n * F;
       k += (long long)gridDim.x * blockDim.x) {
    long long r = k / F, f = k % F;
    float g = h1[r * 2 * F + f], u = h1[r * 2 * F + F + f];
    act[k] = g / (1.0f + expf(-g)) * u;
  }
}

// EXP[TL[i]][:] += W[i] * OUT[i][:] (TL: distinct tokens; NULL TL: row i,
// weight 1).
__global__ void ref_scatter_add(float *exp, const float *out, const int *tl, const float *w,
                                long long n, long long H) {
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n * H;
       k += (long long)gridDim.x * blockDim.x) {
    long long i = k / H, c = k % H;
    long long t = tl ? tl[i] : i;
    exp[t * H + c] += (w ? w[i] : 1.0f) * out[k];
  }
}

static int ref_gemm(struct wl_ctx *ctx, cublasHandle_t h, const float *in, const float *w,
                    float *out, long long n, long long Kd, long long N) {
  const float one = 1.0f, zero = 0.0f;
  REF_BLAS(ctx, cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)n, (int)Kd, &one, w,
                             CUDA_R_32F, (int)N, in, CUDA_R_32F, (int)Kd, &zero, out, CUDA_R_32F,
                             (int)N, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
  return 0;
}

// FFN of N rows of IN (fp32 [n][H]) with bf16 weights W13B/W2B (one
// expert) into st->out, then EXP[TL] += W * out.
static int ref_ffn(struct wl_ctx *ctx, struct ref_state *st, cudaStream_t rs, const float *in,
                   long long n, const void *w13b, const void *w2b, const int *tl, const float *w,
                   float *exp) {
  const long long H = st->s.H, F = st->s.F;
  ref_bf16_to_f32<<<moe_grid(H * 2 * F, 256), 256, 0, rs>>>((const __nv_bfloat16 *)w13b,
                                                            st->w13f, H * 2 * F);
  ref_bf16_to_f32<<<moe_grid(F * H, 256), 256, 0, rs>>>((const __nv_bfloat16 *)w2b, st->w2f,
                                                        F * H);
  RT_LAUNCH(ctx);
  if (ref_gemm(ctx, st->h, in, st->w13f, st->h1, n, H, 2 * F) != 0) return -1;
  ref_swiglu<<<moe_grid(n * F, 256), 256, 0, rs>>>(st->h1, st->act, n, F);
  RT_LAUNCH(ctx);
  if (ref_gemm(ctx, st->h, st->act, st->w2f, st->out, n, F, H) != 0) return -1;
  ref_scatter_add<<<moe_grid(n * H, 256), 256, 0, rs>>>(exp, st->out, tl, w, n, H);
  RT_LAUNCH(ctx);
  return 0;
}

static int ref_init(struct wl_ctx *ctx, const struct wl_problem *p, struct ref_state *st) {
  struct moe_shape *s = &st->s;
  if (moe_shape_get(ctx, p, s, 1) != 0) return -1;
  const long long T = s->T, H = s->H, F = s->F, K = s->K, El = s->El;
  REF_BLAS(ctx, cublasCreate(&st->h));
  REF_BLAS(ctx, cublasSetMathMode(st->h, CUBLAS_PEDANTIC_MATH));
  st->idx_h = (int32_t *)malloc(sizeof(int32_t) * T * K);
  st->w_h = (float *)malloc(sizeof(float) * T * K);
  st->tl_h = (int *)malloc(sizeof(int) * T * K);
  st->wl_h = (float *)malloc(sizeof(float) * T * K);
  st->eo_h = (long long *)malloc(sizeof(long long) * (s->E + 1));
  st->fill = (long long *)malloc(sizeof(long long) * s->E);
  if (!st->idx_h || !st->w_h || !st->tl_h || !st->wl_h || !st->eo_h || !st->fill)
    return rt_fail(ctx, "reference: out of memory");
  RT_CUDA(ctx, cudaMalloc((void **)&st->tl, sizeof(int) * T * K));
  RT_CUDA(ctx, cudaMalloc((void **)&st->wl, sizeof(float) * T * K));
  RT_CUDA(ctx, cudaMalloc(&st->xb, (size_t)T * H * 2));
  RT_CUDA(ctx, cudaMalloc(&st->w13b, (size_t)El * H * 2 * F * 2));
  RT_CUDA(ctx, cudaMalloc(&st->w2b, (size_t)El * F * H * 2));
  if (s->SH) {
    RT_CUDA(ctx, cudaMalloc(&st->ws13b, (size_t)H * 2 * F * 2));
    RT_CUDA(ctx, cudaMalloc(&st->ws2b, (size_t)F * H * 2));
  }
  float **f[] = {&st->xq, &st->xf, &st->xg, &st->out, &st->tmp};
  for (int i = 0; i < 5; i++) RT_CUDA(ctx, cudaMalloc((void **)f[i], sizeof(float) * T * H));
  RT_CUDA(ctx, cudaMalloc((void **)&st->h1, sizeof(float) * T * 2 * F));
  RT_CUDA(ctx, cudaMalloc((void **)&st->act, sizeof(float) * T * F));
  RT_CUDA(ctx, cudaMalloc((void **)&st->w13f, sizeof(float) * H * 2 * F));
  RT_CUDA(ctx, cudaMalloc((void **)&st->w2f, sizeof(float) * F * H));
  st->ready = 1;
  return 0;
}

// This step's routing, grouped by expert: eo_h[e]..eo_h[e+1] in tl_h/wl_h.
static void ref_group(struct ref_state *st) {
  const struct moe_shape *s = &st->s;
  const long long n = s->T * s->K;
  for (long long e = 0; e <= s->E; e++) st->eo_h[e] = 0;
  for (long long i = 0; i < n; i++) st->eo_h[st->idx_h[i] + 1]++;
  for (long long e = 0; e < s->E; e++) st->eo_h[e + 1] += st->eo_h[e];
  for (long long e = 0; e < s->E; e++) st->fill[e] = 0;
  for (long long i = 0; i < n; i++) {
    int e = st->idx_h[i];
    long long at = st->eo_h[e] + st->fill[e]++;
    st->tl_h[at] = (int)(i / s->K);
    st->wl_h[at] = st->w_h[i];
  }
}

// The GPU fp32 path into EXP (fp32 [T][H]) on RS.
static int ref_gpu(struct wl_ctx *ctx, struct ref_state *st, cudaStream_t rs, float *exp) {
  const struct moe_shape *s = &st->s;
  const long long T = s->T, H = s->H;
  REF_BLAS(ctx, cublasSetStream(st->h, rs));
  RT_CUDA(ctx, cudaMemsetAsync(exp, 0, sizeof(float) * T * H, rs));
  for (int o = 0; o < s->R; o++) {
    if (st->eo_h[(o + 1) * s->El] == st->eo_h[o * s->El]) continue;  // no token for rank o
    if (rt_input_regen(ctx, "W13", o, st->w13b) != 0 || rt_input_regen(ctx, "W2", o, st->w2b) != 0)
      return -1;
    for (long long le = 0; le < s->El; le++) {
      long long e = o * s->El + le, b = st->eo_h[e], n = st->eo_h[e + 1] - b;
      if (n == 0) continue;
      ref_gather<<<moe_grid(n * H, 256), 256, 0, rs>>>(st->xq, st->tl + b, n, H, st->xg);
      RT_LAUNCH(ctx);
      if (ref_ffn(ctx, st, rs, st->xg, n, (const char *)st->w13b + (size_t)le * H * 2 * s->F * 2,
                  (const char *)st->w2b + (size_t)le * s->F * H * 2, st->tl + b, st->wl + b,
                  exp) != 0)
        return -1;
    }
  }
  if (s->SH && ref_ffn(ctx, st, rs, st->xf, T, st->ws13b, st->ws2b, NULL, NULL, exp) != 0)
    return -1;
  return 0;
}

static double bf(uint16_t b) { return (double)moe_q8t_bf16_to_float(b); }

// The fp64 CPU path into EXP_H (fp32 [T][H], host).
static int ref_cpu(struct wl_ctx *ctx, struct ref_state *st, cudaStream_t rs, float *exp_h) {
  const struct moe_shape *s = &st->s;
  const long long T = s->T, H = s->H, F = s->F, K = s->K, El = s->El;
  const size_t nw13 = (size_t)El * H * 2 * F, nw2 = (size_t)El * F * H;
  uint16_t *x = (uint16_t *)malloc((size_t)T * H * 2);
  uint16_t *w13 = (uint16_t *)malloc((size_t)s->R * nw13 * 2);
  uint16_t *w2 = (uint16_t *)malloc((size_t)s->R * nw2 * 2);
  uint16_t *ws13 = (uint16_t *)malloc((size_t)H * 2 * F * 2);
  uint16_t *ws2 = (uint16_t *)malloc((size_t)F * H * 2);
  uint8_t *q = (uint8_t *)malloc((size_t)H);
  float *sc = (float *)malloc(sizeof(float) * s->HS);
  double *xv = (double *)malloc(sizeof(double) * H), *h = (double *)malloc(sizeof(double) * 2 * F),
         *y = (double *)malloc(sizeof(double) * H);
  int rc = 0;
  if (!x || !w13 || !w2 || !ws13 || !ws2 || !q || !sc || !xv || !h || !y) {
    rc = rt_fail(ctx, "reference: out of host memory");
    goto out;
  }
  RT_CUDA(ctx, cudaMemcpyAsync(x, st->xb, (size_t)T * H * 2, cudaMemcpyDeviceToHost, rs));
  for (int o = 0; o < s->R; o++) {
    if (rt_input_regen(ctx, "W13", o, st->w13b) != 0 || rt_input_regen(ctx, "W2", o, st->w2b) != 0) {
      rc = -1;
      goto out;
    }
    RT_CUDA(ctx, cudaMemcpyAsync(w13 + o * nw13, st->w13b, nw13 * 2, cudaMemcpyDeviceToHost, rs));
    RT_CUDA(ctx, cudaMemcpyAsync(w2 + o * nw2, st->w2b, nw2 * 2, cudaMemcpyDeviceToHost, rs));
    RT_CUDA(ctx, cudaStreamSynchronize(rs));  // the regen buffers are reused
  }
  if (s->SH) {
    RT_CUDA(ctx, cudaMemcpyAsync(ws13, st->ws13b, (size_t)H * 2 * F * 2, cudaMemcpyDeviceToHost, rs));
    RT_CUDA(ctx, cudaMemcpyAsync(ws2, st->ws2b, (size_t)F * H * 2, cudaMemcpyDeviceToHost, rs));
  }
  RT_CUDA(ctx, cudaStreamSynchronize(rs));
  for (long long t = 0; t < T; t++) {
    memset(y, 0, sizeof(double) * H);
    moe_q8t_row(x + t * H, (int)H, q, sc);
    for (long long k = 0; k <= K; k++) {
      const uint16_t *a, *b;
      double wt;
      if (k < K) {  // routed expert: x~
        long long e = st->idx_h[t * K + k];
        a = w13 + (size_t)(e / El) * nw13 + (size_t)(e % El) * H * 2 * F;
        b = w2 + (size_t)(e / El) * nw2 + (size_t)(e % El) * F * H;
        wt = st->w_h[t * K + k];
        for (long long i = 0; i < H; i++)
          xv[i] = bf(moe_q8t_decode(q[i], sc[i / MOE_Q8_BLOCK]));
      } else {  // shared expert: x
        if (!s->SH) break;
        a = ws13, b = ws2, wt = 1.0;
        for (long long i = 0; i < H; i++) xv[i] = bf(x[t * H + i]);
      }
      for (long long j = 0; j < 2 * F; j++) h[j] = 0;
      for (long long i = 0; i < H; i++)
        for (long long j = 0; j < 2 * F; j++) h[j] += xv[i] * bf(a[i * 2 * F + j]);
      for (long long f = 0; f < F; f++) {
        double act = h[f] / (1.0 + exp(-h[f])) * h[F + f];
        for (long long c = 0; c < H; c++) y[c] += wt * act * bf(b[f * H + c]);
      }
    }
    for (long long c = 0; c < H; c++) exp_h[t * H + c] = (float)y[c];
  }
out:
  free(x), free(w13), free(w2), free(ws13), free(ws2), free(q), free(sc), free(xv), free(h),
      free(y);
  return rc;
}

extern "C" int wl_reference(struct wl_ctx *ctx, const struct wl_problem *p, const char *output,
                            void *expected_dev) {
  if (strcmp(output, "Y") != 0) return rt_fail(ctx, "reference: unknown output %s", output);
  struct ref_state *st = (struct ref_state *)rt_get_ref_state(ctx);
  if (!st) {
    st = (struct ref_state *)calloc(1, sizeof *st);
    if (!st) return rt_fail(ctx, "reference: out of memory");
    rt_set_ref_state(ctx, st);
  }
  if (!st->ready && ref_init(ctx, p, st) != 0) return -1;
  const struct moe_shape *s = &st->s;
  const long long T = s->T, H = s->H, F = s->F, K = s->K;
  cudaStream_t rs = rt_ref_stream(ctx);
  if (moe_route_gen(&s->rc, moe_route_key(p->seed, s->me, rt_epoch(ctx)), s->me, st->idx_h,
                    st->w_h) != 0)
    return rt_fail(ctx, "reference: out of memory");
  ref_group(st);
  RT_CUDA(ctx, cudaMemcpyAsync(st->tl, st->tl_h, sizeof(int) * T * K, cudaMemcpyHostToDevice, rs));
  RT_CUDA(ctx, cudaMemcpyAsync(st->wl, st->wl_h, sizeof(float) * T * K, cudaMemcpyHostToDevice, rs));
  if (rt_input_regen(ctx, "X", s->me, st->xb) != 0) return -1;
  if (s->SH &&
      (rt_input_regen(ctx, "WS13", s->me, st->ws13b) != 0 ||
       rt_input_regen(ctx, "WS2", s->me, st->ws2b) != 0))
    return -1;
  ref_quant_kernel<<<moe_grid(T * 32, 256), 256, 0, rs>>>((const __nv_bfloat16 *)st->xb, T, H,
                                                          st->xq, st->xf);
  RT_LAUNCH(ctx);
  const double flops = 6.0 * (double)T * (K + s->SH) * H * F;
  const double wbytes = 6.0 * (double)s->E * H * F;
  if (flops > REF_CPU_FLOPS || wbytes > 512e6) {
    if (ref_gpu(ctx, st, rs, (float *)expected_dev) != 0) return -1;
    RT_CUDA(ctx, cudaStreamSynchronize(rs));  // the host arrays are rewritten next step
    return 0;
  }
  // Small: fp64 CPU is the expectation; the GPU path must agree with it.
  float *cpu = (float *)malloc(sizeof(float) * T * H), *gpu = (float *)malloc(sizeof(float) * T * H);
  int rc = 0;
  if (!cpu || !gpu) rc = rt_fail(ctx, "reference: out of host memory");
  if (rc == 0) rc = ref_cpu(ctx, st, rs, cpu);
  if (rc == 0) rc = ref_gpu(ctx, st, rs, st->tmp);
  if (rc == 0 && (cudaMemcpyAsync(gpu, st->tmp, sizeof(float) * T * H, cudaMemcpyDeviceToHost,
                                  rs) != cudaSuccess ||
                  cudaStreamSynchronize(rs) != cudaSuccess))
    rc = rt_fail(ctx, "reference: copying the GPU self-check failed");
  if (rc == 0) {
    double e2 = 0, r2 = 0;
    for (long long i = 0; i < T * H; i++) {
      double d = (double)gpu[i] - cpu[i];
      e2 += d * d;
      r2 += (double)cpu[i] * cpu[i];
    }
    if (!(e2 <= 1e-8 * r2))
      rc = rt_fail(ctx, "reference self-check: GPU fp32 path vs CPU fp64: rel L2 %.3g > 1e-4",
                   r2 > 0 ? sqrt(e2 / r2) : 0.0);
  }
  if (rc == 0 && cudaMemcpyAsync(expected_dev, cpu, sizeof(float) * T * H,
                                 cudaMemcpyHostToDevice, rs) != cudaSuccess)
    rc = rt_fail(ctx, "reference: upload failed");
  if (rc == 0 && cudaStreamSynchronize(rs) != cudaSuccess)
    rc = rt_fail(ctx, "reference: upload failed");
  free(cpu), free(gpu);
  return rc;
}

// The minimal work of one step (speed-of-light bound; wl_work.h).
extern "C" int wl_work(const struct wl_problem *p, struct wl_work *w) { return moe_work(p, w); }

// The state wl_reference cached for this size (runtime.h): freed before the
// next size of a --plan run builds its own.
extern "C" void wl_reference_release(struct wl_ctx *ctx) {
  struct ref_state *st = (struct ref_state *)rt_get_ref_state(ctx);
  if (!st) return;
  cudaStreamSynchronize(rt_ref_stream(ctx));
  if (st->h) cublasDestroy(st->h);
  free(st->idx_h), free(st->w_h), free(st->tl_h), free(st->wl_h), free(st->eo_h),
      free(st->fill);
  void *d[] = {st->tl, st->wl, st->xb, st->w13b, st->w2b, st->ws13b, st->ws2b, st->xq, st->xf,
               st->xg, st->h1, st->act, st->out, st->w13f, st->w2f, st->tmp};
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) cudaFree(d[i]);
  free(st);
  rt_set_ref_state(ctx, NULL);
}
