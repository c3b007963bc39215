/* utf8.h - cutting and cleaning text that goes into JSON (jansson, and
 * every LLM request, refuse invalid UTF-8). */
#ifndef CUCO_UTF8_H
#define CUCO_UTF8_H

#include <stddef.h>

/* The length of the valid UTF-8 sequence at s[0..n) (1 to 4), or 0 when
 * s[0] does not start one (a stray byte, a truncated, overlong or
 * surrogate form, a NUL). */
size_t utf8_seq_len(const char *s, size_t n);

/* Whether s[0..n) is valid UTF-8 without NUL bytes. */
int utf8_valid(const char *s, size_t n);

/* Replace every byte of s[0..n) that is not part of a valid sequence by
 * '?', in place; returns how many were replaced. */
size_t utf8_sanitize(char *s, size_t n);

/* utf8_sanitize, and also every control character but newline and tab
 * (C0, DEL, and C1 as U+0080..U+009F) replaced by '?': what a child
 * printed, before it reaches a terminal, run.db or a prompt (issue 47: an
 * escape sequence from a candidate must not drive the user's terminal).
 * In place; returns how many bytes were replaced. */
size_t utf8_sanitize_text(char *s, size_t n);

/* The largest length <= max of a prefix of the string s that does not
 * end inside a multi-byte character (for "%.*s" cuts of quoted text). */
int utf8_cut(const char *s, size_t max);

#endif
