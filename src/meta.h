/* meta.h - the statistical meta summary of an island.
 *
 * Every K generations the search writes what paid: per edit kind how many
 * candidates were correct and how many beat their parent (by more than
 * the noise), and per directive value the mean speedup of the correct
 * programs that used it, then numbered recommendations.  Offline this
 * text is the summary; with an LLM it is the material the LLM summarises.
 */
#ifndef CUCO_META_H
#define CUCO_META_H

#include <stddef.h>

struct db_program;

/* Summarise progs[0..n) (the programs of one island, or of the run when
 * island < 0).  Returns a malloc'd text (NULL on allocation failure). */
char *meta_stats(const struct db_program *progs, size_t n, int island);

/* Did p beat its parent q by more than the measured noise?  Both need a
 * median; noise < 0 counts as 0. */
int meta_beats(const struct db_program *p, const struct db_program *q);

/* The confirmation's margin of program A over program B as one line into
 * OUT (N bytes): RATIO is B's time over A's with its 95% interval [LO,
 * HI].  "best #5 is 18.8% faster than #3 [12.0, 25.0]", a ratio under 1
 * "best #5 is 18.8% slower than #3 [12.0, 25.0]" (never a negative gain),
 * and " (not beyond the noise)" when the interval holds 1.  Returns OUT. */
const char *meta_margin_text(char *out, size_t n, long long a, long long b,
                             double ratio, double lo, double hi);

#endif
