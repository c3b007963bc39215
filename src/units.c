/* units.c - "16M" and "10m": sizes and durations on the command line. */
#include "units.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SIZE_EXAMPLES     "(e.g. 4096, 64K, 16M, 1G)"
#define DURATION_EXAMPLES "(e.g. 90, 90s, 10m, 2h)"

/* "OPT: 'S' is not WHAT": the one message of both parsers. */
static int bad(struct err *e, const char *opt, const char *s, const char *what)
{
  return err_set(e, ERR_USAGE, "%s%s'%.64s' is not %s", opt ? opt : "",
                 opt ? ": " : "", s, what);
}

/* The multiplier of a size suffix ("", "k", "KiB", "mb", "B"), or 0. */
static unsigned long long size_unit(const char *u)
{
  static const char letters[] = "kmgt";
  const char *l = *u ? strchr(letters, tolower((unsigned char)*u)) : NULL;
  unsigned long long mul = 1;

  if (!*u || !strcasecmp(u, "b"))
    return 1;
  if (!l)
    return 0;
  for (const char *p = letters; p <= l; p++)
    mul <<= 10;
  u++;
  return !*u || !strcasecmp(u, "b") || !strcasecmp(u, "ib") ? mul : 0;
}

int units_parse_size(const char *opt, const char *s, unsigned long long *out,
                     struct err *e)
{
  unsigned long long v = 0, mul;
  const char *p = s;

  if (!s || !isdigit((unsigned char)*s))
    return bad(e, opt, s ? s : "", "a size " SIZE_EXAMPLES);
  for (; isdigit((unsigned char)*p); p++) {
    unsigned d = (unsigned)(*p - '0');
    if (v > (~0ULL - d) / 10)
      return bad(e, opt, s, "a size this program can hold");
    v = v * 10 + d;
  }
  mul = size_unit(p);
  if (!mul)
    return bad(e, opt, s, "a size " SIZE_EXAMPLES);
  if (v > ~0ULL / mul)
    return bad(e, opt, s, "a size this program can hold");
  *out = v * mul;
  return 0;
}

/* The length of "D+[.D*]" or ".D+" at s (no sign, exponent, inf or hex:
 * strtod alone would take all of those), or 0. */
static size_t decimal_len(const char *s)
{
  size_t n = strspn(s, "0123456789"), f = 0;

  if (s[n] == '.')
    f = 1 + strspn(s + n + 1, "0123456789");
  return n || f > 1 ? n + f : 0;
}

int units_parse_duration(const char *opt, const char *s, double *out,
                         struct err *e)
{
  static const struct {
    char unit;
    double seconds;
  } units[] = {{'s', 1}, {'m', 60}, {'h', 3600}};
  size_t n = s ? decimal_len(s) : 0;
  double v;

  if (!n || (s[n] && s[n + 1]))
    return bad(e, opt, s ? s : "", "a duration " DURATION_EXAMPLES);
  v = strtod(s, NULL);
  if (!s[n]) {
    *out = v;
    return 0;
  }
  for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
    if (tolower((unsigned char)s[n]) == units[i].unit) {
      *out = v * units[i].seconds;
      return 0;
    }
  return bad(e, opt, s, "a duration " DURATION_EXAMPLES);
}

int units_has_suffix(const char *s)
{
  size_t n = s ? strlen(s) : 0;

  return n > 0 && isalpha((unsigned char)s[n - 1]);
}
