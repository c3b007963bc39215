/* progid.c - a candidate's identity: its source preprocessed (progid.h).
 *
 * The preprocessor follows C11 6.10 where a candidate needs it.  Here:
 * the files (lexed once, directives parsed, conditionals matched), the
 * macro state and its branches, the directives, the fallback and the
 * API; macro expansion and #if expressions are in progid_expand.c.
 * Whatever reaches the compiler is hashed token by token, one kind byte,
 * the spelling and a NUL each.
 */
#include "progid.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "cutok.h"
#include "file.h"

#include "progid_int.h"

void progid_fail(struct run *r, const char *fmt, ...)
{
  va_list ap;

  if (r->fail)
    return;
  r->fail = 1;
  va_start(ap, fmt);
  vsnprintf(r->why, sizeof(r->why), fmt, ap);
  va_end(ap);
}

void progid_nomem(struct run *r)
{
  r->nomem = 1;
  progid_fail(r, "out of memory");
}

void *progid_aalloc(struct run *r, size_t n)
{
  struct achunk *c = r->arena;
  void *p;

  n = (n + 15) & ~(size_t)15;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    c = malloc(sizeof(*c) + cap);
    if (!c) {
      progid_nomem(r);
      return NULL;
    }
    c->next = r->arena;
    c->used = 0;
    c->cap = cap;
    r->arena = c;
  }
  p = c->data + c->used;
  c->used += n;
  return p;
}

