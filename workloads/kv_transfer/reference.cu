// workloads/kv_transfer/reference.cu - the TRUSTED reference (frozen, never
// part of a candidate).  For this rank's paged pool it computes what every
// element must hold after a step:
//   - slots a request of this (decode) rank owns: RoPE(X_p * W_l) from the
//     sender's regenerated inputs, in fp32 end to end (cuBLAS pedantic fp32
//     accumulate AND fp32 output, RoPE in fp32 from a double-built table);
//   - every other element (slots past a request's end, blocks no table
//     names, the whole pool of a prefill-only rank): the poison pattern
//     (all-ones bits), i.e. it must be untouched.
// The block tables come from the frozen plan in wl_kv.cuh with this
// process's seed, never from the candidate's device memory.  For small
// shapes (X and W under 256 MB) 64 elements are recomputed in fp64 on the
// CPU (self-check of the reference).
#define RT_HOST_ONLY  // no device-API code: rt.cuh without it (it says why)

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt.cuh"
#include "wl_work.h"
#include "wl_kv.cuh"

struct ref_sender {
  long long *slot;  // device [S]: slab element offset, or -1 if not for me
  int *pos;         // device [S]
  long long *slot_h;
  int *pos_h;
  long long mine;   // rows of this sender for me
};

struct ref_state {
  cublasHandle_t h;
  float2 *tab;
  struct ref_sender snd[KV_MAX_RANKS];
  int ready;
};

#define REF_BLAS(ctx, call)                                                  \
  do {                                                                       \
    cublasStatus_t s_ = (call);                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                         \
      return rt_fail((ctx), "reference %s:%d: %s: status %d", __FILE__,     \
                     __LINE__, #call, (int)s_);                              \
  } while (0)

// Expected for the rows of one sender and one layer: OUT [S][2W] fp32 GEMM
// result; RoPE on K; store K and V of rows for me into EXP (fp32 pool).
__global__ void ref_place(float *exp, const float *out, const long long *slot, const int *pos,
                          const float2 *tab, long long S, int hkv, int hd, long long l,
                          long long slab) {
  const long long W = (long long)hkv * hd, half = hd / 2;
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < S * W;
       k += (long long)gridDim.x * blockDim.x) {
    long long r = k / W, c = k % W, h = c / hd, i = c % hd;
    if (slot[r] < 0) continue;
    const float *row = out + r * 2 * W;
    float kv;
    if (i < half) {
      float ra, rb;
      kv_rope_pair(row[h * hd + i], row[h * hd + i + half], tab[(long long)pos[r] * half + i],
                   &ra, &rb);
      kv = ra;
    } else {
      float ra, rb;
      kv_rope_pair(row[h * hd + i - half], row[h * hd + i], tab[(long long)pos[r] * half + i - half],
                   &ra, &rb);
      kv = rb;
    }
    exp[(size_t)(l * 2 + 0) * slab + slot[r] + c] = kv;
    exp[(size_t)(l * 2 + 1) * slab + slot[r] + c] = row[W + c];
  }
}

