/* tuner.h - the offline proposer: mutate directives and params.
 *
 * With no LLM the search still runs: each new candidate is its parent with
 * other directive/param values.  The space is the workload's [space] and
 * [params] (a dimension with fewer than two values is fixed).  Moves:
 *  - exploit: a coordinate move (one dimension one step: the next/previous
 *    chunk size or numeric choice, another value of a categorical one),
 *    every 1-step neighbour tried in random order, then 2-step ones;
 *  - explore: the same, but 15% of the time a random restart (a uniformly
 *    drawn configuration), and a 2-coordinate move half of the time;
 *  - anything the caller says was seen (already in the database) is
 *    skipped; when the whole neighbourhood is seen, a random restart.
 */
#ifndef CUCO_TUNER_H
#define CUCO_TUNER_H

#include <stddef.h>

#include "directive.h"
#include "err.h"
#include "select.h"

struct workload;

/* Has this configuration been evaluated (or queued) already?  Non-zero =
 * yes, skip it. */
typedef int (*tuner_seen_fn)(void *ud, const struct directive_set *d);

/* One evaluated configuration: its directives, its median (ms <= 0: it
 * failed) and what it compiles to (progid.h; "" when not known). */
struct tuner_obs {
  struct directive_set d;
  double ms;
  char ident[17];
};

/* Propose a configuration near `parent` (its values outside the space are
 * snapped to the first allowed value).  *out receives it; `what` a short
 * description of the move ("chunk 64KiB -> 128KiB").  Configurations the
 * observations obs[0..nobs) (may be NULL) show inert (tuner_inert) are not
 * proposed.  ERR_NOTFOUND when every configuration tried was seen (the
 * space looks exhausted). */
int tuner_propose(const struct workload *w, const struct directive_set *parent,
                  const struct tuner_obs *obs, size_t nobs, int explore,
                  struct select_rng *rng, tuner_seen_fn seen, void *ud,
                  struct directive_set *out, char *what,
                  size_t whatn) WARN_UNUSED;

/* Inert parameters, learned (issue 49): when two observed configurations
 * differ only in dimension P and compile to the same program (the same
 * non-empty ident), P is inert given the others' values, and the tuner
 * proposes no other value of P with those values of the others.  Returns
 * 1 when configuration d falls under such a rule (why, if given, names P
 * and the pair), else 0. */
int tuner_inert(const struct workload *w, const struct tuner_obs *obs,
                size_t nobs, const struct directive_set *d, char *why,
                size_t whyn);

/* The model-based proposer (docs/evolve.md, "The offline tuner"): over
 * the observations obs[0..nobs) (configurations outside the space are
 * ignored), first a space-filling design of 2D+1 points (maximin distance
 * to what was observed, D = the dimensions with two or more values), then
 * the configuration of the largest expected improvement under a Gaussian
 * process fitted to log(ms) (failures count as 1.5x the worst), inside a
 * trust region around the best (Chebyshev index radius: halved after 3
 * model steps in a row without a new best, doubled after 2 with one);
 * every 3rd model step within one index step of the best.  Never
 * proposes an observed configuration, one `seen` says was seen, or one
 * the observations show inert (tuner_inert).  *out is
 * `base` with the new values; `what` says why.  ERR_NOTFOUND when nothing
 * unseen is left (or nothing is tunable); ERR_NOMEM. */
int tuner_suggest(const struct workload *w, const struct tuner_obs *obs,
                  size_t nobs, const struct directive_set *base,
                  struct select_rng *rng, tuner_seen_fn seen, void *ud,
                  struct directive_set *out, char *what,
                  size_t whatn) WARN_UNUSED;

/* Number of configurations in the space (capped at 1e9). */
double tuner_space_size(const struct workload *w);

/* "64KiB", "1MiB", "4096" for a byte count (powers of two of KiB/MiB/GiB
 * get a suffix). */
void tuner_format_bytes(unsigned long long b, char *out, size_t n);

#endif
