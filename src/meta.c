/* meta.c - statistics of what paid (meta.h). */
#include "meta.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "db.h"

#define MAX_VALUES 128

struct tally {
  char key[96]; /* "chunk=1MiB" */
  int n, ok;
  double sum_speedup, best;
};

struct kind_tally {
  char kind[16];
  int n, ok, improved;
};

int meta_beats(const struct db_program *p, const struct db_program *q)
{
  double np, nq, noise;

  if (!p || !q || p->median_ms <= 0 || q->median_ms <= 0)
    return 0;
  np = p->noise_ms > 0 ? p->noise_ms : 0;
  nq = q->noise_ms > 0 ? q->noise_ms : 0;
  noise = np > nq ? np : nq;
  return p->median_ms < q->median_ms - noise;
}

const char *meta_margin_text(char *out, size_t n, long long a, long long b,
                             double ratio, double lo, double hi)
{
  int faster = ratio >= 1;
  double pct = faster ? ratio - 1 : 1 - ratio;
  double from = faster ? lo - 1 : 1 - hi, to = faster ? hi - 1 : 1 - lo;

  snprintf(out, n, "best #%lld is %.1f%% %s than #%lld [%.1f, %.1f]%s", a,
           100 * pct, faster ? "faster" : "slower", b, 100 * from, 100 * to,
           lo <= 1 && hi >= 1 ? " (not beyond the noise)" : "");
  return out;
}

static struct tally *find_tally(struct tally *t, int *n, const char *key)
{
  int i;

  for (i = 0; i < *n; i++)
    if (!strcmp(t[i].key, key))
      return &t[i];
  if (*n == MAX_VALUES)
    return NULL;
  memset(&t[*n], 0, sizeof(t[*n]));
  snprintf(t[*n].key, sizeof(t[*n].key), "%s", key);
  return &t[(*n)++];
}

static void count_value(struct tally *t, int *n, const char *k, const char *v,
                        const struct db_program *p)
{
  char key[96];
  struct tally *x;

  snprintf(key, sizeof(key), "%s=%s", k, v);
  x = find_tally(t, n, key);
  if (!x)
    return;
  x->n++;
  if (p->status && !strcmp(p->status, "ok") && p->speedup > 0) {
    x->ok++;
    x->sum_speedup += p->speedup;
    if (p->speedup > x->best)
      x->best = p->speedup;
  }
}

/* Tally every directive and param value of p. */
static void count_directives(struct tally *t, int *n,
                             const struct db_program *p)
{
  json_t *d =
      p->directives_json ? json_loads(p->directives_json, 0, NULL) : NULL;
  const char *k;
  json_t *v, *params;
  char num[64];

  if (!d)
    return;
  json_object_foreach(d, k, v)
  {
    if (json_is_string(v) && strcmp(k, "chunk_bytes"))
      count_value(t, n, k, json_string_value(v), p);
  }
  params = json_object_get(d, "params");
  json_object_foreach(params, k, v)
  {
    if (json_is_string(v)) {
      count_value(t, n, k, json_string_value(v), p);
    } else if (json_is_number(v)) {
      snprintf(num, sizeof(num), "%g", json_number_value(v));
      count_value(t, n, k, num, p);
    }
  }
  json_decref(d);
}

static const struct db_program *by_id(const struct db_program *progs, size_t n,
                                      int64_t id)
{
  size_t i;

  for (i = 0; id && i < n; i++)
    if (progs[i].id == id)
      return &progs[i];
  return NULL;
}

static int cmp_mean(const void *a, const void *b)
{
  const struct tally *x = a, *y = b;
  double mx = x->ok ? x->sum_speedup / x->ok : 0;
  double my = y->ok ? y->sum_speedup / y->ok : 0;

  return (my > mx) - (my < mx);
}

char *meta_stats(const struct db_program *progs, size_t n, int island)
{
  struct tally *t = calloc(MAX_VALUES, sizeof(*t));
  struct kind_tally kinds[8];
  struct buf b = BUF_INIT(64 * 1024);
  int nt = 0, nk = 0, i, total = 0, ok = 0, rec = 0;
  size_t j;

  if (!t)
    return NULL;
  memset(kinds, 0, sizeof(kinds));
  for (j = 0; j < n; j++) {
    const struct db_program *p = &progs[j];
    const char *kind = p->edit_kind ? p->edit_kind : "?";
    int is_ok = p->status && !strcmp(p->status, "ok");
    if (island >= 0 && p->island != island)
      continue;
    if (!strcmp(kind, "migrate") || !p->status ||
        !strcmp(p->status, "pending") || !strcmp(p->status, "running") ||
        !strcmp(p->status, "interrupted") ||
        !strcmp(p->status, "duplicate")) /* no verdict (yet), or one that
                                            is another program's */
      continue;
    total++;
    ok += is_ok;
    for (i = 0; i < nk && strcmp(kinds[i].kind, kind); i++)
      ;
    if (i == nk && nk < 8)
      snprintf(kinds[nk++].kind, sizeof(kinds[0].kind), "%s", kind);
    if (i < nk) {
      kinds[i].n++;
      kinds[i].ok += is_ok;
      kinds[i].improved +=
          is_ok && meta_beats(p, by_id(progs, n, p->parent_id));
    }
    count_directives(t, &nt, p);
  }
  if (island >= 0)
    buf_printf(&b, "Island %d: ", island);
  buf_printf(&b, "%d candidates evaluated, %d correct.\nEdit kinds:", total,
             ok);
  for (i = 0; i < nk; i++)
    buf_printf(&b, " %s %d (correct %d, beat parent %d)%s", kinds[i].kind,
               kinds[i].n, kinds[i].ok, kinds[i].improved,
               i + 1 < nk ? ";" : "");
  buf_puts(&b, "\nDirective values (mean speedup of correct programs, "
               "count, best):\n");
  qsort(t, (size_t)nt, sizeof(*t), cmp_mean);
  for (i = 0; i < nt; i++)
    buf_printf(&b, "  %s: %.3gx over %d of %d, best %.3gx\n", t[i].key,
               t[i].ok ? t[i].sum_speedup / t[i].ok : 0.0, t[i].ok, t[i].n,
               t[i].best);
  buf_puts(&b, "Recommendations:\n");
  for (i = 0; i < nt && rec < 3; i++)
    if (t[i].ok)
      buf_printf(&b, "%d. Prefer %s (mean %.3gx over %d programs).\n", ++rec,
                 t[i].key, t[i].sum_speedup / t[i].ok, t[i].ok);
  for (i = nt - 1; i >= 0 && rec < 5; i--)
    if (t[i].n >= 2 && t[i].ok == 0)
      buf_printf(&b, "%d. Avoid %s (failed %d of %d).\n", ++rec, t[i].key,
                 t[i].n, t[i].n);
  for (i = 0; i < nk && rec < 5; i++)
    if (kinds[i].n >= 3 && kinds[i].improved == 0)
      buf_printf(&b,
                 "%d. %s edits have not beaten their parent yet (%d "
                 "tried).\n",
                 ++rec, kinds[i].kind, kinds[i].n);
  if (!rec)
    buf_puts(&b, "1. Not enough evidence yet: keep exploring.\n");
  free(t);
  return buf_error(&b) == ERR_NOMEM ? (buf_release(&b), NULL)
                                    : buf_detach(&b, NULL);
}
