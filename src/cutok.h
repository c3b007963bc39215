/* cutok.h - a tokenizer for CUDA C++ source.
 *
 * Not a compiler front end: enough of the lexical grammar to find calls,
 * kernel launches and their arguments reliably.  It understands // and
 * block comments (dropped), string and char literals with escapes and
 * prefixes, raw strings R"d(...)d", preprocessor lines with backslash
 * continuations (one CUTOK_PP token each), numbers with digit separators,
 * identifiers, and punctuation including <<< and >>>.  Brackets ( [ { and
 * the launch brackets <<< >>> are matched; every token carries its line
 * and column (1-based).
 */
#ifndef CUCO_CUTOK_H
#define CUCO_CUTOK_H

#include <stddef.h>

#include "err.h"

enum cutok_kind {
  CUTOK_IDENT = 0,
  CUTOK_NUMBER,
  CUTOK_STRING, /* "..." with any prefix, or a raw string */
  CUTOK_CHAR,   /* '...' */
  CUTOK_PUNCT,
  CUTOK_PP, /* a whole preprocessor line, continuations included */
};

struct cutok_tok {
  enum cutok_kind kind;
  size_t off; /* byte offset into the source */
  size_t len; /* bytes */
  int line, col;
  long match; /* index of the matching bracket, -1 if none */
};

struct cutok_list {
  const char *src; /* borrowed: the text the tokens point into */
  size_t srclen;
  struct cutok_tok *v;
  size_t n, cap;
};

/* Tokenize src[0..len).  The list borrows src, which must outlive it.
 * Returns 0, ERR_PARSE naming line:col for an unterminated comment,
 * string, char literal or raw string, or an unbalanced bracket, ERR_TOOBIG
 * past 4 M tokens, ERR_NOMEM.  The caller releases the list with
 * cutok_release() in every case. */
int cutok_lex(const char *src, size_t len, struct cutok_list *out,
              struct err *e) WARN_UNUSED;

/* cutok_lex() without matching brackets (every match is -1): for text
 * that need not balance, such as a macro body or one branch of an #if.
 * The same errors but the bracket ones. */
int cutok_lex_flat(const char *src, size_t len, struct cutok_list *out,
                   struct err *e) WARN_UNUSED;

void cutok_release(struct cutok_list *l);

/* True when token i exists and its text equals s exactly. */
int cutok_is(const struct cutok_list *l, size_t i, const char *s);

/* Copy token i's text into buf (cut to n-1 bytes); returns buf. */
const char *cutok_text(const struct cutok_list *l, size_t i, char *buf,
                       size_t n);

/* Append the text of tokens [a, b) to out, separated by single spaces
 * only where two word-like tokens would otherwise fuse ("const float *p"
 * but "f(a,b)"), cut to n-1 bytes; returns out. */
const char *cutok_span(const struct cutok_list *l, size_t a, size_t b,
                       char *out, size_t n);

#endif
