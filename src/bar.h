/* bar.h - the bar: per bench size, the fastest of the workload's bar
 * baselines ([workload] bar, default baselines[0]; docs/contracts.md
 * sections 2 and 5).
 *
 * `cuco evolve` stores the result as runs.baseline_json, `cuco eval
 * --impl all` prints it, `cuco report` reads it back.  The shape, per
 * bench size (older databases have only the timing keys):
 *   {"SIZE": {"median_ms": .., "p10_ms": .., ...   the bar baseline's timing
 *             "bar": "baseline_overlap.cu",         which baseline it is
 *             "baselines": {"baseline.cu": {"median_ms": ..}, ...}}}
 */
#ifndef CUCO_BAR_H
#define CUCO_BAR_H

#include <jansson.h>

/* The median of SIZE in eval metrics M: {"bench": {SIZE: {"timing":
 * {"median_ms"}}}} or {"bench": {SIZE: {"median_ms"}}}; NAN when absent
 * or not a positive finite number. */
double bar_metrics_median(const json_t *m, const char *size);

/* Build the bar from N measured baselines: NAMES[i] and their eval
 * metrics METRICS[i] (NULL for one that failed; borrowed).  Only the
 * baselines named in BAR (NBAR entries) compete; a size is in the result
 * when at least one of them has a median there, its row being the
 * fastest one's timing plus "bar" and "baselines" (every measured
 * baseline's median at that size, bar or not).  Ties go to the earlier
 * name in BAR.  Returns a new object (empty when no bar baseline has a
 * median) or NULL when out of memory. */
json_t *bar_build(const char *const *names, const json_t *const *metrics,
                  int n, const char (*bar)[128], int nbar);

/* The baseline that is the bar at SIZE in a stored baseline_json (NULL
 * when the row does not say: a database from before the bar). */
const char *bar_name(const json_t *baseline, const char *size);

/* Geometric mean over the sizes of BASELINE's median_ms (what speedups
 * divide); -1 when there is none. */
double bar_mean(const json_t *baseline);

#endif
