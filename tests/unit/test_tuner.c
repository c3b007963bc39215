/* Unit tests for tuner.c and meta.c: moves stay in the space, unseen
 * configurations only, exhaustion, the statistics of what paid. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"
#include "db.h"
#include "directive.h"
#include "meta.h"
#include "tuner.h"
#include "workload.h"

static void space(struct workload *w)
{
  memset(w, 0, sizeof(*w));
  w->space.present = 1;
  w->space.backend.n = 1;
  snprintf(w->space.backend.v[0], 16, "lsa");
  w->space.placement.n = 3;
  snprintf(w->space.placement.v[0], 16, "deferred");
  snprintf(w->space.placement.v[1], 16, "per_tile");
  snprintf(w->space.placement.v[2], 16, "split");
  w->space.chunk_min = 64 * 1024;
  w->space.chunk_max = 1024 * 1024;
  w->nparams = 1;
  snprintf(w->params[0].name, sizeof(w->params[0].name), "ctas");
  w->params[0].nchoices = 3;
  snprintf(w->params[0].choices[0], 64, "2");
  snprintf(w->params[0].choices[1], 64, "4");
  snprintf(w->params[0].choices[2], 64, "8");
}

static void start(struct directive_set *d)
{
  memset(d, 0, sizeof(*d));
  d->has_line = 1;
  snprintf(d->backend, sizeof(d->backend), "lsa");
  snprintf(d->placement, sizeof(d->placement), "deferred");
  snprintf(d->chunk_text, sizeof(d->chunk_text), "64KiB");
  d->chunk_bytes = 64 * 1024;
  d->nparams = 1;
  snprintf(d->params[0].name, sizeof(d->params[0].name), "ctas");
  snprintf(d->params[0].value, sizeof(d->params[0].value), "2");
}

/* The seen set: configurations as "placement/chunk/ctas" strings. */
struct seen {
  int n;
  char key[128][64];
};

static void key_of(const struct directive_set *d, char *k, size_t n)
{
  snprintf(k, n, "%s/%llu/%s", d->placement, d->chunk_bytes,
           d->params[0].value);
}

static int is_seen(void *ud, const struct directive_set *d)
{
  struct seen *s = ud;
  char k[64];
  int i;

  key_of(d, k, sizeof(k));
  for (i = 0; i < s->n; i++)
    if (!strcmp(s->key[i], k))
      return 1;
  return 0;
}

static void test_space_and_format(void **state)
{
  struct workload w;
  char b[32];
  (void)state;
  space(&w);
  /* 1 backend x 3 placements x 5 chunks (64K..1M) x 3 ctas */
  assert_true(tuner_space_size(&w) == 45);
  tuner_format_bytes(65536, b, sizeof(b));
  assert_string_equal(b, "64KiB");
  tuner_format_bytes(2 << 20, b, sizeof(b));
  assert_string_equal(b, "2MiB");
  tuner_format_bytes(1000, b, sizeof(b));
  assert_string_equal(b, "1000");
}

static void test_coordinate_move(void **state)
{
  struct workload w;
  struct directive_set d, out;
  struct select_rng r;
  char what[256];
  int i, changed;
  (void)state;
  space(&w);
  start(&d);
  select_rng_seed(&r, 5);
  for (i = 0; i < 50; i++) {
    assert_int_equal(tuner_propose(&w, &d, NULL, 0, 0, &r, NULL, NULL, &out,
                                   what, sizeof(what)),
                     0);
    /* exploit: exactly one or two coordinates, each one step */
    changed = strcmp(out.placement, d.placement) != 0;
    changed += out.chunk_bytes != d.chunk_bytes;
    changed += strcmp(out.params[0].value, d.params[0].value) != 0;
    assert_true(changed >= 1 && changed <= 2);
    assert_true(out.chunk_bytes == 64 * 1024 || out.chunk_bytes == 128 * 1024);
    assert_true(!strcmp(out.params[0].value, "2") ||
                !strcmp(out.params[0].value, "4"));
    assert_string_equal(out.backend, "lsa");
    assert_true(strstr(what, " -> ") != NULL);
  }
}

static void test_never_seen_and_exhaustion(void **state)
{
  struct workload w;
  struct directive_set d, out;
  struct select_rng r;
  struct seen s;
  char what[256];
  int i, rc;
  (void)state;
  space(&w);
  start(&d);
  memset(&s, 0, sizeof(s));
  key_of(&d, s.key[s.n++], sizeof(s.key[0]));
  select_rng_seed(&r, 9);
  /* walk the whole space: 44 new configurations, each unseen */
  for (i = 0; i < 44; i++) {
    rc = tuner_propose(&w, &d, NULL, 0, i % 2, &r, is_seen, &s, &out, what,
                       sizeof(what));
    assert_int_equal(rc, 0);
    assert_false(is_seen(&s, &out));
    key_of(&out, s.key[s.n++], sizeof(s.key[0]));
    d = out;
  }
  assert_int_equal(tuner_propose(&w, &d, NULL, 0, 1, &r, is_seen, &s, &out,
                                 what, sizeof(what)),
                   ERR_NOTFOUND);
}

