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

/* One bench of program m's code (the whole cascade, as in the search)
 * on the inputs of input_seed, built as impl.  *ms > 0 when it passed. */
static int measure_as(struct evolve *s, const struct member *m,
                      const char *impl, unsigned long input_seed, double *ms,
                      struct err *e)
{
  struct eval_opts eo;
  struct eval_result r;
  char *code;
  int rc;

  pthread_mutex_lock(&s->mu);
  code = m->p.code ? strdup(m->p.code) : NULL;
  pthread_mutex_unlock(&s->mu);
  *ms = 0;
  if (!code)
    return 0;
  memset(&eo, 0, sizeof(eo));
  memset(&r, 0, sizeof(r));
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
  eo.seed = input_seed;
  eo.per_size_process = s->o.process_per_size;
  rc = eval_candidate(&eo, code, &r, e);
  free(code);
  if (!rc && r.status == EVAL_STATUS_OK && r.has_score && r.median_ms > 0)
    *ms = r.median_ms;
  eval_result_release(&r);
  return rc;
}

static int measure(struct evolve *s, const struct member *m, int round,
                   double *ms, struct err *e)
{
  char impl[64];

  snprintf(impl, sizeof(impl), "confirm_%lld_%d%s", (long long)m->p.id, round,
           s->ext);
  return measure_as(
      s, m, impl,
      (s->o.seed ? s->o.seed : 1234) + 7919u * (unsigned)(round + 1), ms, e);
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

/* Paired log ratios of a's times over b's in the rounds both were
 * measured (> 0; -1 is a round that did not measure one of them), into
 * lr; *failed counts rounds where either failed (0).  Returns the count. */
static int pairs(const double *a, const double *b, int done, double *lr,
                 int *failed)
{
  int r, n = 0;

  if (failed)
    *failed = 0;
  for (r = 0; r < done; r++) {
    if (a[r] < 0 || b[r] < 0)
      continue;
    if (a[r] == 0 || b[r] == 0) {
      if (failed)
        (*failed)++;
      continue;
    }
    lr[n++] = log(a[r] / b[r]);
  }
  return n;
}

/* Standard deviation of x[0..n). */
static double sdev(const double *x, int n)
{
  double m = 0, v = 0;
  int i;

  if (n < 2)
    return 0;
  for (i = 0; i < n; i++)
    m += x[i] / n;
  for (i = 0; i < n; i++)
    v += (x[i] - m) * (x[i] - m);
  return sqrt(v / (n - 1));
}

/* The contender p[1..nc] that is faster than the incumbent p[0] beyond the
 * noise by the most (its interval of the paired ratio entirely below 1),
 * or 0 (none: the incumbent stays). */
static int pick_best(double (*ms)[MAXROUNDS], int nc, int done)
{
  double lr[MAXROUNDS], lo, hi, ratio, best = 0;
  int k, adopt = 0, failed, n;

  for (k = 1; k <= nc; k++) {
    n = pairs(ms[k], ms[0], done, lr, &failed);
    if (failed || n < 2)
      continue;
    ratio = confirm_interval(lr, n, &lo, &hi);
    if (hi < 1 && (!adopt || ratio < best)) {
      adopt = k;
      best = ratio;
    }
  }
  return adopt;
}

/* The closest rival of p[kb] among p[0..nc] (the smallest paired ratio of
 * its time over kb's), or -1. */
static int next_of(double (*ms)[MAXROUNDS], int nc, int kb, int done)
{
  double lr[MAXROUNDS], lo, hi, ratio, best = 0;
  int k, at = -1, failed, n;

  for (k = 0; k <= nc; k++) {
    if (k == kb)
      continue;
    n = pairs(ms[k], ms[kb], done, lr, &failed);
    if (failed || n < 2)
      continue;
    ratio = confirm_interval(lr, n, &lo, &hi);
    if (at < 0 || ratio < best) {
      at = k;
      best = ratio;
    }
  }
  return at;
}

/* The closest rival of p[kb] (as next_of) not yet tried whose interval
 * still holds 1, or -1. */
static int rival(double (*ms)[MAXROUNDS], int nc, int kb, int done,
                 const int *tried)
{
  double lr[MAXROUNDS], lo, hi, ratio, best = 0;
  int k, at = -1, failed, n;

  for (k = 0; k <= nc; k++) {
    if (k == kb || tried[k])
      continue;
    n = pairs(ms[k], ms[kb], done, lr, &failed);
    if (failed || n < 2)
      continue;
    ratio = confirm_interval(lr, n, &lo, &hi);
    if (lo <= 1 && hi >= 1 && (at < 0 || ratio < best)) {
      at = k;
      best = ratio;
    }
  }
  return at;
}

/* Paired rounds of the best (kb) and its closest rival (jn) until their
 * interval separates them, or the cap; what happened goes to out.  The
 * rounds needed are estimated first from the gap and the noise (the
 * larger of the pairs' spread and the machine's floor): a gap the cap
 * cannot resolve is not measured for nothing.  Returns the rounds done. */
static int separate(struct evolve *s, struct member **p,
                    double (*ms)[MAXROUNDS], int kb, int jn, int done,
                    struct buf *out, struct err *e, int *rc)
{
  double lr[MAXROUNDS], ratio, lo, hi, gap, sd;
  int n, cap = s->o.confirm_max_rounds, need = 0, start = done;

  if (cap > MAXROUNDS)
    cap = MAXROUNDS;
  n = pairs(ms[jn], ms[kb], done, lr, NULL);
  ratio = confirm_interval(lr, n, &lo, &hi);
  if (lo > 1 || hi < 1 || n < 2)
    return done; /* apart already (or nothing to pair) */
  gap = fabs(log(ratio));
  sd = sdev(lr, n);
  if (s->floor_rounds && s->floor_rel > sd)
    sd = s->floor_rel;
  if (gap > 0)
    need = (int)ceil(pow(2.2 * sd / gap, 2));
  if (gap <= 0 || need > cap) {
    buf_printf(out,
               "could not separate #%lld from #%lld: %.3f of its time, 95%% "
               "CI [%.3f, %.3f] over %d rounds; at a noise of %.1f%% per "
               "pair that would take %s%d paired rounds (confirm_max_rounds "
               "%d): within noise\n",
               (long long)p[jn]->p.id, (long long)p[kb]->p.id, ratio, lo, hi,
               n, 100 * (exp(sd) - 1), gap > 0 ? "about " : "more than ",
               gap > 0 ? need : cap, cap);
    return done;
  }
  printf("confirming: #%lld and #%lld are within noise after %d rounds "
         "(95%% CI [%.3f, %.3f]): pairing them until they separate (about "
         "%d rounds, at most %d)\n",
         (long long)p[kb]->p.id, (long long)p[jn]->p.id, n, lo, hi, need, cap);
  fflush(stdout);
  while (done < cap && !search_interrupted && lo <= 1 && hi >= 1) {
    int i, who[2] = {kb, jn};
    for (i = 0; i < 2; i++) {
      int j = who[(i + done) % 2]; /* the order alternates */
      *rc = measure(s, p[j], done, &ms[j][done], e);
      if (*rc || search_interrupted)
        return done;
    }
    done++;
    n = pairs(ms[jn], ms[kb], done, lr, NULL);
    ratio = confirm_interval(lr, n, &lo, &hi);
  }
  if (lo > 1 || hi < 1)
    buf_printf(out,
               "separated #%lld from #%lld with %d paired rounds more (%d in "
               "all)\n",
               (long long)p[kb]->p.id, (long long)p[jn]->p.id, done - start,
               n);
  else if (!search_interrupted)
    buf_printf(out,
               "could not separate #%lld from #%lld: %.3f of its time, 95%% "
               "CI [%.3f, %.3f] after %d paired rounds (confirm_max_rounds "
               "%d): within noise\n",
               (long long)p[jn]->p.id, (long long)p[kb]->p.id, ratio, lo, hi,
               n, cap);
  return done;
}

int confirm_best(struct evolve *s, struct err *e)
{
  static double ms[MAXP][MAXROUNDS];
  struct member *p[MAXP], *inc, *best;
  struct buf out = BUF_INIT(16 * 1024);
  double lr[MAXROUNDS], ratio, lo, hi, thr = s->o.noise_threshold;
  double seed_spread, seed_ms[MAXROUNDS];
  int np, nc, r, rounds = s->o.confirm_rounds, done = 0, i, k, seed_ix = -1;
  int adopt, extended = 0, rc = 0, kb, jn, failed, n;

  inc = search_find(s, s->best_id);
  if (!inc || rounds <= 0 || s->o.confirm <= 0)
    return 0;
  if (rounds > MAXROUNDS / 2)
    rounds = MAXROUNDS / 2;
  for (i = 0; i < MAXP; i++)
    for (r = 0; r < MAXROUNDS; r++)
      ms[i][r] = -1; /* not measured */
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
    for (r = 0, n = 0; seed_ix >= 0 && r < done; r++)
      if (ms[seed_ix][r] >= 0)
        seed_ms[n++] = ms[seed_ix][r];
    seed_spread = seed_ix >= 0 ? confirm_spread(seed_ms, n) : 0;
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
  if (!search_interrupted) {
    /* enough rounds to tell the best from the next, or say it cannot:
     * each rival still within noise of the (current) best, closest
     * first, gets its paired rounds */
    int tried[MAXP] = {0};
    for (i = 0; i <= nc && !search_interrupted; i++) {
      kb = pick_best(ms, nc, done);
      jn = rival(ms, nc, kb, done, tried);
      if (jn < 0)
        break;
      tried[jn] = 1;
      done = separate(s, p, ms, kb, jn, done, &out, e, &rc);
      if (rc && !search_interrupted)
        goto out;
      rc = 0;
    }
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
  adopt = pick_best(ms, nc, done);
  for (k = 1; k <= nc; k++) {
    const char *verdict;
    n = pairs(ms[k], ms[0], done, lr, &failed);
    if (failed || !n) {
      verdict = "failed on re-run";
      ratio = lo = hi = 0;
    } else {
      ratio = confirm_interval(lr, n, &lo, &hi);
      verdict = hi < 1 ? "faster" : lo > 1 ? "slower" : "within noise";
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
  i = next_of(ms, nc, k, done);
  if (i >= 0) {
    char m[200]; /* "faster"/"slower", never a negative gain */
    n = pairs(ms[i], ms[k], done, lr, NULL);
    ratio = confirm_interval(lr, n, &lo, &hi);
    buf_printf(&out, "%s\n",
               meta_margin_text(m, sizeof(m), (long long)best->p.id,
                                (long long)p[i]->p.id, ratio, lo, hi));
  }
  /* against the bar (its run-start median), when the workload has one,
   * and the seed (paired) */
  {
    double bt[MAXROUNDS];
    n = 0;
    for (r = 0; r < done; r++)
      if (ms[k][r] > 0) {
        bt[n] = ms[k][r];
        lr[n++] = log(s->baseline_ms / ms[k][r]);
      }
    if (n && s->baseline_ms > 0 && s->run.baseline_json) {
      ratio = confirm_interval(lr, n, &lo, &hi);
      buf_printf(&out,
                 "confirmed best #%lld: %.3gx the bar, 95%% CI [%.3g, %.3g] "
                 "(%d rounds%s)\n",
                 (long long)best->p.id, ratio, lo, hi, n,
                 adopt > 0 ? "; adopted: faster than the former best beyond "
                             "the noise"
                           : "");
      if ((rc = store(s, best->p.id, 0, "bar", n, ratio, lo, hi, "best", bt,
                      NULL, e)))
        goto out;
    }
    n = seed_ix >= 0 ? pairs(ms[seed_ix], ms[k], done, lr, NULL) : 0;
    if (n) {
      double a[MAXROUNDS], b[MAXROUNDS];
      int m2 = 0;
      for (r = 0; r < done; r++)
        if (ms[k][r] > 0 && ms[seed_ix][r] > 0) {
          a[m2] = ms[k][r];
          b[m2++] = ms[seed_ix][r];
        }
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
                      "best", a, b, e)))
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

int confirm_floor(struct evolve *s, struct err *e)
{
  struct member *seed = search_find(s, s->seed_id);
  unsigned long base = s->o.seed ? s->o.seed : 1234;
  double a[MAXROUNDS], b[MAXROUNDS], lr[MAXROUNDS], ratio, lo, hi, rms = 0;
  double t0 = db_now();
  int rounds = s->o.noise_floor_rounds, r, n = 0, evals = 0, rc = 0;
  char line[400];

  if (!seed || rounds < 1 || seed->p.median_ms <= 0)
    return 0;
  if (rounds > MAXROUNDS / 2)
    rounds = MAXROUNDS / 2;
  if (rounds < 2)
    rounds = 2; /* one pair has no interval */
  printf("noise floor: measuring the seed #%lld against itself, %d paired "
         "rounds (%d evaluations besides its own)\n",
         (long long)seed->p.id, rounds, 2 * rounds - 1);
  fflush(stdout);
  for (r = 0; r < rounds && !search_interrupted; r++) {
    /* round 0 pairs the search's own evaluation of the seed with one
     * right after it (same inputs); later rounds alternate the order */
    unsigned long in = r ? base + 104729u * (unsigned)r : base;
    char impl[64];
    int i;
    a[r] = b[r] = 0;
    if (!r)
      a[r] = seed->p.median_ms;
    for (i = 0; i < 2; i++) {
      double *slot = (i + r) % 2 ? &a[r] : &b[r];
      if (!r && slot == &a[r])
        continue;
      snprintf(impl, sizeof(impl), "floor_%d_%c%s", r,
               slot == a + r ? 'a' : 'b', s->ext);
      rc = measure_as(s, seed, impl, in, slot, e);
      evals++;
      if (rc || search_interrupted)
        break;
    }
    if (rc)
      return rc;
    if (a[r] > 0 && b[r] > 0) {
      lr[n] = log(b[r] / a[r]);
      rms += lr[n] * lr[n];
      a[n] = a[r];
      b[n] = b[r];
      n++;
    }
  }
  if (search_interrupted)
    return 0;
  if (n < 2) {
    snprintf(line, sizeof(line),
             "noise floor: not measured (%d of %d rounds passed)", n, rounds);
  } else {
    ratio = confirm_interval(lr, n, &lo, &hi);
    s->floor_rel = sqrt(rms / n);
    s->floor_lo = lo;
    s->floor_hi = hi;
    s->floor_rounds = n;
    snprintf(line, sizeof(line),
             "noise floor: the seed against itself differs by %.1f%% (95%% "
             "interval [%.3f, %.3f]) over %d paired rounds; one pair "
             "differs by %.1f%%; cost %d evaluations, %.1f s",
             100 * fmax(hi - 1, 1 - lo), lo, hi, n,
             100 * (exp(s->floor_rel) - 1), evals, db_now() - t0);
    rc = store(s, seed->p.id, seed->p.id, "itself", n, ratio, lo, hi,
               "noise floor", b, a, e);
  }
  printf("%s\n", line);
  fflush(stdout);
  free(s->floor_text);
  s->floor_text = strdup(line);
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
