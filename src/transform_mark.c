/* transform_mark.c - code extraction from LLM answers and EVOLVE block
 * marking for `cuco transform` (see transform.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "buf.h"
#include "transform.h"

#define MARK_START "// EVOLVE-BLOCK-START"
#define MARK_END   "// EVOLVE-BLOCK-END"

char *transform_extract_code(const char *answer, size_t max, struct err *e)
{
  const char *p = answer, *best = NULL;
  size_t best_len = 0;
  char *out;

  /* fences only count at the start of a line */
  while ((p = strstr(p, "```")) != NULL) {
    const char *body, *end;
    if (p != answer && p[-1] != '\n') {
      p += 3;
      continue;
    }
    body = strchr(p, '\n');
    if (!body)
      break;
    body++;
    end = body;
    while ((end = strstr(end, "```")) != NULL &&
           !(end == body || end[-1] == '\n'))
      end += 3;
    if (!end)
      break; /* an unclosed fence: a truncated answer */
    if ((size_t)(end - body) > best_len) {
      best = body;
      best_len = (size_t)(end - body);
    }
    p = end + 3;
  }
  if (!best) {
    err_set(e, ERR_LLM, "the answer holds no complete ``` code block");
    return NULL;
  }
  if (best_len > max) {
    err_set(e, ERR_TOOBIG, "the code block has %zu bytes (cap %zu)", best_len,
            max);
    return NULL;
  }
  out = malloc(best_len + 1);
  if (!out) {
    err_set(e, ERR_NOMEM, "out of memory");
    return NULL;
  }
  memcpy(out, best, best_len);
  out[best_len] = '\0';
  return out;
}

/* Does the line [s, s+n) hold only a marker (and blanks)? */
static int marker_line(const char *s, size_t n)
{
  while (n && (*s == ' ' || *s == '\t')) {
    s++;
    n--;
  }
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
    n--;
  return (n == strlen(MARK_START) && !strncmp(s, MARK_START, n)) ||
         (n == strlen(MARK_END) && !strncmp(s, MARK_END, n));
}

static size_t line_len(const char *s)
{
  const char *nl = strchr(s, '\n');
  return nl ? (size_t)(nl - s) : strlen(s);
}

int transform_same_but_markers(const char *orig, const char *marked,
                               struct err *e)
{
  const char *a = orig, *b = marked;
  int la = 1;

  for (;;) {
    size_t na, nb;
    while (*b && marker_line(b, line_len(b)))
      b += line_len(b) + (b[line_len(b)] == '\n');
    if (!*a || !*b)
      break;
    na = line_len(a);
    nb = line_len(b);
    if (na != nb || memcmp(a, b, na)) {
      err_set(e, ERR_CHECK, "marking changed line %d: '%.*s' became '%.*s'",
              la, (int)(na > 80 ? 80 : na), a, (int)(nb > 80 ? 80 : nb), b);
      return 0;
    }
    a += na + (a[na] == '\n');
    b += nb + (b[nb] == '\n');
    la++;
  }
  if (*a || *b) {
    err_set(e, ERR_CHECK, "marking %s at line %d",
            *a ? "dropped the rest of the file" : "added code", la);
    return 0;
  }
  return 1;
}

void transform_drop_host_only(char *code)
{
  static const char def[] = "#define RT_HOST_ONLY";
  char *r = code, *w = code;

  while (*r) {
    size_t n = line_len(r) + (r[line_len(r)] == '\n');
    const char *p = r + strspn(r, " \t");
    int drop = !strncmp(p, def, sizeof(def) - 1) &&
               strchr(" \t\r\n/", p[sizeof(def) - 1]);
    if (!drop && w != r)
      memmove(w, r, n);
    if (!drop)
      w += n;
    r += n;
  }
  *w = '\0';
}

struct lines {
  char **v; /* each without its newline */
  int n;
};

