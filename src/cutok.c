/* cutok.c - tokenizer for CUDA C++ source (see cutok.h). */
#include "cutok.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define CUTOK_MAX_TOKENS (4u << 20)
#define CUTOK_MAX_DEPTH  4096

struct lexer {
  const char *s;
  size_t n, i;
  int line, col;
};

static int is_ident_start(int c)
{
  return isalpha(c) || c == '_' || c == '$' || c >= 0x80;
}

static int is_ident_char(int c)
{
  return is_ident_start(c) || isdigit(c);
}

static int peek(const struct lexer *lx, size_t k)
{
  return lx->i + k < lx->n ? (unsigned char)lx->s[lx->i + k] : -1;
}

/* Advance one byte keeping line and column right. */
static void step(struct lexer *lx)
{
  if (lx->i >= lx->n)
    return;
  if (lx->s[lx->i] == '\n') {
    lx->line++;
    lx->col = 1;
  } else {
    lx->col++;
  }
  lx->i++;
}

static void stepn(struct lexer *lx, size_t k)
{
  while (k--)
    step(lx);
}

static int push(struct cutok_list *l, enum cutok_kind k, size_t off,
                size_t len, int line, int col, struct err *e)
{
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 256;
    struct cutok_tok *nv;
    if (nc > CUTOK_MAX_TOKENS)
      return err_set(e, ERR_TOOBIG, "%d:%d: more than %u tokens", line, col,
                     CUTOK_MAX_TOKENS);
    nv = realloc(l->v, nc * sizeof(*nv));
    if (!nv)
      return err_set(e, ERR_NOMEM, "out of memory");
    l->v = nv;
    l->cap = nc;
  }
  l->v[l->n].kind = k;
  l->v[l->n].off = off;
  l->v[l->n].len = len;
  l->v[l->n].line = line;
  l->v[l->n].col = col;
  l->v[l->n].match = -1;
  l->n++;
  return 0;
}

/* A quoted literal starting at the quote; escapes skip one byte. */
static int lex_quoted(struct lexer *lx, int q, int line, int col,
                      struct err *e)
{
  step(lx); /* opening quote */
  for (;;) {
    int c = peek(lx, 0);
    if (c < 0 || c == '\n')
      return err_set(e, ERR_PARSE, "%d:%d: unterminated %s literal", line, col,
                     q == '"' ? "string" : "character");
    if (c == '\\') {
      stepn(lx, 2);
      continue;
    }
    step(lx);
    if (c == q)
      return 0;
  }
}

/* R"delim( ... )delim" starting at the quote. */
static int lex_raw(struct lexer *lx, int line, int col, struct err *e)
{
  char delim[20];
  size_t dl = 0;

  step(lx); /* quote */
  while (peek(lx, 0) != '(') {
    int c = peek(lx, 0);
    if (c < 0 || c == '\n' || c == ' ' || c == ')' || c == '\\' || dl >= 16)
      return err_set(e, ERR_PARSE, "%d:%d: malformed raw string delimiter",
                     line, col);
    delim[dl++] = (char)c;
    step(lx);
  }
  step(lx);
  for (;;) {
    if (lx->i >= lx->n)
      return err_set(e, ERR_PARSE, "%d:%d: unterminated raw string", line,
                     col);
    if (lx->s[lx->i] == ')' && lx->i + 1 + dl < lx->n &&
        !memcmp(lx->s + lx->i + 1, delim, dl) &&
        lx->s[lx->i + 1 + dl] == '"') {
      stepn(lx, dl + 2);
      return 0;
    }
    step(lx);
  }
}

/* Length of an encoding prefix (u8, u, U, L, optionally followed by R)
 * in front of a quote at the current position, or 0. Sets *raw. */
static size_t literal_prefix(const struct lexer *lx, int *raw)
{
  static const char *const pre[] = {"u8R", "uR", "UR", "LR", "R",
                                    "u8",  "u",  "U",  "L"};
  size_t k;

  for (k = 0; k < sizeof(pre) / sizeof(pre[0]); k++) {
    size_t pl = strlen(pre[k]);
    if (lx->i + pl < lx->n && !strncmp(lx->s + lx->i, pre[k], pl) &&
        (lx->s[lx->i + pl] == '"' ||
         (lx->s[lx->i + pl] == '\'' && !strchr(pre[k], 'R')))) {
      *raw = strchr(pre[k], 'R') != NULL;
      return pl;
    }
  }
  *raw = 0;
  return 0;
}

static void lex_number(struct lexer *lx)
{
  for (;;) {
    int c = peek(lx, 0);
    if (is_ident_char(c) || c == '.') {
      /* exponent signs: 1e-5, 0x1p+3 */
      if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') &&
          (peek(lx, 1) == '+' || peek(lx, 1) == '-')) {
        stepn(lx, 2);
        continue;
      }
      step(lx);
    } else if (c == '\'' && isxdigit(peek(lx, 1))) {
      step(lx); /* digit separator 1'000'000 */
    } else {
      return;
    }
  }
}

