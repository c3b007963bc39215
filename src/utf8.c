/* utf8.c - see utf8.h. */
#include "utf8.h"

#include <string.h>

size_t utf8_seq_len(const char *s, size_t n)
{
  const unsigned char *u = (const unsigned char *)s;
  size_t len, k;
  unsigned cp;

  if (n == 0 || u[0] == 0)
    return 0;
  if (u[0] < 0x80)
    return 1;
  if ((u[0] & 0xe0) == 0xc0)
    len = 2, cp = u[0] & 0x1f;
  else if ((u[0] & 0xf0) == 0xe0)
    len = 3, cp = u[0] & 0x0f;
  else if ((u[0] & 0xf8) == 0xf0)
    len = 4, cp = u[0] & 0x07;
  else
    return 0;
  if (len > n)
    return 0;
  for (k = 1; k < len; k++) {
    if ((u[k] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (u[k] & 0x3f);
  }
  /* overlong forms, surrogates, beyond U+10FFFF */
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
      (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
      (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

int utf8_valid(const char *s, size_t n)
{
  size_t i = 0, l;

  while (i < n) {
    if (!(l = utf8_seq_len(s + i, n - i)))
      return 0;
    i += l;
  }
  return 1;
}

size_t utf8_sanitize(char *s, size_t n)
{
  size_t i = 0, l, bad = 0;

  while (i < n) {
    if ((l = utf8_seq_len(s + i, n - i))) {
      i += l;
      continue;
    }
    s[i++] = '?';
    bad++;
  }
  return bad;
}

size_t utf8_sanitize_text(char *s, size_t n)
{
  size_t i = 0, l, bad = 0;

  while (i < n) {
    unsigned char c = (unsigned char)s[i];
    l = utf8_seq_len(s + i, n - i);
    if (l == 1 && (c >= 0x20 || c == '\n' || c == '\t') && c != 0x7f) {
      i++;
      continue;
    }
    if (l == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0) {
      s[i] = s[i + 1] = '?'; /* C1: U+0080..U+009F */
      i += 2;
      bad += 2;
      continue;
    }
    if (l > 1) {
      i += l;
      continue;
    }
    s[i++] = '?';
    bad++;
  }
  return bad;
}

int utf8_cut(const char *s, size_t max)
{
  size_t n = strnlen(s, max + 1), k;

  if (n <= max)
    return (int)n;
  /* back over continuation bytes to the start of the cut character */
  k = max;
  while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
    k--;
  return (int)k;
}
