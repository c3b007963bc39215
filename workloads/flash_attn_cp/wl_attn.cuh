// workloads/flash_attn_cp/wl_attn.cuh - the shared, FROZEN host glue of
// flash_attn_cp: problem parameters, the rank's buffers, and the math
// calls (runtime/attn_step.cuh, the frozen attention step) that fold one
// visiting KV shard into the rank's fp32 softmax state (attn_step_best: the
// step v2, wgmma + TMA, where the build and the GPU run it, else v1).  Baselines, the seed
// and candidates call these, so a candidate changes scheduling and
// communication, never the math.  The plan itself (chunks, pairs, needles)
// is in wl_attn_plan.h.
//
// Problem parameters (workload.ini [sizes]): S (tokens) or SR (tokens per
// rank: S = SR*R), HQ (32), HKV (8), D (128), B (1), CONTIG (0 = zigzag).
#ifndef WL_ATTN_CUH
#define WL_ATTN_CUH

#include <stdlib.h>
#include <string.h>

#include "attn_step.cuh"
#include "attn_step_v2.cuh"
#include "rt.cuh"
#include "wl_attn_plan.h"

// Parse and check the problem of this rank.  0 or rt_fail.
static inline int wa_shape_get(struct wl_ctx *ctx, const struct wl_problem *p,
                               struct wa_shape *s) {
  long long S = wl_param(p, "S", -1), SR = wl_param(p, "SR", -1);
  char err[256];
  if ((S > 0) == (SR > 0))
    return rt_fail(ctx, "flash_attn_cp needs exactly one of S (tokens) and SR (tokens per rank)"
                        " (got S=%lld SR=%lld)", S, SR);
  if (SR > 0) S = SR * p->nranks;
  if (wa_shape_init(s, S, wl_param(p, "HQ", 32), wl_param(p, "HKV", 8), wl_param(p, "D", 128),
                    wl_param(p, "B", 1), wl_param(p, "CONTIG", 0), p->nranks, p->rank, err,
                    sizeof err) != 0)
    return rt_fail(ctx, "%s", err);
  return 0;
}

// Elements of one rank's KV buffer (= one ring slot, = one hop).
static inline size_t wa_kv_elems(const struct wa_shape *s) {
  return (size_t)s->B * 2 * s->M * s->HKV * s->D;
}

// The rank's inputs and outputs (same names in every implementation: the
// reference and the runtime find them by name).
struct wa_io {
  __nv_bfloat16 *Q, *KV, *O;
  float *LSE;
};

static inline int wa_alloc_io(struct wl_ctx *ctx, const struct wa_shape *s, struct wa_io *io) {
  const long long rows = s->B * s->rows[s->me];
  io->Q = (__nv_bfloat16 *)rt_alloc(ctx, "Q", (size_t)s->B * s->M * s->HQ * s->D * 2, RT_INPUT,
                                    RT_BF16, 0);
  io->KV = (__nv_bfloat16 *)rt_alloc(ctx, "KV", wa_kv_elems(s) * 2, RT_INPUT, RT_BF16, 0);
  io->O = (__nv_bfloat16 *)rt_alloc(ctx, "O", (size_t)rows * s->HQ * s->D * 2, RT_OUTPUT,
                                    RT_BF16, 0);
  io->LSE = (float *)rt_alloc(ctx, "LSE", (size_t)s->HQ * rows * 4, RT_OUTPUT, RT_F32, 0);
  if (!io->Q || !io->KV || !io->O || !io->LSE) return -1;
  if (rt_output_shape(ctx, "O", rows, s->HQ * s->D) != 0) return -1;
  if (rt_output_shape(ctx, "LSE", s->HQ, rows) != 0) return -1;
  return 0;
}

