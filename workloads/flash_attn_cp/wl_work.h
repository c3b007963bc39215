/* workloads/flash_attn_cp/wl_work.h - the minimal work of one step of one
 * rank (FROZEN, trusted: the speed-of-light bound, docs/contracts.md 4e).
 * Plain C: reference.cu and tests/unit/test_sol.c include it.
 * S tokens in 2R chunks (each >= floor(S/2R) tokens), rank r holds two
 * (zigzag: r and 2R-1-r; CONTIG=1: 2r and 2r+1).
 *   flops : causal: the S(S+1)/2 (query, key) pairs of the lower triangle,
 *           4 D flops each (QK^T and PV), per head and batch; the world's
 *           total over R (the slowest rank does at least the average)
 *   HBM   : own Q, K, V read once, O written once (bf16), LSE (fp32)
 *   link  : the KV of every other rank's chunk that precedes this rank's
 *           last chunk must come in -- or this rank's queries go out
 *           instead: the smaller of the two; 0 at one rank */
#ifndef WL_WORK_FLASH_ATTN_H
#define WL_WORK_FLASH_ATTN_H

#include "runtime.h"

static inline int flash_attn_work(const struct wl_problem *p, struct wl_work *w) {
  long long S = wl_param(p, "S", -1), SR = wl_param(p, "SR", -1);
  long long R = p->nranks > 0 ? p->nranks : 1, r = p->rank > 0 ? p->rank : 0;
  double HQ = (double)wl_param(p, "HQ", 32), HKV = (double)wl_param(p, "HKV", 8);
  double D = (double)wl_param(p, "D", 128), B = (double)wl_param(p, "B", 1);
  int contig = wl_param(p, "CONTIG", 0) == 1;
  if ((S > 0) == (SR > 0)) return -1;
  if (SR > 0) S = SR * R;
  if (S < 2 * R || HQ < 1 || HKV < 1 || D < 1 || B < 1) return -1;
  double chunk = (double)(S / (2 * R)), own = 2 * chunk;
  double pairs = (double)S * (double)(S + 1) / 2.0;
  double need = contig ? 2.0 * (double)r : (double)(2 * R - 2 - r); /* chunks */
  double kv_in = need * chunk * B * 2 * HKV * D * 2, q_out = own * B * HQ * D * 2;
  w->flops = 4.0 * D * HQ * B * pairs / (double)R;
  w->hbm_bytes = own * B * (HQ * D * 2 + 2 * HKV * D * 2 + HQ * D * 2 + HQ * 4);
  w->link_bytes = R > 1 && need > 0 ? (kv_in < q_out ? kv_in : q_out) : 0;
  w->fp8 = 0;
  return 0;
}
#endif
