/* confirm.c - interleaved re-measurement of the best (confirm.h). */
#include "confirm.h"
#include "meta.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "eval.h"
#include "log.h"
#include "rundb.h"
#include "search_impl.h"

#define MAXP      8 /* incumbent + contenders + seed */
#define MAXROUNDS 64

static double t975(int df)
{
  static const double t[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447,
                             2.365, 2.306,  2.262, 2.228, 2.201, 2.179, 2.160,
                             2.145, 2.131,  2.120, 2.110, 2.101, 2.093, 2.086};
  if (df < 1)
    return 0;
  return df <= 20 ? t[df] : 1.96 + 2.4 / df;
}

double confirm_interval(const double *x, int n, double *lo, double *hi)
{
  double m = 0, v = 0, h;
  int i;

  for (i = 0; i < n; i++)
    m += x[i] / (n ? n : 1);
  for (i = 0; i < n; i++)
    v += (x[i] - m) * (x[i] - m);
  h = n >= 2 ? t975(n - 1) * sqrt(v / (n - 1) / n) : 0;
  *lo = exp(m - h);
  *hi = exp(m + h);
  return exp(m);
}

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return x < y ? -1 : x > y;
}

double confirm_spread(const double *x, int n)
{
  double s[MAXROUNDS], med;
  int i;

  if (n < 2 || n > MAXROUNDS)
    return 0;
  for (i = 0; i < n; i++)
    s[i] = x[i];
  qsort(s, (size_t)n, sizeof(double), cmp_d);
  med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  return med > 0 ? (s[n - 1] - s[0]) / 2 / med : 0;
}

/* One bench of program m's code (the whole cascade, as in the search).
 * *ms > 0 when it passed. */
static int measure(struct evolve *s, const struct member *m, int round,
                   double *ms, struct err *e)
{
  struct eval_opts eo;
  struct eval_result r;
  char impl[64], *code;
  int rc;

  pthread_mutex_lock(&s->mu);
  code = m->p.code ? strdup(m->p.code) : NULL;
  pthread_mutex_unlock(&s->mu);
  *ms = 0;
  if (!code)
    return 0;
  memset(&eo, 0, sizeof(eo));
  memset(&r, 0, sizeof(r));
  snprintf(impl, sizeof(impl), "confirm_%lld_%d%s", (long long)m->p.id, round,
           s->ext);
  eo.wl = &s->wl;
  eo.tc = &s->tc;
  eo.impl_name = impl;
  eo.device_candidate = m->p.id != s->seed_id;
  eo.seed_code = s->seed_code;
  eo.ranks = s->o.ranks;
  eo.vranks = s->o.vranks;
  eo.sizes = s->o.sizes;
  eo.gpus = s->gpus[0][0] ? s->gpus[0] : NULL;
  eo.machine = s->machine;
  eo.seed = (s->o.seed ? s->o.seed : 1234) + 7919u * (unsigned)(round + 1);
  eo.per_size_process = s->o.process_per_size;
  rc = eval_candidate(&eo, code, &r, e);
  free(code);
  if (!rc && r.status == EVAL_STATUS_OK && r.has_score && r.median_ms > 0)
    *ms = r.median_ms;
  eval_result_release(&r);
  return rc;
}

static char *samples(const double *a, const double *b, int n)
{
  json_t *arr = json_array();
  char *t;
  int i;

  for (i = 0; arr && i < n; i++)
    json_array_append_new(arr, json_pack("[f,f]", a[i], b ? b[i] : 0.0));
  t = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
  json_decref(arr);
  return t;
}

static int store(struct evolve *s, int64_t pid, int64_t vid,
                 const char *versus, int n, double ratio, double lo, double hi,
                 const char *verdict, const double *a, const double *b,
                 struct err *e)
{
  struct db_confirmation c;
  char *sj = samples(a, b, n);
  int rc;

  memset(&c, 0, sizeof(c));
  c.run_id = s->run.id;
  c.program_id = pid;
  c.versus_id = vid;
  c.versus = versus;
  c.rounds = n;
  c.ratio = ratio;
  c.lo = lo;
  c.hi = hi;
  c.verdict = verdict;
  c.samples_json = sj;
  pthread_mutex_lock(&s->mu);
  rc = db_confirmation_insert(s->db, &c, e);
  pthread_mutex_unlock(&s->mu);
  free(sj);
  return rc;
}

/* The contenders: the fastest correct candidates besides the incumbent
 * and the seed (copies are not candidates). */
