/* workloads/moe_dsv3/moe_routing.h - the FROZEN routing generator of the
 * moe_dsv3 workload (plain C; also compiled as C++ into the workload binary
 * through wl_moe.cuh, and into tests/unit/test_moe_routing.c).
 *
 * Routing is an input of the MoE step, never computed inside it: near-ties
 * of a real gate would flip top-k choices between candidate and reference,
 * and skew could not be controlled.  The generator reproduces DeepSeek-V3's
 * group-limited routing (E routed experts in G groups, TG groups per token,
 * K experts inside them, weights normalized and scaled by 2.5) with:
 *   - skew: rank 0's groups and experts are weighted by one factor `bias`,
 *     calibrated so that the expected load ratio hot rank 0 : each cold rank
 *     is rho (1 = balanced); the realized ratio is reported;
 *   - Zipf exponent alpha inside each group (expert j of a group has weight
 *     (j+1)^-alpha; 0 = uniform);
 *   - paper mode (CUCo's MoE case): E = R experts, top-1, exactly
 *     round(T*rho/(rho+1)) tokens of every rank on expert 0;
 *   - edge cases: every token on one expert; an expert with 0 tokens and one
 *     with exactly 1 token over all ranks.
 * Everything is a pure function of (configuration, key): a key comes from
 * (seed, rank, step) through moe_route_key().  Experts are owned in
 * contiguous blocks: expert e lives on rank e / (E / R). */
#ifndef MOE_ROUTING_H
#define MOE_ROUTING_H

#include <stddef.h>
#include <stdint.h>

#ifndef MOE_ROUTING_API
#define MOE_ROUTING_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum moe_route_mode {
  MOE_ROUTE_DSV3 = 0,  /* group-limited top-k with skew and Zipf */
  MOE_ROUTE_PAPER = 1, /* E = R, top-1, exact split on expert 0 */
  MOE_ROUTE_ONE = 2,   /* every token of every rank includes expert E-1 */
  MOE_ROUTE_EDGE = 3   /* expert 1: no token; expert 2: exactly one (rank 0, token 0) */
};

#define MOE_ROUTE_MAX_K 16
#define MOE_ROUTE_MAX_G 64
#define MOE_ROUTE_MAX_E 4096
#define MOE_ROUTE_MAX_R 64

/* One routing problem.  Fill the fields up to `mode`, then call
 * moe_route_check() and moe_route_calibrate(). */
struct moe_route_cfg {
  int T;        /* tokens per rank, >= 1 */
  int E;        /* routed experts (a multiple of G and of R) */
  int G;        /* expert groups */
  int TG;       /* groups per token (1..G) */
  int K;        /* experts per token (1..MOE_ROUTE_MAX_K, <= TG*E/G) */
  int R;        /* ranks */
  double rho;   /* target load ratio hot rank 0 : each cold rank, 1..64 */
  double alpha; /* Zipf exponent inside groups, 0..4 */
  double scale; /* route_scale: the weights of a token sum to this */
  int mode;     /* enum moe_route_mode */
  double bias;  /* set by moe_route_calibrate (1 = no skew) */
};

/* Fill C with DeepSeek-V3's defaults for T tokens and R ranks (E=256, G=8,
 * TG=4, K=8, rho=1, alpha=0, scale=2.5, mode DSV3, bias=1). */
MOE_ROUTING_API void moe_route_defaults(struct moe_route_cfg *c, int T, int R);

/* Check C.  Returns 0, or -1 with a one-line reason naming the field in
 * ERR (ERRLEN bytes, always terminated). */
MOE_ROUTING_API int moe_route_check(const struct moe_route_cfg *c, char *err,
                                    size_t errlen);

/* Choose c->bias so that the expected load ratio (rank 0 : mean cold rank)
 * is c->rho: a bisection over a fixed-key Monte Carlo of 4096 tokens, so the
 * result is a pure function of the configuration.  Leaves bias = 1 when
 * R = 1, rho <= 1 or in paper mode.  When rho cannot be reached, bias is
 * the largest tried (1e6) and *EXPECTED (if not NULL) says what it gives.
 * C must have passed moe_route_check.  0, or -1 on allocation failure. */
MOE_ROUTING_API int moe_route_calibrate(struct moe_route_cfg *c,
                                        double *expected);

/* The key of rank RANK's routing in step STEP under SEED. */
MOE_ROUTING_API uint64_t moe_route_key(uint64_t seed, int rank, uint64_t step);

/* Generate the routing of rank RANK (T tokens): IDX[t*K + k] (distinct
 * experts, in draw order) and W[t*K + k] (positive; each token's weights sum
 * to c->scale up to fp32 rounding).  C must have passed moe_route_check.
 * 0, or -1 on allocation failure. */
MOE_ROUTING_API int moe_route_gen(const struct moe_route_cfg *c, uint64_t key,
                                  int rank, int32_t *idx, float *w);

/* Add the (token, expert) pairs of IDX (T tokens of C) to LOAD[R] per owner
 * rank and, when EXPERT_LOAD is not NULL, to EXPERT_LOAD[E]. */
MOE_ROUTING_API void moe_route_loads(const struct moe_route_cfg *c,
                                     const int32_t *idx, long long *load,
                                     long long *expert_load);

/* Load ratio rank 0 : mean of ranks 1..R-1 (1 when R = 1; INFINITY-free:
 * a cold mean of 0 gives 1e30). */
MOE_ROUTING_API double moe_route_ratio(const long long *load, int R);

/* Tokens of every rank on expert 0 in paper mode: round(T*rho/(rho+1)). */
MOE_ROUTING_API int moe_route_paper_split(int T, double rho);

#ifdef __cplusplus
}
#endif
#endif /* MOE_ROUTING_H */
