/* workloads/moe_dsv3/moe_routing.c - the FROZEN routing generator (see
 * moe_routing.h).  Plain C that also compiles as C++ (nvcc includes it
 * through wl_moe.cuh with MOE_ROUTING_API defined to `static`). */
#include "moe_routing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64 finaliser: the only source of randomness. */
static uint64_t mr_mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Uniform in [0, 1) for draw CTR of stream KEY (53 random bits). */
static double mr_u01(uint64_t key, uint64_t ctr) {
  return (double)(mr_mix(key ^ mr_mix(ctr)) >> 11) * (1.0 / 9007199254740992.0);
}

/* Draws per token: groups first, then experts, then scores. */
#define MR_DRAWS_PER_TOKEN 128u
#define MR_CAL_TOKENS 4096
#define MR_CAL_KEY 0xCA11B2A7E5EEDull
#define MR_BIAS_MAX 1e6

MOE_ROUTING_API void moe_route_defaults(struct moe_route_cfg *c, int T, int R) {
  memset(c, 0, sizeof *c);
  c->T = T;
  c->E = 256;
  c->G = 8;
  c->TG = 4;
  c->K = 8;
  c->R = R;
  c->rho = 1.0;
  c->alpha = 0.0;
  c->scale = 2.5;
  c->mode = MOE_ROUTE_DSV3;
  c->bias = 1.0;
}

MOE_ROUTING_API int moe_route_check(const struct moe_route_cfg *c, char *err,
                                    size_t errlen) {
  const char *why = NULL;
  if (c->T < 1 || c->T > (1 << 20))
    why = "T (tokens per rank) must be in 1..1048576";
  else if (c->R < 1 || c->R > MOE_ROUTE_MAX_R)
    why = "R (ranks) must be in 1..64";
  else if (c->E < 1 || c->E > MOE_ROUTE_MAX_E || c->E % c->R)
    why = "E (experts) must be in 1..4096 and a multiple of the rank count";
  else if (!(c->rho >= 1.0 && c->rho <= 64.0))
    why = "rho (load ratio) must be in 1..64";
  else if (!(c->alpha >= 0.0 && c->alpha <= 4.0))
    why = "alpha (Zipf exponent) must be in 0..4";
  else if (!(c->scale > 0.0 && c->scale <= 100.0))
    why = "scale (route_scale) must be in (0, 100]";
  else if (c->mode < MOE_ROUTE_DSV3 || c->mode > MOE_ROUTE_EDGE)
    why = "mode must be 0 (dsv3), 1 (paper), 2 (one expert) or 3 (edge)";
  else if (c->mode == MOE_ROUTE_PAPER && (c->E != c->R || c->K != 1))
    why = "paper mode needs one expert per rank (E = R) and top-1 (K = 1)";
  else if (c->mode != MOE_ROUTE_PAPER &&
           (c->G < 1 || c->G > MOE_ROUTE_MAX_G || c->E % c->G))
    why = "G (groups) must be in 1..64 and divide E";
  else if (c->mode != MOE_ROUTE_PAPER && (c->TG < 1 || c->TG > c->G))
    why = "TG (groups per token) must be in 1..G";
  else if (c->K < 1 || c->K > MOE_ROUTE_MAX_K)
    why = "K (experts per token) must be in 1..16";
  else if (c->mode != MOE_ROUTE_PAPER && c->K > c->TG * (c->E / c->G))
    why = "K (experts per token) must be at most TG * E / G";
  else if (c->mode == MOE_ROUTE_EDGE &&
           (c->E < 3 || c->K > c->TG * (c->E / c->G) - 2))
    why = "edge mode needs E >= 3 and K <= TG * E / G - 2 (experts 1 and 2 "
          "are kept out of the draws)";
  if (!why) return 0;
  if (errlen) snprintf(err, errlen, "routing: %s", why);
  return -1;
}

MOE_ROUTING_API uint64_t moe_route_key(uint64_t seed, int rank, uint64_t step) {
  uint64_t k = mr_mix(seed ^ 0x4D6F45526F757465ull); /* "MoERoute" */
  k = mr_mix(k ^ (uint64_t)(uint32_t)rank);
  return mr_mix(k ^ (step * 0x9E3779B97F4A7C15ull));
}

MOE_ROUTING_API int moe_route_paper_split(int T, double rho) {
  return (int)floor((double)T * rho / (rho + 1.0) + 0.5);
}

/* Pick one index among the N entries of WT (weights >= 0, those with
 * TAKEN[i] set excluded) with probability proportional to weight, using
 * uniform U.  Returns -1 when nothing has positive weight. */
static int mr_pick(const double *wt, const unsigned char *taken, int n,
                   double u) {
  double tot = 0;
  int last = -1;
  for (int i = 0; i < n; i++)
    if (!taken[i] && wt[i] > 0) tot += wt[i], last = i;
  if (last < 0) return -1;
  double x = u * tot;
  for (int i = 0; i < n; i++) {
    if (taken[i] || !(wt[i] > 0)) continue;
    if (x < wt[i]) return i;
    x -= wt[i];
  }
  return last; /* rounding at the top end */
}

