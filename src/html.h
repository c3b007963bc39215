/* html.h - escaping text for HTML and XML.
 *
 * Everything that comes from a run database (code, errors, LLM text) is
 * untrusted; it reaches a page only through these functions.
 */
#ifndef CUCO_HTML_H
#define CUCO_HTML_H

#include <stddef.h>

#include "buf.h"

/* Append s (NULL means "") to b with & < > " ' escaped, and any control
 * byte other than tab and newline, and any invalid UTF-8, shown as U+FFFD,
 * so the result is always valid in text and in quoted attributes.
 * Returns 0 or the buffer's sticky error. */
int html_escape(struct buf *b, const char *s);
/* The same for the first n bytes of s. */
int html_escape_n(struct buf *b, const char *s, size_t n);

/* 1 when s is a safe attribute token: 1..64 bytes of [A-Za-z0-9#_.,%()
 * -].  Used for colours and classes that must never carry markup. */
int html_is_token(const char *s);

#endif