static char *astr(struct run *r, const char *s, size_t n)
{
  char *d = progid_aalloc(r, n + 1);

  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

int progid_tv_push(struct run *r, struct tv *v, const struct tok *t)
{
  if (v->n == v->cap) {
    int cap = v->cap ? v->cap * 2 : 32;
    struct tok *g = realloc(v->v, (size_t)cap * sizeof(*g));
    if (!g) {
      progid_nomem(r);
      return -1;
    }
    v->v = g;
    v->cap = cap;
  }
  v->v[v->n++] = *t;
  return 0;
}

void progid_tv_free(struct tv *v)
{
  free(v->v);
  memset(v, 0, sizeof(*v));
}

int progid_is_punct(const struct tok *t, const char *p)
{
  size_t n = strlen(p);

  return t->kind == T_PUNCT && t->len == n && !memcmp(t->s, p, n);
}

int progid_is_ident(const struct tok *t, const char *p)
{
  size_t n = strlen(p);

  return t->kind == T_IDENT && t->len == n && !memcmp(t->s, p, n);
}

static int cuco_name(const char *s, size_t n)
{
  return n >= 5 && !memcmp(s, "CUCO_", 5);
}

/* ---- names and the macro state ---- */

static size_t name_hash(const char *s, size_t n)
{
  return (size_t)XXH64(s, n, 0x70726f67u);
}

int progid_name_find(const struct run *r, const char *s, size_t n)
{
  size_t h;

  if (!r->hcap)
    return -1;
  for (h = name_hash(s, n) & (r->hcap - 1); r->ht[h];
       h = (h + 1) & (r->hcap - 1)) {
    int id = r->ht[h] - 1;
    if (r->nl[id] == n && !memcmp(r->nm[id], s, n))
      return id;
  }
  return -1;
}

static int name_intern(struct run *r, const char *s, size_t n)
{
  int id = progid_name_find(r, s, n);
  size_t h, i;

  if (id >= 0)
    return id;
  if (r->nn == r->capn) {
    int cap = r->capn ? r->capn * 2 : 256;
    char **nm = realloc(r->nm, (size_t)cap * sizeof(*nm));
    unsigned *nl;
    if (!nm)
      goto oom;
    r->nm = nm;
    nl = realloc(r->nl, (size_t)cap * sizeof(*nl));
    if (!nl)
      goto oom;
    r->nl = nl;
    r->capn = cap;
  }
  if ((size_t)(r->nn + 1) * 2 > r->hcap) {
    size_t cap = r->hcap ? r->hcap * 2 : 1024;
    int *ht = calloc(cap, sizeof(*ht));
    if (!ht)
      goto oom;
    for (i = 0; i < (size_t)r->nn; i++) {
      for (h = name_hash(r->nm[i], r->nl[i]) & (cap - 1); ht[h];
           h = (h + 1) & (cap - 1))
        ;
      ht[h] = (int)i + 1;
    }
    free(r->ht);
    r->ht = ht;
    r->hcap = cap;
  }
  r->nm[r->nn] = astr(r, s, n);
  if (!r->nm[r->nn])
    return -1;
  r->nl[r->nn] = (unsigned)n;
  for (h = name_hash(s, n) & (r->hcap - 1); r->ht[h];
       h = (h + 1) & (r->hcap - 1))
    ;
  r->ht[h] = r->nn + 1;
  return r->nn++;
oom:
  progid_nomem(r);
  return -1;
}

struct mst progid_state_get(const struct state *st, int id)
{
  struct mst none = {M_UNKNOWN, NULL};

  return id >= 0 && id < st->n ? st->m[id] : none;
}

static void state_set(struct run *r, int id, int k, const struct mdef *d)
{
  if (id < 0)
    return;
  if (id >= r->st.n) {
    int n = r->capn > id ? r->capn : id + 1;
    struct mst *m = realloc(r->st.m, (size_t)n * sizeof(*m));
    if (!m) {
      progid_nomem(r);
      return;
    }
    memset(m + r->st.n, 0, (size_t)(n - r->st.n) * sizeof(*m));
    r->st.m = m;
    r->st.n = n;
  }
  r->st.m[id].k = (unsigned char)k;
  r->st.m[id].d = d;
}

/* What a name is: a CUCO_* name nothing defined is undefined. */
int progid_name_kind(const struct run *r, const char *s, size_t n,
                     struct mst *out)
{
  int id = progid_name_find(r, s, n);
  struct mst m = progid_state_get(&r->st, id);

  if (m.k == M_UNKNOWN && cuco_name(s, n))
    m.k = M_UNDEF;
  if (out)
    *out = m;
  return m.k;
}

static int state_copy(struct run *r, const struct state *src,
                      struct state *dst)
{
  dst->n = src->n;
  dst->m = malloc((size_t)(src->n ? src->n : 1) * sizeof(*dst->m));
  if (!dst->m) {
    progid_nomem(r);
    return -1;
  }
  if (src->n)
    memcpy(dst->m, src->m, (size_t)src->n * sizeof(*dst->m));
  return 0;
}

static int toks_equal(const struct tok *a, const struct tok *b, int n)
{
  int i;

  for (i = 0; i < n; i++)
    if (a[i].kind != b[i].kind || a[i].len != b[i].len ||
        memcmp(a[i].s, b[i].s, a[i].len) || (i && a[i].space != b[i].space))
      return 0;
  return 1;
}

static int mdef_equal(const struct mdef *a, const struct mdef *b)
{
  return a == b || (a && b && a->fn == b->fn && a->variadic == b->variadic &&
                    a->np == b->np && a->nb == b->nb &&
                    toks_equal(a->par, b->par, a->np) &&
                    toks_equal(a->body, b->body, a->nb));
}

/* The states after the branches of a condition it could not decide: what
 * they agree on stays; a name that is a macro in one and not (or another)
 * in the other may not be used afterwards. */
static void state_merge(struct run *r, struct state *s, int ns)
{
  int n = 0, i, id;

  for (i = 0; i < ns; i++)
    if (s[i].n > n)
      n = s[i].n;
  free(r->st.m);
  r->st.m = calloc((size_t)(n ? n : 1), sizeof(*r->st.m));
  r->st.n = n;
  if (!r->st.m) {
    r->st.n = 0;
    progid_nomem(r);
    return;
  }
  for (id = 0; id < n; id++) {
    struct mst a = progid_state_get(&s[0], id);
    for (i = 1; i < ns; i++) {
      struct mst x = progid_state_get(&s[i], id);
      if (a.k == x.k && (a.k != M_DEF || mdef_equal(a.d, x.d)))
        continue;
      if ((a.k == M_UNKNOWN || a.k == M_UNDEF) &&
          (x.k == M_UNKNOWN || x.k == M_UNDEF))
        a.k = M_UNKNOWN;
      else
        a.k = M_POISON;
      a.d = NULL;
    }
    r->st.m[id] = a;
  }
}

/* ---- emitting ---- */

static void emit(struct run *r, int kind, const char *s, size_t n)
{
  unsigned char k = (unsigned char)kind;

  (void)XXH64_update(r->xh, &k, 1);
  (void)XXH64_update(r->xh, s, n);
  (void)XXH64_update(r->xh, "", 1);
}

static void emit_tok(struct run *r, const struct tok *t)
{
  emit(r, t->kind + 1, t->s, t->len);
}

static void emit_mark(struct run *r, const char *fmt, ...) PRINTF_LIKE(2, 3);

static void emit_mark(struct run *r, const char *fmt, ...)
{
  char b[700];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(b, sizeof(b), fmt, ap);
  va_end(ap);
  emit(r, 0x40, b, strlen(b));
}

/* ---- lexing ---- */

static int map_kind(enum cutok_kind k)
{
  switch (k) {
  case CUTOK_IDENT:
    return T_IDENT;
  case CUTOK_NUMBER:
    return T_NUM;
  case CUTOK_STRING:
    return T_STR;
  case CUTOK_CHAR:
    return T_CHR;
  case CUTOK_PP:
    return T_PP;
  default:
    return T_PUNCT;
  }
}

/* Tokens of text[0..len) (flat: brackets need not balance); *out is
 * malloc'd.  0, or a cutok error. */
int progid_lex(const char *text, size_t len, struct tok **out, int *n,
               struct err *e)
{
  struct cutok_list l;
  size_t i, prev = 0;
  int rc = cutok_lex_flat(text, len, &l, e);

  *out = NULL;
  *n = 0;
  if (!rc && l.n > MAX_CODE_TOKS)
    rc = err_set(e, ERR_TOOBIG, "too many tokens");
  if (!rc && l.n) {
    *out = malloc(l.n * sizeof(**out));
    if (!*out)
      rc = err_set(e, ERR_NOMEM, "out of memory");
  }
  for (i = 0; !rc && i < l.n; i++) {
    struct tok *t = &(*out)[i];
    t->s = text + l.v[i].off;
    t->len = (unsigned)l.v[i].len;
    t->kind = (unsigned char)map_kind(l.v[i].kind);
    t->space = i == 0 || l.v[i].off > prev;
    t->hs = NULL;
    prev = l.v[i].off + l.v[i].len;
  }
  if (!rc)
    *n = (int)l.n;
  else {
    free(*out);
    *out = NULL;
  }
  cutok_release(&l);
  return rc;
}

static const struct {
  const char *name;
  int kind;
} dnames[] = {
    {"if", D_IF},         {"ifdef", D_IFDEF},     {"ifndef", D_IFNDEF},
    {"elif", D_ELIF},     {"elifdef", D_ELIFDEF}, {"elifndef", D_ELIFNDEF},
    {"else", D_ELSE},     {"endif", D_ENDIF},     {"define", D_DEFINE},
    {"undef", D_UNDEF},   {"include", D_INCLUDE}, {"include_next", D_BADINC},
    {"import", D_BADINC}, {"pragma", D_PRAGMA},   {"line", D_LINE},
    {"error", D_ERROR},   {"warning", D_ERROR},
};

/* Parse one preprocessor line (the PP token's text). */
static int pdir_parse(struct pdir *d, const char *s, size_t n, struct err *e)
{
  size_t i, k = 0, nl;
  char *c = malloc(n + 1);

  memset(d, 0, sizeof(*d));
  d->next = -1;
  if (!c)
    return err_set(e, ERR_NOMEM, "out of memory");
  for (i = 0; i < n; i++) {
    if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n') {
      i++;
      continue;
    }
    if (s[i] == '\\' && i + 2 < n && s[i + 1] == '\r' && s[i + 2] == '\n') {
      i += 2;
      continue;
    }
    c[k++] = s[i];
  }
  c[k] = '\0';
  d->clean = c;
  i = 1; /* the '#' */
  while (c[i] == ' ' || c[i] == '\t')
    i++;
  for (nl = 0; isalnum((unsigned char)c[i + nl]) || c[i + nl] == '_'; nl++)
    ;
  d->rest = i + nl;
  if (!nl) {
    d->kind = c[i] ? D_OTHER : D_NULL;
    return 0;
  }
  if (isdigit((unsigned char)c[i])) {
    d->kind = D_LINE; /* # 12 "file" */
    return 0;
  }
  d->kind = D_OTHER;
  for (k = 0; k < sizeof(dnames) / sizeof(dnames[0]); k++)
    if (strlen(dnames[k].name) == nl && !memcmp(c + i, dnames[k].name, nl))
      d->kind = dnames[k].kind;
  if (d->kind == D_ERROR || d->kind == D_OTHER || d->kind == D_LINE)
    return 0; /* kept as text */
  return progid_lex(c + d->rest, k = strlen(c + d->rest), &d->t, &d->nt, e);
}

