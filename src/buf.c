/* buf.c - capped growable buffer; see buf.h. */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->max = max;
  b->toobig = 0;
  b->oom = 0;
}

void buf_release(struct buf *b)
{
  if (!b)
    return;
  free(b->data);
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
}

void buf_reset(struct buf *b)
{
  b->len = 0;
  if (b->data)
    b->data[0] = '\0';
  b->toobig = 0;
  b->oom = 0;
}

static int grow(struct buf *b, size_t need)
{
  size_t ncap;
  char *nd;

  if (need + 1 <= b->cap)
    return 0;
  ncap = b->cap ? b->cap : 64;
  while (ncap < need + 1)
    ncap *= 2;
  if (ncap > b->max + 1)
    ncap = b->max + 1;
  nd = realloc(b->data, ncap);
  if (!nd) {
    b->oom = 1;
    return ERR_NOMEM;
  }
  b->data = nd;
  b->cap = ncap;
  return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
  int cut = 0;

  if (b->oom)
    return ERR_NOMEM;
  if (n > b->max - b->len) {
    n = b->max - b->len;
    cut = 1;
  }
  if (grow(b, b->len + n))
    return ERR_NOMEM;
  if (n)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
  if (cut) {
    b->toobig = 1;
    return ERR_TOOBIG;
  }
  return 0;
}

int buf_puts(struct buf *b, const char *s)
{
  return buf_append(b, s, strlen(s));
}

int buf_putc(struct buf *b, char c)
{
  return buf_append(b, &c, 1);
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
  char small[256];
  va_list ap2;
  int n;
  char *big;
  int rc;

  va_copy(ap2, ap);
  n = vsnprintf(small, sizeof(small), fmt, ap2);
  va_end(ap2);
  if (n < 0)
    return ERR_INTERNAL;
  if ((size_t)n < sizeof(small))
    return buf_append(b, small, (size_t)n);
  big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = 1;
    return ERR_NOMEM;
  }
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  rc = buf_append(b, big, (size_t)n);
  free(big);
  return rc;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
  va_list ap;
  int rc;

  va_start(ap, fmt);
  rc = buf_vprintf(b, fmt, ap);
  va_end(ap);
  return rc;
}

int buf_error(const struct buf *b)
{
  if (b->oom)
    return ERR_NOMEM;
  if (b->toobig)
    return ERR_TOOBIG;
  return 0;
}

const char *buf_str(const struct buf *b)
{
  return b->data ? b->data : "";
}

char *buf_detach(struct buf *b, size_t *len)
{
  char *d = b->data;

  if (len)
    *len = b->len;
  if (!d)
    d = calloc(1, 1);
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  return d;
}
