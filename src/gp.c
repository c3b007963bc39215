/* gp.c - Gaussian-process regression for the tuner (gp.h). */
#include "gp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double matern52(double r2)
{
  double r = sqrt(5 * r2);

  return (1 + r + 5 * r2 / 3) * exp(-r);
}

/* (1 - w) x the product Matern over all coordinates + w x the mean of
 * one-coordinate Materns: the additive part generalises from few points
 * along each axis, the product part keeps the interactions. */
static double kernel(const struct gp *g, const double *a, const double *b)
{
  double r2 = 0, add = 0;
  int i;

  for (i = 0; i < g->d; i++) {
    double t = g->categorical[i] ? (a[i] != b[i]) : a[i] - b[i];
    t /= g->ls[i];
    r2 += t * t;
    if (g->additive > 0)
      add += matern52(t * t);
  }
  return (1 - g->additive) * matern52(r2) + g->additive * add / g->d;
}

/* Cholesky of the n x n matrix a (lower, in place); -1 when not positive. */
static int cholesky(double *a, int n)
{
  int i, j, k;

  for (j = 0; j < n; j++) {
    double s = a[j * n + j];
    for (k = 0; k < j; k++)
      s -= a[j * n + k] * a[j * n + k];
    if (s <= 1e-12)
      return -1;
    a[j * n + j] = sqrt(s);
    for (i = j + 1; i < n; i++) {
      double t = a[i * n + j];
      for (k = 0; k < j; k++)
        t -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = t / a[j * n + j];
    }
    for (i = 0; i < j; i++)
      a[i * n + j] = 0;
  }
  return 0;
}

/* Solve L z = b (forward) into z. */
static void forward(const double *l, int n, const double *b, double *z)
{
  int i, k;

  for (i = 0; i < n; i++) {
    double t = b[i];
    for (k = 0; k < i; k++)
      t -= l[i * n + k] * z[k];
    z[i] = t / l[i * n + i];
  }
}

/* Solve L^T z = b (backward) into z. */
static void backward(const double *l, int n, const double *b, double *z)
{
  int i, k;

  for (i = n - 1; i >= 0; i--) {
    double t = b[i];
    for (k = i + 1; k < n; k++)
      t -= l[k * n + i] * z[k];
    z[i] = t / l[i * n + i];
  }
}

/* Factor K + noise I for the current hyperparameters; the log marginal
 * likelihood of the standardised targets ys, or -HUGE_VAL. */
static double factor(struct gp *g, const double *ys, double *tmp)
{
  int n = g->n, i, j;
  double lml = 0;

  for (i = 0; i < n; i++)
    for (j = 0; j <= i; j++) {
      double k = kernel(g, g->x + i * g->d, g->x + j * g->d);
      g->l[i * n + j] = g->l[j * n + i] = k + (i == j ? g->noise : 0);
    }
  if (cholesky(g->l, n))
    return -HUGE_VAL;
  forward(g->l, n, ys, tmp);
  backward(g->l, n, tmp, g->alpha);
  for (i = 0; i < n; i++)
    lml -= 0.5 * ys[i] * g->alpha[i] + log(g->l[i * n + i]);
  return lml;
}

