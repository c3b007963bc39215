/* tuner.c - the offline directive/param proposer (tuner.h). */
#include "tuner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "gp.h"
#include "workload.h"

#define MAX_DIMS (5 + WORKLOAD_MAX_PARAMS)
#define MAX_VALS 64

/* One tunable dimension: its allowed values as text, whether they are
 * ordered (chunk sizes, numeric params) and where it lives. */
struct dim {
  char name[64];
  int nv, ordered;
  char v[MAX_VALS][WORKLOAD_VALUE];
  enum { D_BACKEND, D_PLACEMENT, D_SYNC, D_ISSUER, D_CHUNK, D_PARAM } kind;
};

struct space {
  int n;
  struct dim d[MAX_DIMS];
};

void tuner_format_bytes(unsigned long long b, char *out, size_t n)
{
  if (b >= (1ULL << 30) && b % (1ULL << 30) == 0)
    snprintf(out, n, "%lluGiB", b >> 30);
  else if (b >= (1ULL << 20) && b % (1ULL << 20) == 0)
    snprintf(out, n, "%lluMiB", b >> 20);
  else if (b >= 1024 && b % 1024 == 0)
    snprintf(out, n, "%lluKiB", b >> 10);
  else
    snprintf(out, n, "%llu", b);
}

static void add_words(struct space *s, const char *name, int kind,
                      const struct workload_dim *wd)
{
  struct dim *d = &s->d[s->n];
  int i;

  if (wd->n < 1)
    return;
  memset(d, 0, sizeof(*d));
  snprintf(d->name, sizeof(d->name), "%s", name);
  d->kind = kind;
  for (i = 0; i < wd->n && i < MAX_VALS; i++)
    snprintf(d->v[i], sizeof(d->v[i]), "%s", wd->v[i]);
  d->nv = i;
  s->n++;
}

static int is_number(const char *t)
{
  char *end;

  if (!*t)
    return 0;
  (void)strtod(t, &end);
  return !*end;
}

static void build_space(const struct workload *w, struct space *s)
{
  int i, j;

  memset(s, 0, sizeof(*s));
  add_words(s, "backend", D_BACKEND, &w->space.backend);
  add_words(s, "placement", D_PLACEMENT, &w->space.placement);
  add_words(s, "sync", D_SYNC, &w->space.sync);
  add_words(s, "issuer", D_ISSUER, &w->space.issuer);
  if (w->space.chunk_min && w->space.chunk_max) {
    struct dim *d = &s->d[s->n++];
    unsigned long long b = 4096;
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "chunk");
    d->kind = D_CHUNK;
    d->ordered = 1;
    for (; b <= w->space.chunk_max && d->nv < MAX_VALS; b <<= 1)
      if (b >= w->space.chunk_min)
        tuner_format_bytes(b, d->v[d->nv++], sizeof(d->v[0]));
  }
  for (i = 0; i < w->nparams && s->n < MAX_DIMS; i++) {
    struct dim *d = &s->d[s->n++];
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "%s", w->params[i].name);
    d->kind = D_PARAM;
    d->ordered = 1;
    for (j = 0; j < w->params[i].nchoices && j < MAX_VALS; j++) {
      snprintf(d->v[j], sizeof(d->v[j]), "%s", w->params[i].choices[j]);
      if (!is_number(d->v[j]))
        d->ordered = 0;
    }
    d->nv = j;
  }
}

double tuner_space_size(const struct workload *w)
{
  struct space s;
  double n = 1;
  int i;

  build_space(w, &s);
  for (i = 0; i < s.n; i++) {
    n *= s.d[i].nv ? s.d[i].nv : 1;
    if (n > 1e9)
      return 1e9;
  }
  return n;
}

/* The value text a directive set holds for dimension d. */
static const char *get_value(const struct directive_set *ds,
                             const struct dim *d, char *tmp, size_t n)
{
  int i;

  switch (d->kind) {
  case D_BACKEND:
    return ds->backend;
  case D_PLACEMENT:
    return ds->placement;
  case D_SYNC:
    return ds->sync;
  case D_ISSUER:
    return ds->issuer;
  case D_CHUNK:
    tuner_format_bytes(ds->chunk_bytes, tmp, n);
    return tmp;
  case D_PARAM:
    for (i = 0; i < ds->nparams; i++)
      if (!strcmp(ds->params[i].name, d->name))
        return ds->params[i].value;
  }
  return "";
}

