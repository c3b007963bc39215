/* directive.c - CUCO-DIRECTIVES / CUCO-PARAM lines; see directive.h. */
#include "directive.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "candidate.h"
#include "config.h"
#include "workload.h"

#define TAG_DIR   "CUCO-DIRECTIVES"
#define TAG_PARAM "CUCO-PARAM"

/* If the line (without its newline) is "<blanks>// TAG ...", return the
 * text after TAG, else NULL. */
static const char *tag_rest(const char *line, size_t len, const char *tag)
{
  size_t i = 0, tl = strlen(tag);

  while (i < len && (line[i] == ' ' || line[i] == '\t'))
    i++;
  if (i + 2 > len || line[i] != '/' || line[i + 1] != '/')
    return NULL;
  i += 2;
  while (i < len && (line[i] == ' ' || line[i] == '\t'))
    i++;
  if (i + tl > len || strncmp(line + i, tag, tl))
    return NULL;
  i += tl;
  if (i < len && line[i] != ' ' && line[i] != '\t')
    return NULL; /* CUCO-PARAMS or the like: not ours */
  return line + i;
}

static int set_word(char *dst, size_t n, const char *key, const char *v,
                    int line, struct err *e)
{
  size_t i;

  if (*dst)
    return err_set(e, ERR_CHECK, "line %d: directive '%s' given twice", line,
                   key);
  if (!*v || strlen(v) >= n)
    return err_set(e, ERR_CHECK, "line %d: bad value in '%s=%s'", line, key,
                   v);
  for (i = 0; v[i]; i++)
    if (!islower((unsigned char)v[i]) && v[i] != '_')
      return err_set(e, ERR_CHECK, "line %d: bad value in '%s=%s'", line, key,
                     v);
  snprintf(dst, n, "%s", v);
  return 0;
}

static int dir_token(struct directive_set *d, const char *k, const char *v,
                     int line, struct err *e)
{
  if (!strcmp(k, "backend"))
    return set_word(d->backend, sizeof(d->backend), k, v, line, e);
  if (!strcmp(k, "placement"))
    return set_word(d->placement, sizeof(d->placement), k, v, line, e);
  if (!strcmp(k, "sync"))
    return set_word(d->sync, sizeof(d->sync), k, v, line, e);
  if (!strcmp(k, "issuer"))
    return set_word(d->issuer, sizeof(d->issuer), k, v, line, e);
  if (!strcmp(k, "chunk")) {
    if (*d->chunk_text)
      return err_set(e, ERR_CHECK, "line %d: directive 'chunk' given twice",
                     line);
    if (strlen(v) >= sizeof(d->chunk_text) ||
        config_parse_bytes(v, &d->chunk_bytes) || d->chunk_bytes == 0)
      return err_set(e, ERR_CHECK, "line %d: bad chunk size 'chunk=%s'", line,
                     v);
    snprintf(d->chunk_text, sizeof(d->chunk_text), "%s", v);
    return 0;
  }
  return err_set(e, ERR_CHECK, "line %d: unknown directive '%s=%s'", line, k,
                 v);
}

static int param_token(struct directive_set *d, const char *k, const char *v,
                       int line, struct err *e)
{
  int i;

  if (!strcmp(k, "choices"))
    return 0; /* documentation; [params] in workload.ini decides */
  if (!config_is_ident(k) || strlen(k) >= sizeof(d->params[0].name))
    return err_set(e, ERR_CHECK, "line %d: bad param name in '%s=%s'", line, k,
                   v);
  if (!*v || strlen(v) >= sizeof(d->params[0].value))
    return err_set(e, ERR_CHECK, "line %d: bad param value in '%s=%s'", line,
                   k, v);
  for (i = 0; v[i]; i++)
    if (!isalnum((unsigned char)v[i]) && v[i] != '_' && v[i] != '-')
      return err_set(e, ERR_CHECK, "line %d: bad param value in '%s=%s'", line,
                     k, v);
  for (i = 0; i < d->nparams; i++)
    if (!strcmp(d->params[i].name, k))
      return err_set(e, ERR_CHECK, "line %d: param '%s' given twice", line, k);
  if (d->nparams >= DIRECTIVE_MAX_PARAMS)
    return err_set(e, ERR_CHECK, "line %d: more than %d params", line,
                   DIRECTIVE_MAX_PARAMS);
  snprintf(d->params[d->nparams].name, sizeof(d->params[0].name), "%s", k);
  snprintf(d->params[d->nparams].value, sizeof(d->params[0].value), "%s", v);
  d->nparams++;
  return 0;
}

