/* workloads/moe_dsv3/wl_work.h - the minimal work of one step of one rank
 * (FROZEN, trusted: the speed-of-light bound, docs/contracts.md 4e).  Plain
 * C: reference.cu and tests/unit/test_sol.c include it.  Dropless top-K:
 * the world routes exactly T R K (token, expert) pairs, T K per rank on
 * average (the slowest rank does at least the average).
 *   flops : SwiGLU expert, 6 H F per routed pair (gate+up 4 H F, down
 *           2 H F) plus the shared expert's 6 H F per token (unless NOSH)
 *   HBM   : X read once, Y written once (bf16); the shared expert's
 *           weights; at least K distinct routed experts' weights over the
 *           world (K/R per rank on average), bf16
 *   link  : 0 (how many tokens leave the rank depends on the routing; the
 *           bound stays a lower bound) */
#ifndef WL_WORK_MOE_H
#define WL_WORK_MOE_H

#include "runtime.h"

static inline int moe_work(const struct wl_problem *p, struct wl_work *w) {
  double T = (double)wl_param(p, "T", -1), H = (double)wl_param(p, "H", 7168);
  double F = (double)wl_param(p, "F", 2048), K = (double)wl_param(p, "K", 8);
  double R = p->nranks > 0 ? p->nranks : 1;
  int shared = wl_param(p, "NOSH", 0) != 1;
  if (T < 1 || H < 1 || F < 1 || K < 1) return -1;
  double ew = 3.0 * H * F * 2; /* one expert's W13 + W2, bf16 */
  w->flops = 6.0 * H * F * (T * K + (shared ? T : 0));
  w->hbm_bytes = 2.0 * T * H * 2 + (shared ? ew : 0) + K / R * ew;
  w->link_bytes = 0;
  w->fp8 = 0;
  return 0;
}
#endif
