// workloads/moe_dsv3/tools/fp8_twin_check.cu - host-only check (no GPU):
// the frozen quantizer's CUDA functions (moe_q8_*, cuda_fp8.h / cuda_bf16.h
// host paths) against the plain-C twin (moe_q8t_*), bit for bit, over every
// e4m3 code, every rounding midpoint and its neighbours, and N random fp32
// values (argv[1], default 2000000) with scales from their own magnitudes.
// Prints "N of M differ" and exits 1 on any difference.  Run by t1102.
#include <stdio.h>
#include <stdlib.h>

#include "moe_fp8.h"

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

int main(int argc, char **argv) {
  long n_rand = argc > 1 ? atol(argv[1]) : 2000000;
  long bad = 0, n = 0;
  for (int c = 0; c < 256; c++, n++) {
    float a = moe_q8t_to_float((uint8_t)c), b = moe_q8_to_float((uint8_t)c);
    if (moe_q8t_bits(a) != moe_q8t_bits(b) && !(a != a && b != b)) {
      if (bad++ < 10) printf("decode %02x: twin %a cuda %a\n", c, a, b);
    }
  }
  for (int c = 0; c < 255; c++) {
    float a = moe_q8t_to_float((uint8_t)c), b = moe_q8t_to_float((uint8_t)(c + 1));
    if (a != a || b != b) continue;
    float m = (float)(((double)a + b) / 2);
    float xs[6] = {m, nextafterf(m, 1e30f), nextafterf(m, -1e30f), a, b, -m};
    for (int k = 0; k < 6; k++, n++) {
      uint8_t t = moe_q8t_from_float(xs[k]);
      uint8_t d = (uint8_t)__nv_cvt_float_to_fp8(xs[k], __NV_SATFINITE, __NV_E4M3);
      if (t != d && bad++ < 10) printf("encode %a: twin %02x cuda %02x\n", xs[k], t, d);
    }
  }
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (long i = 0; i < n_rand; i++, n++) {
    float x = moe_q8t_float((uint32_t)(rng(&s) >> 32));
    uint8_t t = moe_q8t_from_float(x);
    uint8_t d = (uint8_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    if (t != d && bad++ < 10) printf("encode %a: twin %02x cuda %02x\n", x, t, d);
    float sc = moe_q8t_scale(fabsf(x) * (float)(1 + (i & 7)));
    if (moe_q8t_scale(fabsf(x)) != moe_q8_scale(fabsf(x)) && bad++ < 10)
      printf("scale %a differs\n", x);
    if (moe_q8t_encode(x, sc) != moe_q8_encode(x, sc) && bad++ < 10)
      printf("encode(%a, %a) differs\n", x, sc);
    __nv_bfloat16 bb = moe_q8_decode(t, sc);
    uint16_t bc, bt = moe_q8t_decode(t, sc);
    memcpy(&bc, &bb, 2);
    if (bt != bc && bad++ < 10) printf("decode(%02x, %a): twin %04x cuda %04x\n", t, sc, bt, bc);
  }
  printf("%ld of %ld differ\n", bad, n);
  return bad != 0;
}