static void lines_free(struct lines *l)
{
  int i;
  for (i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
}

static int lines_split(const char *s, struct lines *l)
{
  int cap = 0;
  l->v = NULL;
  l->n = 0;
  while (*s) {
    size_t n = line_len(s);
    if (l->n == cap) {
      char **nv =
          realloc(l->v, (size_t)(cap = cap ? cap * 2 : 256) * sizeof(*nv));
      if (!nv)
        return ERR_NOMEM;
      l->v = nv;
    }
    if (!(l->v[l->n] = strndup(s, n)))
      return ERR_NOMEM;
    l->n++;
    s += n + (s[n] == '\n');
  }
  return 0;
}

static int is_directive_line(const char *s)
{
  return strstr(s, "CUCO-DIRECTIVES") || strstr(s, "CUCO-PARAM");
}

char *transform_mark_rules(const char *code, struct err *e)
{
  struct lines in = {NULL, 0};
  struct buf rest = BUF_INIT(8u << 20), out = BUF_INIT(8u << 20);
  struct analyze_report *r = NULL;
  int i, k1a = 0, k1b = 0, s_a = 0, s_b = 0, a1, b1, a2, b2, one;
  char *res = NULL;
  size_t f;

  if (lines_split(code, &in)) {
    err_set(e, ERR_NOMEM, "out of memory");
    goto out;
  }
  /* the code without its directive lines: line numbers below refer to it */
  for (i = 0; i < in.n; i++)
    if (!is_directive_line(in.v[i]) && !marker_line(in.v[i], strlen(in.v[i])))
      buf_printf(&rest, "%s\n", in.v[i]);
  if (buf_error(&rest)) {
    err_set(e, ERR_NOMEM, "out of memory");
    goto out;
  }
  r = analyze_source("seed", buf_str(&rest), rest.len, e);
  if (!r)
    goto out;
  for (f = 0; f < r->nfuncs; f++) {
    const struct analyze_func *fn = &r->funcs[f];
    if (fn->is_kernel) {
      if (!k1a || fn->start_line < k1a)
        k1a = fn->start_line;
      if (fn->end_line > k1b)
        k1b = fn->end_line;
    }
    if (!strcmp(fn->name, "wl_step")) {
      s_a = fn->start_line;
      s_b = fn->end_line;
    }
  }
  if (!s_a) {
    err_set(e, ERR_CHECK, "no wl_step function to put an EVOLVE block on");
    goto out;
  }
  if (!k1a) { /* no kernels: one block around wl_step */
    k1a = s_a;
    k1b = s_b;
  }
  a1 = k1a < s_a ? k1a : s_a;
  b1 = k1a < s_a ? k1b : s_b;
  a2 = k1a < s_a ? s_a : k1a;
  b2 = k1a < s_a ? s_b : k1b;
  one = a2 <= b1 + 1; /* overlapping or adjacent: merge */
  if (one && b2 > b1)
    b1 = b2;
  lines_free(&in);
  if (lines_split(buf_str(&rest), &in)) {
    err_set(e, ERR_NOMEM, "out of memory");
    goto out;
  }
  for (i = 1; i <= in.n; i++) {
    if (i == a1 || (!one && i == a2)) {
      buf_printf(&out, "%s\n", MARK_START);
      if (i == a1) { /* the directives open the first block */
        const char *p = code;
        while (*p) {
          size_t n = line_len(p);
          char *ln = strndup(p, n);
          if (ln && is_directive_line(ln))
            buf_printf(&out, "%s\n", ln);
          free(ln);
          p += n + (p[n] == '\n');
        }
      }
    }
    buf_printf(&out, "%s\n", in.v[i - 1]);
    if (i == b1 || (!one && i == b2))
      buf_printf(&out, "%s\n", MARK_END);
  }
  if (buf_error(&out)) {
    err_set(e, ERR_NOMEM, "out of memory");
    goto out;
  }
  res = buf_detach(&out, NULL);
out:
  analyze_report_free(r);
  lines_free(&in);
  buf_release(&rest);
  buf_release(&out);
  return res;
}
