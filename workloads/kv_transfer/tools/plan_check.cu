// workloads/kv_transfer/tools/plan_check.cu - host-only self-test of the
// frozen plan in wl_kv.cuh (no GPU needed: no CUDA call is made).  For
// many (R, shape, seed) it checks: roles (P = ceil(R/2), 1P1D at R = 2,
// one rank both at R = 1), block tables are permutations, every token of
// every request lands in a distinct slot of a block its decode rank owns,
// slot = position within the request, padding and spare blocks are never
// named, every decode rank's incoming order matches the send runs, and
// bad parameters are refused with a message.  Prints TAP; exit 0 = all ok.
// Built and run by tests/cli/t0902-kv-transfer-plan.sh.
#include <stdarg.h>
#include <stdio.h>

#include "wl_kv.cuh"

// Stand-ins for the two runtime functions the plan uses.
struct wl_ctx {
  char err[256];
};
long long wl_param(const struct wl_problem *p, const char *name, long long def) {
  for (int i = 0; i < p->nparams; i++)
    if (!strcmp(p->params[i].name, name)) return p->params[i].value;
  return def;
}
int rt_fail(struct wl_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
  va_end(ap);
  return -1;
}

static int n_test = 0, n_fail = 0;
static void check(int cond, const char *what, const char *detail) {
  n_test++;
  if (cond) {
    printf("ok %d - %s\n", n_test, what);
  } else {
    n_fail++;
    printf("not ok %d - %s\n# %s\n", n_test, what, detail);
  }
}

static void set(struct wl_problem *p, const char *k, long long v) {
  snprintf(p->params[p->nparams].name, WL_NAME_MAX, "%s", k);
  p->params[p->nparams++].value = v;
}

