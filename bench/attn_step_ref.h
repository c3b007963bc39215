// bench/attn_step_ref.h - host helpers shared by the attention step's GPU
// bench (bench/attn_step_bench.cu) and its CPU emulation test
// (tests/cli/attn_step_emu.cu): bf16 conversion, a small RNG, and the fp64
// reference of one query row.  Host C++ only.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <vector>

// Round to nearest even (inputs are finite).
static inline uint16_t attn_ref_f2bf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}
static inline float attn_ref_bf2f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// xorshift64; normalish() has mean 0 and variance 1 (sum of 3 uniforms).
struct AttnRng {
  uint64_t s;
  explicit AttnRng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint32_t next() {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return (uint32_t)(s >> 32);
  }
  float uni() { return (next() >> 8) * (1.f / 16777216.f); }
  float normalish() { return (uni() + uni() + uni() - 1.5f) * 2.f; }
};

// fp64 attention of one query row against keys [0, n_keys) of one KV head:
// q[d], k and v rows at k + j*ld (bf16 bits), scale applied to the dot
// products.  Writes o[d] and returns the natural-log LSE.  n_keys == 0 gives
// o = 0 and -inf.
static inline double attn_ref_row(const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                  long long ld, int n_keys, int d, double scale, double *o) {
  for (int i = 0; i < d; i++) o[i] = 0;
  if (n_keys <= 0) return -INFINITY;
  std::vector<double> sc(n_keys), qv(d);
  for (int i = 0; i < d; i++) qv[i] = attn_ref_bf2f(q[i]);
  double mx = -INFINITY;
  for (int j = 0; j < n_keys; j++) {
    const uint16_t *kr = k + (long long)j * ld;
    double a = 0;
    for (int i = 0; i < d; i++) a += qv[i] * attn_ref_bf2f(kr[i]);
    sc[j] = a * scale;
    mx = std::max(mx, sc[j]);
  }
  double l = 0;
  for (int j = 0; j < n_keys; j++) {
    double w = exp(sc[j] - mx);
    const uint16_t *vr = v + (long long)j * ld;
    l += w;
    for (int i = 0; i < d; i++) o[i] += w * attn_ref_bf2f(vr[i]);
  }
  for (int i = 0; i < d; i++) o[i] /= l;
  return mx + log(l);
}
