/* select.c - parent selection (select.h). */
#include "select.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void select_rng_seed(struct select_rng *r, uint64_t seed)
{
  /* splitmix64 so that nearby seeds give unrelated streams */
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL;

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  r->s = (z ^ (z >> 31)) | 1; /* xorshift must not be 0 */
}

uint64_t select_rng_next(struct select_rng *r)
{
  uint64_t x = r->s;

  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 0x2545f4914f6cdd1dULL;
}

double select_rng_uniform(struct select_rng *r)
{
  return (double)(select_rng_next(r) >> 11) / 9007199254740992.0;
}

size_t select_rng_below(struct select_rng *r, size_t n)
{
  return n ? (size_t)(select_rng_next(r) % n) : 0;
}

int select_kind_parse(const char *name)
{
  if (!strcmp(name, "weighted"))
    return SELECT_WEIGHTED;
  if (!strcmp(name, "power"))
    return SELECT_POWER;
  if (!strcmp(name, "hill"))
    return SELECT_HILL;
  return -1;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return (x > y) - (x < y);
}

double select_median(const double *x, size_t n)
{
  double *c, m;

  if (!n)
    return 0;
  c = malloc(n * sizeof(*c));
  if (!c)
    return x[0];
  memcpy(c, x, n * sizeof(*c));
  qsort(c, n, sizeof(*c), cmp_double);
  m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
  free(c);
  return m;
}

void select_weights(const double *score, const int *children, size_t n,
                    double lambda, double *w)
{
  double med = select_median(score, n), mad, *dev;
  size_t i;

  if (!n)
    return;
  dev = malloc(n * sizeof(*dev));
  if (!dev) {
    for (i = 0; i < n; i++)
      w[i] = 1;
    return;
  }
  for (i = 0; i < n; i++)
    dev[i] = fabs(score[i] - med);
  mad = select_median(dev, n);
  free(dev);
  for (i = 0; i < n; i++) {
    double z = mad > 0 ? lambda * (score[i] - med) / mad : 0;
    w[i] = 1.0 / (1.0 + exp(-z)) / (1.0 + (children ? children[i] : 0));
  }
}

/* Sort idx[0..n) by score, best first (insertion sort: islands hold at
 * most a few hundred programs, and qsort has no context argument). */
static void sort_by_score(size_t *idx, const double *score, size_t n)
{
  size_t i, j, t;

  for (i = 1; i < n; i++) {
    t = idx[i];
    for (j = i; j > 0 && score[idx[j - 1]] < score[t]; j--)
      idx[j] = idx[j - 1];
    idx[j] = t;
  }
}

static size_t best_index(const double *score, size_t n)
{
  size_t i, b = 0;

  for (i = 1; i < n; i++)
    if (score[i] > score[b])
      b = i;
  return b;
}

/* Sample an index proportionally to w[0..n). */
static size_t sample(const double *w, size_t n, struct select_rng *rng)
{
  double tot = 0, u;
  size_t i;

  for (i = 0; i < n; i++)
    tot += w[i];
  if (!(tot > 0))
    return select_rng_below(rng, n);
  u = select_rng_uniform(rng) * tot;
  for (i = 0; i < n; i++) {
    if (u < w[i])
      return i;
    u -= w[i];
  }
  return n - 1;
}

size_t select_parent(const struct select_params *p, const double *score,
                     const int *children, size_t n, struct select_rng *rng)
{
  double *w;
  size_t i, pick, *idx;

  if (n <= 1 || p->kind == SELECT_HILL)
    return n ? best_index(score, n) : 0;
  w = malloc(n * sizeof(*w));
  idx = malloc(n * sizeof(*idx));
  if (!w || !idx) {
    free(w);
    free(idx);
    return best_index(score, n);
  }
  if (p->kind == SELECT_POWER) {
    for (i = 0; i < n; i++)
      idx[i] = i;
    sort_by_score(idx, score, n);
    for (i = 0; i < n; i++)
      w[i] = pow((double)(i + 1), -(p->alpha > 0 ? p->alpha : 1));
    pick = idx[sample(w, n, rng)];
  } else {
    select_weights(score, children, n, p->lambda > 0 ? p->lambda : 8, w);
    pick = sample(w, n, rng);
  }
  free(w);
  free(idx);
  return pick;
}
