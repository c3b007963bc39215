/* linediff.h - a line diff (longest common subsequence) in unified form.
 *
 * Used to show a candidate against its parent or the seed.  Common leading
 * and trailing lines are stripped first (frozen code outside the EVOLVE
 * blocks is byte-identical), and the quadratic LCS table is capped: when
 * the changed middle is too large for it, the middle is shown as one
 * removal plus one addition, which is still a correct diff.
 */
#ifndef CUCO_LINEDIFF_H
#define CUCO_LINEDIFF_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

/* Cells of the LCS table at most (4 bytes each). */
#define LINEDIFF_MAX_CELLS (4u * 1024 * 1024)

struct linediff_stat {
  int added, removed; /* lines */
  int hunks;
  int capped; /* 1 when the LCS cap forced the coarse form */
};

/* Append the unified diff of a -> b (NULL means "") with `context` lines
 * of context and ---/+++ headers naming label_a/label_b to out.  Nothing
 * is appended when the texts are equal.  st may be NULL.  Returns 0,
 * ERR_NOMEM, or the buffer's ERR_TOOBIG (the diff is then cut). */
int linediff_unified(const char *a, const char *b, const char *label_a,
                     const char *label_b, int context, struct buf *out,
                     struct linediff_stat *st, struct err *e) WARN_UNUSED;

#endif