// An fp32 softmax state of B*rows_me rows (SCRATCH buffers PREFIX_acc/m/l).
static inline int wa_alloc_state(struct wl_ctx *ctx, const struct wa_shape *s, const char *prefix,
                                 struct attn_state *st) {
  char n[3][WL_NAME_MAX];
  const long long rows = s->B * s->rows[s->me];
  snprintf(n[0], sizeof n[0], "%s_acc", prefix);
  snprintf(n[1], sizeof n[1], "%s_m", prefix);
  snprintf(n[2], sizeof n[2], "%s_l", prefix);
  st->acc = (float *)rt_alloc(ctx, n[0], (size_t)rows * s->HQ * s->D * 4, RT_SCRATCH, RT_F32, 0);
  st->m = (float *)rt_alloc(ctx, n[1], (size_t)rows * s->HQ * 4, RT_SCRATCH, RT_F32, 0);
  st->l = (float *)rt_alloc(ctx, n[2], (size_t)rows * s->HQ * 4, RT_SCRATCH, RT_F32, 0);
  st->rows = (int)rows;
  return st->acc && st->m && st->l ? 0 : -1;
}

static inline struct attn_shape wa_attn_shape(const struct wa_shape *s) {
  struct attn_shape a;
  a.hq = (int)s->HQ, a.hkv = (int)s->HKV, a.d = (int)s->D, a.scale = 0;
  return a;
}

// Fold the KV of rank SRC (KV: a buffer laid out like the INPUT "KV", i.e.
// [B][2][M][HKV][D]) into ST for every pair rank me computes against it,
// for the query rows of Q (the INPUT "Q").  Only the local Q chunk QJ_ONLY
// when it is 0 or 1 (-1: all pairs).  Enqueued on STREAM.
static inline int wa_fold(struct wl_ctx *ctx, const struct wa_shape *s, int src,
                          const __nv_bfloat16 *Q, const __nv_bfloat16 *KV, struct attn_state st,
                          int qj_only, cudaStream_t stream) {
  struct wa_pair pr[4];
  const int np = wa_pairs(s, s->me, src, pr);
  const long long rows_me = s->rows[s->me];
  for (long long b = 0; b < s->B; b++)
    for (int i = 0; i < np; i++) {
      if (qj_only >= 0 && pr[i].qj != qj_only) continue;
      const int qc = wa_chunk(s, s->me, pr[i].qj), kc = wa_chunk(s, src, pr[i].kj);
      const long long qoff = wa_loff(s, s->me, pr[i].qj), koff = wa_loff(s, src, pr[i].kj);
      struct attn_step_args a;
      memset(&a, 0, sizeof a);
      a.shape = wa_attn_shape(s);
      a.q = Q + wa_q_off(s, (int)b, qoff, 0);
      a.q_rows = (int)wa_clen(s, qc);
      a.q_pos0 = s->cb[qc];
      a.k = KV + wa_k_off(s, (int)b, koff, 0);
      a.v = KV + wa_v_off(s, (int)b, koff, 0);
      a.kv_rows = (int)wa_clen(s, kc);
      a.kv_pos0 = s->cb[kc];
      a.mask = pr[i].mask == WA_MASK_CAUSAL ? ATTN_MASK_CAUSAL : ATTN_MASK_NONE;
      a.state = st;
      a.state_row0 = (int)(b * rows_me + qoff);
      RT_CUDA(ctx, attn_step_best(&a, stream));  // v2 on an sm_90a build
    }
  return 0;
}

// O and LSE from the state.
static inline int wa_finalize(struct wl_ctx *ctx, const struct wa_shape *s, struct attn_state st,
                              const struct wa_io *io, cudaStream_t stream) {
  RT_CUDA(ctx, attn_finalize(st, (int)s->HQ, (int)s->D, io->O, io->LSE, stream));
  return 0;
}

static inline int wa_state_init(struct wl_ctx *ctx, const struct wa_shape *s,
                                struct attn_state st, cudaStream_t stream) {
  RT_CUDA(ctx, attn_state_init(st, (int)s->HQ, (int)s->D, stream));
  return 0;
}

#endif  // WL_ATTN_CUH