/* Punctuation, longest match first. */
static size_t punct_len(const struct lexer *lx)
{
  static const char *const p3[] = {
      "<<<", ">>>", "<<=", ">>=", "...", "->*", "<=>"};
  static const char *const p2[] = {
      "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
      "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*", "##"};
  size_t k;

  for (k = 0; k < sizeof(p3) / sizeof(p3[0]); k++)
    if (lx->i + 3 <= lx->n && !strncmp(lx->s + lx->i, p3[k], 3))
      return 3;
  for (k = 0; k < sizeof(p2) / sizeof(p2[0]); k++)
    if (lx->i + 2 <= lx->n && !strncmp(lx->s + lx->i, p2[k], 2))
      return 2;
  return 1;
}

/* A preprocessor line: from '#' to the end of the line, following
 * backslash continuations and skipping comments inside it. */
static int lex_pp(struct lexer *lx, int line, int col, struct err *e)
{
  while (lx->i < lx->n) {
    int c = peek(lx, 0);
    if (c == '\n')
      return 0;
    if (c == '\\' && (peek(lx, 1) == '\n' ||
                      (peek(lx, 1) == '\r' && peek(lx, 2) == '\n'))) {
      stepn(lx, peek(lx, 1) == '\r' ? 3 : 2);
      continue;
    }
    if (c == '/' && peek(lx, 1) == '*') {
      int l0 = lx->line, c0 = lx->col;
      stepn(lx, 2);
      while (lx->i < lx->n && !(peek(lx, 0) == '*' && peek(lx, 1) == '/'))
        step(lx);
      if (lx->i >= lx->n)
        return err_set(e, ERR_PARSE, "%d:%d: unterminated comment", l0, c0);
      stepn(lx, 2);
      continue;
    }
    if (c == '/' && peek(lx, 1) == '/') {
      while (lx->i < lx->n && peek(lx, 0) != '\n')
        step(lx);
      return 0;
    }
    if (c == '"' || c == '\'') {
      int rc = lex_quoted(lx, c, lx->line, lx->col, e);
      if (rc)
        return rc;
      continue;
    }
    step(lx);
  }
  (void)line;
  (void)col;
  return 0;
}

static int opener_of(const char *t, size_t len)
{
  if (len == 1 && (*t == ')' || *t == ']' || *t == '}'))
    return *t == ')' ? '(' : *t == ']' ? '[' : '{';
  if (len == 3 && !strncmp(t, ">>>", 3))
    return '<';
  return 0;
}

static int is_opener(const char *t, size_t len)
{
  return (len == 1 && (*t == '(' || *t == '[' || *t == '{')) ||
         (len == 3 && !strncmp(t, "<<<", 3));
}

/* Match brackets.  A ">>>" without an open "<<<" on top of the stack is
 * left alone (it can close nested templates). */
static int match_brackets(struct cutok_list *l, struct err *e)
{
  long *stack = malloc(CUTOK_MAX_DEPTH * sizeof(long));
  size_t sp = 0, i;
  int rc = 0;

  if (!stack)
    return err_set(e, ERR_NOMEM, "out of memory");
  for (i = 0; i < l->n; i++) {
    struct cutok_tok *t = &l->v[i];
    const char *s = l->src + t->off;
    int want;
    if (t->kind != CUTOK_PUNCT)
      continue;
    if (is_opener(s, t->len)) {
      if (sp == CUTOK_MAX_DEPTH) {
        rc = err_set(e, ERR_PARSE, "%d:%d: brackets nested too deep", t->line,
                     t->col);
        goto out;
      }
      stack[sp++] = (long)i;
      continue;
    }
    want = opener_of(s, t->len);
    if (!want)
      continue;
    if (sp == 0 || l->src[l->v[stack[sp - 1]].off] != want) {
      if (want == '<')
        continue;
      if (sp == 0)
        rc = err_set(e, ERR_PARSE, "%d:%d: '%c' without an opening bracket",
                     t->line, t->col, *s);
      else
        rc = err_set(e, ERR_PARSE,
                     "%d:%d: '%c' does not match the '%.*s' "
                     "opened at %d:%d",
                     t->line, t->col, *s, (int)l->v[stack[sp - 1]].len,
                     l->src + l->v[stack[sp - 1]].off,
                     l->v[stack[sp - 1]].line, l->v[stack[sp - 1]].col);
      goto out;
    }
    sp--;
    t->match = stack[sp];
    l->v[stack[sp]].match = (long)i;
  }
  if (sp) {
    struct cutok_tok *t = &l->v[stack[sp - 1]];
    rc = err_set(e, ERR_PARSE, "%d:%d: '%.*s' is never closed", t->line,
                 t->col, (int)t->len, l->src + t->off);
  }
out:
  free(stack);
  return rc;
}