static void pfile_free(struct pfile *f)
{
  int i;

  if (!f)
    return;
  for (i = 0; i < f->nd; i++) {
    free(f->d[i].clean);
    free(f->d[i].t);
  }
  free(f->d);
  free(f->dix);
  free(f->t);
  free(f->text);
  free(f->path);
  free(f->dir);
  free(f);
}

/* Build a file from its text (taken).  NULL only when out of memory; a
 * file it cannot read as C is `bad`, with why. */
static struct pfile *pfile_build(char *text, const char *path)
{
  struct pfile *f = calloc(1, sizeof(*f));
  struct err e = {0, ""};
  int i, *stack = NULL, *last = NULL, sp = 0;

  if (!f) {
    free(text);
    return NULL;
  }
  f->text = text;
  f->id = -1;
  f->path = path ? strdup(path) : NULL;
  f->dir = strdup("");
  if (!f->dir || (path && !f->path))
    goto oom;
  if (path && strrchr(path, '/')) {
    free(f->dir);
    f->dir = strndup(path, (size_t)(strrchr(path, '/') - path));
    if (!f->dir)
      goto oom;
  }
  if (progid_lex(text, strlen(text), &f->t, &f->nt, &e)) {
    if (e.code == ERR_NOMEM)
      goto oom;
    f->bad = 1;
    snprintf(f->why, sizeof(f->why), "%s: %s", path ? path : "the source",
             e.msg);
    return f;
  }
  f->dix = malloc((size_t)(f->nt ? f->nt : 1) * sizeof(*f->dix));
  f->d = calloc((size_t)(f->nt ? f->nt : 1), sizeof(*f->d));
  stack = malloc((size_t)(f->nt ? f->nt : 1) * sizeof(*stack));
  last = malloc((size_t)(f->nt ? f->nt : 1) * sizeof(*last));
  if (!f->dix || !f->d || !stack || !last)
    goto oom;
  for (i = 0; i < f->nt; i++) {
    struct pdir *d;
    f->dix[i] = -1;
    if (f->t[i].kind != T_PP)
      continue;
    d = &f->d[f->nd];
    f->dix[i] = f->nd++;
    if (pdir_parse(d, f->t[i].s, f->t[i].len, &e)) {
      if (e.code == ERR_NOMEM)
        goto oom;
      if (!f->bad)
        snprintf(f->why, sizeof(f->why), "%s: a directive: %s",
                 path ? path : "the source", e.msg);
      f->bad = 1;
      continue;
    }
    switch (d->kind) {
    case D_IF:
    case D_IFDEF:
    case D_IFNDEF:
      stack[sp] = i;
      last[sp++] = i;
      break;
    case D_ELIF:
    case D_ELIFDEF:
    case D_ELIFNDEF:
    case D_ELSE:
    case D_ENDIF:
      if (!sp) {
        if (!f->bad)
          snprintf(f->why, sizeof(f->why), "%s: #%s without #if",
                   path ? path : "the source",
                   d->kind == D_ENDIF ? "endif" : "else/elif");
        f->bad = 1;
        break;
      }
      f->d[f->dix[last[sp - 1]]].next = i;
      last[sp - 1] = i;
      if (d->kind == D_ENDIF)
        sp--;
      break;
    default:
      break;
    }
  }
  if (sp && !f->bad) {
    f->bad = 1;
    snprintf(f->why, sizeof(f->why), "%s: an #if is never closed",
             path ? path : "the source");
  }
  free(stack);
  free(last);
  return f;
oom:
  free(stack);
  free(last);
  pfile_free(f);
  return NULL;
}