/* Parse the k=v tokens after a tag. */
static int parse_pairs(struct directive_set *d, const char *rest, size_t len,
                       int is_param, int line, struct err *e)
{
  size_t i = 0;
  int n = 0;

  while (i < len) {
    char tok[160], *eq;
    size_t tl;
    while (i < len && isspace((unsigned char)rest[i]))
      i++;
    if (i >= len)
      break;
    tl = 0;
    while (i + tl < len && !isspace((unsigned char)rest[i + tl]))
      tl++;
    snprintf(tok, sizeof(tok), "%.*s", (int)tl, rest + i);
    i += tl;
    eq = strchr(tok, '=');
    if (!eq || eq == tok)
      return err_set(e, ERR_CHECK, "line %d: '%s' is not KEY=VALUE", line,
                     tok);
    *eq = '\0';
    if ((is_param ? param_token(d, tok, eq + 1, line, e)
                  : dir_token(d, tok, eq + 1, line, e)))
      return ERR_CHECK;
    n++;
  }
  if (!n)
    return err_set(e, ERR_CHECK, "line %d: empty %s line", line,
                   is_param ? TAG_PARAM : TAG_DIR);
  return 0;
}

/* The byte range directives are read from: the first EVOLVE block when the
 * code has blocks, else the whole file. */
static void scan_range(const char *code, size_t *lo, size_t *hi)
{
  struct candidate_blocks bl;
  struct err e;

  *lo = 0;
  *hi = strlen(code);
  if (candidate_blocks(code, &bl, &e) == 0 && bl.n > 0) {
    *lo = bl.b[0].start;
    *hi = bl.b[0].end;
  }
}

static int line_of(const char *code, size_t off)
{
  int line = 1;
  size_t i;

  for (i = 0; i < off; i++)
    if (code[i] == '\n')
      line++;
  return line;
}

int directive_parse(const char *code, struct directive_set *d, struct err *e)
{
  size_t lo, hi, p;

  memset(d, 0, sizeof(*d));
  scan_range(code, &lo, &hi);
  p = lo;
  while (p < hi) {
    const char *ln = code + p, *nl = memchr(ln, '\n', hi - p), *rest;
    size_t len = nl ? (size_t)(nl - ln) : hi - p;
    int line = 0;
    if ((rest = tag_rest(ln, len, TAG_DIR))) {
      line = line_of(code, p);
      if (d->has_line)
        return err_set(e, ERR_CHECK,
                       "line %d: a second " TAG_DIR " line (first at %d)",
                       line, d->line);
      d->has_line = 1;
      d->line = line;
      if (parse_pairs(d, rest, len - (size_t)(rest - ln), 0, line, e))
        return ERR_CHECK;
    } else if ((rest = tag_rest(ln, len, TAG_PARAM))) {
      line = line_of(code, p);
      if (parse_pairs(d, rest, len - (size_t)(rest - ln), 1, line, e))
        return ERR_CHECK;
    }
    p += len + 1;
  }
  return 0;
}

static int check_dim(const char *what, const char *v,
                     const struct workload_dim *dim, const struct workload *w,
                     struct err *e)
{
  char allowed[160] = "";
  int i;

  if (!*v) {
    if (dim->n)
      return err_set(e, ERR_CHECK, "directive '%s' is missing (%s allows %s)",
                     what, w->name, dim->v[0]);
    return 0;
  }
  for (i = 0; i < dim->n; i++) {
    if (!strcmp(dim->v[i], v))
      return 0;
    snprintf(allowed + strlen(allowed), sizeof(allowed) - strlen(allowed),
             "%s%s", i ? "|" : "", dim->v[i]);
  }
  if (!dim->n)
    return err_set(e, ERR_CHECK, "'%s=%s': workload %s has no %s dimension",
                   what, v, w->name, what);
  return err_set(e, ERR_CHECK, "'%s=%s' is not allowed by %s (%s)", what, v,
                 w->name, allowed);
}

int directive_validate(const struct directive_set *d, const struct workload *w,
                       struct err *e)
{
  const struct workload_space *sp = &w->space;
  int i, j;