static void test_meta_stats(void **state)
{
  struct db_program p[4];
  char *t;
  int i;
  (void)state;
  for (i = 0; i < 4; i++) {
    db_program_init(&p[i]);
    p[i].id = i + 1;
    p[i].island = 0;
  }
  p[0].edit_kind = "seed";
  p[0].status = "ok";
  p[0].median_ms = 2.0;
  p[0].noise_ms = 0.1;
  p[0].speedup = 1.0;
  p[0].directives_json = "{\"params\":{\"tile\":128}}";
  p[1].edit_kind = "tune";
  p[1].parent_id = 1;
  p[1].status = "ok";
  p[1].median_ms = 1.0;
  p[1].noise_ms = 0.1;
  p[1].speedup = 2.0;
  p[1].directives_json = "{\"params\":{\"tile\":32}}";
  p[2].edit_kind = "tune";
  p[2].parent_id = 1;
  p[2].status = "ok";
  p[2].median_ms = 1.95; /* within the noise: not a win */
  p[2].noise_ms = 0.1;
  p[2].speedup = 1.02;
  p[2].directives_json = "{\"params\":{\"tile\":64}}";
  p[3].edit_kind = "tune";
  p[3].parent_id = 1;
  p[3].status = "failed";
  p[3].directives_json = "{\"params\":{\"tile\":8}}";
  assert_true(meta_beats(&p[1], &p[0]));
  assert_false(meta_beats(&p[2], &p[0]));
  assert_false(meta_beats(&p[3], &p[0]));
  t = meta_stats(p, 4, 0);
  assert_non_null(t);
  assert_non_null(strstr(t, "4 candidates evaluated, 3 correct"));
  assert_non_null(strstr(t, "tune 3 (correct 2, beat parent 1)"));
  assert_non_null(strstr(t, "tile=32: 2x over 1 of 1"));
  assert_non_null(strstr(t, "1. Prefer tile=32"));
  free(t);
}

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  char *b;
  long n;

  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  b = calloc(1, (size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  return b;
}

/* The GPU workload's tuner candidates pass the cascade's static checks
 * (frozen text, directives valid for its space), so a GPU run spends its
 * time on builds and benchmarks, not on rejected proposals. */
static void test_gemm_candidates_are_valid(void **state)
{
  struct workload w;
  struct directive_set d, next, chk;
  struct select_rng r;
  struct err e = {0, ""};
  char what[256], *seed, *code;
  int i;
  (void)state;
  if (workload_load("workloads/gemm_allgather", &w, &e)) {
    skip(); /* not merged into this tree */
    return;
  }
  seed = slurp("workloads/gemm_allgather/seed.cu");
  assert_non_null(seed);
  assert_int_equal(directive_parse(seed, &d, &e), 0);
  assert_int_equal(directive_validate(&d, &w, &e), 0);
  assert_true(tuner_space_size(&w) > 1000);
  select_rng_seed(&r, 11);
  for (i = 0; i < 40; i++) {
    assert_int_equal(tuner_propose(&w, &d, NULL, 0, i % 2, &r, NULL, NULL,
                                   &next, what, sizeof(what)),
                     0);
    code = directive_apply(seed, &next, &e);
    assert_non_null(code);
    if (candidate_check(seed, code, 1, &e))
      fail_msg("candidate %d (%s): %s", i, what, e.msg);
    assert_int_equal(directive_parse(code, &chk, &e), 0);
    if (directive_validate(&chk, &w, &e))
      fail_msg("candidate %d (%s): %s", i, what, e.msg);
    assert_true(chk.chunk_bytes == next.chunk_bytes);
    free(code);
    d = next;
  }
  free(seed);
}

/* ---- the offline benchmark: the tuner against recorded landscapes ----
 *
 * A landscape is a table configuration -> ms.  The driver starts from the
 * workload's seed, asks tuner_suggest for 39 more configurations (40
 * evaluations in all, the seed included), "measures" each as its table
 * value times a log-normal noise of 3%, and takes as its best the one that
 * MEASURED fastest; the outcome is that configuration's table value over
 * the table's minimum.  Target (issue 26): within 1.1x on 5 of 6 seeds. */

#define LS_MAX 4096
#define BUDGET 40

struct landscape {
  const char *name;
  struct workload w;
  struct directive_set seed;
  int n;
  char key[LS_MAX][64]; /* "v1,v2,..." in param order */
  double ms[LS_MAX];    /* <= 0: the configuration fails */
  double min;
};

static void param_key(const struct workload *w, const struct directive_set *d,
                      char *k, size_t n)
{
  size_t o = 0;
  int i, j;

  k[0] = '\0';
  for (i = 0; i < w->nparams; i++)
    for (j = 0; j < d->nparams; j++)
      if (!strcmp(d->params[j].name, w->params[i].name))
        o += (size_t)snprintf(k + o, n - o, "%s%s", i ? "," : "",
                              d->params[j].value);
}

static double ls_lookup(const struct landscape *l,
                        const struct directive_set *d)
{
  char k[64];
  int i;

  param_key(&l->w, d, k, sizeof(k));
  for (i = 0; i < l->n; i++)
    if (!strcmp(l->key[i], k))
      return l->ms[i];
  fail_msg("%s: configuration %s is not in the landscape", l->name, k);
  return 0;
}

struct drive_seen {
  const struct landscape *l;
  const struct tuner_obs *obs;
  int n;
};

static int drive_is_seen(void *ud, const struct directive_set *d)
{
  const struct drive_seen *ds = ud;
  char a[64], b[64];
  int i;

  param_key(&ds->l->w, d, b, sizeof(b));
  for (i = 0; i < ds->n; i++) {
    param_key(&ds->l->w, &ds->obs[i].d, a, sizeof(a));
    if (!strcmp(a, b))
      return 1;
  }
  return 0;
}

static double gauss(struct select_rng *r)
{
  double u = select_rng_uniform(r), v = select_rng_uniform(r);

  return sqrt(-2 * log(u > 1e-12 ? u : 1e-12)) * cos(6.283185307179586 * v);
}

/* One tuning run; returns the chosen best's true ms over the minimum and
 * in *at the evaluation (1-based) where it was first measured. */
static double drive(const struct landscape *l, uint64_t seed, int old, int *at)
{
  static struct tuner_obs obs[BUDGET];
  struct select_rng r, noise;
  char what[256];
  int n, best = 0;

  select_rng_seed(&r, seed);
  select_rng_seed(&noise, seed * 7919 + 1);
  obs[0].d = l->seed;
  obs[0].ms = ls_lookup(l, &l->seed) * exp(0.03 * gauss(&noise));
  for (n = 1; n < BUDGET; n++) {
    struct directive_set next;
    double t;
    struct drive_seen ds = {l, obs, n};
    if (old) {
      /* what evolve did before: coordinate moves from the best so far */
      if (tuner_propose(&l->w, &obs[best].d, NULL, 0, n % 3 == 0, &r,
                        drive_is_seen, &ds, &next, what, sizeof(what)))
        break;
    } else {
      assert_int_equal(tuner_suggest(&l->w, obs, (size_t)n, &l->seed, &r, NULL,
                                     NULL, &next, what, sizeof(what)),
                       0);
      /* never one already evaluated (without being told by `seen`) */
      assert_false(drive_is_seen(&ds, &next));
    }
    t = ls_lookup(l, &next);
    if (getenv("TUNER_TRACE")) {
      char k[64];
      param_key(&l->w, &next, k, sizeof(k));
      printf("#     %2d %-16s %.3fx  %s\n", n + 1, k, t / l->min, what);
    }
    obs[n].d = next;
    obs[n].ms = t > 0 ? t * exp(0.03 * gauss(&noise)) : -1;
    if (obs[n].ms > 0 && obs[n].ms < obs[best].ms)
      best = n;
  }
  *at = best + 1;
  return ls_lookup(l, &obs[best].d) / l->min;
}

static void ls_finish(struct landscape *l)
{
  int i;

  l->min = HUGE_VAL;
  for (i = 0; i < l->n; i++)
    if (l->ms[i] > 0 && l->ms[i] < l->min)
      l->min = l->ms[i];
}

/* examples/cpu_stencil, every configuration measured on a 2-core shared
 * machine (examples/cpu_stencil/brute.sh; the table's header says how). */
static int load_stencil(struct landscape *l)
{
  struct err e = {0, ""};
  char line[256], *seed;
  FILE *f;

  memset(l, 0, sizeof(*l));
  l->name = "cpu_stencil (measured)";
  if (workload_load("examples/cpu_stencil", &l->w, &e))
    return -1;
  seed = slurp("examples/cpu_stencil/seed.c");
  if (!seed || directive_parse(seed, &l->seed, &e)) {
    free(seed);
    return -1;
  }
  free(seed);
  f = fopen("tests/data/tuner/cpu_stencil.tsv", "r");
  if (!f)
    return -1;
  while (fgets(line, sizeof(line), f) && l->n < LS_MAX) {
    int ty, tx, u, rw;
    double ms;
    if (line[0] == '#' ||
        sscanf(line, "%d %d %d %d %lf", &ty, &tx, &u, &rw, &ms) != 5)
      continue;
    snprintf(l->key[l->n], sizeof(l->key[0]), "%d,%d,%d,%d", ty, tx, u, rw);
    l->ms[l->n++] = ms;
  }
  fclose(f);
  ls_finish(l);
  return 0;
}

static void add_param(struct workload *w, const char *name, const char *vals)
{
  struct workload_param *p = &w->params[w->nparams++];
  const char *q = vals;

  snprintf(p->name, sizeof(p->name), "%s", name);
  while (*q) {
    size_t n = strcspn(q, " ");
    snprintf(p->choices[p->nchoices++], sizeof(p->choices[0]), "%.*s", (int)n,
             q);
    q += n;
    q += strspn(q, " ");
  }
}

/* A synthetic but realistic landscape: a categorical loop order and three
 * blocking factors with an optimum that moves with the order (three
 * basins, the seed's is not the best one), a
 * cache cliff when the two tiles together get too big, an unroll whose
 * best depends on the inner tile, 4% of hash roughness and a corner that
 * fails to build (1008 configurations, spread about 7x). */
static void load_synthetic(struct landscape *l)
{
  static const char *orders[] = {"nest_a", "nest_b", "nest_c"};
  int o, a, b, u, v;

  memset(l, 0, sizeof(*l));
  l->name = "synthetic (cache cliff)";
  add_param(&l->w, "order", "nest_a nest_b nest_c");
  add_param(&l->w, "bi", "1 2 4 8 16 32 64 128");
  add_param(&l->w, "bj", "8 16 32 64 128 256 512");
  add_param(&l->w, "unroll", "1 2 3 4 6 8");
  for (o = 0; o < 3; o++)
    for (a = 0; a < 8; a++)
      for (b = 0; b < 7; b++)
        for (u = 0; u < 6; u++) {
          static const double uval[] = {1, 2, 3, 4, 6, 8};
          /* each loop order has its own basin; nest_b's is the best */
          double lt = o == 0 ? 0.12 : o == 1 ? 0 : 0.07;
          double oa = o == 0   ? 3
                      : o == 1 ? 5
                               : 1,
                 ob = o == 0   ? 4
                      : o == 1 ? 2
                               : 5;
          unsigned h = (unsigned)(((o * 8 + a) * 7 + b) * 6 + u) * 2654435761u;
          lt += 0.03 * (a - oa) * (a - oa) + 0.035 * (b - ob) * (b - ob);
          if (a + b > 8) /* the two tiles no longer fit in cache */
            lt += 0.2 * (a + b - 8);
          lt += 0.15 * fabs(log2(uval[u]) - (b >= 3 ? 2 : 1));
          if ((int)uval[u] % 3 == 0)
            lt += 0.1; /* odd unrolls leave a remainder loop */
          lt += 0.04 * ((double)(h >> 16 & 0xffff) / 65535.0 - 0.5) * 2;
          v = l->n;
          snprintf(l->key[v], sizeof(l->key[0]), "%s,%s,%s,%s", orders[o],
                   l->w.params[1].choices[a], l->w.params[2].choices[b],
                   l->w.params[3].choices[u]);
          l->ms[v] = a == 7 && b == 6 && u == 5 ? -1 : 2.0 * exp(lt);
          l->n++;
        }
  memset(&l->seed, 0, sizeof(l->seed));
  l->seed.nparams = 4;
  snprintf(l->seed.params[0].name, 64, "order");
  snprintf(l->seed.params[0].value, 64, "nest_a");
  snprintf(l->seed.params[1].name, 64, "bi");
  snprintf(l->seed.params[1].value, 64, "128");
  snprintf(l->seed.params[2].name, 64, "bj");
  snprintf(l->seed.params[2].value, 64, "512");
  snprintf(l->seed.params[3].name, 64, "unroll");
  snprintf(l->seed.params[3].value, 64, "1");
  ls_finish(l);
}

/* A second synthetic landscape, of the kind issue 26 describes: four
 * integer tunables (8 x 8 x 4 x 4 = 1024 configurations), a diagonal
 * valley (threads x block about constant, which one-coordinate moves
 * cross badly), a third knob whose best follows the first, 3% roughness;
 * spread about 5x. */
static void load_ridge(struct landscape *l)
{
  static const char *names[4] = {"threads", "block", "vec", "depth"};
  int a, b, c, d;

  memset(l, 0, sizeof(*l));
  l->name = "synthetic (diagonal valley)";
  add_param(&l->w, "threads", "1 2 4 8 16 32 64 128");
  add_param(&l->w, "block", "16 32 64 128 256 512 1024 2048");
  add_param(&l->w, "vec", "1 2 4 8");
  add_param(&l->w, "depth", "1 2 3 4");
  for (a = 0; a < 8; a++)
    for (b = 0; b < 8; b++)
      for (c = 0; c < 4; c++)
        for (d = 0; d < 4; d++) {
          unsigned h = (unsigned)(((a * 8 + b) * 4 + c) * 4 + d) * 2246822519u;
          double lt = 0.1 * (a + b - 8) * (a + b - 8) +
                      0.015 * (a - 5) * (a - 5) + 0.12 * fabs(c - a / 2.5) +
                      0.08 * abs(d - 2 - (b > 4)) +
                      0.03 * ((double)(h >> 16 & 0xffff) / 65535.0 - 0.5) * 2;
          snprintf(l->key[l->n], sizeof(l->key[0]), "%s,%s,%s,%s",
                   l->w.params[0].choices[a], l->w.params[1].choices[b],
                   l->w.params[2].choices[c], l->w.params[3].choices[d]);
          l->ms[l->n++] = 3.0 * exp(lt > 1.7 ? 1.7 + 0.1 * (lt - 1.7) : lt);
        }
  memset(&l->seed, 0, sizeof(l->seed));
  l->seed.nparams = 4;
  for (a = 0; a < 4; a++) {
    static const char *v[4] = {"1", "128", "1", "1"};
    snprintf(l->seed.params[a].name, 64, "%s", names[a]);
    snprintf(l->seed.params[a].value, 64, "%s", v[a]);
  }
  ls_finish(l);
}

/* A third synthetic landscape, not separable by construction: a roofline.
 * The time is the larger of a memory term (reuse: workgroup x tile about
 * constant; latency hiding by the pipeline stages) and a compute term
 * (ILP: tile x vector width about constant; each stage costs), times a
 * register-spill cliff when tile, vector and stages together get too
 * large, 4% roughness, and one corner (the largest workgroup with the
 * largest tile) that fails.  8 x 6 x 5 x 4 = 960 configurations, 6 of
 * them within 1.1x of the best, spread about 18x. */
static void load_roofline(struct landscape *l)
{
  static const char *names[4] = {"wg", "tile", "stages", "vec"};
  int a, t, st, v;

  memset(l, 0, sizeof(*l));
  l->name = "synthetic (roofline, max of two terms)";
  add_param(&l->w, "wg", "16 32 64 128 256 512 1024 2048");
  add_param(&l->w, "tile", "1 2 4 8 16 32");
  add_param(&l->w, "stages", "1 2 3 4 5");
  add_param(&l->w, "vec", "1 2 4 8");
  for (a = 0; a < 8; a++)
    for (t = 0; t < 6; t++)
      for (st = 0; st < 5; st++)
        for (v = 0; v < 4; v++) {
          unsigned h =
              (unsigned)(((a * 6 + t) * 5 + st) * 4 + v) * 2654435761u;
          double tm = 0.35 * abs(a + t - 7) + 0.3 * (st < 2 ? 2 - st : 0);
          double tc = 0.3 * abs(t + v - 5) + 0.12 * st;
          double x =
              exp((tm > tc ? tm : tc) +
                  0.04 * ((double)(h >> 16 & 0xffff) / 65535.0 - 0.5) * 2);
          if (t + v + st > 9) /* the registers spill */
            x *= 1.6 + 0.2 * (t + v + st - 10);
          snprintf(l->key[l->n], sizeof(l->key[0]), "%s,%s,%s,%s",
                   l->w.params[0].choices[a], l->w.params[1].choices[t],
                   l->w.params[2].choices[st], l->w.params[3].choices[v]);
          l->ms[l->n++] = a == 7 && t == 5 ? -1 : 2.0 * x;
        }
  memset(&l->seed, 0, sizeof(l->seed));
  l->seed.nparams = 4;
  for (a = 0; a < 4; a++) {
    static const char *sv[4] = {"16", "1", "1", "1"};
    snprintf(l->seed.params[a].name, 64, "%s", names[a]);
    snprintf(l->seed.params[a].value, 64, "%s", sv[a]);
  }
  ls_finish(l);
}

/* Drive 6 seeds; print them; returns how many came within 1.1x, and in
 * *old how many the coordinate moves did, *within12 within 1.2x. */
static int check_landscape(const struct landscape *l, int *old, int *within12)
{
  double worst = 0, r, ro;
  int seed, within = 0, within_old = 0, at, at_old, i;

  *within12 = 0;

  for (i = 0; i < l->n; i++)
    if (l->ms[i] > worst)
      worst = l->ms[i];
  printf("# %s: %d configurations, spread %.1fx, seed %.2fx the best\n",
         l->name, l->n, worst / l->min, ls_lookup(l, &l->seed) / l->min);
  for (seed = 1; seed <= 6; seed++) {
    r = drive(l, (uint64_t)seed, 0, &at);
    ro = drive(l, (uint64_t)seed, 1, &at_old);
    within += r <= 1.1;
    *within12 += r <= 1.2;
    within_old += ro <= 1.1;
    printf("#   seed %d: model %.3fx (found at %d), coordinate moves %.3fx "
           "(at %d)\n",
           seed, r, at, ro, at_old);
  }
  printf("# %s: within 1.1x in %d evaluations on %d of 6 seeds (coordinate "
         "moves: %d of 6)\n",
         l->name, BUDGET, within, within_old);
  if (getenv("TUNER_SEEDS")) { /* a longer look, by hand */
    int ns = (int)strtol(getenv("TUNER_SEEDS"), NULL, 10), w1 = 0, w2 = 0,
        wo = 0;
    double sum = 0;
    for (seed = 1; seed <= ns; seed++) {
      r = drive(l, (uint64_t)seed, 0, &at);
      sum += r;
      w1 += r <= 1.1;
      w2 += r <= 1.2;
      wo += drive(l, (uint64_t)seed, 1, &at_old) <= 1.1;
    }
    printf("# %s: %d seeds: within 1.1x %d, 1.2x %d, mean %.3fx; coordinate "
           "moves within 1.1x %d\n",
           l->name, ns, w1, w2, sum / ns, wo);
  }
  *old = within_old;
  return within;
}

static void test_landscape_ridge(void **state)
{
  static struct landscape l;
  (void)state;
  int old, w12, w;
  load_ridge(&l);
  assert_true(l.n == 1024);
  /* issue 26's target, and better than coordinate moves */
  w = check_landscape(&l, &old, &w12);
  assert_true(w >= 5);
  assert_true(w > old);
}

static void test_landscape_roofline(void **state)
{
  static struct landscape l;
  (void)state;
  int old, w12;
  load_roofline(&l);
  assert_true(l.n == 960);
  assert_true(check_landscape(&l, &old, &w12) >= 5);
}

static void test_landscape_stencil(void **state)
{
  static struct landscape l;
  (void)state;
  int old, w12;
  /* the table examples/cpu_stencil/brute.sh recorded (its header says
   * how): every configuration of the workload */
  assert_int_equal(load_stencil(&l), 0);
  assert_int_equal(l.n, 980);
  assert_true(check_landscape(&l, &old, &w12) >= 5);
}

static void test_landscape_synthetic(void **state)
{
  static struct landscape l;
  (void)state;
  int old, w12;
  load_synthetic(&l);
  assert_true(l.n == 1008);
  /* issue 26's target: within 1.1x in 40 on 5 of 6 seeds */
  assert_true(check_landscape(&l, &old, &w12) >= 5);
}

/* ---- inert parameters (issue 49) ----
 *
 * A hand-made landscape of 2 x 4 x 3 = 24 configurations: order=a reads
 * tile only (unroll is inert there: 3 configurations, one program, for
 * each tile), order=b reads both; 16 distinct programs. */

static void inert_space(struct workload *w)
{
  static const char *const tiles[] = {"1", "2", "4", "8"};
  int i;

  memset(w, 0, sizeof(*w));
  w->nparams = 3;
  snprintf(w->params[0].name, sizeof(w->params[0].name), "order");
  w->params[0].nchoices = 2;
  snprintf(w->params[0].choices[0], 64, "a");
  snprintf(w->params[0].choices[1], 64, "b");
  snprintf(w->params[1].name, sizeof(w->params[1].name), "tile");
  w->params[1].nchoices = 4;
  for (i = 0; i < 4; i++)
    snprintf(w->params[1].choices[i], 64, "%s", tiles[i]);
  snprintf(w->params[2].name, sizeof(w->params[2].name), "unroll");
  w->params[2].nchoices = 3;
  snprintf(w->params[2].choices[0], 64, "1");
  snprintf(w->params[2].choices[1], 64, "2");
  snprintf(w->params[2].choices[2], 64, "4");
}

static void inert_cfg(struct directive_set *d, const char *order, int tile,
                      int unroll)
{
  memset(d, 0, sizeof(*d));
  d->nparams = 3;
  snprintf(d->params[0].name, sizeof(d->params[0].name), "order");
  snprintf(d->params[0].value, sizeof(d->params[0].value), "%s", order);
  snprintf(d->params[1].name, sizeof(d->params[1].name), "tile");
  snprintf(d->params[1].value, sizeof(d->params[1].value), "%d", tile);
  snprintf(d->params[2].name, sizeof(d->params[2].name), "unroll");
  snprintf(d->params[2].value, sizeof(d->params[2].value), "%d", unroll);
}

/* What configuration d compiles to, and what it costs. */
static void inert_truth(const struct directive_set *d, char ident[17],
                        double *ms)
{
  const char *order = d->params[0].value;
  int tile = (int)strtol(d->params[1].value, NULL, 10);
  int unroll = (int)strtol(d->params[2].value, NULL, 10);

  if (!strcmp(order, "a")) {
    snprintf(ident, 17, "a%015d", tile);
    *ms = 3.0 + 0.1 * tile;
  } else {
    snprintf(ident, 17, "b%07d%08d", tile, unroll);
    *ms = 1.0 + 0.2 * tile + 0.3 / unroll;
  }
}

static void inert_obs(struct tuner_obs *o, const char *order, int tile,
                      int unroll, int with_ident)
{
  memset(o, 0, sizeof(*o));
  inert_cfg(&o->d, order, tile, unroll);
  inert_truth(&o->d, o->ident, &o->ms);
  if (!with_ident)
    o->ident[0] = '\0';
}

static void test_inert_rule(void **state)
{
  struct workload w;
  struct tuner_obs o[6];
  struct directive_set d;
  char why[200];

  (void)state;
  inert_space(&w);
  inert_obs(&o[0], "a", 2, 1, 1);
  inert_obs(&o[1], "a", 2, 2, 1); /* the same program as o[0] */
  inert_obs(&o[2], "b", 2, 1, 1);
  inert_obs(&o[3], "b", 2, 2, 1); /* another program than o[2] */
  inert_obs(&o[4], "a", 4, 1, 1);
  inert_obs(&o[5], "a", 8, 2, 1); /* differs in two: no rule */
  inert_cfg(&d, "a", 2, 4);
  assert_int_equal(tuner_inert(&w, o, 6, &d, why, sizeof(why)), 1);
  assert_non_null(strstr(why, "unroll is inert here"));
  assert_non_null(strstr(why, "observations 0 and 1"));
  inert_cfg(&d, "a", 4, 4); /* another tile: not learned (yet) */
  assert_int_equal(tuner_inert(&w, o, 6, &d, NULL, 0), 0);
  inert_cfg(&d, "b", 2, 4); /* order b reads unroll */
  assert_int_equal(tuner_inert(&w, o, 6, &d, NULL, 0), 0);
  inert_cfg(&d, "a", 8, 1);
  assert_int_equal(tuner_inert(&w, o, 6, &d, NULL, 0), 0);
  /* without identities nothing is learned */
  inert_obs(&o[0], "a", 2, 1, 0);
  inert_obs(&o[1], "a", 2, 2, 0);
  inert_cfg(&d, "a", 2, 4);
  assert_int_equal(tuner_inert(&w, o, 6, &d, NULL, 0), 0);
}

struct obs_seen {
  const struct tuner_obs *o;
  int n;
};

static int obs_is_seen(void *ud, const struct directive_set *d)
{
  const struct obs_seen *os = ud;
  int i;

  for (i = 0; i < os->n; i++)
    if (!strcmp(os->o[i].d.params[0].value, d->params[0].value) &&
        !strcmp(os->o[i].d.params[1].value, d->params[1].value) &&
        !strcmp(os->o[i].d.params[2].value, d->params[2].value))
      return 1;
  return 0;
}

/* Everything observed but (a, 2, 4), which the pair shows inert, and
 * (b, 8, 4): both proposers offer the latter and never the former, then
 * nothing. */
static void test_inert_not_proposed(void **state)
{
  static struct tuner_obs o[24];
  static const char *const orders[] = {"a", "b"};
  static const int tiles[] = {1, 2, 4, 8}, unrolls[] = {1, 2, 4};
  struct workload w;
  struct directive_set d, parent;
  struct select_rng r;
  struct obs_seen os = {o, 0};
  char what[256];
  int i, j, k, n = 0;

  (void)state;
  inert_space(&w);
  for (i = 0; i < 2; i++)
    for (j = 0; j < 4; j++)
      for (k = 0; k < 3; k++) {
        if ((i == 0 && tiles[j] == 2 && unrolls[k] == 4) ||
            (i == 1 && tiles[j] == 8 && unrolls[k] == 4))
          continue;
        inert_obs(&o[n++], orders[i], tiles[j], unrolls[k], 1);
      }
  os.n = n;
  inert_cfg(&parent, "a", 2, 2);
  for (i = 0; i < 20; i++) {
    select_rng_seed(&r, (uint64_t)i + 1);
    assert_int_equal(tuner_suggest(&w, o, (size_t)n, &parent, &r, NULL, NULL,
                                   &d, what, sizeof(what)),
                     0);
    assert_string_equal(d.params[0].value, "b");
    assert_string_equal(d.params[1].value, "8");
    assert_int_equal(tuner_propose(&w, &parent, o, (size_t)n, i % 2, &r,
                                   obs_is_seen, &os, &d, what, sizeof(what)),
                     0);
    assert_string_equal(d.params[0].value, "b");
    assert_string_equal(d.params[1].value, "8");
  }
  /* today's behaviour without the identities: (a, 2, 4) is offered */
  for (i = 0; i < n; i++)
    o[i].ident[0] = '\0';
  select_rng_seed(&r, 3);
  for (i = 0, k = 0; i < 20; i++) {
    assert_int_equal(tuner_propose(&w, &parent, o, (size_t)n, 0, &r,
                                   obs_is_seen, &os, &d, what, sizeof(what)),
                     0);
    k += !strcmp(d.params[0].value, "a");
  }
  assert_true(k > 0);
  /* with them, and (b, 8, 4) observed too: nothing is left */
  for (i = 0; i < n; i++)
    inert_truth(&o[i].d, o[i].ident, &o[i].ms);
  inert_obs(&o[n++], "b", 8, 4, 1);
  os.n = n;
  select_rng_seed(&r, 4);
  assert_int_equal(tuner_suggest(&w, o, (size_t)n, &parent, &r, NULL, NULL, &d,
                                 what, sizeof(what)),
                   ERR_NOTFOUND);
  assert_int_equal(tuner_propose(&w, &parent, o, (size_t)n, 1, &r, obs_is_seen,
                                 &os, &d, what, sizeof(what)),
                   ERR_NOTFOUND);
}

/* The whole landscape walked by tuner_suggest where a program's identity
 * is known only once it was evaluated (as an object hash would be):
 * every distinct program is found, and the evaluations that repeat a
 * program fall from 8 (the unroll values beyond the first, for each tile
 * under order=a) to 4 (the one that teaches each tile's rule). */
static void test_inert_walk(void **state)
{
  static struct tuner_obs o[24];
  struct workload w;
  struct directive_set d;
  struct select_rng r;
  char what[256];
  int learn, seed;

  (void)state;
  inert_space(&w);
  for (learn = 0; learn < 2; learn++)
    for (seed = 1; seed <= 6; seed++) {
      int n = 1, dups = 0, distinct = 1, i;
      select_rng_seed(&r, (uint64_t)seed);
      inert_obs(&o[0], "a", 1, 1, learn);
      while (n < 24) {
        char id[17];
        double ms;
        if (tuner_suggest(&w, o, (size_t)n, &o[0].d, &r, NULL, NULL, &d, what,
                          sizeof(what)))
          break;
        inert_truth(&d, id, &ms);
        for (i = 0; i < n; i++) {
          char oid[17];
          double oms;
          inert_truth(&o[i].d, oid, &oms);
          if (!strcmp(oid, id))
            break;
        }
        dups += i < n;
        distinct += i == n;
        o[n].d = d;
        o[n].ms = ms;
        snprintf(o[n].ident, sizeof(o[n].ident), "%s", learn ? id : "");
        n++;
      }
      assert_int_equal(distinct, 16);
      assert_int_equal(dups, learn ? 4 : 8);
      assert_int_equal(n, learn ? 20 : 24);
    }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_space_and_format),
      cmocka_unit_test(test_coordinate_move),
      cmocka_unit_test(test_never_seen_and_exhaustion),
      cmocka_unit_test(test_meta_stats),
      cmocka_unit_test(test_inert_rule),
      cmocka_unit_test(test_inert_not_proposed),
      cmocka_unit_test(test_inert_walk),
      cmocka_unit_test(test_gemm_candidates_are_valid),
      cmocka_unit_test(test_landscape_synthetic),
      cmocka_unit_test(test_landscape_ridge),
      cmocka_unit_test(test_landscape_roofline),
      cmocka_unit_test(test_landscape_stencil),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
