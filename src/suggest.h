/* suggest.h - "did you mean ...?": the nearest of a list of valid names.
 *
 * One place for the edit distance behind every suggestion cuco makes
 * (config keys and sections, workload.ini keys, size and parameter
 * names).
 */
#ifndef CUCO_SUGGEST_H
#define CUCO_SUGGEST_H

#include <stddef.h>

/* Optimal-string-alignment distance between A and B (insertions,
 * deletions, substitutions and swaps of two neighbours each cost 1),
 * compared case-insensitively.  Names longer than 63 bytes are compared on
 * their first 63. */
int suggest_distance(const char *a, const char *b);

/* The name of VALID[0..N) nearest to NAME, or NULL when none is near
 * enough to be a likely typo (distance at most a third of the longer name:
 * names under 3 characters match only when they differ in case alone).
 * Borrowed from VALID. */
const char *suggest_nearest(const char *name, const char *const *valid,
                            size_t n);

/* Write the names of VALID[0..N) as "a, b, c" into OUT (N bytes);
 * "..." ends a list that does not fit. */
void suggest_list(char *out, size_t outn, const char *const *valid, size_t n);

#endif