  if (d->has_line && !sp->present)
    return err_set(e, ERR_CHECK,
                   "line %d: " TAG_DIR " given but workload %s has no [space]",
                   d->line, w->name);
  if (sp->present && !d->has_line)
    return err_set(e, ERR_CHECK,
                   "no // " TAG_DIR " line in the first EVOLVE block");
  if (check_dim("backend", d->backend, &sp->backend, w, e) ||
      check_dim("placement", d->placement, &sp->placement, w, e) ||
      check_dim("sync", d->sync, &sp->sync, w, e) ||
      check_dim("issuer", d->issuer, &sp->issuer, w, e))
    return ERR_CHECK;
  if (*d->chunk_text) {
    unsigned long long c = d->chunk_bytes;
    if (!sp->chunk_max)
      return err_set(e, ERR_CHECK,
                     "'chunk=%s': workload %s has no chunk "
                     "dimension",
                     d->chunk_text, w->name);
    if (c < 4096ULL || c > (64ULL << 20) || (c & (c - 1)))
      return err_set(e, ERR_CHECK,
                     "'chunk=%s' is not a power of two in 4KiB..64MiB",
                     d->chunk_text);
    if (c < sp->chunk_min || c > sp->chunk_max)
      return err_set(e, ERR_CHECK,
                     "'chunk=%s' is outside %s's range %llu..%llu bytes",
                     d->chunk_text, w->name, sp->chunk_min, sp->chunk_max);
  } else if (sp->chunk_max) {
    return err_set(e, ERR_CHECK, "directive 'chunk' is missing");
  }
  for (i = 0; i < d->nparams; i++) {
    const struct workload_param *p = workload_find_param(w, d->params[i].name);
    int ok = 0;
    if (!p)
      return err_set(e, ERR_CHECK,
                     "unknown param '%s=%s' (not in %s's "
                     "[params])",
                     d->params[i].name, d->params[i].value, w->name);
    for (j = 0; j < p->nchoices; j++)
      if (!strcmp(p->choices[j], d->params[i].value))
        ok = 1;
    if (!ok)
      return err_set(e, ERR_CHECK, "param '%s=%s' is not one of %s's choices",
                     d->params[i].name, d->params[i].value, w->name);
  }
  for (i = 0; i < w->nparams; i++) {
    int found = 0;
    for (j = 0; j < d->nparams; j++)
      if (!strcmp(w->params[i].name, d->params[j].name))
        found = 1;
    if (!found)
      return err_set(e, ERR_CHECK,
                     "param '%s' is missing (// " TAG_PARAM " %s=VALUE)",
                     w->params[i].name, w->params[i].name);
  }
  return 0;
}

static void upper_flag(struct directive_flags *f, const char *dim,
                       const char *v)
{
  char up[32];
  size_t i;

  if (!*v || f->n >= DIRECTIVE_MAX_FLAGS)
    return;
  for (i = 0; v[i] && i + 1 < sizeof(up); i++)
    up[i] = (char)toupper((unsigned char)v[i]);
  up[i] = '\0';
  snprintf(f->v[f->n++], sizeof(f->v[0]), "-DCUCO_%s=CUCO_%s_%s", dim, dim,
           up);
}

void directive_flags(const struct directive_set *d, struct directive_flags *f)
{
  int i;

  f->n = 0;
  upper_flag(f, "BACKEND", d->backend);
  upper_flag(f, "PLACEMENT", d->placement);
  upper_flag(f, "SYNC", d->sync);
  upper_flag(f, "ISSUER", d->issuer);
  if (*d->chunk_text)
    snprintf(f->v[f->n++], sizeof(f->v[0]), "-DCUCO_CHUNK_BYTES=%llu",
             d->chunk_bytes);
  for (i = 0; i < d->nparams && f->n < DIRECTIVE_MAX_FLAGS; i++)
    snprintf(f->v[f->n++], sizeof(f->v[0]), "-DCUCO_PARAM_%s=%s",
             d->params[i].name, d->params[i].value);
}

static int put_str(json_t *o, const char *k, const char *v)
{
  return *v ? json_object_set_new(o, k, json_string(v)) : 0;
}

json_t *directive_to_json(const struct directive_set *d)
{
  json_t *o = json_object(), *p = json_object();
  int i, bad = 0;

  if (!o || !p)
    goto fail;
  bad |= put_str(o, "backend", d->backend);
  bad |= put_str(o, "placement", d->placement);
  bad |= put_str(o, "sync", d->sync);
  bad |= put_str(o, "issuer", d->issuer);
  if (*d->chunk_text) {
    bad |= put_str(o, "chunk", d->chunk_text);
    bad |= json_object_set_new(o, "chunk_bytes",
                               json_integer((json_int_t)d->chunk_bytes));
  }
  for (i = 0; i < d->nparams; i++) {
    long v;
    json_t *jv = config_parse_long(d->params[i].value, &v) == 0
                     ? json_integer(v)
                     : json_string(d->params[i].value);
    bad |= json_object_set_new(p, d->params[i].name, jv);
  }
  bad |= json_object_set(o, "params", p);
  json_decref(p);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
fail:
  json_decref(o);
  json_decref(p);
  return NULL;
}