/* Per-call tables: group weights and expert weights for a given bias. */
struct mr_tab {
  double gw[MOE_ROUTE_MAX_G];
  double *ew;            /* [E] */
  unsigned char *taken;  /* [E] scratch */
  double *cw;            /* [TG*E/G] candidate weights */
  int *ce;               /* [TG*E/G] candidate experts */
};

static void mr_tab_free(struct mr_tab *t) {
  free(t->ew);
  free(t->taken);
  free(t->cw);
  free(t->ce);
  memset(t, 0, sizeof *t);
}

/* Build the tables of C with skew factor BIAS.  0 or -1 (no memory). */
static int mr_tab_init(const struct moe_route_cfg *c, double bias,
                       struct mr_tab *t) {
  memset(t, 0, sizeof *t);
  const int per_g = c->E / c->G, per_r = c->E / c->R;
  t->ew = (double *)calloc((size_t)c->E, sizeof(double));
  t->taken = (unsigned char *)calloc((size_t)c->E, 1);
  t->cw = (double *)calloc((size_t)c->TG * per_g, sizeof(double));
  t->ce = (int *)calloc((size_t)c->TG * per_g, sizeof(int));
  if (!t->ew || !t->taken || !t->cw || !t->ce) {
    mr_tab_free(t);
    return -1;
  }
  for (int g = 0; g < c->G; g++)
    t->gw[g] = (c->R > 1 && g * per_g < per_r) ? bias : 1.0; /* holds rank 0 experts */
  for (int e = 0; e < c->E; e++) {
    double z = c->alpha > 0 ? pow((double)(e % per_g + 1), -c->alpha) : 1.0;
    t->ew[e] = (c->R > 1 && e < per_r) ? z * bias : z;
  }
  if (c->mode == MOE_ROUTE_EDGE) t->ew[1] = t->ew[2] = 0.0;
  return 0;
}

/* Weights of K experts for token T from KEY: positive scores normalized to
 * c->scale. */
static void mr_weights(const struct moe_route_cfg *c, uint64_t key, int tok,
                       float *w) {
  double s[MOE_ROUTE_MAX_K], sum = 0;
  uint64_t base = (uint64_t)tok * MR_DRAWS_PER_TOKEN + 96u;
  for (int k = 0; k < c->K; k++) {
    s[k] = 0.1 + 0.9 * mr_u01(key, base + (uint64_t)k);
    sum += s[k];
  }
  for (int k = 0; k < c->K; k++) w[k] = (float)(c->scale * s[k] / sum);
}

/* One token of the group-limited modes.  FORCED: an expert that must be in
 * the token's list (first), or -1.  0 or -1 (not enough experts: cannot
 * happen after moe_route_check). */
static int mr_token(const struct moe_route_cfg *c, struct mr_tab *t,
                    uint64_t key, int tok, int forced, int32_t *idx) {
  const int per_g = c->E / c->G;
  unsigned char gtaken[MOE_ROUTE_MAX_G];
  int gsel[MOE_ROUTE_MAX_G], ng = 0, nk = 0;
  uint64_t base = (uint64_t)tok * MR_DRAWS_PER_TOKEN;
  memset(gtaken, 0, sizeof gtaken);
  if (forced >= 0) {
    gsel[ng++] = forced / per_g;
    gtaken[forced / per_g] = 1;
  }
  while (ng < c->TG) {
    int g = mr_pick(t->gw, gtaken, c->G, mr_u01(key, base + (uint64_t)ng));
    if (g < 0) return -1;
    gtaken[g] = 1;
    gsel[ng++] = g;
  }
  int nc = 0;
  for (int i = 0; i < ng; i++)
    for (int j = 0; j < per_g; j++) {
      int e = gsel[i] * per_g + j;
      t->ce[nc] = e;
      t->cw[nc] = t->ew[e];
      t->taken[nc] = 0;
      nc++;
    }
  if (forced >= 0) {
    idx[nk++] = forced;
    for (int i = 0; i < nc; i++)
      if (t->ce[i] == forced) t->taken[i] = 1;
  }
  while (nk < c->K) {
    int i = mr_pick(t->cw, t->taken, nc, mr_u01(key, base + 64u + (uint64_t)nk));
    if (i < 0) return -1;
    t->taken[i] = 1;
    idx[nk++] = t->ce[i];
  }
  return 0;
}