static int contenders(struct evolve *s, const struct member *inc,
                      struct member **out, int max)
{
  int n = 0, i, j;
  size_t k;

  for (k = 0; k < s->nm; k++) {
    struct member *m = s->m[k];
    if (m == inc || m->p.id == s->seed_id || !m->p.status ||
        strcmp(m->p.status, "ok") || m->p.median_ms <= 0 ||
        !strcmp(m->p.edit_kind ? m->p.edit_kind : "", "migrate"))
      continue;
    for (i = 0; i < n && out[i]->p.median_ms <= m->p.median_ms; i++)
      ;
    if (i >= max)
      continue;
    for (j = (n < max ? n : max - 1); j > i; j--)
      out[j] = out[j - 1];
    out[i] = m;
    if (n < max)
      n++;
  }
  return n;
}

int confirm_best(struct evolve *s, struct err *e)
{
  static double ms[MAXP][MAXROUNDS];
  struct member *p[MAXP], *inc, *best;
  struct buf out = BUF_INIT(16 * 1024);
  double lr[MAXROUNDS], ratio, lo, hi, thr = s->o.noise_threshold;
  double best_mean = 0, seed_spread;
  int np, nc, r, rounds = s->o.confirm_rounds, done = 0, i, k, seed_ix = -1;
  int adopt = -1, extended = 0, rc = 0;

  inc = search_find(s, s->best_id);
  if (!inc || rounds <= 0 || s->o.confirm <= 0)
    return 0;
  if (rounds > MAXROUNDS / 2)
    rounds = MAXROUNDS / 2;
  p[0] = inc;
  nc = contenders(s, inc, p + 1,
                  s->o.confirm < MAXP - 2 ? s->o.confirm : MAXP - 2);
  np = 1 + nc;
  if (inc->p.id != s->seed_id && search_find(s, s->seed_id)) {
    seed_ix = np;
    p[np++] = search_find(s, s->seed_id);
  }
  if (np < 2)
    return 0;
  printf("confirming the best: #%lld against", (long long)inc->p.id);
  for (i = 1; i < np; i++)
    printf(" #%lld%s", (long long)p[i]->p.id, i == seed_ix ? " (seed)" : "");
  printf(", %d interleaved rounds\n", rounds);
  fflush(stdout);
  for (;;) {
    for (r = done; r < rounds; r++) {
      for (i = 0; i < np; i++) {
        int j = (i + r) % np; /* rotate the order: no one always first */
        rc = measure(s, p[j], r, &ms[j][r], e);
        if (search_interrupted)
          break; /* a run cut short is no error: said below */
        if (rc)
          goto out;
      }
      if (search_interrupted)
        break;
    }
    done = r;
    seed_spread = seed_ix >= 0 ? confirm_spread(ms[seed_ix], done) : 0;
    if (seed_ix >= 0 && seed_spread > thr && !extended &&
        !search_interrupted && rounds * 2 <= MAXROUNDS) {
      buf_printf(&out,
                 "noise: the seed's spread over %d rounds is %.1f%% of its "
                 "median (threshold %.0f%%): %d rounds more\n",
                 done, 100 * seed_spread, 100 * thr, rounds);
      printf("noise: the seed's spread over %d rounds is %.1f%% of its median "
             "(threshold %.0f%%): measuring %d rounds more\n",
             done, 100 * seed_spread, 100 * thr, rounds);
      fflush(stdout);
      extended = 1;
      rounds *= 2;
      continue;
    }
    break;
  }
  if (search_interrupted) {
    /* cut short: no verdict from part of the rounds */
    buf_printf(&out,
               "confirmation interrupted after %d of %d rounds: "
               "--resume confirms the best again\n",
               done, rounds);
    rc = 0;
    goto out;
  }
  if (seed_ix >= 0 && seed_spread > thr)
    buf_printf(&out,
               "noise: the seed's spread stays %.1f%% (> %.0f%%): intervals "
               "below are wider than usual\n",
               100 * seed_spread, 100 * thr);
  /* the contenders against the incumbent */
  for (k = 1; k <= nc; k++) {
    const char *verdict;
    int n = 0;
    for (r = 0; r < done; r++)
      if (ms[k][r] > 0 && ms[0][r] > 0)
        lr[n++] = log(ms[k][r] / ms[0][r]);
    if (n < done) {
      verdict = "failed on re-run";
      ratio = lo = hi = 0;
    } else {
      ratio = confirm_interval(lr, n, &lo, &hi);
      verdict = hi < 1 ? "faster" : lo > 1 ? "slower" : "within noise";
      if (hi < 1 && (adopt < 0 || ratio < best_mean)) {
        adopt = k;
        best_mean = ratio;
      }
    }
    buf_printf(&out,
               "  #%lld vs #%lld: %.3f of its time, 95%% CI [%.3f, "
               "%.3f] over %d rounds: %s\n",
               (long long)p[k]->p.id, (long long)inc->p.id, ratio, lo, hi, n,
               verdict);
    if ((rc = store(s, p[k]->p.id, inc->p.id, "incumbent", n, ratio, lo, hi,
                    verdict, ms[k], ms[0], e)))
      goto out;
  }
  best = adopt > 0 ? p[adopt] : inc;
  k = adopt > 0 ? adopt : 0;
  /* the best's margin over the next contender (paired) */
  for (i = 0; i <= nc; i++) {
    int n = 0;
    if (i == k)
      continue;
    for (r = 0; r < done; r++)
      if (ms[k][r] > 0 && ms[i][r] > 0)
        lr[n++] = log(ms[i][r] / ms[k][r]);
    if (n < 2)
      continue;
    ratio = confirm_interval(lr, n, &lo, &hi);
    {
      char m[200]; /* "faster"/"slower", never a negative gain */
      buf_printf(&out, "%s\n",
                 meta_margin_text(m, sizeof(m), (long long)best->p.id,
                                  (long long)p[i]->p.id, ratio, lo, hi));
    }
    break;
  }
  /* against the bar (its run-start median), when the workload has one,
   * and the seed (paired) */
  {
    int n = 0;
    for (r = 0; r < done; r++)
      if (ms[k][r] > 0)
        lr[n++] = log(s->baseline_ms / ms[k][r]);
    if (n && s->baseline_ms > 0 && s->run.baseline_json) {
      ratio = confirm_interval(lr, n, &lo, &hi);
      buf_printf(&out,
                 "confirmed best #%lld: %.3gx the bar, 95%% CI [%.3g, %.3g] "
                 "(%d rounds%s)\n",
                 (long long)best->p.id, ratio, lo, hi, n,
                 adopt > 0 ? "; adopted: faster than the former best beyond "
                             "the noise"
                           : "");
      if ((rc = store(s, best->p.id, 0, "bar", n, ratio, lo, hi, "best", ms[k],
                      NULL, e)))
        goto out;
    }
    n = 0;
    for (r = 0; seed_ix >= 0 && r < done; r++)
      if (ms[k][r] > 0 && ms[seed_ix][r] > 0)
        lr[n++] = log(ms[seed_ix][r] / ms[k][r]);
    if (n) {
      ratio = confirm_interval(lr, n, &lo, &hi);
      if (s->run.baseline_json)
        buf_printf(&out,
                   "best #%lld vs the seed: %.3gx, 95%% CI [%.3g, %.3g]\n",
                   (long long)best->p.id, ratio, lo, hi);
      else /* no bar: the seed is what speedups are against */
        buf_printf(&out,
                   "confirmed best #%lld: %.3gx the seed, 95%% CI [%.3g, "
                   "%.3g] (%d rounds%s)\n",
                   (long long)best->p.id, ratio, lo, hi, n,
                   adopt > 0 ? "; adopted: faster than the former best "
                               "beyond the noise"
                             : "");
      if ((rc = store(s, best->p.id, s->seed_id, "seed", n, ratio, lo, hi,
                      "best", ms[k], ms[seed_ix], e)))
        goto out;
    }
  }
  if (adopt > 0) {
    pthread_mutex_lock(&s->mu);
    s->best_id = best->p.id;
    search_write_best(s);
    rc =
        db_run_set_program(s->db, s->run.id, "best_program_id", best->p.id, e);
    pthread_mutex_unlock(&s->mu);
  }
out:
  if (!buf_error(&out) && out.len) {
    free(s->confirm_text);
    s->confirm_text = buf_detach(&out, NULL);
  }
  buf_release(&out);
  return rc;
}

void confirm_headline(struct evolve *s)
{
  char path[1200];
  struct rundb *db;
  struct err e = {0, ""};
  json_t *run;

  snprintf(path, sizeof(path), "%s/run.db", s->o.out_dir);
  db = rundb_open(path, &e);
  run = db ? rundb_run(db, &e) : NULL;
  if (run)
    headline_parse(json_object_get(run, "headline"), &s->headline);
  else
    log_warn("evolve: %s: the headline: %s", path, e.msg);
  json_decref(run);
  rundb_close(db);
}