// One configuration: returns an error text or "" when every invariant holds.
static const char *one(int R, long long L, long long hkv, long long hd, long long nreq,
                       long long len, int awk, long long poolx, int rev,
                       unsigned long long seed, char *why, size_t wn) {
  static struct wl_ctx ctx;
  struct wl_problem p;
  memset(&p, 0, sizeof p);
  set(&p, "L", L), set(&p, "DM", 64), set(&p, "HKV", hkv), set(&p, "HD", hd);
  set(&p, "NREQ", nreq), set(&p, "LEN", len), set(&p, "AWK", awk);
  set(&p, "POOLX", poolx), set(&p, "REV", rev);
  p.nranks = R;
  p.seed = seed;
  why[0] = 0;
  struct kv_shape s0;
  if (kv_shape_get(&ctx, &p, &s0)) {
    snprintf(why, wn, "refused: %s", ctx.err);
    return why;
  }
  if (s0.P != (R == 1 ? 1 : (R + 1) / 2) || (R == 2 && (s0.P != 1 || s0.D != 1))) {
    snprintf(why, wn, "roles P=%d D=%d at R=%d", s0.P, s0.D, R);
    return why;
  }
  const long long cells = s0.NB * KV_BLOCK;  // slots per layer slab, per decode rank
  for (int d = 0; d < R; d++) {
    int *tab = (int *)malloc(sizeof(int) * s0.NB), *seen = (int *)calloc(s0.NB, sizeof(int));
    kv_perm(&s0, seed, d, tab);
    for (long long i = 0; i < s0.NB; i++) seen[tab[i]]++;
    for (long long i = 0; i < s0.NB; i++)
      if (seen[i] != 1) snprintf(why, wn, "rank %d: table is not a permutation", d);
    free(tab), free(seen);
    if (why[0]) return why;
  }
  // slot use per decode rank, from every prefill rank's row plan
  int *used[KV_MAX_RANKS] = {0};
  for (int d = 0; d < R; d++) used[d] = (int *)calloc(cells, sizeof(int));
  long long got_rows[KV_MAX_RANKS] = {0};
  for (int pr = 0; pr < s0.P && !why[0]; pr++) {
    struct kv_shape s = s0;
    s.me = pr;
    int *dst = (int *)malloc(sizeof(int) * s.S), *pos = (int *)malloc(sizeof(int) * s.S);
    long long *slot = (long long *)malloc(sizeof(long long) * s.S);
    kv_plan_rows(&s, seed, pr, dst, slot, pos, -1, NULL, NULL, NULL, NULL);
    long long row = 0;
    for (long long i = 0; i < s.NREQ && !why[0]; i++) {
      long long g = (long long)pr * s.NREQ + i, n = kv_req_len(&s, i);
      for (long long t = 0; t < n; t++, row++) {
        int d = dst[row];
        long long c = slot[row] / s.W;
        if (d != kv_dest(&s, g) || (R > 1 && d < s.P) || slot[row] % s.W || c < 0 ||
            c >= cells || pos[row] != t || c % KV_BLOCK != t % KV_BLOCK) {
          snprintf(why, wn, "row %lld (req %lld tok %lld): dst %d slot %lld pos %d", row, g, t,
                   d, slot[row], pos[row]);
          break;
        }
        used[d][c]++;
        got_rows[d]++;
      }
    }
    if (!why[0]) {  // the send runs of pr cover exactly its rows for each d
      for (int d = 0; d < R && !why[0]; d++) {
        long long *st = (long long *)malloc(sizeof(long long) * s.NREQ);
        long long *ln = (long long *)malloc(sizeof(long long) * s.NREQ);
        long long *ro = (long long *)malloc(sizeof(long long) * s.NREQ);
        long long *rslot = (long long *)malloc(sizeof(long long) * (kv_recv_rows(&s, d) + 1));
        long long nrecv = 0;
        int nr = kv_runs(&s, seed, pr, d, st, ln, ro);
        kv_plan_rows(&s, seed, -1, NULL, NULL, NULL, d, rslot, NULL, &nrecv, NULL);
        // the pull plan: the same rows, in the same (incoming) order, same slots
        const long long nin_cap = kv_recv_rows(&s, d) + 1;
        int *isrc = (int *)malloc(sizeof(int) * nin_cap);
        long long *irow = (long long *)malloc(sizeof(long long) * nin_cap);
        long long *islot = (long long *)malloc(sizeof(long long) * nin_cap), nin = -1;
        if (kv_plan_incoming(&s, seed, d, isrc, irow, islot, &nin) || nin != nrecv)
          snprintf(why, wn, "pull plan of rank %d: %lld rows, want %lld", d, nin, nrecv);
        for (long long k = 0, lo = 0; k < nin && !why[0]; k++) {
          if (isrc[k] < 0 || isrc[k] >= s.P || (k && isrc[k] < isrc[k - 1]) ||
              islot[k] != rslot[k] || irow[k] < 0 || irow[k] >= s.S)
            snprintf(why, wn, "pull plan of rank %d: row %lld (src %d row %lld slot %lld) vs "
                     "incoming slot %lld", d, k, isrc[k], irow[k], islot[k], rslot[k]);
          if (isrc[k] == pr) {  // pr's rows to d, in pr's row order, each sent to d
            if (dst[irow[k]] != d || slot[irow[k]] != islot[k] || irow[k] < lo)
              snprintf(why, wn, "pull plan of rank %d: row %lld of sender %d is not %d's", d,
                       irow[k], pr, d);
            lo = irow[k] + 1;
          }
        }
        free(isrc), free(irow), free(islot);
        long long cover = 0;
        for (int k = 0; k < nr; k++)
          for (long long j = 0; j < ln[k]; j++) {
            cover++;
            if (dst[st[k] + j] != d || rslot[ro[k] + j] != slot[st[k] + j])
              snprintf(why, wn, "run %d of %d->%d: row %lld lands at incoming %lld, slots differ",
                       k, pr, d, st[k] + j, ro[k] + j);
          }
        long long want = 0;
        for (long long r = 0; r < s.S; r++) want += dst[r] == d;
        if (!why[0] && cover != want)
          snprintf(why, wn, "runs %d->%d cover %lld rows, want %lld", pr, d, cover, want);
        if (!why[0] && nrecv != kv_recv_rows(&s, d))
          snprintf(why, wn, "rank %d: %lld incoming rows vs %lld", d, nrecv, kv_recv_rows(&s, d));
        free(st), free(ln), free(ro), free(rslot);
      }
    }
    free(dst), free(pos), free(slot);
  }
  for (int d = 0; d < R && !why[0]; d++) {
    long long named = 0, blocks_used = 0;
    for (long long c = 0; c < cells; c++) {
      if (used[d][c] > 1) snprintf(why, wn, "rank %d: slot %lld written twice", d, c);
      named += used[d][c];
    }
    for (long long b = 0; b < s0.NB; b++) {
      int any = 0;
      for (int t = 0; t < KV_BLOCK; t++) any |= used[d][b * KV_BLOCK + t];
      blocks_used += any;
    }
    if (!why[0] && named != kv_recv_rows(&s0, d))
      snprintf(why, wn, "rank %d: %lld slots named, %lld rows", d, named, kv_recv_rows(&s0, d));
    if (!why[0] && poolx > 1 && blocks_used * poolx > s0.NB)
      snprintf(why, wn, "rank %d: %lld of %lld blocks used with POOLX=%lld", d, blocks_used,
               s0.NB, poolx);
  }
  for (int d = 0; d < R; d++) free(used[d]);
  return why[0] ? why : "";
}