/* The header at path from the cache, read on first use; NULL when it is
 * not a readable file (*err set when that is for want of memory). */
static struct pfile *header(struct run *r, const char *path)
{
  struct progid *p = r->p;
  struct stat st;
  struct err e;
  struct pfile *f;
  char *text;
  int i;

  for (i = 0; i < p->nfiles; i++)
    if (!strcmp(p->files[i]->path, path))
      return p->files[i];
  if (stat(path, &st) || !S_ISREG(st.st_mode))
    return NULL;
  if (p->nfiles == MAX_FILES) {
    progid_fail(r, "more than %d headers", MAX_FILES);
    return NULL;
  }
  text = file_read(path, MAX_HEADER, NULL, &e);
  if (!text) {
    progid_fail(r, "%s", e.msg);
    return NULL;
  }
  f = pfile_build(text, path);
  if (!f) {
    progid_nomem(r);
    return NULL;
  }
  f->id = p->nfiles;
  p->files[p->nfiles++] = f;
  return f;
}

/* ---- directives ---- */

static void process(struct run *r, struct pfile *f, int a, int b);

static int group_value(struct run *r, const struct pdir *d, struct tv *shown)
{
  struct mst ms;
  int ndef;

  switch (d->kind) {
  case D_ELSE:
    return V_TRUE;
  case D_IF:
  case D_ELIF:
    return progid_eval_if(r, d->t, d->nt, shown);
  default:
    break;
  }
  ndef = d->kind == D_IFNDEF || d->kind == D_ELIFNDEF;
  if (d->nt < 1 || d->t[0].kind != T_IDENT) {
    progid_fail(r, "#ifdef without a name");
    return V_UNK;
  }
  progid_name_kind(r, d->t[0].s, d->t[0].len, &ms);
  if (ms.k == M_POISON) {
    progid_fail(r,
                "'%.*s' is defined differently in branches of a condition it "
                "cannot decide",
                (int)d->t[0].len, d->t[0].s);
    return V_UNK;
  }
  if (ms.k == M_UNKNOWN) {
    progid_tv_push(r, shown, &d->t[0]);
    return V_UNK;
  }
  return (ms.k == M_DEF) != ndef ? V_TRUE : V_FALSE;
}

/* `#ifndef G` followed at once by `#define G`: an include guard, or a
 * knob's default.  G is taken as undefined when no file read so far
 * defined it and no flag did (a system header does not define another
 * project's guard or knob; reserved names excepted). */
