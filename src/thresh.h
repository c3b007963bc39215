/* thresh.h - accuracy thresholds frozen from the baseline's own error.
 *
 * The first passing run of a workload's first baseline at a size measures
 * its own error against the reference: the global relative L2, the worst
 * row's and the worst block's (RESULT.json verify.checks, or a freeform
 * program's "rel_l2" / "row_rel_l2" / "block_rel_l2").  Each threshold is
 * frozen at min(cap, max(floor, 2 x that error)) and stored in
 * CACHE/thresholds/WORKLOAD.json under a key naming the size's params, the
 * rank counts and an xxh64 of the baseline's and reference's text (editing
 * either freezes anew).  Every later eval of that workload/size uses them
 * (docs/contracts.md section 4c).  The file is untrusted input: a malformed
 * one is an error naming it, never silently replaced.
 */
#ifndef CUCO_THRESH_H
#define CUCO_THRESH_H

#include <jansson.h>

#include "err.h"

struct workload;

/* One size's thresholds.  A threshold of 0 means "no such check". */
struct thresh {
  double rel_l2, row, block;          /* the thresholds */
  double err_rel, err_row, err_block; /* the baseline's own errors */
  double floor, cap;                  /* the bounds used */
  char baseline[128];                 /* the file that set them */
  double frozen_at;                   /* unix time */
};

/* The bounds of workload W: cap = [tolerance] rel_l2 (default 2e-2, the
 * runtime's default tol), floor = [tolerance] floor (default cap / 100). */
void thresh_bounds(const struct workload *w, double *floor, double *cap);

/* min(cap, max(floor, 2 * err)); err < 0 or NaN gives cap. */
double thresh_freeze_one(double err, double floor, double cap);

/* Fill *t from the baseline's errors (an error < 0: not measured, that
 * threshold stays 0 = no check). */
void thresh_freeze(struct thresh *t, double err_rel, double err_row,
                   double err_block, double floor, double cap,
                   const char *baseline);

/* The baseline's errors in a runtime RESULT.json: the maxima over its
 * passed output checks (records "(inputs)"/"(timing)" skipped).  ERR_PARSE
 * when there is no passed output check.  *block is -1 when no check
 * carries block_rel_l2 (an old binary). */
int thresh_errors_runtime(const json_t *result, double *rel, double *row,
                          double *block, struct err *e) WARN_UNUSED;

/* The errors a freeform program printed: "rel_l2" (required), "row_rel_l2"
 * and "block_rel_l2" (-1 when absent).  ERR_PARSE when rel_l2 is missing or
 * not a finite number >= 0. */
int thresh_errors_freeform(const json_t *metrics, double *rel, double *row,
                           double *block, struct err *e) WARN_UNUSED;

/* Compare measured errors with *t; 0 when within, 1 when not (WHY: "rel_l2
 * 3e-05 > 2e-06 (frozen from baseline.c: max(floor 1e-06, 2 x 1e-06))"). */
int thresh_check(const struct thresh *t, double rel, double row, double block,
                 char *why, size_t n);

/* The key of a size: "PARAMS|r<ranks>|v<vranks>|<xxh64 of the baseline and
 * reference files>" into OUT.  ERR_IO when a file cannot be read. */
int thresh_key(const struct workload *w, const char *params, int ranks,
               int vranks, char *out, size_t n, struct err *e) WARN_UNUSED;

/* Look KEY up in CACHE_DIR/thresholds/WL_NAME.json.  *found = 0 when the
 * file or the entry does not exist; ERR_PARSE naming the file when it is
 * malformed or an entry holds values out of range. */
int thresh_load(const char *cache_dir, const char *wl_name, const char *key,
                struct thresh *t, int *found, struct err *e) WARN_UNUSED;

/* Store *t under KEY (read-modify-write under an flock, atomic rename).
 * An existing entry for KEY is kept (the first freeze wins): *stored = 0. */
int thresh_store(const char *cache_dir, const char *wl_name, const char *key,
                 const struct thresh *t, int *stored,
                 struct err *e) WARN_UNUSED;

/* *t as JSON: {"rel_l2", "row_rel_l2", "block_rel_l2", "baseline",
 * "baseline_error": {...}, "floor", "cap", "frozen_at"}.  New reference. */
json_t *thresh_json(const struct thresh *t);

#endif