static void set_value(struct directive_set *ds, const struct dim *d,
                      const char *v)
{
  int i;

  switch (d->kind) {
  case D_BACKEND:
    snprintf(ds->backend, sizeof(ds->backend), "%s", v);
    break;
  case D_PLACEMENT:
    snprintf(ds->placement, sizeof(ds->placement), "%s", v);
    break;
  case D_SYNC:
    snprintf(ds->sync, sizeof(ds->sync), "%s", v);
    break;
  case D_ISSUER:
    snprintf(ds->issuer, sizeof(ds->issuer), "%s", v);
    break;
  case D_CHUNK:
    snprintf(ds->chunk_text, sizeof(ds->chunk_text), "%s", v);
    if (config_parse_bytes(v, &ds->chunk_bytes))
      ds->chunk_bytes = 0;
    break;
  case D_PARAM:
    for (i = 0; i < ds->nparams; i++)
      if (!strcmp(ds->params[i].name, d->name)) {
        snprintf(ds->params[i].value, sizeof(ds->params[i].value), "%s", v);
        return;
      }
    if (ds->nparams < DIRECTIVE_MAX_PARAMS) {
      i = ds->nparams++;
      snprintf(ds->params[i].name, sizeof(ds->params[i].name), "%s", d->name);
      snprintf(ds->params[i].value, sizeof(ds->params[i].value), "%s", v);
    }
    break;
  }
}

/* Index of the parent's value in each dimension (0 when not allowed). */
static void to_index(const struct space *s, const struct directive_set *ds,
                     int *idx)
{
  char tmp[32];
  int i, j;

  for (i = 0; i < s->n; i++) {
    const char *v = get_value(ds, &s->d[i], tmp, sizeof(tmp));
    idx[i] = 0;
    for (j = 0; j < s->d[i].nv; j++)
      if (!strcmp(v, s->d[i].v[j]))
        idx[i] = j;
  }
}

static void from_index(const struct space *s, const struct directive_set *base,
                       const int *idx, struct directive_set *out)
{
  int i;

  *out = *base;
  for (i = 0; i < s->n; i++)
    if (s->d[i].nv)
      set_value(out, &s->d[i], s->d[i].v[idx[i]]);
  if (s->n && s->d[0].kind <= D_CHUNK)
    out->has_line = 1;
}

/* ---- inert parameters (tuner_inert) ---- */

/* A learned rule: dimension dim is inert where every other dimension has
 * the value in idx (two observations a and b showed it). */
struct rule {
  int dim, a, b;
  int idx[MAX_DIMS];
};

struct inert {
  int n;
  struct rule *r;
};

static int index_exact(const struct space *s, const struct directive_set *ds,
                       int *idx);

/* The rules of the observations: each pair that differs in one dimension
 * only and has one (known) identity.  Pairs beyond the cap are not
 * looked at (a rule less only means a proposal more). */
static void inert_learn(const struct space *s, const struct tuner_obs *obs,
                        size_t nobs, struct inert *in)
{
  enum { MAXOBS = 512, MAXRULES = 1024 };
  int(*idx)[MAX_DIMS];
  size_t i, j, n = nobs > MAXOBS ? MAXOBS : nobs;
  int *ok;

  memset(in, 0, sizeof(*in));
  if (!obs || n < 2)
    return;
  idx = calloc(n, sizeof(*idx));
  ok = calloc(n, sizeof(*ok));
  in->r = calloc(MAXRULES, sizeof(*in->r));
  if (!idx || !ok || !in->r)
    goto out;
  for (i = 0; i < n; i++) {
    const struct tuner_obs *o = &obs[nobs - n + i];
    ok[i] = o->ident[0] && index_exact(s, &o->d, idx[i]);
  }
  for (i = 0; i < n; i++)
    for (j = i + 1; ok[i] && j < n && in->n < MAXRULES; j++) {
      int k, diff = 0, at = -1;
      if (!ok[j] || strcmp(obs[nobs - n + i].ident, obs[nobs - n + j].ident))
        continue;
      for (k = 0; k < s->n; k++)
        if (idx[i][k] != idx[j][k]) {
          diff++;
          at = k;
        }
      if (diff != 1)
        continue;
      in->r[in->n].dim = at;
      in->r[in->n].a = (int)(nobs - n + i);
      in->r[in->n].b = (int)(nobs - n + j);
      memcpy(in->r[in->n].idx, idx[i], sizeof(idx[i]));
      in->n++;
    }
out:
  free(idx);
  free(ok);
  if (!in->n) {
    free(in->r);
    in->r = NULL;
  }
}

