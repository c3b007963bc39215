/* patch.c - SEARCH/REPLACE, full-block and crossover edits (patch.h). */
#include "patch.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"

#define QUOTE_MAX 80 /* bytes of an unmatched SEARCH quoted in errors */

/* One line of a text: [s, s + n) without the newline; next is the offset
 * of the following line. */
struct line {
  const char *s;
  size_t n;
};

static int is_ws(char c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Trim spaces on both sides of a line. */
static struct line trim(struct line l)
{
  while (l.n && is_ws(*l.s)) {
    l.s++;
    l.n--;
  }
  while (l.n && is_ws(l.s[l.n - 1]))
    l.n--;
  return l;
}

static int line_is(struct line l, const char *what)
{
  struct line t = trim(l);
  size_t n = strlen(what);

  return t.n == n && !memcmp(t.s, what, n);
}

static int line_starts(struct line l, const char *prefix)
{
  struct line t = trim(l);
  size_t n = strlen(prefix);

  return t.n >= n && !memcmp(t.s, prefix, n);
}

/* Next line starting at *pos of text; 0 at the end. */
static int next_line(const char *text, size_t *pos, struct line *l)
{
  const char *p = text + *pos, *nl;

  if (!*p)
    return 0;
  nl = strchr(p, '\n');
  l->s = p;
  l->n = nl ? (size_t)(nl - p) : strlen(p);
  *pos += l->n + (nl ? 1 : 0);
  return 1;
}

int patch_blocks(const char *code, struct patch_block *blocks, size_t max,
                 struct err *e)
{
  size_t pos = 0, before, n = 0;
  struct line l;
  int open = 0, lineno = 0;

  for (;;) {
    before = pos;
    if (!next_line(code, &pos, &l))
      break;
    lineno++;
    if (line_starts(l, PATCH_BLOCK_START)) {
      if (open)
        return err_set(e, ERR_PARSE,
                       "line %d: EVOLVE-BLOCK-START inside an open block",
                       lineno);
      open = 1;
      if (n < max)
        blocks[n].start = pos;
    } else if (line_starts(l, PATCH_BLOCK_END)) {
      if (!open)
        return err_set(e, ERR_PARSE,
                       "line %d: EVOLVE-BLOCK-END without a START", lineno);
      open = 0;
      if (n < max)
        blocks[n].end = before;
      n++;
    }
  }
  if (open)
    return err_set(e, ERR_PARSE, "an EVOLVE-BLOCK-START is never closed");
  if (!n)
    return err_set(e, ERR_PARSE, "no EVOLVE-BLOCK-START/END in the program");
  if (n > max)
    return err_set(e, ERR_PARSE, "more than %zu EVOLVE blocks", max);
  return (int)n;
}

/* ---- SEARCH/REPLACE parsing ---- */

struct edit {
  char *search, *replace; /* each ends with '\n' unless empty */
};

static void edits_free(struct edit *ed, int n)
{
  int i;

  for (i = 0; i < n; i++) {
    free(ed[i].search);
    free(ed[i].replace);
  }
}

/* Parse all SEARCH/REPLACE blocks of text into ed[]; returns the count or
 * a negative error. */
static int parse_edits(const char *text, struct edit *ed, struct err *e)
{
  struct buf s = BUF_INIT(PATCH_MAX_CODE), r = BUF_INIT(PATCH_MAX_CODE);
  size_t pos = 0;
  struct line l;
  int n = 0, state = 0, lineno = 0, startline = 0;

  while (next_line(text, &pos, &l)) {
    lineno++;
    if (state == 0) {
      if (line_is(l, "<<<<<<< SEARCH")) {
        if (n == PATCH_MAX_EDITS) {
          err_set(e, ERR_PARSE, "more than %d SEARCH/REPLACE blocks",
                  PATCH_MAX_EDITS);
          goto fail;
        }
        state = 1;
        startline = lineno;
        buf_reset(&s);
        buf_reset(&r);
      } else if (line_is(l, "=======") || line_is(l, ">>>>>>> REPLACE")) {
        err_set(e, ERR_PARSE,
                "malformed patch: line %d: '%.*s' outside a SEARCH block",
                lineno, (int)trim(l).n, trim(l).s);
        goto fail;
      }
    } else if (state == 1) {
      if (line_is(l, "=======")) {
        state = 2;
      } else if (line_is(l, "<<<<<<< SEARCH") ||
                 line_is(l, ">>>>>>> REPLACE")) {
        err_set(e, ERR_PARSE,
                "malformed patch: SEARCH block at line %d has no ======= "
                "line",
                startline);
        goto fail;
      } else {
        buf_append(&s, l.s, l.n);
        buf_putc(&s, '\n');
      }
    } else {
      if (line_is(l, ">>>>>>> REPLACE")) {
        if (buf_error(&s) || buf_error(&r)) {
          err_set(e, ERR_TOOBIG, "patch: block at line %d is too large",
                  startline);
          goto fail;
        }
        ed[n].search = buf_detach(&s, NULL);
        ed[n].replace = buf_detach(&r, NULL);
        n++;
        state = 0;
      } else if (line_is(l, "<<<<<<< SEARCH") || line_is(l, "=======")) {
        err_set(e, ERR_PARSE,
                "malformed patch: SEARCH block at line %d is not closed "
                "by >>>>>>> REPLACE before line %d",
                startline, lineno);
        goto fail;
      } else {
        buf_append(&r, l.s, l.n);
        buf_putc(&r, '\n');
      }
    }
  }
  if (state) {
    err_set(e, ERR_PARSE,
            "malformed patch: SEARCH block at line %d is not closed by "
            ">>>>>>> REPLACE",
            startline);
    goto fail;
  }
  buf_release(&s);
  buf_release(&r);
  if (!n)
    return err_set(e, ERR_PARSE,
                   "no SEARCH/REPLACE block in the answer (expected "
                   "'<<<<<<< SEARCH', '=======', '>>>>>>> REPLACE' lines)");
  return n;
fail:
  buf_release(&s);
  buf_release(&r);
  edits_free(ed, n);
  return e ? e->code : ERR_PARSE;
}

/* Quote the first QUOTE_MAX bytes of s on one line (newlines as \n). */
static void quote(const char *s, char *out, size_t outn)
{
  size_t i, o = 0;

  for (i = 0; s[i] && o + 4 < outn && i < QUOTE_MAX; i++) {
    if (s[i] == '\n') {
      out[o++] = '\\';
      out[o++] = 'n';
    } else if ((unsigned char)s[i] < 32) {
      out[o++] = ' ';
    } else {
      out[o++] = s[i];
    }
  }
  if (s[i] && o + 4 < outn) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o] = '\0';
}