static int lex_all(const char *src, size_t len, struct cutok_list *out,
                   int match, struct err *e)
{
  struct lexer lx = {src, len, 0, 1, 1};
  int at_line_start = 1, rc;

  memset(out, 0, sizeof(*out));
  out->src = src;
  out->srclen = len;
  while (lx.i < lx.n) {
    int c = peek(&lx, 0), line = lx.line, col = lx.col, raw;
    size_t start = lx.i, pl;

    if (c == '\n') {
      at_line_start = 1;
      step(&lx);
      continue;
    }
    if (isspace(c)) {
      step(&lx);
      continue;
    }
    if (c == '\\' && (peek(&lx, 1) == '\n' || peek(&lx, 1) == '\r')) {
      stepn(&lx, 2); /* stray line continuation in code */
      continue;
    }
    if (c == '/' && peek(&lx, 1) == '/') {
      while (lx.i < lx.n && peek(&lx, 0) != '\n') {
        /* a // comment ending in a backslash continues (C rule) */
        if (peek(&lx, 0) == '\\' && peek(&lx, 1) == '\n')
          step(&lx);
        step(&lx);
      }
      continue;
    }
    if (c == '/' && peek(&lx, 1) == '*') {
      stepn(&lx, 2);
      while (lx.i < lx.n && !(peek(&lx, 0) == '*' && peek(&lx, 1) == '/'))
        step(&lx);
      if (lx.i >= lx.n)
        return err_set(e, ERR_PARSE, "%d:%d: unterminated comment", line, col);
      stepn(&lx, 2);
      continue;
    }
    if (c == '#' && at_line_start) {
      if ((rc = lex_pp(&lx, line, col, e)) != 0)
        return rc;
      if ((rc = push(out, CUTOK_PP, start, lx.i - start, line, col, e)))
        return rc;
      continue;
    }
    at_line_start = 0;
    pl = is_ident_start(c) ? literal_prefix(&lx, &raw) : 0;
    if (pl) {
      stepn(&lx, pl);
      rc = raw ? lex_raw(&lx, line, col, e)
               : lex_quoted(&lx, peek(&lx, 0), line, col, e);
      if (rc)
        return rc;
      rc = push(out, lx.s[start + pl] == '\'' ? CUTOK_CHAR : CUTOK_STRING,
                start, lx.i - start, line, col, e);
    } else if (is_ident_start(c)) {
      while (is_ident_char(peek(&lx, 0)))
        step(&lx);
      rc = push(out, CUTOK_IDENT, start, lx.i - start, line, col, e);
    } else if (isdigit(c) || (c == '.' && isdigit(peek(&lx, 1)))) {
      lex_number(&lx);
      rc = push(out, CUTOK_NUMBER, start, lx.i - start, line, col, e);
    } else if (c == '"' || c == '\'') {
      if ((rc = lex_quoted(&lx, c, line, col, e)) != 0)
        return rc;
      rc = push(out, c == '"' ? CUTOK_STRING : CUTOK_CHAR, start, lx.i - start,
                line, col, e);
    } else {
      size_t n = punct_len(&lx);
      stepn(&lx, n);
      rc = push(out, CUTOK_PUNCT, start, n, line, col, e);
    }
    if (rc)
      return rc;
  }
  return match ? match_brackets(out, e) : 0;
}

int cutok_lex(const char *src, size_t len, struct cutok_list *out,
              struct err *e)
{
  return lex_all(src, len, out, 1, e);
}

int cutok_lex_flat(const char *src, size_t len, struct cutok_list *out,
                   struct err *e)
{
  return lex_all(src, len, out, 0, e);
}

void cutok_release(struct cutok_list *l)
{
  if (!l)
    return;
  free(l->v);
  memset(l, 0, sizeof(*l));
}

int cutok_is(const struct cutok_list *l, size_t i, const char *s)
{
  size_t n = strlen(s);
  return i < l->n && l->v[i].len == n && !memcmp(l->src + l->v[i].off, s, n);
}

const char *cutok_text(const struct cutok_list *l, size_t i, char *buf,
                       size_t n)
{
  size_t k = 0;

  if (i < l->n) {
    k = l->v[i].len < n - 1 ? l->v[i].len : n - 1;
    memcpy(buf, l->src + l->v[i].off, k);
  }
  buf[k] = '\0';
  return buf;
}

static int wordlike(const struct cutok_list *l, size_t i)
{
  return l->v[i].kind == CUTOK_IDENT || l->v[i].kind == CUTOK_NUMBER;
}

const char *cutok_span(const struct cutok_list *l, size_t a, size_t b,
                       char *out, size_t n)
{
  size_t k = 0, i;

  out[0] = '\0';
  if (n == 0)
    return out;
  for (i = a; i < b && i < l->n; i++) {
    size_t tl = l->v[i].len;
    if (i > a && wordlike(l, i - 1) && wordlike(l, i) && k + 1 < n)
      out[k++] = ' ';
    if (k + tl >= n)
      tl = n - 1 - k;
    memcpy(out + k, l->src + l->v[i].off, tl);
    k += tl;
    if (k >= n - 1)
      break;
  }
  out[k] = '\0';
  return out;
}