/* The rule configuration idx falls under, or NULL. */
static const struct rule *inert_covers(const struct space *s,
                                       const struct inert *in, const int *idx)
{
  int i, k;

  for (i = 0; i < in->n; i++) {
    for (k = 0; k < s->n; k++)
      if (k != in->r[i].dim && idx[k] != in->r[i].idx[k])
        break;
    if (k == s->n)
      return &in->r[i];
  }
  return NULL;
}

int tuner_inert(const struct workload *w, const struct tuner_obs *obs,
                size_t nobs, const struct directive_set *d, char *why,
                size_t whyn)
{
  struct space *s = malloc(sizeof(*s));
  struct inert in;
  const struct rule *r;
  int idx[MAX_DIMS], hit = 0;

  if (why && whyn)
    why[0] = '\0';
  if (!s)
    return 0;
  build_space(w, s);
  inert_learn(s, obs, nobs, &in);
  if (index_exact(s, d, idx) && (r = inert_covers(s, &in, idx)) != NULL) {
    hit = 1;
    if (why && whyn)
      snprintf(why, whyn,
               "%s is inert here: observations %d and %d differ only in it "
               "and compile to the same program",
               s->d[r->dim].name, r->a, r->b);
  }
  free(in.r);
  free(s);
  return hit;
}

/* A move: up to two (dimension, new index) changes. */
struct move {
  int nc;
  int dim[2], to[2];
};

/* The 1-step neighbours of idx. */
static int neighbours(const struct space *s, const int *idx, struct move *m,
                      int max)
{
  int i, j, n = 0;

  for (i = 0; i < s->n; i++) {
    const struct dim *d = &s->d[i];
    if (d->nv < 2)
      continue;
    for (j = 0; j < d->nv && n < max; j++) {
      if (j == idx[i])
        continue;
      if (d->ordered && abs(j - idx[i]) != 1)
        continue;
      m[n].nc = 1;
      m[n].dim[0] = i;
      m[n].to[0] = j;
      n++;
    }
  }
  return n;
}

static void shuffle(struct move *m, int n, struct select_rng *rng)
{
  int i;

  for (i = n - 1; i > 0; i--) {
    int j = (int)select_rng_below(rng, (size_t)i + 1);
    struct move t = m[i];
    m[i] = m[j];
    m[j] = t;
  }
}

static void describe(const struct space *s, const int *from,
                     const struct move *mv, char *what, size_t n)
{
  size_t o = 0;
  int c;

  what[0] = '\0';
  for (c = 0; c < mv->nc && o < n; c++) {
    const struct dim *d = &s->d[mv->dim[c]];
    int w = snprintf(what + o, n - o, "%s%s %s -> %s", c ? ", " : "", d->name,
                     d->v[from[mv->dim[c]]], d->v[mv->to[c]]);
    if (w < 0)
      break;
    o += (size_t)w;
  }
}

/* Try one move; 1 when it gives an unseen configuration (in *out) that
 * no rule in `in` shows inert. */
static int try_move(const struct space *s, const struct directive_set *base,
                    const int *idx, const struct move *mv,
                    const struct inert *in, tuner_seen_fn seen, void *ud,
                    struct directive_set *out)
{
  int cand[MAX_DIMS], c;

  memcpy(cand, idx, sizeof(cand));
  for (c = 0; c < mv->nc; c++)
    cand[mv->dim[c]] = mv->to[c];
  if (inert_covers(s, in, cand))
    return 0;
  from_index(s, base, cand, out);
  return !seen || !seen(ud, out);
}