/* Splice code: replace [a, b) with rep; returns malloc'd or NULL. */
static char *splice(const char *code, size_t a, size_t b, const char *rep)
{
  size_t n = strlen(code), rn = strlen(rep);
  char *out;

  if (n - (b - a) + rn > PATCH_MAX_CODE)
    return NULL;
  out = malloc(n - (b - a) + rn + 1);
  if (!out)
    return NULL;
  memcpy(out, code, a);
  memcpy(out + a, rep, rn);
  memcpy(out + a + rn, code + b, n - b + 1);
  return out;
}

/* Exact match of search inside a block: offset or -1. */
static long find_exact(const char *code, const struct patch_block *bl, int nb,
                       const char *search)
{
  size_t sn = strlen(search);
  const char *p = code;
  int i;

  while ((p = strstr(p, search)) != NULL) {
    size_t off = (size_t)(p - code);
    if (off && code[off - 1] != '\n') {
      p++; /* a match must start at a line start */
      continue;
    }
    for (i = 0; i < nb; i++)
      if (off >= bl[i].start && off + sn <= bl[i].end)
        return (long)off;
    p++;
  }
  return -1;
}

/* Split s into lines (each without newline); returns count. */
static size_t split_lines(const char *s, struct line *out, size_t max)
{
  size_t pos = 0, n = 0;
  struct line l;

  while (n < max && next_line(s, &pos, &l))
    out[n++] = l;
  return n;
}

static size_t indent_of(struct line l)
{
  size_t i = 0;

  while (i < l.n && (l.s[i] == ' ' || l.s[i] == '\t'))
    i++;
  return i;
}

/* Whitespace-tolerant match: the lines of search equal a run of lines of
 * a block when both are trimmed.  On success sets [*a, *b) to the byte
 * range of the matched lines and *delta to the indentation difference
 * (code minus search) of the first non-blank line, *indent_char to the
 * code's indentation character. */
