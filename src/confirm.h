/* confirm.h - the end-of-run confirmation of the best (docs/evolve.md).
 *
 * Before a run ends, the incumbent best, the next `confirm` fastest
 * correct candidates and the seed are measured again, interleaved, for
 * `confirm_rounds` rounds (each round every one of them once, the order
 * rotating).  A contender whose paired ratio to the incumbent (its time
 * over the incumbent's, same round) has a 95% t-interval of the log ratio
 * entirely below 1 is faster beyond the noise and becomes the best; one
 * whose interval holds 1 is "within noise".  Then the best and its closest
 * rival get paired rounds of their own until their interval separates
 * them, up to `confirm_max_rounds` (when the gap and the noise, the
 * larger of their pairs' spread and the noise floor, say the cap can do
 * it; else the summary says it could not).  When the seed's spread over
 * the rounds is beyond noise_threshold of its median, the rounds are
 * repeated once and the summary says so.  Every comparison is a row of
 * table confirmations.
 */
#ifndef CUCO_CONFIRM_H
#define CUCO_CONFIRM_H

#include <stddef.h>

#include "err.h"

struct evolve;

/* Run the confirmation (lock NOT held; no worker running).  May change
 * s->best_id (and rewrite best.EXT and runs.best_program_id).  The lines
 * for the summary go to s->confirm_text.  0, or a fatal error (the
 * database); a candidate failing its re-run is a verdict, not an error. */
int confirm_best(struct evolve *s, struct err *e) WARN_UNUSED;

/* The noise floor of the machine (issue 49): the seed against itself,
 * `noise_floor_rounds` paired rounds (the search's own evaluation of the
 * seed is the first half of the first pair; 2 x rounds - 1 evaluations
 * more), interleaved with alternating order.  Sets s->floor_* (the paired
 * log ratios' root mean square and their 95% interval), prints and keeps
 * "noise floor: the seed against itself differs by X% (95% interval
 * [a, b]) ..." for the summary, and stores a confirmations row (versus
 * "itself", verdict "noise floor").  Lock NOT held; no worker running.
 * 0, or a fatal error. */
int confirm_floor(struct evolve *s, struct err *e) WARN_UNUSED;

/* The run's headline (headline.h) into s->headline, read back from the
 * database as `cuco report` and `cuco serve` read it, so that the summary
 * and best.EXT say what they say.  A database that cannot be read is
 * warned about and leaves it unconfirmed.  No worker running. */
void confirm_headline(struct evolve *s);

/* 95% interval of exp(mean of x[0..n)) by Student's t (n >= 2; for n < 2
 * lo = hi = the ratio).  Returns exp(mean). */
double confirm_interval(const double *x, int n, double *lo, double *hi);

/* Half the range of x[0..n) over its median (0 for n < 2). */
double confirm_spread(const double *x, int n);

#endif
