/* charts.h - the report's figures, drawn as SVG from rundb's JSON.
 *
 * Each function appends one <svg> element (or a short note when there is
 * nothing to draw) to out, and returns 0 or the emitter's sticky error
 * with its message in *e.  The JSON is borrowed.
 */
#ifndef CUCO_CHARTS_H
#define CUCO_CHARTS_H

#include <jansson.h>

#include "buf.h"
#include "err.h"

/* Score over candidates, one colour per island, with each island's
 * highest score so far; failed and rejected candidates are marks in a band
 * below the axis; migrate copies (not candidates) are hollow marks of class
 * "pt migrate", left out of the lines.  best (the run's best program,
 * rundb_program(), or NULL) is ringed and named in the legend with its id,
 * best_label (headline_short(): the confirmed speedup, or the search's
 * labelled unconfirmed; NULL: none) and score, as `cuco evolve`'s summary
 * names it.  A legend wider than the figure wraps onto more rows (the plot
 * moves down).  points: rundb_plot()'s "points".  Each mark has class
 * "pt". */
int charts_scores(const json_t *points, const json_t *best,
                  const char *best_label, struct buf *out,
                  struct err *e) WARN_UNUSED;

/* The lineage tree of programs (rundb_programs()), one row per generation,
 * edges to parent (solid) and parent2 (dashed).  Each node has class
 * "node" and data-id. */
int charts_lineage(const json_t *programs, struct buf *out,
                   struct err *e) WARN_UNUSED;

/* Best and mean score per directive value (rundb_plot()'s by_directive). */
int charts_directives(const json_t *by_directive, struct buf *out,
                      struct err *e) WARN_UNUSED;

/* Cumulative LLM cost over time since t0 (rundb_plot()'s "cost"). */
int charts_cost(const json_t *cost, double t0, struct buf *out,
                struct err *e) WARN_UNUSED;

#endif