static int random_restart(const struct space *s,
                          const struct directive_set *base, const int *idx,
                          const struct inert *in, struct select_rng *rng,
                          tuner_seen_fn seen, void *ud,
                          struct directive_set *out, char *what, size_t whatn)
{
  int cand[MAX_DIMS], t, i;

  for (t = 0; t < 400; t++) {
    for (i = 0; i < s->n; i++)
      cand[i] =
          s->d[i].nv ? (int)select_rng_below(rng, (size_t)s->d[i].nv) : 0;
    if (inert_covers(s, in, cand))
      continue;
    from_index(s, base, cand, out);
    if (!seen || !seen(ud, out)) {
      size_t o = (size_t)snprintf(what, whatn, "random restart:");
      for (i = 0; i < s->n && o < whatn; i++)
        if (cand[i] != idx[i]) {
          int w = snprintf(what + o, whatn - o, " %s=%s", s->d[i].name,
                           s->d[i].v[cand[i]]);
          if (w < 0)
            break;
          o += (size_t)w;
        }
      return 0;
    }
  }
  return ERR_NOTFOUND;
}

int tuner_propose(const struct workload *w, const struct directive_set *parent,
                  const struct tuner_obs *obs, size_t nobs, int explore,
                  struct select_rng *rng, tuner_seen_fn seen, void *ud,
                  struct directive_set *out, char *what, size_t whatn)
{
  enum { MAXM = 512 };
  struct space *s = malloc(sizeof(*s));
  struct move *m1 = malloc(MAXM * sizeof(*m1)), *m2 = NULL;
  struct inert in = {0, NULL};
  int idx[MAX_DIMS], n1, n2 = 0, i, j, rc = ERR_NOTFOUND;

  if (!s || !m1)
    goto out;
  build_space(w, s);
  inert_learn(s, obs, nobs, &in);
  to_index(s, parent, idx);
  if (explore && select_rng_uniform(rng) < 0.15) {
    rc = random_restart(s, parent, idx, &in, rng, seen, ud, out, what, whatn);
    if (!rc)
      goto out;
  }
  n1 = neighbours(s, idx, m1, MAXM);
  shuffle(m1, n1, rng);
  /* 2-coordinate moves: pairs of 1-step moves on different dimensions */
  m2 = malloc(MAXM * sizeof(*m2));
  if (!m2)
    goto out;
  for (i = 0; i < n1 && n2 < MAXM; i++)
    for (j = i + 1; j < n1 && n2 < MAXM; j++)
      if (m1[i].dim[0] != m1[j].dim[0]) {
        m2[n2].nc = 2;
        m2[n2].dim[0] = m1[i].dim[0];
        m2[n2].to[0] = m1[i].to[0];
        m2[n2].dim[1] = m1[j].dim[0];
        m2[n2].to[1] = m1[j].to[0];
        n2++;
      }
  shuffle(m2, n2, rng);
  if (explore && n2 && select_rng_uniform(rng) < 0.5) {
    for (i = 0; i < n2; i++)
      if (try_move(s, parent, idx, &m2[i], &in, seen, ud, out)) {
        describe(s, idx, &m2[i], what, whatn);
        rc = 0;
        goto out;
      }
  }
  for (i = 0; i < n1; i++)
    if (try_move(s, parent, idx, &m1[i], &in, seen, ud, out)) {
      describe(s, idx, &m1[i], what, whatn);
      rc = 0;
      goto out;
    }
  for (i = 0; i < n2; i++)
    if (try_move(s, parent, idx, &m2[i], &in, seen, ud, out)) {
      describe(s, idx, &m2[i], what, whatn);
      rc = 0;
      goto out;
    }
  rc = random_restart(s, parent, idx, &in, rng, seen, ud, out, what, whatn);
out:
  free(in.r);
  free(s);
  free(m1);
  free(m2);
  return rc;
}

/* ---- the model-based proposer (tuner_suggest) ---- */

#define ENUM_MAX 20000 /* spaces up to this size are enumerated */
/* every EXPLOIT_EVERY-th model step looks only within LOCAL_STEPS
 * (Chebyshev, index steps) of the best: diagonal moves included */