static int guard_idiom(struct run *r, const struct pfile *f, int i)
{
  const struct pdir *d = &f->d[f->dix[i]], *n;

  if (d->kind != D_IFNDEF || d->nt < 1 || i + 1 >= f->nt ||
      f->t[i + 1].kind != T_PP || d->t[0].s[0] == '_')
    return 0;
  n = &f->d[f->dix[i + 1]];
  return n->kind == D_DEFINE && n->nt >= 1 && n->t[0].len == d->t[0].len &&
         !memcmp(n->t[0].s, d->t[0].s, d->t[0].len) &&
         progid_name_kind(r, d->t[0].s, d->t[0].len, NULL) == M_UNKNOWN;
}

/* The #if chain starting at token i; returns the index after its
 * #endif. */
static int do_cond(struct run *r, struct pfile *f, int i)
{
  int g[MAX_GROUPS + 1], pos[MAX_GROUPS + 1], ng = 0, np = 0, k, certain = 0;
  int end, vals[MAX_GROUPS + 1];
  struct tv shown[MAX_GROUPS];
  struct state base, *st = NULL;

  memset(shown, 0, sizeof(shown));
  for (k = i; k >= 0; k = f->d[f->dix[k]].next) {
    if (ng > MAX_GROUPS) {
      progid_fail(r, "an #if chain of more than %d groups", MAX_GROUPS);
      return f->nt;
    }
    g[ng++] = k;
    if (f->d[f->dix[k]].kind == D_ENDIF)
      break;
  }
  if (!ng) {
    progid_fail(r, "an #if chain without groups");
    return f->nt;
  }
  end = g[ng - 1] + 1;
  for (k = 0; k + 1 < ng && !r->fail; k++) {
    int v = k == 0 && guard_idiom(r, f, i)
                ? V_TRUE
                : group_value(r, &f->d[f->dix[g[k]]], &shown[k]);
    vals[k] = v;
    if (v == V_FALSE)
      continue;
    pos[np++] = k;
    if (v == V_TRUE) {
      certain = 1;
      break;
    }
  }
  if (!certain)
    pos[np++] = -1; /* no group */
  if (r->fail)
    goto out;
  if (np == 1) {
    if (pos[0] >= 0)
      process(r, f, g[pos[0]] + 1, g[pos[0] + 1]);
    goto out;
  }
  /* undecided: every branch it could take, each with its own macros */
  if (r->undecided >= MAX_UNDECIDED) {
    progid_fail(r, "conditions it cannot decide nested too deep");
    goto out;
  }
  emit_mark(r, "?if");
  for (k = 0; k < np; k++) {
    int t, q = pos[k];
    if (q < 0 || vals[q] != V_UNK)
      continue;
    emit_mark(r, "?cond %d", q);
    for (t = 0; t < shown[q].n; t++)
      emit_tok(r, &shown[q].v[t]);
  }
  st = calloc((size_t)np, sizeof(*st));
  if (!st) {
    progid_nomem(r);
    goto out;
  }
  base = r->st;
  r->st.m = NULL;
  r->st.n = 0;
  r->undecided++;
  for (k = 0; k < np && !r->fail; k++) {
    if (state_copy(r, &base, &r->st))
      break;
    emit_mark(r, "?branch %d", pos[k]);
    if (pos[k] >= 0)
      process(r, f, g[pos[k]] + 1, g[pos[k] + 1]);
    st[k] = r->st;
    r->st.m = NULL;
    r->st.n = 0;
  }
  r->undecided--;
  emit_mark(r, "?endif");
  if (!r->fail)
    state_merge(r, st, np);
  else
    r->st = base, base.m = NULL;
  free(base.m);
  for (k = 0; k < np; k++)
    free(st[k].m);
  free(st);
out:
  for (k = 0; k < MAX_GROUPS; k++)
    progid_tv_free(&shown[k]);
  return end;
}

