/* workloads/kv_transfer/wl_work.h - the minimal work of one step of one
 * rank (FROZEN, trusted: the speed-of-light bound, docs/contracts.md 4e).
 * Plain C: reference.cu and tests/unit/test_sol.c include it.
 * P = ceil(R/2) prefill ranks (1 at R = 1) of S tokens each (NREQ requests
 * of LEN tokens; AWK=1: lengths 1,15,16,17,1000 cycled); W = HKV*HD.
 *   prefill rank: flops 2 S DM 2W per layer (K and V projections; RoPE
 *     not counted), HBM X and every layer's weights read once, and at one
 *     rank the K/V written into the pool; link: its K/V of every layer
 *     (bf16) must go out (R > 1)
 *   decode rank: no flops; the rows it receives (request g goes to decode
 *     rank P + g mod D) are written into its pool once and came in */
#ifndef WL_WORK_KV_TRANSFER_H
#define WL_WORK_KV_TRANSFER_H

#include "runtime.h"

static inline long long kv_work_len(long long awk, long long len, long long i) {
  static const long long a[5] = {1, 15, 16, 17, 1000};
  return awk ? a[i % 5] : len;
}

static inline int kv_transfer_work(const struct wl_problem *p, struct wl_work *w) {
  long long L = wl_param(p, "L", -1), DM = wl_param(p, "DM", -1);
  long long HKV = wl_param(p, "HKV", -1), HD = wl_param(p, "HD", -1);
  long long NREQ = wl_param(p, "NREQ", 1), LEN = wl_param(p, "LEN", -1);
  long long AWK = wl_param(p, "AWK", 0), R = p->nranks > 0 ? p->nranks : 1;
  long long me = p->rank > 0 ? p->rank : 0, P = R == 1 ? 1 : (R + 1) / 2, Dn = R - P;
  double S = 0, Wd = (double)HKV * (double)HD;
  if (L < 1 || DM < 1 || HKV < 1 || HD < 1 || NREQ < 1 || (!AWK && LEN < 1)) return -1;
  for (long long i = 0; i < NREQ; i++) S += (double)kv_work_len(AWK, LEN, i);
  double kv_row = 2.0 * Wd * 2; /* K and V of one token of one layer, bf16 */
  w->fp8 = 0;
  if (me < P) {
    w->flops = 2.0 * S * (double)DM * 2 * Wd * (double)L;
    w->hbm_bytes = S * (double)DM * 2 + (double)L * (double)DM * 2 * Wd * 2;
    if (R == 1) w->hbm_bytes += S * kv_row * (double)L;
    w->link_bytes = R > 1 ? S * kv_row * (double)L : 0;
  } else {
    double rows = 0;
    for (long long g = 0; g < P * NREQ; g++)
      if (P + g % Dn == me) rows += (double)kv_work_len(AWK, LEN, g % NREQ);
    w->flops = 0;
    w->hbm_bytes = rows * kv_row * (double)L;
    w->link_bytes = rows * kv_row * (double)L;
  }
  return 0;
}
#endif