#ifndef EXPLOIT_EVERY
#define EXPLOIT_EVERY 3
#endif
#ifndef LOCAL_STEPS
#define LOCAL_STEPS 1
#endif
#define SAMPLE_N 4000 /* otherwise this many random points (+ neighbours) */

/* Is every value of ds in the space?  idx receives the indices. */
static int index_exact(const struct space *s, const struct directive_set *ds,
                       int *idx)
{
  char tmp[32];
  int i, j;

  for (i = 0; i < s->n; i++) {
    const char *v = get_value(ds, &s->d[i], tmp, sizeof(tmp));
    idx[i] = -1;
    for (j = 0; j < s->d[i].nv; j++)
      if (!strcmp(v, s->d[i].v[j]))
        idx[i] = j;
    if (idx[i] < 0) {
      if (s->d[i].nv > 1)
        return 0;
      idx[i] = 0;
    }
  }
  return 1;
}

/* The GP coordinates of configuration idx: ordered dimensions scaled to
 * [0, 1], categorical ones as their index; fixed dimensions left out. */
static int to_coords(const struct space *s, const int *idx, double *x,
                     int *categorical)
{
  int i, d = 0;

  for (i = 0; i < s->n; i++) {
    const struct dim *dm = &s->d[i];
    if (dm->nv < 2)
      continue;
    if (categorical)
      categorical[d] = !dm->ordered;
    x[d++] = dm->ordered ? (double)idx[i] / (dm->nv - 1) : idx[i];
  }
  return d;
}

static double coord_dist2(const double *a, const double *b, const int *cat,
                          int d)
{
  double r = 0;
  int i;

  for (i = 0; i < d; i++) {
    double t = cat[i] ? (a[i] != b[i]) : a[i] - b[i];
    r += t * t;
  }
  return r;
}

struct cand {
  int idx[MAX_DIMS];
  double score, mu, sg, ei;
  int dist, observed;
};

static int cand_cmp(const void *a, const void *b)
{
  double x = ((const struct cand *)a)->score,
         y = ((const struct cand *)b)->score;

  return x > y ? -1 : x < y;
}

/* Chebyshev distance in index steps (a categorical change is 1). */
static int cheb(const struct space *s, const int *a, const int *b)
{
  int i, m = 0;

  for (i = 0; i < s->n; i++) {
    int t = s->d[i].ordered ? abs(a[i] - b[i]) : a[i] != b[i];
    if (t > m)
      m = t;
  }
  return m;
}

#ifndef FAIL_TOL
#define FAIL_TOL 3
#endif
#ifndef SUCC_TOL
#define SUCC_TOL 2
#endif

/* The trust region's radius (Chebyshev, in index steps) after the
 * observations so far, replayed in order: it starts at the widest
 * dimension, halves after FAIL_TOL model proposals in a row that did not
 * improve on the best, and doubles after SUCC_TOL that did. */
static int trust_radius(const struct space *s, const int (*oidx)[MAX_DIMS],
                        const double *oy, int no, int ninit)
{
  int rmax = 1, r, fails = 0, succ = 0, i, b = 0;

  for (i = 0; i < s->n; i++)
    if (s->d[i].nv - 1 > rmax)
      rmax = s->d[i].nv - 1;
  r = rmax;
  (void)oidx;
  for (i = 1; i < no; i++) {
    int improved = oy[i] < oy[b];
    if (improved)
      b = i;
    if (i < ninit)
      continue;
    if (improved) {
      fails = 0;
      if (++succ >= SUCC_TOL) {
        r = 2 * r < rmax ? 2 * r : rmax;
        succ = 0;
      }
    } else {
      succ = 0;
      if (++fails >= FAIL_TOL) {
        r = r > 1 ? r / 2 : 1;
        fails = 0;
      }
    }
  }
  return r;
}

static int same_idx(const int *a, const int *b, int n)
{
  return !memcmp(a, b, sizeof(int) * (size_t)n);
}

/* The candidate points: the whole space when small, else random draws
 * plus the 1-step neighbours of the observed points. */
static struct cand *candidates(const struct space *s,
                               const int (*oidx)[MAX_DIMS], int no,
                               struct select_rng *rng, int *ncand)
{
  double size = 1;
  struct cand *c;
  int i, n = 0, cap;