int gp_fit(struct gp *g, const double *x, const double *y, int n, int d,
           const int *categorical)
{
  static const double scales[] = {0.08, 0.15, 0.3, 0.6, 1.2, 2.5};
  static const double noises[] = {1e-3, 1e-2, 5e-2, 0.2};
  /* the mix is fixed: chosen by marginal likelihood it did worse on the
   * test landscapes (tests/unit/test_tuner.c) than one half */
  static const double mixes[] = {0.5};
  double *ys = NULL, *tmp = NULL, best = -HUGE_VAL, bnoise = 1e-2, bmix = 0.5;
  double bls[GP_MAX_DIMS];
  int i, pass, di, si, ni;

  memset(g, 0, sizeof(*g));
  if (n < 1 || n > GP_MAX_POINTS || d < 1 || d > GP_MAX_DIMS)
    return ERR_USAGE;
  g->n = n;
  g->d = d;
  g->x = malloc(sizeof(double) * (size_t)n * (size_t)d);
  g->l = malloc(sizeof(double) * (size_t)n * (size_t)n);
  g->alpha = malloc(sizeof(double) * (size_t)n);
  ys = malloc(sizeof(double) * (size_t)n);
  tmp = malloc(sizeof(double) * (size_t)n);
  if (!g->x || !g->l || !g->alpha || !ys || !tmp) {
    free(ys);
    free(tmp);
    gp_release(g);
    return ERR_NOMEM;
  }
  memcpy(g->x, x, sizeof(double) * (size_t)n * (size_t)d);
  for (i = 0; i < d; i++) {
    g->categorical[i] = categorical ? categorical[i] : 0;
    g->ls[i] = bls[i] = 0.3;
  }
  for (i = 0; i < n; i++)
    g->mean += y[i] / n;
  for (i = 0; i < n; i++)
    g->sd += (y[i] - g->mean) * (y[i] - g->mean) / n;
  g->sd = g->sd > 1e-12 ? sqrt(g->sd) : 1;
  for (i = 0; i < n; i++)
    ys[i] = (y[i] - g->mean) / g->sd;
  /* coordinate ascent of the marginal likelihood over the grids: the
   * mix (-2), the noise (-1), then each length scale */
  for (pass = 0; pass < 2; pass++)
    for (di = -2; di < d; di++) {
      int nsteps = di == -2   ? (int)(sizeof(mixes) / sizeof(mixes[0]))
                   : di == -1 ? (int)(sizeof(noises) / sizeof(noises[0]))
                              : (int)(sizeof(scales) / sizeof(scales[0]));
      for (si = 0; si < nsteps; si++) {
        double lml;
        memcpy(g->ls, bls, sizeof(bls));
        g->noise = bnoise;
        g->additive = bmix;
        if (di == -2)
          g->additive = mixes[si];
        else if (di == -1)
          g->noise = noises[si];
        else
          g->ls[di] = scales[si];
        lml = factor(g, ys, tmp);
        if (lml > best) {
          best = lml;
          if (di == -2)
            bmix = mixes[si];
          else if (di == -1)
            bnoise = noises[si];
          else
            bls[di] = scales[si];
        }
      }
    }
  memcpy(g->ls, bls, sizeof(bls));
  g->noise = bnoise;
  g->additive = bmix;
  for (ni = 0; factor(g, ys, tmp) == -HUGE_VAL && ni < 6; ni++)
    g->noise *= 10; /* a degenerate fit (duplicates): more noise */
  free(ys);
  free(tmp);
  return 0;
}

void gp_predict(const struct gp *g, const double *x, double *mu, double *sigma)
{
  double ks[GP_MAX_POINTS] = {0}, v[GP_MAX_POINTS], m = 0, var = 1;
  int i;

  for (i = 0; i < g->n; i++) {
    ks[i] = kernel(g, x, g->x + i * g->d);
    m += ks[i] * g->alpha[i];
  }
  forward(g->l, g->n, ks, v);
  for (i = 0; i < g->n; i++)
    var -= v[i] * v[i];
  *mu = g->mean + g->sd * m;
  *sigma = g->sd * sqrt(var > 1e-12 ? var : 1e-12);
}

double gp_expected_improvement(double mu, double sigma, double best)
{
  double z;

  if (sigma <= 0)
    return best > mu ? best - mu : 0;
  z = (best - mu) / sigma;
  return sigma * (z * 0.5 * erfc(-z / sqrt(2)) +
                  exp(-0.5 * z * z) * 0.3989422804014327);
}

void gp_release(struct gp *g)
{
  if (!g)
    return;
  free(g->x);
  free(g->l);
  free(g->alpha);
  g->x = g->l = g->alpha = NULL;
}