static int find_fuzzy(const char *code, const struct patch_block *bl, int nb,
                      const char *search, size_t *a, size_t *b, long *delta,
                      char *indent_char)
{
  enum { MAXL = 8192 };
  struct line *sl = malloc(2 * MAXL * sizeof(*sl)), *cl;
  size_t ns, nc, i, j, k;
  int bi, found = 0;

  if (!sl)
    return 0;
  cl = sl + MAXL;
  ns = split_lines(search, sl, MAXL);
  while (ns && trim(sl[ns - 1]).n == 0)
    ns--; /* trailing blank lines in SEARCH are noise */
  for (bi = 0; ns && !found && bi < nb; bi++) {
    size_t pos = bl[bi].start;
    struct line l;

    nc = 0;
    while (nc < MAXL && pos < bl[bi].end && next_line(code, &pos, &l))
      cl[nc++] = l;
    for (i = 0; i + ns <= nc; i++) {
      for (j = 0; j < ns; j++) {
        struct line x = trim(sl[j]), y = trim(cl[i + j]);
        if (x.n != y.n || memcmp(x.s, y.s, x.n))
          break;
      }
      if (j < ns)
        continue;
      *a = (size_t)(cl[i].s - code);
      *b = (size_t)(cl[i + ns - 1].s - code) + cl[i + ns - 1].n;
      if (code[*b] == '\n')
        (*b)++;
      for (k = 0; k < ns && trim(sl[k]).n == 0; k++)
        ;
      *delta = (long)indent_of(cl[i + k]) - (long)indent_of(sl[k]);
      *indent_char = indent_of(cl[i + k]) ? cl[i + k].s[0] : ' ';
      found = 1;
      break;
    }
  }
  free(sl);
  return found;
}

/* Re-indent every non-blank line of rep by delta columns. */
static char *reindent(const char *rep, long delta, char ch)
{
  struct buf o = BUF_INIT(PATCH_MAX_CODE);
  size_t pos = 0;
  struct line l;
  long k;

  while (next_line(rep, &pos, &l)) {
    if (trim(l).n) {
      if (delta > 0) {
        for (k = 0; k < delta; k++)
          buf_putc(&o, ch);
      } else {
        size_t drop = indent_of(l);
        if ((long)drop > -delta)
          drop = (size_t)-delta;
        l.s += drop;
        l.n -= drop;
      }
      buf_append(&o, l.s, l.n);
    }
    buf_putc(&o, '\n');
  }
  if (buf_error(&o)) {
    buf_release(&o);
    return NULL;
  }
  return buf_detach(&o, NULL);
}

int patch_apply_diff(const char *code, const char *text, char **out,
                     struct patch_stats *st, struct err *e)
{
  struct edit ed[PATCH_MAX_EDITS];
  struct patch_block bl[64];
  struct patch_stats dummy;
  char *cur = NULL, *next = NULL, q[QUOTE_MAX * 2 + 8];
  int n, nb, i, rc = 0;

  *out = NULL;
  if (!st)
    st = &dummy;
  memset(st, 0, sizeof(*st));
  if (strlen(text) > PATCH_MAX_TEXT)
    return err_set(e, ERR_TOOBIG, "patch: answer over %d bytes",
                   PATCH_MAX_TEXT);
  n = parse_edits(text, ed, e);
  if (n < 0)
    return n;
  cur = strdup(code);
  if (!cur) {
    rc = err_set(e, ERR_NOMEM, "patch: out of memory");
    goto out;
  }
  for (i = 0; i < n; i++) {
    size_t a, b;
    long off, delta;
    char ich;

    nb = patch_blocks(cur, bl, 64, e);
    if (nb < 0) {
      rc = nb;
      goto out;
    }
    if (!ed[i].search[0]) {
      /* empty SEARCH: append to the last block */
      next = splice(cur, bl[nb - 1].end, bl[nb - 1].end, ed[i].replace);
      st->exact++;
    } else if ((off = find_exact(cur, bl, nb, ed[i].search)) >= 0) {
      next = splice(cur, (size_t)off, (size_t)off + strlen(ed[i].search),
                    ed[i].replace);
      st->exact++;
    } else if (find_fuzzy(cur, bl, nb, ed[i].search, &a, &b, &delta, &ich)) {
      char *rep = reindent(ed[i].replace, delta, ich);
      next = rep ? splice(cur, a, b, rep) : NULL;
      free(rep);
      st->whitespace++;
    } else {
      quote(ed[i].search, q, sizeof(q));
      rc = err_set(e, ERR_PARSE,
                   "SEARCH block %d of %d matches nothing inside an EVOLVE "
                   "block: \"%s\"",
                   i + 1, n, q);
      goto out;
    }
    if (!next) {
      rc = err_set(e, ERR_TOOBIG, "patch: result over %d bytes",
                   PATCH_MAX_CODE);
      goto out;
    }
    free(cur);
    cur = next;
    next = NULL;
    st->edits++;
  }
  *out = cur;
  cur = NULL;
out:
  free(cur);
  edits_free(ed, n);
  return rc;
}