static void do_define(struct run *r, const struct pdir *d)
{
  const struct tok *t = d->t;
  struct mdef *m;
  int k, id, j;

  if (d->nt < 1 || t[0].kind != T_IDENT || progid_is_ident(&t[0], "defined")) {
    progid_fail(r, "#define without a name");
    return;
  }
  id = name_intern(r, t[0].s, t[0].len);
  m = progid_aalloc(r, sizeof(*m));
  if (id < 0 || !m)
    return;
  memset(m, 0, sizeof(*m));
  k = 1;
  if (t[0].s[t[0].len] == '(') {
    struct tok *par = progid_aalloc(r, (size_t)(d->nt + 1) * sizeof(*par));
    if (!par)
      return;
    m->fn = 1;
    m->par = par;
    for (k = 2; k < d->nt && !progid_is_punct(&t[k], ")"); k++) {
      if (progid_is_punct(&t[k], ","))
        continue;
      if (progid_is_punct(&t[k], "...")) {
        static const struct tok va = {"__VA_ARGS__", 11, T_IDENT, 0, NULL};
        par[m->np++] = va;
        m->variadic = 1;
      } else if (t[k].kind == T_IDENT && !m->variadic &&
                 !(k + 1 < d->nt && progid_is_punct(&t[k + 1], "..."))) {
        par[m->np++] = t[k];
      } else {
        progid_fail(r, "#define %.*s: a parameter list it does not read",
                    (int)t[0].len, t[0].s);
        return;
      }
    }
    if (k >= d->nt) {
      progid_fail(r, "#define %.*s: ')' missing", (int)t[0].len, t[0].s);
      return;
    }
    k++;
  }
  m->body = t + k;
  m->nb = d->nt - k;
  for (j = 0; j < m->nb; j++) {
    if (progid_is_ident(&m->body[j], "__VA_OPT__")) {
      progid_fail(r, "__VA_OPT__");
      return;
    }
    if (m->fn && progid_is_punct(&m->body[j], "#") &&
        (j + 1 >= m->nb || progid_param_of(m, &m->body[j + 1]) < 0)) {
      progid_fail(r, "#define %.*s: '#' not before a parameter", (int)t[0].len,
                  t[0].s);
      return;
    }
  }
  if (m->nb && (progid_is_punct(&m->body[0], "##") ||
                progid_is_punct(&m->body[m->nb - 1], "##"))) {
    progid_fail(r, "#define %.*s: ## at an end", (int)t[0].len, t[0].s);
    return;
  }
  state_set(r, id, M_DEF, m);
}

static int pinned(const struct run *r, int id)
{
  int i;

  for (i = 0; i < r->npinned; i++)
    if (r->pinned[i] == id)
      return 1;
  return 0;
}

/* What a system header could read: every macro but cuco's (expanded),
 * recorded in the identity.  Afterwards a name #undef'd may be defined
 * again by the header. */
static void system_header(struct run *r, const char *name, size_t n)
{
  int id;

  emit_mark(r, "#include <%.*s>", (int)n, name);
  for (id = 0; id < r->nn && !r->fail; id++) {
    struct mst m = progid_state_get(&r->st, id);
    struct tv body = {0};
    int i;
    if (cuco_name(r->nm[id], r->nl[id]))
      continue;
    if (m.k == M_POISON) {
      progid_fail(
          r,
          "'%s', defined differently in branches of a condition it cannot "
          "decide, is seen by <%.*s>",
          r->nm[id], (int)n, name);
      break;
    }
    if (m.k == M_UNDEF && !pinned(r, id))
      state_set(r, id, M_UNKNOWN, NULL);
    if (m.k != M_DEF)
      continue;
    emit_mark(r, "%s %d %d %d", r->nm[id], m.d->fn, m.d->np, m.d->variadic);
    {
      /* expanded as its name would be, without arguments */
      struct tok *v =
          progid_aalloc(r, (size_t)(m.d->nb ? m.d->nb : 1) * sizeof(*v));
      const struct hs *h = progid_hs_add(r, NULL, id);
      if (!v)
        break;
      for (i = 0; i < m.d->nb; i++) {
        v[i] = m.d->body[i];
        v[i].hs = h;
      }
      progid_expand(r, v, m.d->nb, &body);
    }
    for (i = 0; i < body.n; i++)
      emit_tok(r, &body.v[i]);
    progid_tv_free(&body);
  }
}

static void do_include(struct run *r, struct pfile *f, const struct pdir *d)
{
  const char *s = d->clean + d->rest, *e;
  char path[4200];
  struct pfile *h = NULL;
  int i;

  while (*s == ' ' || *s == '\t')
    s++;
  if (*s == '<' && (e = strchr(s + 1, '>'))) {
    system_header(r, s + 1, (size_t)(e - s - 1));
    return;
  }
  if (*s != '"' || !(e = strchr(s + 1, '"'))) {
    progid_fail(r, "a computed #include");
    return;
  }
  s++;
  if (*s == '/' || strstr(s, "..") || e - s > 1000) {
    progid_fail(r, "#include \"%.*s\": not beside the workload", (int)(e - s),
                s);
    return;
  }
  for (i = -1; i < r->p->ndirs && !h && !r->fail; i++) {
    const char *dir = i < 0 ? f->dir : r->p->dirs[i];
    if (i < 0 && !f->path)
      continue; /* the candidate's own folder holds only itself */
    snprintf(path, sizeof(path), "%s%s%.*s", dir, *dir ? "/" : "",
             (int)(e - s), s);
    h = header(r, path);
  }
  if (r->fail)
    return;
  if (!h) {
    progid_fail(r, "#include \"%.*s\": not found", (int)(e - s), s);
    return;
  }
  if (h->bad) {
    progid_fail(r, "%s", h->why);
    return;
  }
  if (r->once[h->id])
    return;
  if (r->incdepth >= MAX_INCLUDE) {
    progid_fail(r, "#include nested too deep");
    return;
  }
  emit_mark(r, "#include \"%.*s\"", (int)(e - s), s);
  r->incdepth++;
  process(r, h, 0, h->nt);
  r->incdepth--;
  emit_mark(r, "#end");
}