static float bf2f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// fp64 CPU recomputation of 64 seeded elements placed from sender P.
static int cpu_check(struct wl_ctx *ctx, const struct kv_shape *s, const struct ref_sender *sd,
                     const void *x_dev, const void *w_dev, const float *exp_dev) {
  size_t nx = (size_t)s->S * s->DM, nw = (size_t)s->L * s->DM * 2 * s->W;
  uint16_t *x = (uint16_t *)malloc(nx * 2), *w = (uint16_t *)malloc(nw * 2);
  int rc = 0;
  if (!x || !w) {
    rc = rt_fail(ctx, "reference: out of host memory");
    goto out;
  }
  if (cudaMemcpy(x, x_dev, nx * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(w, w_dev, nw * 2, cudaMemcpyDeviceToHost) != cudaSuccess) {
    rc = rt_fail(ctx, "reference: copy for the CPU check failed");
    goto out;
  }
  for (int t = 0; t < 64 && sd->mine; t++) {
    long long r = (long long)((t * 2654435761ull + 11) % s->S);
    for (long long k = 0; k < s->S && sd->slot_h[r] < 0; k++) r = (r + 1) % s->S;
    long long l = (t * 7) % s->L, c = (long long)((t * 40503ull + 3) % (2 * s->W));
    if (t == 0) r = s->S - 1, l = s->L - 1, c = 2 * s->W - 1;
    if (sd->slot_h[r] < 0) continue;
    long long n = 2 * s->W, half = s->HD / 2;
    int kpart = c < s->W;
    long long hc = kpart ? c % s->HD : 0, partner = hc < half ? c + half : c - half;
    double a = 0, b = 0, mag = 0, magb = 0;
    for (long long k = 0; k < s->DM; k++) {
      double xv = bf2f(x[r * s->DM + k]);
      a += xv * bf2f(w[((size_t)l * s->DM + k) * n + c]);
      mag += fabs(xv * bf2f(w[((size_t)l * s->DM + k) * n + c]));
      if (kpart) {
        b += xv * bf2f(w[((size_t)l * s->DM + k) * n + partner]);
        magb += fabs(xv * bf2f(w[((size_t)l * s->DM + k) * n + partner]));
      }
    }
    double want = a;
    if (kpart) {
      long long i = hc < half ? hc : hc - half;
      double ang = (double)sd->pos_h[r] * pow(KV_THETA, -2.0 * i / s->HD);
      want = hc < half ? a * cos(ang) - b * sin(ang) : a * cos(ang) + b * sin(ang);
    }
    size_t e = (size_t)(l * 2 + (kpart ? 0 : 1)) * kv_slab_elems(s) + sd->slot_h[r] +
               (kpart ? c : c - s->W);
    float got;
    if (cudaMemcpy(&got, exp_dev + e, sizeof got, cudaMemcpyDeviceToHost) != cudaSuccess) {
      rc = rt_fail(ctx, "reference: copy for the CPU check failed");
      goto out;
    }
    if (!(fabs(got - want) <= 1e-4 * (mag + magb) + 1e-5)) {
      rc = rt_fail(ctx, "reference self-check: layer %lld row %lld col %lld: GPU %.8g vs fp64 %.8g",
                   l, r, c, (double)got, want);
      goto out;
    }
  }
out:
  free(x);
  free(w);
  return rc;
}

static int ref_init(struct wl_ctx *ctx, const struct wl_problem *p, const struct kv_shape *s,
                    struct ref_state *st) {
  REF_BLAS(ctx, cublasCreate(&st->h));
  REF_BLAS(ctx, cublasSetMathMode(st->h, CUBLAS_PEDANTIC_MATH));
  RT_CUDA(ctx, cudaMalloc((void **)&st->tab, sizeof(float2) * s->maxpos * (s->HD / 2)));
  kv_rope_table_kernel<<<kv_grid(s->maxpos * (s->HD / 2), 256), 256>>>(st->tab, s->maxpos,
                                                                       (int)s->HD);
  RT_LAUNCH(ctx);
  int *dst = (int *)malloc(sizeof(int) * s->S);
  if (!dst) return rt_fail(ctx, "reference: out of memory");
  for (int q = 0; q < s->P; q++) {
    struct ref_sender *sd = &st->snd[q];
    sd->slot_h = (long long *)malloc(sizeof(long long) * s->S);
    sd->pos_h = (int *)malloc(sizeof(int) * s->S);
    if (!sd->slot_h || !sd->pos_h ||
        kv_plan_rows(s, p->seed, q, dst, sd->slot_h, sd->pos_h, -1, NULL, NULL, NULL, NULL)) {
      free(dst);
      return rt_fail(ctx, "reference: out of memory");
    }
    sd->mine = 0;
    for (long long r = 0; r < s->S; r++) {
      if (!s->is_decode || dst[r] != s->me) sd->slot_h[r] = -1;
      else sd->mine++;
    }
    RT_CUDA(ctx, cudaMalloc((void **)&sd->slot, sizeof(long long) * s->S));
    RT_CUDA(ctx, cudaMalloc((void **)&sd->pos, sizeof(int) * s->S));
    RT_CUDA(ctx, cudaMemcpy(sd->slot, sd->slot_h, sizeof(long long) * s->S,
                            cudaMemcpyHostToDevice));
    RT_CUDA(ctx, cudaMemcpy(sd->pos, sd->pos_h, sizeof(int) * s->S, cudaMemcpyHostToDevice));
  }
  free(dst);
  RT_CUDA(ctx, cudaDeviceSynchronize());
  st->ready = 1;
  return 0;
}

extern "C" int wl_reference(struct wl_ctx *ctx, const struct wl_problem *p, const char *output,
                            void *expected_dev) {
  struct kv_shape s;
  if (kv_shape_get(ctx, p, &s) != 0) return -1;
  if (strcmp(output, "pool") != 0) return rt_fail(ctx, "reference: unknown output %s", output);
  struct ref_state *st = (struct ref_state *)rt_get_ref_state(ctx);
  cudaStream_t rs = rt_ref_stream(ctx);
  if (!st) {
    st = (struct ref_state *)calloc(1, sizeof *st);
    if (!st) return rt_fail(ctx, "reference: out of memory");
    rt_set_ref_state(ctx, st);
  }
  if (!st->ready && ref_init(ctx, p, &s, st) != 0) return -1;
  REF_BLAS(ctx, cublasSetStream(st->h, rs));
  const size_t slab = kv_slab_elems(&s), n_elems = (size_t)s.L * 2 * slab;
  RT_CUDA(ctx, cudaMemsetAsync(expected_dev, 0xFF, n_elems * sizeof(float), rs));
  if (!s.is_decode) return 0;  // a prefill-only rank's pool stays untouched
  const long long n = 2 * s.W;
  size_t xb = (size_t)s.S * s.DM * 2, wb = (size_t)s.L * s.DM * n * 2;
  void *x = NULL, *w = NULL;
  float *out = NULL;
  RT_CUDA(ctx, cudaMallocAsync(&x, xb, rs));
  RT_CUDA(ctx, cudaMallocAsync(&w, wb, rs));
  RT_CUDA(ctx, cudaMallocAsync((void **)&out, sizeof(float) * s.S * n, rs));
  const float one = 1.0f, zero = 0.0f;
  int rc = 0;
  for (int q = 0; q < s.P && rc == 0; q++) {
    struct ref_sender *sd = &st->snd[q];
    if (!sd->mine) continue;
    // Errors set rc and leave the loops, so x, w and out are freed below.
    if (rt_input_regen(ctx, "X", q, x) != 0 || rt_input_regen(ctx, "W", q, w) != 0) {
      rc = -1;
      break;
    }
    for (long long l = 0; l < s.L && rc == 0; l++) {
      cublasStatus_t bs = cublasGemmEx(
          st->h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)s.S, (int)s.DM, &one,
          (const char *)w + (size_t)l * s.DM * n * 2, CUDA_R_16BF, (int)n, x, CUDA_R_16BF,
          (int)s.DM, &zero, out, CUDA_R_32F, (int)n, CUBLAS_COMPUTE_32F_PEDANTIC,
          CUBLAS_GEMM_DEFAULT);
      if (bs != CUBLAS_STATUS_SUCCESS) {
        rc = rt_fail(ctx, "reference: cublasGemmEx of layer %lld: status %d", l, (int)bs);
        break;
      }
      ref_place<<<kv_grid(s.S * s.W, 256), 256, 0, rs>>>((float *)expected_dev, out, sd->slot,
                                                         sd->pos, st->tab, s.S, (int)s.HKV,
                                                         (int)s.HD, l, (long long)slab);
      cudaError_t le = cudaGetLastError();
      if (le != cudaSuccess) rc = rt_fail(ctx, "reference: ref_place: %s", cudaGetErrorString(le));
    }
    if (rc == 0 && (double)(xb + wb) <= 256.0 * 1024 * 1024) {  // host copies stay small
      RT_CUDA(ctx, cudaStreamSynchronize(rs));
      rc = cpu_check(ctx, &s, sd, x, w, (const float *)expected_dev);
    }
  }
  RT_CUDA(ctx, cudaFreeAsync(x, rs));
  RT_CUDA(ctx, cudaFreeAsync(w, rs));
  RT_CUDA(ctx, cudaFreeAsync(out, rs));
  return rc;
}

// The minimal work of one step (speed-of-light bound; wl_work.h).
extern "C" int wl_work(const struct wl_problem *p, struct wl_work *w) { return kv_transfer_work(p, w); }

// The state wl_reference cached for this size (runtime.h): freed before the
// next size of a --plan run builds its own.
extern "C" void wl_reference_release(struct wl_ctx *ctx) {
  struct ref_state *st = (struct ref_state *)rt_get_ref_state(ctx);
  if (!st) return;
  cudaStreamSynchronize(rt_ref_stream(ctx));
  if (st->h) cublasDestroy(st->h);
  cudaFree(st->tab);
  for (int r = 0; r < KV_MAX_RANKS; r++) {
    cudaFree(st->snd[r].slot), cudaFree(st->snd[r].pos);
    free(st->snd[r].slot_h), free(st->snd[r].pos_h);
  }
  free(st);
  rt_set_ref_state(ctx, NULL);
}