char *patch_extract_code(const char *text, struct err *e)
{
  size_t pos = 0, best_a = 0, best_n = 0, a = 0;
  struct line l;
  int open = 0, found = 0;

  if (strlen(text) > PATCH_MAX_TEXT) {
    err_set(e, ERR_TOOBIG, "answer over %d bytes", PATCH_MAX_TEXT);
    return NULL;
  }
  while (next_line(text, &pos, &l)) {
    if (!line_starts(l, "```"))
      continue;
    if (!open) {
      open = 1;
      a = pos;
    } else {
      size_t n = (size_t)(l.s - text) - a;
      open = 0;
      if (!found || n > best_n) {
        best_a = a;
        best_n = n;
        found = 1;
      }
    }
  }
  if (!found) {
    err_set(e, ERR_PARSE,
            open ? "the answer's code block is not closed by ```"
                 : "no fenced code block (```) in the answer");
    return NULL;
  }
  {
    char *c = strndup(text + best_a, best_n);
    if (!c)
      err_set(e, ERR_NOMEM, "out of memory");
    return c;
  }
}

char *patch_extract_rationale(const char *text, size_t max)
{
  const char *f = strstr(text, "```"), *s = strstr(text, "<<<<<<< SEARCH");
  const char *end = text + strlen(text);
  size_t n;

  if (f && f < end)
    end = f;
  if (s && s < end)
    end = s;
  while (text < end && (is_ws(*text) || *text == '\n'))
    text++;
  while (end > text && (is_ws(end[-1]) || end[-1] == '\n'))
    end--;
  n = (size_t)(end - text);
  if (n > max)
    n = max;
  return strndup(text, n);
}

/* Ensure s ends with a newline (unless empty): malloc'd. */
static char *with_newline(const char *s, size_t n)
{
  char *o = malloc(n + 2);

  if (!o)
    return NULL;
  memcpy(o, s, n);
  if (n && s[n - 1] != '\n')
    o[n++] = '\n';
  o[n] = '\0';
  return o;
}

/* Rebuild code with the contents of its blocks replaced by parts[]. */
static char *rebuild(const char *code, const struct patch_block *bl, int nb,
                     char *const *parts)
{
  struct buf o = BUF_INIT(PATCH_MAX_CODE);
  size_t prev = 0;
  int i;

  for (i = 0; i < nb; i++) {
    buf_append(&o, code + prev, bl[i].start - prev);
    buf_puts(&o, parts[i]);
    prev = bl[i].end;
  }
  buf_puts(&o, code + prev);
  if (buf_error(&o)) {
    buf_release(&o);
    return NULL;
  }
  return buf_detach(&o, NULL);
}

int patch_apply_full(const char *code, const char *text, char **out,
                     struct err *e)
{
  struct patch_block bl[64], nbk[64];
  char *parts[64] = {0}, *nc;
  int nb, nn, i, rc = 0;

  *out = NULL;
  nb = patch_blocks(code, bl, 64, e);
  if (nb < 0)
    return nb;
  nc = patch_extract_code(text, e);
  if (!nc)
    return e ? e->code : ERR_PARSE;
  if (strstr(nc, PATCH_BLOCK_START)) {
    nn = patch_blocks(nc, nbk, 64, e);
    if (nn < 0) {
      rc = err_wrap(e, "rewritten code");
      goto out;
    }
    if (nn != nb) {
      rc = err_set(e, ERR_PARSE,
                   "the rewrite has %d EVOLVE blocks, the program has %d", nn,
                   nb);
      goto out;
    }
    for (i = 0; i < nb; i++)
      parts[i] = with_newline(nc + nbk[i].start, nbk[i].end - nbk[i].start);
  } else if (nb == 1) {
    parts[0] = with_newline(nc, strlen(nc));
  } else {
    rc = err_set(e, ERR_PARSE,
                 "the rewrite has no EVOLVE-BLOCK markers but the program "
                 "has %d blocks",
                 nb);
    goto out;
  }
  for (i = 0; i < nb; i++)
    if (!parts[i]) {
      rc = err_set(e, ERR_NOMEM, "out of memory");
      goto out;
    }
  *out = rebuild(code, bl, nb, parts);
  if (!*out)
    rc = err_set(e, ERR_TOOBIG, "rewrite over %d bytes", PATCH_MAX_CODE);
out:
  for (i = 0; i < 64; i++)
    free(parts[i]);
  free(nc);
  return rc;
}

