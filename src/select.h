/* select.h - parent selection and the search's random numbers.
 *
 * Selection works on plain arrays (one entry per correct program of an
 * island) so it can be tested without a database:
 *  - weighted (default): w_i = sigmoid(lambda * (s_i - median) / MAD)
 *    * 1 / (1 + children_i), sampled proportionally;
 *  - power-law: rank r (0 = best) drawn with weight (r + 1)^-alpha;
 *  - hill-climb: always the best.
 * Scores are "higher is better".
 */
#ifndef CUCO_SELECT_H
#define CUCO_SELECT_H

#include <stddef.h>
#include <stdint.h>

/* A small deterministic RNG (splitmix64 seeded, xorshift64*). */
struct select_rng {
  uint64_t s;
};

void select_rng_seed(struct select_rng *r, uint64_t seed);
uint64_t select_rng_next(struct select_rng *r);
/* Uniform in [0, 1). */
double select_rng_uniform(struct select_rng *r);
/* Uniform integer in [0, n); 0 when n == 0. */
size_t select_rng_below(struct select_rng *r, size_t n);

enum select_kind {
  SELECT_WEIGHTED = 0,
  SELECT_POWER = 1,
  SELECT_HILL = 2,
};

/* "weighted", "power", "hill" -> kind; -1 when unknown. */
int select_kind_parse(const char *name);

struct select_params {
  enum select_kind kind;
  double lambda; /* weighted: sigmoid sharpness (default 8) */
  double alpha;  /* power-law exponent (default 1) */
};

/* The weights the weighted scheme gives (w[0..n)), for tests and logs.
 * A MAD of 0 (all scores equal) gives every program sigmoid(0) = 0.5
 * before the children factor. */
void select_weights(const double *score, const int *children, size_t n,
                    double lambda, double *w);

/* Pick an index in [0, n) (n > 0) by the scheme. */
size_t select_parent(const struct select_params *p, const double *score,
                     const int *children, size_t n, struct select_rng *rng);

/* Median of x[0..n) (copied, x untouched); 0 when n == 0. */
double select_median(const double *x, size_t n);

#endif
