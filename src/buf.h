/* buf.h - a growable byte buffer with a mandatory size cap.
 *
 * Every untrusted byte stream (HTTP bodies, child output, LLM code) goes
 * through a struct buf.  Appends past the cap are cut and set `toobig`;
 * allocation failure sets `oom`.  Both are sticky: check them once at the
 * end with buf_error().  The data is always NUL-terminated.
 */
#ifndef CUCO_BUF_H
#define CUCO_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "err.h"

struct buf {
  char *data; /* NUL-terminated; NULL until the first append */
  size_t len; /* bytes used, excluding the NUL */
  size_t cap; /* bytes allocated */
  size_t max; /* hard cap on len */
  int toobig; /* an append was cut at max */
  int oom;    /* an allocation failed */
};

#define BUF_INIT(maxbytes)                                                    \
  {                                                                           \
    NULL, 0, 0, (maxbytes), 0, 0                                              \
  }

/* Caller provides storage; nothing is allocated until the first append. */
void buf_init(struct buf *b, size_t max);
/* Free the data; the buffer can be reused after buf_init(). NULL-safe. */
void buf_release(struct buf *b);
/* Drop the contents, keep the allocation and the cap; clears the flags. */
void buf_reset(struct buf *b);

/* Append n bytes (cut at the cap).  Returns 0, ERR_TOOBIG or ERR_NOMEM. */
int buf_append(struct buf *b, const void *p, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_putc(struct buf *b, char c);
int buf_printf(struct buf *b, const char *fmt, ...) PRINTF_LIKE(2, 3);
int buf_vprintf(struct buf *b, const char *fmt, va_list ap);

/* The sticky state: 0, ERR_TOOBIG or ERR_NOMEM. */
int buf_error(const struct buf *b);

/* Always a valid C string ("" when empty). Borrowed. */
const char *buf_str(const struct buf *b);

/* Hand the data to the caller (who frees it); the buffer becomes empty.
 * Returns a malloc'd "" when empty, NULL only on allocation failure. */
char *buf_detach(struct buf *b, size_t *len);

#endif