static void process(struct run *r, struct pfile *f, int a, int b)
{
  int i = a, j, k;

  while (i < b && !r->fail) {
    const struct pdir *d;
    if (f->t[i].kind != T_PP) {
      struct tv out = {0};
      for (j = i; j < b && f->t[j].kind != T_PP; j++)
        ;
      progid_expand(r, f->t + i, j - i, &out);
      for (k = 0; k < out.n && !r->fail; k++)
        emit_tok(r, &out.v[k]);
      if (out.n && out.v[out.n - 1].kind == T_IDENT) {
        /* a call whose '(' may come after the directive */
        const struct tok *t = &out.v[out.n - 1];
        struct mst m =
            progid_state_get(&r->st, progid_name_find(r, t->s, t->len));
        if (m.k == M_DEF && m.d->fn)
          progid_fail(r, "%.*s before a directive: a call may span it",
                      (int)t->len, t->s);
      }
      progid_tv_free(&out);
      i = j;
      continue;
    }
    d = &f->d[f->dix[i]];
    switch (d->kind) {
    case D_IF:
    case D_IFDEF:
    case D_IFNDEF:
      i = do_cond(r, f, i);
      continue;
    case D_ELIF:
    case D_ELIFDEF:
    case D_ELIFNDEF:
    case D_ELSE:
    case D_ENDIF:
      progid_fail(r, "an #else or #endif out of place");
      break;
    case D_DEFINE:
      do_define(r, d);
      break;
    case D_UNDEF:
      if (d->nt < 1 || d->t[0].kind != T_IDENT)
        progid_fail(r, "#undef without a name");
      else
        state_set(r, name_intern(r, d->t[0].s, d->t[0].len), M_UNDEF, NULL);
      break;
    case D_INCLUDE:
      do_include(r, f, d);
      break;
    case D_BADINC:
      progid_fail(r, "#include_next or #import");
      break;
    case D_PRAGMA:
      if (d->nt == 1 && progid_is_ident(&d->t[0], "once")) {
        if (r->undecided)
          progid_fail(r, "#pragma once under a condition it cannot decide");
        else if (f->id >= 0)
          r->once[f->id] = 1;
      } else {
        struct tv out = {0};
        emit_mark(r, "#pragma");
        progid_expand(r, d->t, d->nt, &out);
        for (k = 0; k < out.n; k++)
          emit_tok(r, &out.v[k]);
        progid_tv_free(&out);
      }
      break;
    case D_LINE:
    case D_NULL:
      break; /* only __LINE__ and __FILE__ change */
    default:
      emit_mark(r, "%s", d->clean); /* #error, #warning, #ident ... */
      break;
    }
    i++;
  }
}

/* -D NAME[=VALUE], -U NAME */
static void define_flag(struct run *r, const char *flag)
{
  const char *eq, *v;
  size_t nl;
  struct mdef *m;
  struct tok *t = NULL;
  struct err e;
  char *copy;
  int n = 0, id, i;

  if (!strncmp(flag, "-U", 2)) {
    flag += 2;
    id = name_intern(r, flag, strlen(flag));
    state_set(r, id, M_UNDEF, NULL);
    if (id >= 0 && r->npinned < (int)(sizeof(r->pinned) / sizeof(int)))
      r->pinned[r->npinned++] = id;
    return;
  }
  if (!strncmp(flag, "-D", 2))
    flag += 2;
  eq = strchr(flag, '=');
  nl = eq ? (size_t)(eq - flag) : strlen(flag);
  v = eq ? eq + 1 : "1";
  for (i = 0; i < (int)nl; i++)
    if (!(isalnum((unsigned char)flag[i]) || flag[i] == '_')) {
      progid_fail(r, "flag -D%s", flag);
      return;
    }
  copy = astr(r, v, strlen(v));
  id = name_intern(r, flag, nl);
  m = progid_aalloc(r, sizeof(*m));
  if (!copy || id < 0 || !m)
    return;
  if (progid_lex(copy, strlen(copy), &t, &n, &e)) {
    progid_fail(r, "flag -D%s: %s", flag, e.msg);
    return;
  }
  memset(m, 0, sizeof(*m));
  if (n) {
    struct tok *body = progid_aalloc(r, (size_t)n * sizeof(*body));
    if (!body) {
      free(t);
      return;
    }
    memcpy(body, t, (size_t)n * sizeof(*body));
    m->body = body;
    m->nb = n;
  }
  free(t);
  state_set(r, id, M_DEF, m);
}

