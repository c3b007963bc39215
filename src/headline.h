/* headline.h - the one speedup a run is summed up by (docs/evolve.md,
 * "Confirmation and noise").
 *
 * The headline is the end-of-run confirmation's figure with its 95%
 * interval when the confirmation measured the best; otherwise the
 * search's own figure, labelled "unconfirmed".  It is against the bar
 * when the workload has one (runs.baseline_json holds a size), else
 * against the seed, and says which.  `cuco evolve`'s summary and best.EXT,
 * `cuco report` and `cuco serve` all print it through headline_text(), so
 * they say the same thing.
 */
#ifndef CUCO_HEADLINE_H
#define CUCO_HEADLINE_H

#include <stddef.h>

#include <jansson.h>

struct headline {
  long long program_id; /* the run's best; 0: none yet */
  double speedup;       /* <= 0: not measured */
  double lo, hi;        /* the 95% interval (confirmed only) */
  int rounds;           /* the confirmation's rounds (confirmed only) */
  int confirmed;        /* the figure is the confirmation's */
  int has_bar;          /* against the bar; else against the seed */
  int is_seed;          /* the best is the seed itself */
};

/* "14.6x the bar, 95% CI [13.9, 15.3], confirmed over 3 rounds",
 * "36.6x the seed, unconfirmed (the search's single measurement)",
 * "1x: the best is the seed" or "no speedup measured yet" into out (n
 * bytes); returns out. */
const char *headline_text(const struct headline *h, char *out, size_t n);

/* The short form for a legend: "14.6x the bar, confirmed [13.9, 15.3]"
 * or "36.6x the seed, unconfirmed"; returns out. */
const char *headline_short(const struct headline *h, char *out, size_t n);

/* Take the confirmation of h->program_id from rows (the confirmations
 * table as JSON objects: program_id, versus, verdict, ratio, lo, hi,
 * rounds; borrowed): the newest "best" row against the bar (has_bar) or
 * the seed.  Leaves h unconfirmed when there is none. */
void headline_pick(struct headline *h, const json_t *rows);

/* h as a new JSON object {program_id, speedup, lo, hi, rounds, confirmed,
 * is_seed, versus ("bar" | "seed"), text}; NULL when out of memory. */
json_t *headline_json(const struct headline *h);

/* The inverse of headline_json: h from such an object (NULL or missing
 * keys leave zeros: no best, nothing measured). */
void headline_parse(const json_t *j, struct headline *h);

#endif