/* The directive lines (CUCO-DIRECTIVES, CUCO-PARAM) of a block's text. */
static int is_directive_line(struct line l)
{
  return line_starts(l, "// CUCO-DIRECTIVES") ||
         line_starts(l, "// CUCO-PARAM");
}

int patch_crossover(const char *a, const char *b, unsigned long mask,
                    char **out, struct err *e)
{
  struct patch_block ba[64], bb[64];
  char *parts[64] = {0};
  int na, nb, i, rc = 0;

  *out = NULL;
  na = patch_blocks(a, ba, 64, e);
  if (na < 0)
    return err_wrap(e, "crossover parent 1");
  nb = patch_blocks(b, bb, 64, e);
  if (nb < 0)
    return err_wrap(e, "crossover parent 2");
  if (na != nb)
    return err_set(e, ERR_PARSE,
                   "crossover: parents have %d and %d EVOLVE blocks", na, nb);
  if (na == 1) {
    /* one block: b's directive lines with a's code */
    struct buf o = BUF_INIT(PATCH_MAX_CODE);
    char *bt = strndup(b + bb[0].start, bb[0].end - bb[0].start);
    char *at = strndup(a + ba[0].start, ba[0].end - ba[0].start);
    size_t pos = 0;
    struct line l;
    if (!at || !bt) {
      free(at);
      free(bt);
      return err_set(e, ERR_NOMEM, "out of memory");
    }
    while (next_line(bt, &pos, &l))
      if (is_directive_line(l)) {
        buf_append(&o, l.s, l.n);
        buf_putc(&o, '\n');
      }
    pos = 0;
    while (next_line(at, &pos, &l))
      if (!is_directive_line(l)) {
        buf_append(&o, l.s, l.n);
        buf_putc(&o, '\n');
      }
    free(at);
    free(bt);
    parts[0] = buf_error(&o) ? NULL : buf_detach(&o, NULL);
    buf_release(&o);
  } else {
    for (i = 0; i < na; i++) {
      const char *src = (mask >> (i % 64)) & 1 ? b : a;
      const struct patch_block *k = (mask >> (i % 64)) & 1 ? &bb[i] : &ba[i];
      parts[i] = strndup(src + k->start, k->end - k->start);
    }
  }
  for (i = 0; i < na; i++)
    if (!parts[i]) {
      rc = err_set(e, ERR_NOMEM, "out of memory");
      goto out;
    }
  *out = rebuild(a, ba, na, parts);
  if (!*out)
    rc = err_set(e, ERR_TOOBIG, "crossover over %d bytes", PATCH_MAX_CODE);
out:
  for (i = 0; i < na; i++)
    free(parts[i]);
  return rc;
}

int patch_set_line(const char *code, const char *prefix, const char *line,
                   char **out, struct err *e)
{
  struct patch_block bl[64];
  size_t pos, before;
  struct line l;
  struct buf rep = BUF_INIT(PATCH_MAX_CODE);
  int nb;

  *out = NULL;
  nb = patch_blocks(code, bl, 64, e);
  if (nb < 0)
    return nb;
  pos = bl[0].start;
  while (pos < bl[0].end) {
    before = pos;
    if (!next_line(code, &pos, &l))
      break;
    if (line_starts(l, prefix)) {
      buf_append(&rep, l.s, indent_of(l));
      buf_puts(&rep, line);
      buf_putc(&rep, '\n');
      *out = buf_error(&rep) ? NULL : splice(code, before, pos, buf_str(&rep));
      buf_release(&rep);
      return *out ? 0 : err_set(e, ERR_NOMEM, "out of memory");
    }
  }
  buf_puts(&rep, line);
  buf_putc(&rep, '\n');
  *out = buf_error(&rep)
             ? NULL
             : splice(code, bl[0].start, bl[0].start, buf_str(&rep));
  buf_release(&rep);
  return *out ? 0 : err_set(e, ERR_NOMEM, "out of memory");
}
