/* gp.h - a small Gaussian-process regression (the tuner's surrogate).
 *
 * Inputs are points of a mixed space: ordered coordinates in [0, 1] and
 * categorical ones (a value index; two points differ by 1 or 0 there).
 * Kernel: Matern 5/2 with one length scale per coordinate, a mix of the
 * product over all coordinates (interactions) and the mean of
 * one-coordinate kernels (an additive part that generalises from few
 * points); targets are standardised inside; the length scales, the mix
 * and the noise level are chosen from small grids by the log marginal
 * likelihood.  Sizes are small (up to
 * GP_MAX_POINTS observations), so everything is dense Cholesky.
 */
#ifndef CUCO_GP_H
#define CUCO_GP_H

#include <stddef.h>

#include "err.h"

#define GP_MAX_DIMS   24
#define GP_MAX_POINTS 256

struct gp {
  int d, n;
  int categorical[GP_MAX_DIMS]; /* 1: coordinate is a value index */
  double ls[GP_MAX_DIMS];       /* length scales */
  double noise;                 /* noise variance (standardised units) */
  double additive;              /* weight of the additive kernel part */
  double mean, sd;              /* of the targets */
  double *x;                    /* n x d */
  double *l;                    /* n x n Cholesky factor of K + noise I */
  double *alpha;                /* (K + noise I)^-1 (y - mean) / sd */
};

/* Fit a GP to n points x (n x d, row-major) with targets y.  categorical
 * may be NULL (all ordered).  The gp owns copies.  ERR_USAGE for n < 1,
 * n > GP_MAX_POINTS or d out of range; ERR_NOMEM. */
int gp_fit(struct gp *g, const double *x, const double *y, int n, int d,
           const int *categorical) WARN_UNUSED;

/* Posterior mean and standard deviation at point x (in target units). */
void gp_predict(const struct gp *g, const double *x, double *mu,
                double *sigma);

/* Expected improvement below `best` (minimisation) for a prediction. */
double gp_expected_improvement(double mu, double sigma, double best);

void gp_release(struct gp *g);

#endif