/* Generate with an explicit bias (the calibration uses it too). */
static int mr_gen(const struct moe_route_cfg *c, double bias, uint64_t key,
                  int rank, int T, int32_t *idx, float *w) {
  if (c->mode == MOE_ROUTE_PAPER) {
    int *perm = (int *)malloc(sizeof(int) * (size_t)T);
    if (!perm) return -1;
    for (int i = 0; i < T; i++) perm[i] = i;
    for (int i = T - 1; i > 0; i--) { /* Fisher-Yates */
      int j = (int)(mr_u01(key, (uint64_t)i) * (double)(i + 1));
      if (j > i) j = i;
      int x = perm[i];
      perm[i] = perm[j];
      perm[j] = x;
    }
    int n0 = moe_route_paper_split(T, c->rho);
    for (int i = 0; i < T; i++) {
      int tok = perm[i], e = 0;
      if (i >= n0 && c->E > 1) {
        e = 1 + (int)(mr_u01(key ^ 0x9A9E5ull, (uint64_t)tok) * (double)(c->E - 1));
        if (e > c->E - 1) e = c->E - 1;
      }
      idx[tok] = e;
      w[tok] = (float)c->scale;
    }
    free(perm);
    return 0;
  }
  struct mr_tab t;
  if (mr_tab_init(c, bias, &t) != 0) return -1;
  int rc = 0;
  for (int tok = 0; tok < T && rc == 0; tok++) {
    int forced = -1;
    if (c->mode == MOE_ROUTE_ONE) forced = c->E - 1;
    if (c->mode == MOE_ROUTE_EDGE && rank == 0 && tok == 0) forced = 2;
    rc = mr_token(c, &t, key, tok, forced, idx + (size_t)tok * c->K);
    if (rc == 0 && w) mr_weights(c, key, tok, w + (size_t)tok * c->K);
  }
  mr_tab_free(&t);
  return rc;
}

MOE_ROUTING_API int moe_route_gen(const struct moe_route_cfg *c, uint64_t key,
                                  int rank, int32_t *idx, float *w) {
  return mr_gen(c, c->bias, key, rank, c->T, idx, w);
}

MOE_ROUTING_API void moe_route_loads(const struct moe_route_cfg *c,
                                     const int32_t *idx, long long *load,
                                     long long *expert_load) {
  const int per_r = c->E / c->R;
  for (long long i = 0; i < (long long)c->T * c->K; i++) {
    int e = idx[i];
    if (e < 0 || e >= c->E) continue;
    load[e / per_r]++;
    if (expert_load) expert_load[e]++;
  }
}

MOE_ROUTING_API double moe_route_ratio(const long long *load, int R) {
  if (R <= 1) return 1.0;
  double cold = 0;
  for (int r = 1; r < R; r++) cold += (double)load[r];
  cold /= (double)(R - 1);
  if (cold <= 0) return load[0] > 0 ? 1e30 : 1.0;
  return (double)load[0] / cold;
}

/* Expected ratio under BIAS: the fixed-key Monte Carlo. -1 on no memory. */
static double mr_cal_ratio(const struct moe_route_cfg *c, double bias,
                           int32_t *idx) {
  struct moe_route_cfg m = *c;
  m.T = MR_CAL_TOKENS;
  if (mr_gen(&m, bias, MR_CAL_KEY, 1, m.T, idx, NULL) != 0) return -1;
  long long load[MOE_ROUTE_MAX_R];
  memset(load, 0, sizeof load);
  moe_route_loads(&m, idx, load, NULL);
  return moe_route_ratio(load, m.R);
}

MOE_ROUTING_API int moe_route_calibrate(struct moe_route_cfg *c,
                                        double *expected) {
  c->bias = 1.0;
  if (expected) *expected = 1.0;
  if (c->R <= 1 || c->mode == MOE_ROUTE_PAPER) {
    if (expected && c->mode == MOE_ROUTE_PAPER) {
      int n0 = moe_route_paper_split(c->T, c->rho);
      *expected = c->R > 1 ? (double)n0 * (c->R - 1) / (double)(c->T - n0 > 0 ? c->T - n0 : 1)
                           : 1.0;
    }
    return 0;
  }
  int32_t *idx = (int32_t *)malloc(sizeof(int32_t) * (size_t)MR_CAL_TOKENS * c->K);
  if (!idx) return -1;
  int rc = 0;
  double r1 = mr_cal_ratio(c, 1.0, idx);
  if (r1 < 0) {
    rc = -1;
  } else if (c->rho <= r1) {
    if (expected) *expected = r1;
  } else {
    double hi_r = mr_cal_ratio(c, MR_BIAS_MAX, idx);
    if (hi_r < 0) {
      rc = -1;
    } else if (hi_r < c->rho) {
      c->bias = MR_BIAS_MAX;
      if (expected) *expected = hi_r;
    } else {
      double lo = 0.0, hi = log(MR_BIAS_MAX), got = hi_r;
      for (int it = 0; it < 36 && rc == 0; it++) {
        double mid = 0.5 * (lo + hi), r = mr_cal_ratio(c, exp(mid), idx);
        if (r < 0) rc = -1;
        else if (r < c->rho) lo = mid;
        else hi = mid, got = r;
      }
      c->bias = exp(hi);
      if (expected) *expected = got;
    }
  }
  free(idx);
  return rc;
}
