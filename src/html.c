/* html.c - HTML/XML escaping; see html.h. */
#include "html.h"

#include <string.h>

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
  size_t len, i;
  unsigned int cp;

  if (p[0] < 0x80)
    return 1;
  if (p[0] >= 0xc2 && p[0] <= 0xdf)
    len = 2, cp = p[0] & 0x1f;
  else if (p[0] >= 0xe0 && p[0] <= 0xef)
    len = 3, cp = p[0] & 0x0f;
  else if (p[0] >= 0xf0 && p[0] <= 0xf4)
    len = 4, cp = p[0] & 0x07;
  else
    return 0;
  if (len > n)
    return 0;
  for (i = 1; i < len; i++) {
    if ((p[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  /* Overlong forms, surrogates and values past U+10FFFF are invalid. */
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
    return 0;
  return len;
}

int html_escape_n(struct buf *b, const char *s, size_t n)
{
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t i = 0, run = 0, k;

  if (!s)
    n = 0;
  while (i < n) {
    const char *rep = NULL;
    unsigned char c = p[i];

    switch (c) {
    case '&':
      rep = "&amp;";
      break;
    case '<':
      rep = "&lt;";
      break;
    case '>':
      rep = "&gt;";
      break;
    case '"':
      rep = "&quot;";
      break;
    case '\'':
      rep = "&#39;";
      break;
    default:
      if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
        rep = "\xef\xbf\xbd";
      break;
    }
    if (!rep && c >= 0x80) {
      k = utf8_len(p + i, n - i);
      if (k == 0) {
        rep = "\xef\xbf\xbd";
      } else {
        /* A whole valid sequence is copied as it is. */
        buf_append(b, p + i, k);
        i += k;
        continue;
      }
    }
    if (rep) {
      buf_puts(b, rep);
    } else {
      /* Copy plain ASCII runs in one append. */
      run = 1;
      while (i + run < n && p[i + run] >= 0x20 && p[i + run] < 0x7f &&
             !strchr("&<>\"'", p[i + run]))
        run++;
      buf_append(b, p + i, run);
      i += run;
      continue;
    }
    i++;
  }
  return buf_error(b);
}

int html_escape(struct buf *b, const char *s)
{
  return html_escape_n(b, s, s ? strlen(s) : 0);
}

int html_is_token(const char *s)
{
  size_t n;

  if (!s)
    return 0;
  n = strlen(s);
  if (n == 0 || n > 64)
    return 0;
  return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "0123456789#_.,%() -") == n;
}