  for (i = 0; i < s->n; i++)
    size *= s->d[i].nv ? s->d[i].nv : 1;
  cap = size <= ENUM_MAX ? (int)size : SAMPLE_N + no * 2 * MAX_DIMS;
  c = calloc((size_t)cap, sizeof(*c));
  if (!c)
    return NULL;
  if (size <= ENUM_MAX) {
    for (n = 0; n < cap; n++) {
      int r = n;
      for (i = 0; i < s->n; i++) {
        int nv = s->d[i].nv ? s->d[i].nv : 1;
        c[n].idx[i] = r % nv;
        r /= nv;
      }
    }
  } else {
    int k;
    for (; n < SAMPLE_N; n++)
      for (i = 0; i < s->n; i++)
        c[n].idx[i] =
            s->d[i].nv ? (int)select_rng_below(rng, (size_t)s->d[i].nv) : 0;
    for (k = 0; k < no; k++)
      for (i = 0; i < s->n && n + 2 <= cap; i++) {
        int dlt;
        for (dlt = -1; dlt <= 1; dlt += 2) {
          int v = oidx[k][i] + dlt;
          if (v < 0 || v >= s->d[i].nv)
            continue;
          memcpy(c[n].idx, oidx[k], sizeof(c[n].idx));
          c[n++].idx[i] = v;
        }
      }
  }
  *ncand = n;
  return c;
}

int tuner_suggest(const struct workload *w, const struct tuner_obs *obs,
                  size_t nobs, const struct directive_set *base,
                  struct select_rng *rng, tuner_seen_fn seen, void *ud,
                  struct directive_set *out, char *what, size_t whatn)
{
  struct space *s = malloc(sizeof(*s));
  int(*oidx)[MAX_DIMS] = NULL;
  double *ox = NULL, *oy = NULL, worst = -HUGE_VAL, best_mu = HUGE_VAL;
  int cat[GP_MAX_DIMS], bidx[MAX_DIMS], no = 0, nok = 0, d = 0, ninit;
  int ncand = 0, i, k, rc = ERR_NOMEM, model = 0, exploit = 0, bo = 0;
  int radius = 0;
  struct cand *c = NULL;
  struct inert in = {0, NULL};
  struct gp g;
  size_t j;