static void render_dir(const struct directive_set *d, struct buf *out)
{
  (void)buf_puts(out, "// " TAG_DIR);
  if (*d->backend)
    (void)buf_printf(out, " backend=%s", d->backend);
  if (*d->placement)
    (void)buf_printf(out, " placement=%s", d->placement);
  if (*d->sync)
    (void)buf_printf(out, " sync=%s", d->sync);
  if (*d->issuer)
    (void)buf_printf(out, " issuer=%s", d->issuer);
  if (*d->chunk_text)
    (void)buf_printf(out, " chunk=%s", d->chunk_text);
  (void)buf_putc(out, '\n');
}

int directive_render(const struct directive_set *d, struct buf *out)
{
  int i;

  if (d->has_line)
    render_dir(d, out);
  for (i = 0; i < d->nparams; i++)
    (void)buf_printf(out, "// " TAG_PARAM " %s=%s\n", d->params[i].name,
                     d->params[i].value);
  return buf_error(out);
}

static const struct directive_param *find_param(const struct directive_set *d,
                                                const char *name)
{
  int i;

  for (i = 0; i < d->nparams; i++)
    if (!strcmp(d->params[i].name, name))
      return &d->params[i];
  return NULL;
}

char *directive_apply(const char *code, const struct directive_set *d,
                      struct err *e)
{
  struct buf out = BUF_INIT(CANDIDATE_MAX_BYTES * 2);
  struct directive_set old;
  size_t lo, hi, p = 0, insert_at;
  int done[DIRECTIVE_MAX_PARAMS] = {0}, wrote_dir = 0, i;

  if (directive_parse(code, &old, e))
    return NULL;
  scan_range(code, &lo, &hi);
  insert_at = lo;
  while (p < strlen(code)) {
    const char *ln = code + p, *nl = strchr(ln, '\n'), *rest;
    size_t len = nl ? (size_t)(nl - ln) : strlen(ln);
    size_t ind = strspn(ln, " \t");
    int in = p >= lo && p < hi;
    if (in && (rest = tag_rest(ln, len, TAG_DIR))) {
      (void)buf_append(&out, ln, ind);
      render_dir(d, &out);
      wrote_dir = 1;
      insert_at = out.len;
    } else if (in && (rest = tag_rest(ln, len, TAG_PARAM))) {
      struct directive_set one;
      struct err e2;
      memset(&one, 0, sizeof(one));
      (void)parse_pairs(&one, rest, len - (size_t)(rest - ln), 1, 0, &e2);
      for (i = 0; i < one.nparams; i++) {
        const struct directive_param *np = find_param(d, one.params[i].name);
        if (!np)
          continue; /* the new set drops it */
        (void)buf_append(&out, ln, ind);
        (void)buf_printf(&out, "// " TAG_PARAM " %s=%s\n", np->name,
                         np->value);
        done[np - d->params] = 1;
      }
      insert_at = out.len;
    } else {
      (void)buf_append(&out, ln, nl ? len + 1 : len);
      if (p + len + 1 == lo)
        insert_at = out.len;
    }
    p += nl ? len + 1 : len;
  }
  {
    /* Lines the code did not have go after the last directive line (or
     * at the top of the first block). */
    struct buf add = BUF_INIT(64 * 1024);
    char *s;
    if (d->has_line && !wrote_dir)
      render_dir(d, &add);
    for (i = 0; i < d->nparams; i++)
      if (!done[i])
        (void)buf_printf(&add, "// " TAG_PARAM " %s=%s\n", d->params[i].name,
                         d->params[i].value);
    if (add.len) {
      struct buf fin = BUF_INIT(CANDIDATE_MAX_BYTES * 2);
      (void)buf_append(&fin, out.data, insert_at);
      (void)buf_append(&fin, add.data, add.len);
      (void)buf_append(&fin, out.data + insert_at, out.len - insert_at);
      buf_release(&out);
      out = fin;
    }
    buf_release(&add);
    if (buf_error(&out)) {
      buf_release(&out);
      err_set(e, ERR_TOOBIG, "rewritten candidate too large");
      return NULL;
    }
    s = buf_detach(&out, NULL);
    if (!s)
      err_set(e, ERR_NOMEM, "out of memory");
    return s;
  }
}