int main(void) {
  char why[512], name[160];
  const int ranks[] = {1, 2, 3, 4, 8};
  for (int ri = 0; ri < 5; ri++)
    for (int cfg = 0; cfg < 6; cfg++) {
      int R = ranks[ri];
      long long L = 2, hkv = cfg % 2 ? 1 : 8, hd = cfg % 3 ? 64 : 128, nreq = 1 + cfg * 2;
      long long len = cfg == 3 ? 16 : 33 + cfg;
      int awk = cfg >= 4, rev = cfg == 2;
      long long poolx = cfg == 5 ? 4 : 1 + cfg % 2;
      const char *r = one(R, L, hkv, hd, nreq, len, awk, poolx, rev, 1000 + cfg, why, sizeof why);
      snprintf(name, sizeof name, "plan R=%d HKV=%lld HD=%lld NREQ=%lld LEN=%lld AWK=%d POOLX=%lld REV=%d",
               R, hkv, hd, nreq, len, awk, poolx, rev);
      check(!r[0], name, r);
    }
  // Tables differ between seeds and between decode ranks (shuffled, not identity).
  {
    struct wl_ctx ctx;
    struct wl_problem p;
    memset(&p, 0, sizeof p);
    set(&p, "L", 2), set(&p, "DM", 64), set(&p, "HKV", 1), set(&p, "HD", 64);
    set(&p, "NREQ", 4), set(&p, "LEN", 64);
    p.nranks = 4;
    struct kv_shape s;
    int ok = kv_shape_get(&ctx, &p, &s) == 0;
    int a[64], b[64], c[64], ident = 1;
    kv_perm(&s, 1, 2, a), kv_perm(&s, 2, 2, b), kv_perm(&s, 1, 3, c);
    for (int i = 0; i < s.NB; i++) ident &= a[i] == i;
    check(ok && s.NB <= 64 && memcmp(a, b, sizeof(int) * s.NB) && memcmp(a, c, sizeof(int) * s.NB) &&
              !ident,
          "tables are shuffled and differ by seed and by rank", "identical tables");
  }
  // Bad parameters are refused with a message naming them.
  const char *bad[][2] = {{"HD", "3"}, {"L", "0"}, {"POOLX", "0"}, {"NREQ", "0"}, {"DM", "12"}};
  for (int i = 0; i < 5; i++) {
    struct wl_ctx ctx;
    struct wl_problem p;
    memset(&p, 0, sizeof p);
    set(&p, "L", 2), set(&p, "DM", 64), set(&p, "HKV", 1), set(&p, "HD", 64);
    set(&p, "NREQ", 1), set(&p, "LEN", 16), set(&p, "POOLX", 1);
    for (int k = 0; k < p.nparams; k++)
      if (!strcmp(p.params[k].name, bad[i][0])) p.params[k].value = strtoll(bad[i][1], NULL, 10);
    p.nranks = 1;
    struct kv_shape s;
    int rc = kv_shape_get(&ctx, &p, &s);
    snprintf(name, sizeof name, "%s=%s is refused with a message", bad[i][0], bad[i][1]);
    check(rc != 0 && strstr(ctx.err, "kv_transfer"), name, ctx.err);
  }
  printf("1..%d\n", n_test);
  return n_fail ? 1 : 0;
}
