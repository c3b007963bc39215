/* workloads/gemm_allgather/wl_work.h - the minimal work of one step of one
 * rank (FROZEN, trusted: the speed-of-light bound, docs/contracts.md 4e).
 * Plain C: reference.cu and tests/unit/test_sol.c include it.
 *   flops : 2 M K N/R (C_r = A[M,K] x B_r[K,N/R])
 *   HBM   : read A_r [M/R,K] and B_r [K,N/R] once, write C_r [M,N/R] once
 *           (bf16); peers' A blocks may be consumed straight off the link
 *   link  : the other R-1 ranks' A blocks must come in: M/R K bf16 */
#ifndef WL_WORK_GEMM_AG_H
#define WL_WORK_GEMM_AG_H

#include "runtime.h"

static inline int gemm_ag_work(const struct wl_problem *p, struct wl_work *w) {
  double M = (double)wl_param(p, "M", -1), K = (double)wl_param(p, "K", -1);
  double N = (double)wl_param(p, "N", -1), R = p->nranks > 0 ? p->nranks : 1;
  if (M < 1 || K < 1 || N < 1) return -1;
  w->flops = 2.0 * M * K * (N / R);
  w->hbm_bytes = 2.0 * (M / R * K + K * (N / R) + M * (N / R));
  w->link_bytes = R > 1 ? 2.0 * (R - 1) * (M / R) * K : 0;
  w->fp8 = 0;
  return 0;
}
#endif
