/* units.h - byte sizes and durations as people type them on a command
 * line ("16M", "10m"), as nccl-tests and curl read them. */
#ifndef CUCO_UNITS_H
#define CUCO_UNITS_H

#include "err.h"

/* A byte size: digits, then at most one of K, M, G, T (binary: 1024,
 * 1024^2, ...), each optionally followed by "iB" or "B", or a lone "B";
 * case does not matter ("16M", "16mib", "4096", "64KB").  *out in bytes.
 * 0, or ERR_USAGE with "OPT: 'S' is not a size (e.g. 4096, 64K, 16M, 1G)"
 * in *e (an overflow says so instead).  opt names the option in the
 * message ("--max-bytes"); NULL leaves the "OPT: " out. */
int units_parse_size(const char *opt, const char *s, unsigned long long *out,
                     struct err *e) WARN_UNUSED;

/* A duration: a non-negative decimal number ("90", "1.5"), then at most
 * one of s, m, h (seconds, minutes, hours; any case); a plain number is
 * seconds.  *out in seconds.  0, or ERR_USAGE with "OPT: 'S' is not a
 * duration (e.g. 90, 90s, 10m, 2h)" in *e.  opt as for units_parse_size. */
int units_parse_duration(const char *opt, const char *s, double *out,
                         struct err *e) WARN_UNUSED;

/* Whether s ends in a unit letter (a suffix units_parse_* would convert):
 * a value without one can be passed on exactly as written. */
int units_has_suffix(const char *s);

#endif