/* ---- the fallback: the source's tokens and every flag ---- */

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void text_identity(XXH64_state_t *xh, const struct pfile *f,
                          const char *code, const char *const *defs, int ndefs)
{
  const char **sorted = ndefs ? malloc((size_t)ndefs * sizeof(*sorted)) : 0;
  int i;

  (void)XXH64_reset(xh, 0);
  (void)XXH64_update(xh, "cuco-progid-text 1", 19);
  if (f && !f->t && f->bad) {
    (void)XXH64_update(xh, code, strlen(code)); /* did not lex */
  } else if (f) {
    for (i = 0; i < f->nt; i++) {
      const struct tok *t = &f->t[i];
      const struct pdir *d = t->kind == T_PP ? &f->d[f->dix[i]] : NULL;
      unsigned char k = (unsigned char)(t->kind + 1);
      (void)XXH64_update(xh, &k, 1);
      if (d && d->t) {
        int j;
        (void)XXH64_update(xh, d->clean, d->rest);
        for (j = 0; j < d->nt; j++) {
          (void)XXH64_update(xh, " ", 1);
          (void)XXH64_update(xh, d->t[j].s, d->t[j].len);
        }
      } else if (d) {
        (void)XXH64_update(xh, d->clean, strlen(d->clean));
      } else {
        (void)XXH64_update(xh, t->s, t->len);
      }
      (void)XXH64_update(xh, "", 1);
    }
  }
  for (i = 0; sorted && i < ndefs; i++)
    sorted[i] = strncmp(defs[i], "-D", 2) ? defs[i] : defs[i] + 2;
  if (sorted)
    qsort(sorted, (size_t)ndefs, sizeof(*sorted), cmp_str);
  for (i = 0; i < ndefs; i++) {
    const char *s = sorted ? sorted[i] : defs[i];
    (void)XXH64_update(xh, "\x01", 1);
    (void)XXH64_update(xh, s, strlen(s) + 1);
  }
  free(sorted);
}

const char *const progid_nvcc_defs[PROGID_COMPILER_DEFS] = {
    "-D__CUDACC__", "-D__NVCC__", "-D__cplusplus=201703L", "-D__STDC__=1"};
const char *const progid_cc_defs[PROGID_COMPILER_DEFS] = {
    "-U__CUDACC__", "-U__NVCC__", "-U__cplusplus", "-U__CUDA_ARCH__"};

struct progid *progid_new(const char *const *dirs, int ndirs)
{
  struct progid *p = calloc(1, sizeof(*p));
  int i;

  if (!p)
    return NULL;
  p->dirs = calloc((size_t)(ndirs > 0 ? ndirs : 1), sizeof(*p->dirs));
  if (!p->dirs)
    goto fail;
  for (i = 0; i < ndirs; i++) {
    if (!dirs[i] || !*dirs[i])
      continue;
    p->dirs[p->ndirs] = strdup(dirs[i]);
    if (!p->dirs[p->ndirs++])
      goto fail;
  }
  return p;
fail:
  progid_free(p);
  return NULL;
}

void progid_free(struct progid *p)
{
  int i;

  if (!p)
    return;
  for (i = 0; i < p->ndirs; i++)
    free(p->dirs[i]);
  free(p->dirs);
  for (i = 0; i < p->nfiles; i++)
    pfile_free(p->files[i]);
  free(p);
}

int progid_compute(struct progid *p, const char *code, const char *const *defs,
                   int ndefs, char out[17], char *why, size_t whyn)
{
  struct run r;
  struct pfile *f;
  char *text = strdup(code ? code : "");
  int i, rc;

  memset(&r, 0, sizeof(r));
  r.p = p;
  if (why && whyn)
    why[0] = '\0';
  r.xh = XXH64_createState();
  f = text ? pfile_build(text, NULL) : NULL;
  if (!r.xh || !f) {
    XXH64_freeState(r.xh);
    pfile_free(f);
    return ERR_NOMEM;
  }
  (void)XXH64_reset(r.xh, 0);
  emit_mark(&r, "cuco-progid 1");
  for (i = 0; i < ndefs && !r.fail; i++)
    define_flag(&r, defs[i]);
  if (f->bad)
    progid_fail(&r, "%s", f->why);
  else if (!r.fail)
    process(&r, f, 0, f->nt);
  if (r.nomem) {
    rc = ERR_NOMEM;
  } else {
    if (r.fail) {
      text_identity(r.xh, f, code ? code : "", defs, ndefs);
      if (why && whyn)
        snprintf(why, whyn, "%s", r.why);
    }
    snprintf(out, 17, "%016llx", (unsigned long long)XXH64_digest(r.xh));
    rc = r.fail ? PROGID_TEXT : PROGID_EXACT;
  }
  while (r.arena) {
    struct achunk *c = r.arena;
    r.arena = c->next;
    free(c);
  }
  free(r.nm);
  free(r.nl);
  free(r.ht);
  free(r.st.m);
  XXH64_freeState(r.xh);
  pfile_free(f);
  return rc;
}