  memset(&g, 0, sizeof(g));
  if (!s)
    return ERR_NOMEM;
  build_space(w, s);
  oidx = calloc(nobs + 1, sizeof(*oidx));
  ox = calloc((nobs + 1) * GP_MAX_DIMS, sizeof(*ox));
  oy = calloc(nobs + 1, sizeof(*oy));
  if (!oidx || !ox || !oy)
    goto out;
  /* the observations inside the space, the last GP_MAX_POINTS of them */
  for (j = nobs > GP_MAX_POINTS ? nobs - GP_MAX_POINTS : 0; j < nobs; j++) {
    if (!index_exact(s, &obs[j].d, oidx[no]))
      continue;
    d = to_coords(s, oidx[no], ox + no * GP_MAX_DIMS, cat);
    oy[no] = obs[j].ms > 0 ? log(obs[j].ms) : HUGE_VAL;
    if (obs[j].ms > 0) {
      nok++;
      if (oy[no] > worst)
        worst = oy[no];
    }
    no++;
  }
  if (!index_exact(s, base, bidx))
    to_index(s, base, bidx);
  if (d == 0)
    d = to_coords(s, bidx, ox + no * GP_MAX_DIMS, cat);
  if (d == 0 || d > GP_MAX_DIMS) {
    rc = ERR_NOTFOUND; /* nothing to tune */
    goto out;
  }
  for (i = 0; i < no; i++) {
    if (oy[i] == HUGE_VAL) /* a failed configuration: worse than any */
      oy[i] = nok ? worst + log(1.5) : 0;
    if (oy[i] < oy[bo])
      bo = i;
  }
  c = candidates(s, (const int(*)[MAX_DIMS])oidx, no, rng, &ncand);
  if (!c)
    goto out;
  inert_learn(s, obs, nobs, &in);
  /* a space-filling start (maximin), then expected improvement */
  ninit = 2 * d + 1;
  if (nok >= ninit && nok >= 3) {
    double *xs = malloc(sizeof(double) * (size_t)no * (size_t)d);
    if (!xs)
      goto out;
    for (i = 0; i < no; i++)
      memcpy(xs + i * d, ox + i * GP_MAX_DIMS, sizeof(double) * (size_t)d);
    rc = gp_fit(&g, xs, oy, no, d, cat);
    free(xs);
    if (rc)
      goto out;
    model = 1;
    exploit = EXPLOIT_EVERY > 0 &&
              (nok - ninit) % EXPLOIT_EVERY == EXPLOIT_EVERY - 1;
    for (i = 0; i < no; i++) {
      double mu, sg;
      gp_predict(&g, ox + i * GP_MAX_DIMS, &mu, &sg);
      if (mu < best_mu)
        best_mu = mu;
    }
  }
  for (k = 0; k < ncand; k++) {
    double x[GP_MAX_DIMS];
    to_coords(s, c[k].idx, x, NULL);
    c[k].score = -HUGE_VAL;
    c[k].dist = cheb(s, c[k].idx, oidx[bo]);
    for (i = 0; i < no && !same_idx(c[k].idx, oidx[i], s->n); i++)
      ;
    /* an inert parameter's other values count as observed: the same
     * program (the model still learns from the pair) */
    c[k].observed = i < no || inert_covers(s, &in, c[k].idx);
    if (c[k].observed)
      continue;
    if (model) {
      gp_predict(&g, x, &c[k].mu, &c[k].sg);
      c[k].ei = gp_expected_improvement(c[k].mu, c[k].sg, best_mu);
    } else {
      double m = HUGE_VAL;
      for (i = 0; i < no; i++) {
        double r = coord_dist2(x, ox + i * GP_MAX_DIMS, cat, d);
        if (r < m)
          m = r;
      }
      c[k].score = (no ? m : 0) + 1e-6 * select_rng_uniform(rng);
    }
  }
  if (model) {
    int eligible = 0;
    radius = trust_radius(s, oidx, oy, no, ninit);
    if (exploit) {
      for (k = 0; k < ncand; k++)
        if (!c[k].observed && cheb(s, c[k].idx, oidx[bo]) <= LOCAL_STEPS) {
          c[k].score = c[k].ei;
          eligible++;
        }
      exploit = eligible > 0;
    }
    /* expected improvement inside the trust region (grown until it holds
     * an unobserved configuration) */
    for (; !eligible && radius <= MAX_VALS; radius++)
      for (k = 0; k < ncand; k++)
        if (!c[k].observed && c[k].dist <= radius) {
          c[k].score = c[k].ei;
          eligible++;
        }
  }
  qsort(c, (size_t)ncand, sizeof(*c), cand_cmp);
  rc = ERR_NOTFOUND;
  for (k = 0; k < ncand && c[k].score > -HUGE_VAL; k++) {
    from_index(s, base, c[k].idx, out);
    if (!seen || !seen(ud, out)) {
      size_t o = 0;
      double mu = 0, sg = 0, x[GP_MAX_DIMS];
      to_coords(s, c[k].idx, x, NULL);
      if (model) {
        gp_predict(&g, x, &mu, &sg);
        o = (size_t)snprintf(
            what, whatn,
            "model (%d obs, %s %d): predicted %.4g ms "
            "+-%.0f%%:",
            no, exploit ? "local step, radius" : "trust radius",
            exploit ? LOCAL_STEPS : radius - 1, exp(mu), 100 * (exp(sg) - 1));
      } else {
        o = (size_t)snprintf(what, whatn,
                             "space-filling start %d/%d:", nok + 1, ninit);
      }
      for (i = 0; i < s->n && o < whatn; i++)
        if (c[k].idx[i] != bidx[i]) {
          int wr = snprintf(what + o, whatn - o, " %s %s -> %s", s->d[i].name,
                            s->d[i].v[bidx[i]], s->d[i].v[c[k].idx[i]]);
          if (wr < 0)
            break;
          o += (size_t)wr;
        }
      rc = 0;
      break;
    }
  }
out:
  free(in.r);
  gp_release(&g);
  free(c);
  free(oidx);
  free(ox);
  free(oy);
  free(s);
  return rc;
}
