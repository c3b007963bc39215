/* workloads/moe_dsv3/moe_fp8.h - the FROZEN FP8 quantizer of moe_dsv3.
 *
 * x~ = dequant(quant(x)) is the expert input (workloads.md section 2): per
 * token, per block of 128 channels, one fp32 scale s = amax / 448 (amax =
 * the largest |x| of the block; s = 1 when that is below FLT_MIN, i.e. an
 * all-zero block), q = e4m3(x / s) with round-to-nearest-even and
 * saturation to +-448, and x~ = bf16_rn(float(q) * s).
 *
 * Two implementations that must agree bit for bit:
 *  - moe_q8_*: __host__ __device__ under nvcc, built on cuda_fp8.h's
 *    __nv_cvt_float_to_fp8 (the cvt.rn.satfinite instruction on sm_90, a
 *    software emulation on the host) and cuda_bf16.h; used by every
 *    implementation's kernels and by the GPU reference;
 *  - moe_q8t_*: the plain-C twin (no CUDA), used by the fp64 CPU reference
 *    and the unit tests.
 * tests/cli/t1102 runs both on the CPU over every e4m3 code, every
 * rounding midpoint and random inputs; tests/unit/test_moe_routing.c checks
 * the twin's own properties. */
#ifndef MOE_FP8_H
#define MOE_FP8_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define MOE_Q8_BLOCK 128        /* channels per scale */
#define MOE_Q8_MAX 448.0f       /* largest finite e4m3 */
#define MOE_Q8_MIN_AMAX 1.17549435e-38f /* FLT_MIN: below it, s = 1 */

/* ---- the plain-C twin ------------------------------------------------- */

static inline uint32_t moe_q8t_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

static inline float moe_q8t_float(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}

/* Scale of a block whose largest magnitude is AMAX (>= 0). */
static inline float moe_q8t_scale(float amax) {
  return amax >= MOE_Q8_MIN_AMAX ? amax / MOE_Q8_MAX : 1.0f;
}

/* fp32 -> e4m3 bits, round to nearest even, saturating (NaN -> 0x7F, as
 * cuda_fp8.h does). */
static inline uint8_t moe_q8t_from_float(float x) {
  uint32_t u = moe_q8t_bits(x);
  uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7Fu;
  double a = fabs((double)x);
  if (a >= 448.0) return (uint8_t)(sign | 0x7Eu); /* satfinite (also inf) */
  int e;
  (void)frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
  int ex = e - 1;     /* a in [2^ex, 2^(ex+1)) */
  if (ex < -6) ex = -6; /* subnormal range: quantum 2^-9 */
  double quantum = ldexp(1.0, ex - 3);
  double m = nearbyint(a / quantum); /* ties to even (default rounding mode) */
  double r = m * quantum;
  if (r == 0.0) return sign;
  if (r > 448.0) r = 448.0;
  int re;
  (void)frexp(r, &re);
  int rex = re - 1;
  if (rex < -6) /* subnormal: exponent field 0, value = mant * 2^-9 */
    return (uint8_t)(sign | (uint8_t)(r / ldexp(1.0, -9)));
  int mant = (int)(r / ldexp(1.0, rex) * 8.0) - 8;
  return (uint8_t)(sign | (uint8_t)((rex + 7) << 3) | (uint8_t)mant);
}

/* e4m3 bits -> fp32 (exact). */
static inline float moe_q8t_to_float(uint8_t v) {
  int s = v >> 7, ex = (v >> 3) & 15, m = v & 7;
  double r;
  if (ex == 15 && m == 7) return moe_q8t_float(s ? 0xFFC00000u : 0x7FC00000u);
  if (ex == 0) r = ldexp((double)m, -9);
  else r = ldexp(1.0 + m / 8.0, ex - 7);
  return (float)(s ? -r : r);
}

/* fp32 -> bf16 bits, round to nearest even (NaN -> the canonical 0x7FFF,
 * as cuda_bf16.h does). */
static inline uint16_t moe_q8t_bf16(float x) {
  uint32_t u = moe_q8t_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFFu;
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float moe_q8t_bf16_to_float(uint16_t b) {
  return moe_q8t_float((uint32_t)b << 16);
}

/* Encode one element: e4m3(x / s). */
static inline uint8_t moe_q8t_encode(float x, float s) {
  return moe_q8t_from_float(x / s);
}

/* Decode one element to the bf16 expert input: bf16_rn(float(q) * s). */
static inline uint16_t moe_q8t_decode(uint8_t q, float s) {
  return moe_q8t_bf16(moe_q8t_to_float(q) * s);
}

/* Quantize one token row of H bf16 values (H a multiple of 128): Q[H]
 * codes and S[H/128] scales. */
static inline void moe_q8t_row(const uint16_t *x, int H, uint8_t *q, float *s) {
  for (int b = 0; b < H / MOE_Q8_BLOCK; b++) {
    float amax = 0.0f;
    for (int i = 0; i < MOE_Q8_BLOCK; i++) {
      float v = fabsf(moe_q8t_bf16_to_float(x[b * MOE_Q8_BLOCK + i]));
      if (v > amax) amax = v;
    }
    s[b] = moe_q8t_scale(amax);
    for (int i = 0; i < MOE_Q8_BLOCK; i++)
      q[b * MOE_Q8_BLOCK + i] =
          moe_q8t_encode(moe_q8t_bf16_to_float(x[b * MOE_Q8_BLOCK + i]), s[b]);
  }
}

/* ---- the CUDA implementation (host and device) ------------------------ */
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp8.h>

__host__ __device__ static inline float moe_q8_scale(float amax) {
#ifdef __CUDA_ARCH__
  return amax >= MOE_Q8_MIN_AMAX ? __fdiv_rn(amax, MOE_Q8_MAX) : 1.0f;
#else
  return amax >= MOE_Q8_MIN_AMAX ? amax / MOE_Q8_MAX : 1.0f;
#endif
}

__host__ __device__ static inline uint8_t moe_q8_encode(float x, float s) {
#ifdef __CUDA_ARCH__
  float v = __fdiv_rn(x, s);
#else
  float v = x / s;
#endif
  return (uint8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}

__host__ __device__ static inline float moe_q8_to_float(uint8_t q) {
  __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)q, __NV_E4M3);
  return __half2float(__half(h));
}

__host__ __device__ static inline __nv_bfloat16 moe_q8_decode(uint8_t q, float s) {
#ifdef __CUDA_ARCH__
  return __float2bfloat16_rn(__fmul_rn(moe_q8_to_float(q), s));
#else
  return __float2bfloat16_rn(moe_q8_to_float(q) * s);
#endif
}
#endif /* __CUDACC__ */

#endif /* MOE_FP8_H */
