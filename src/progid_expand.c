/* progid_expand.c - macro expansion and #if expressions for progid.c.
 *
 * Expansion is Prosser's algorithm (C11 6.10.3.4): every token carries
 * the hide set of the macros that made it, an argument is fully expanded
 * before it is substituted (except next to # and ##), and the result is
 * rescanned with what follows it.  #if expressions are evaluated in three
 * values: a name only a system header or the compiler could define is
 * unknown, and so is what depends on it (0 && x and 1 || x excepted). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progid_int.h"

/* ---- hide sets ---- */

static int hs_has(const struct hs *h, int id)
{
  for (; h && h->id <= id; h = h->next)
    if (h->id == id)
      return 1;
  return 0;
}

const struct hs *progid_hs_add(struct run *r, const struct hs *h, int id)
{
  struct hs *n;
  const struct hs *rest;

  if (!h || id < h->id) {
    n = progid_aalloc(r, sizeof(*n));
    if (!n)
      return h;
    n->id = id;
    n->next = h;
    return n;
  }
  if (id == h->id)
    return h;
  rest = progid_hs_add(r, h->next, id);
  if (rest == h->next)
    return h;
  n = progid_aalloc(r, sizeof(*n));
  if (!n)
    return h;
  n->id = h->id;
  n->next = rest;
  return n;
}

static const struct hs *hs_union(struct run *r, const struct hs *a,
                                 const struct hs *b)
{
  for (; b; b = b->next)
    a = progid_hs_add(r, a, b->id);
  return a;
}

static const struct hs *hs_inter(struct run *r, const struct hs *a,
                                 const struct hs *b)
{
  const struct hs *out = NULL;

  for (; a; a = a->next)
    if (hs_has(b, a->id))
      out = progid_hs_add(r, out, a->id);
  return out;
}

/* ---- macro expansion ---- */

struct ctx {
  const struct tok *v;
  int n, i;
};

struct ex {
  struct ctx *c;
  int nc, cap;
};

static void ex_push(struct run *r, struct ex *x, const struct tok *v, int n)
{
  while (x->nc && x->c[x->nc - 1].i >= x->c[x->nc - 1].n)
    x->nc--;
  if (n <= 0)
    return;
  if (x->nc == x->cap) {
    int cap = x->cap ? x->cap * 2 : 16;
    struct ctx *g;
    if (cap > MAX_CONTEXTS) {
      progid_fail(r, "macros nested too deep");
      return;
    }
    g = realloc(x->c, (size_t)cap * sizeof(*g));
    if (!g) {
      progid_nomem(r);
      return;
    }
    x->c = g;
    x->cap = cap;
  }
  x->c[x->nc].v = v;
  x->c[x->nc].n = n;
  x->c[x->nc].i = 0;
  x->nc++;
}

static const struct tok *ex_next(struct ex *x)
{
  while (x->nc && x->c[x->nc - 1].i >= x->c[x->nc - 1].n)
    x->nc--;
  if (!x->nc)
    return NULL;
  return &x->c[x->nc - 1].v[x->c[x->nc - 1].i++];
}

static const struct tok *ex_peek(const struct ex *x)
{
  int k;

  for (k = x->nc - 1; k >= 0; k--)
    if (x->c[k].i < x->c[k].n)
      return &x->c[k].v[x->c[k].i];
  return NULL;
}

int progid_param_of(const struct mdef *d, const struct tok *t)
{
  int i;

  if (!d->fn || t->kind != T_IDENT)
    return -1;
  for (i = 0; i < d->np; i++)
    if (d->par[i].len == t->len && !memcmp(d->par[i].s, t->s, t->len))
      return i;
  return -1;
}

/* a ## b: their spellings joined must lex as one token. */
static void glue(struct run *r, const struct tok *a, const struct tok *b,
                 struct tok *out)
{
  struct tok *v = NULL;
  struct err e;
  char *s;
  int n = 0;
  size_t len;

  if (a->kind == T_PLACE) {
    *out = *b;
    return;
  }
  if (b->kind == T_PLACE) {
    *out = *a;
    return;
  }
  len = a->len + b->len;
  s = progid_aalloc(r, len + 1);
  if (!s)
    return;
  memcpy(s, a->s, a->len);
  memcpy(s + a->len, b->s, b->len);
  s[len] = '\0';
  if (progid_lex(s, len, &v, &n, &e) || n != 1 || v[0].len != len ||
      v[0].kind == T_PP) {
    progid_fail(r, "pasting '%.*s' and '%.*s' does not give a token",
                (int)a->len, a->s, (int)b->len, b->s);
    free(v);
    return;
  }
  *out = v[0];
  out->space = a->space;
  out->hs = hs_inter(r, a->hs, b->hs);
  free(v);
}

static struct tok stringize(struct run *r, const struct tv *arg)
{
  struct tok t = {"\"\"", 2, T_STR, 1, NULL};
  size_t cap = 3, k = 0;
  char *s;
  int i;

  for (i = 0; i < arg->n; i++)
    cap += 2 * arg->v[i].len + 1;
  s = progid_aalloc(r, cap);
  if (!s)
    return t;
  s[k++] = '"';
  for (i = 0; i < arg->n; i++) {
    const struct tok *a = &arg->v[i];
    unsigned j;
    if (i && a->space)
      s[k++] = ' ';
    for (j = 0; j < a->len; j++) {
      if ((a->kind == T_STR || a->kind == T_CHR) &&
          (a->s[j] == '"' || a->s[j] == '\\'))
        s[k++] = '\\';
      s[k++] = a->s[j];
    }
  }
  s[k++] = '"';
  t.s = s;
  t.len = (unsigned)k;
  return t;
}

/* The replacement of macro d with the arguments args[0..na), each token's
 * hide set joined with hs; in the arena (*nout tokens). */
static const struct tok *subst(struct run *r, const struct mdef *d,
                               struct tv *args, int na, const struct hs *hs,
                               int *nout)
{
  struct tv os = {0}, *ex = NULL;
  struct tok *res = NULL, place = {"", 0, T_PLACE, 0, NULL};
  int j, i, p, k = 0;

  *nout = 0;
  if (na && !(ex = calloc((size_t)na, sizeof(*ex) + sizeof(int)))) {
    progid_nomem(r);
    return NULL;
  }
  for (j = 0; j < d->nb && !r->fail; j++) {
    const struct tok *b = &d->body[j];
    if (d->fn && progid_is_punct(b, "#") && j + 1 < d->nb &&
        (p = progid_param_of(d, &d->body[j + 1])) >= 0) {
      struct tok st = stringize(r, &args[p]);
      progid_tv_push(r, &os, &st);
      j++;
      continue;
    }
    if (progid_is_punct(b, "##") && j + 1 < d->nb) {
      const struct tok *nx = &d->body[j + 1];
      j++;
      if (!os.n) {
        progid_fail(r, "## at the start of a macro");
        break;
      }
      p = progid_param_of(d, nx);
      if (p < 0) {
        glue(r, &os.v[os.n - 1], nx, &os.v[os.n - 1]);
        continue;
      }
      if (!args[p].n) {
        /* GNU: `, ## __VA_ARGS__` drops the comma when there is none */
        if (d->variadic && p == d->np - 1 &&
            progid_is_punct(&os.v[os.n - 1], ","))
          os.n--;
        continue;
      }
      if (d->variadic && p == d->np - 1 &&
          progid_is_punct(&os.v[os.n - 1], ",")) {
        for (i = 0; i < args[p].n; i++)
          progid_tv_push(r, &os, &args[p].v[i]);
        continue;
      }
      glue(r, &os.v[os.n - 1], &args[p].v[0], &os.v[os.n - 1]);
      for (i = 1; i < args[p].n; i++)
        progid_tv_push(r, &os, &args[p].v[i]);
      continue;
    }
    p = progid_param_of(d, b);
    if (p < 0) {
      progid_tv_push(r, &os, b);
      continue;
    }
    if (j + 1 < d->nb && progid_is_punct(&d->body[j + 1], "##")) {
      if (!args[p].n)
        progid_tv_push(r, &os, &place);
      for (i = 0; i < args[p].n; i++)
        progid_tv_push(r, &os, &args[p].v[i]);
      continue;
    }
    {
      int *done = (int *)(ex + na);
      if (!done[p]) {
        progid_expand(r, args[p].v, args[p].n, &ex[p]);
        done[p] = 1;
      }
      for (i = 0; i < ex[p].n; i++)
        progid_tv_push(r, &os, &ex[p].v[i]);
    }
  }
  if (!r->fail && os.n) {
    res = progid_aalloc(r, (size_t)os.n * sizeof(*res));
    for (i = 0; res && i < os.n; i++) {
      if (os.v[i].kind == T_PLACE)
        continue;
      res[k] = os.v[i];
      res[k].hs = hs_union(r, res[k].hs, hs);
      k++;
    }
  }
  for (i = 0; i < na; i++)
    progid_tv_free(&ex[i]);
  free(ex);
  progid_tv_free(&os);
  *nout = r->fail ? 0 : k;
  return r->fail ? NULL : res;
}

/* Expand in[0..n) as C does (rescanning with what follows in the same
 * input), appending to out. */
void progid_expand(struct run *r, const struct tok *in, int n, struct tv *out)
{
  struct ex x = {0};
  const struct tok *t;

  if (++r->edepth > MAX_EXPAND) {
    progid_fail(r, "macro arguments nested too deep");
    goto out;
  }
  ex_push(r, &x, in, n);
  while (!r->fail && (t = ex_next(&x))) {
    struct mst ms;
    const struct mdef *d;
    const struct tok *p, *rp = NULL, *sv;
    struct tv *args = NULL;
    int id, na = 1, depth = 0, sn, i;
    if (++r->steps > MAX_STEPS) {
      progid_fail(r, "over %lu preprocessing steps", MAX_STEPS);
      break;
    }
    if (t->kind != T_IDENT || (id = progid_name_find(r, t->s, t->len)) < 0 ||
        hs_has(t->hs, id)) {
      progid_tv_push(r, out, t);
      continue;
    }
    ms = progid_state_get(&r->st, id);
    if (ms.k == M_POISON) {
      progid_fail(
          r,
          "'%.*s' is defined differently in branches of a condition it "
          "cannot decide",
          (int)t->len, t->s);
      break;
    }
    if (ms.k != M_DEF) {
      progid_tv_push(r, out, t);
      continue;
    }
    d = ms.d;
    if (!d->fn) {
      sv = subst(r, d, NULL, 0, progid_hs_add(r, t->hs, id), &sn);
      ex_push(r, &x, sv, sn);
      continue;
    }
    p = ex_peek(&x);
    if (!p || !progid_is_punct(p, "(")) {
      progid_tv_push(r, out, t);
      continue;
    }
    (void)ex_next(&x);
    args = calloc((size_t)d->np + 2, sizeof(*args));
    if (!args) {
      progid_nomem(r);
      break;
    }
    for (;;) {
      const struct tok *a = ex_next(&x);
      if (!a) {
        progid_fail(
            r, "a call of %.*s is not closed before a directive or the end",
            (int)t->len, t->s);
        break;
      }
      if (progid_is_punct(a, "(")) {
        depth++;
      } else if (progid_is_punct(a, ")")) {
        if (!depth) {
          rp = a;
          break;
        }
        depth--;
      } else if (progid_is_punct(a, ",") && !depth &&
                 !(d->variadic && na == d->np)) {
        if (na >= d->np) {
          progid_fail(r, "%.*s: too many arguments", (int)t->len, t->s);
          break;
        }
        na++;
        continue;
      }
      progid_tv_push(r, &args[na - 1], a);
    }
    if (!r->fail) {
      if (d->np == 0 && (na != 1 || args[0].n))
        progid_fail(r, "%.*s takes no arguments", (int)t->len, t->s);
      else if (d->np && na == d->np - 1 && d->variadic)
        na++; /* no variable arguments */
      else if (d->np && na != d->np)
        progid_fail(r, "%.*s: %d arguments for %d parameters", (int)t->len,
                    t->s, na, d->np);
    }
    if (!r->fail) {
      sv = subst(r, d, args, d->np,
                 progid_hs_add(r, hs_inter(r, t->hs, rp->hs), id), &sn);
      ex_push(r, &x, sv, sn);
    }
    for (i = 0; i < d->np + 2; i++)
      progid_tv_free(&args[i]);
    free(args);
  }
out:
  r->edepth--;
  free(x.c);
}

/* ---- #if ---- */

struct val {
  long long v;
  int uns, known;
};

struct parser {
  struct run *r;
  const struct tok *t;
  int n, i;
};

static struct val cond(struct parser *ps);

static struct val unknown_val(void)
{
  struct val v = {0, 0, 0};
  return v;
}

static struct val known_val(long long x, int uns)
{
  struct val v = {x, uns, 1};
  return v;
}

static int number(struct run *r, const struct tok *t, struct val *out)
{
  char buf[80], *end;
  size_t k = 0;
  unsigned j;
  unsigned long long v;
  int base = 10, uns = 0;

  for (j = 0; j < t->len && k + 1 < sizeof(buf); j++)
    if (t->s[j] != '\'')
      buf[k++] = t->s[j];
  buf[k] = '\0';
  if (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'))
    base = 16;
  else if (buf[0] == '0' && (buf[1] == 'b' || buf[1] == 'B'))
    base = 2;
  else if (buf[0] == '0')
    base = 8;
  if (base != 16 && (strchr(buf, '.') || strpbrk(buf, "eE")))
    goto bad;
  v = strtoull(base == 2 ? buf + 2 : buf, &end, base);
  for (; *end; end++) {
    if (*end == 'u' || *end == 'U')
      uns = 1;
    else if (*end != 'l' && *end != 'L')
      goto bad;
  }
  *out = known_val((long long)v, uns || v > (unsigned long long)LLONG_MAX);
  return 0;
bad:
  progid_fail(r, "#if: '%.*s' is not an integer", (int)t->len, t->s);
  return -1;
}

static int charval(struct run *r, const struct tok *t, struct val *out)
{
  static const char esc[] = "n\nt\tr\ra\ab\bf\fv\v\\\\''\"\"";
  const char *s = t->s;
  size_t k;

  if (t->len == 3 && s[0] == '\'' && s[1] != '\\') {
    *out = known_val((signed char)s[1], 0);
    return 0;
  }
  if (t->len == 4 && s[0] == '\'' && s[1] == '\\') {
    if (s[2] == '0') {
      *out = known_val(0, 0);
      return 0;
    }
    for (k = 0; k + 1 < sizeof(esc); k += 2)
      if (esc[k] == s[2]) {
        *out = known_val((signed char)esc[k + 1], 0);
        return 0;
      }
  }
  progid_fail(r, "#if: character constant %.*s", (int)t->len, t->s);
  return -1;
}

static const struct tok *ps_peek(struct parser *ps)
{
  return ps->i < ps->n ? &ps->t[ps->i] : NULL;
}

static int ps_accept(struct parser *ps, const char *p)
{
  const struct tok *t = ps_peek(ps);

  if (t && progid_is_punct(t, p)) {
    ps->i++;
    return 1;
  }
  return 0;
}

static struct val primary(struct parser *ps)
{
  const struct tok *t = ps_peek(ps);
  struct val v = unknown_val();

  if (!t) {
    progid_fail(ps->r, "#if: the expression ends early");
    return v;
  }
  ps->i++;
  if (progid_is_punct(t, "(")) {
    v = cond(ps);
    if (!ps_accept(ps, ")"))
      progid_fail(ps->r, "#if: ')' missing");
    return v;
  }
  if (progid_is_punct(t, "-") || progid_is_punct(t, "+") ||
      progid_is_punct(t, "~") || progid_is_punct(t, "!")) {
    v = primary(ps);
    if (!v.known)
      return v;
    if (*t->s == '-')
      v.v = v.uns ? (long long)(0ULL - (unsigned long long)v.v) : -v.v;
    else if (*t->s == '~')
      v.v = ~v.v;
    else if (*t->s == '!')
      v = known_val(!v.v, 0);
    return v;
  }
  if (t->kind == T_NUM)
    (void)number(ps->r, t, &v);
  else if (t->kind == T_CHR)
    (void)charval(ps->r, t, &v);
  else if (t->kind == T_UNK)
    v = unknown_val();
  else
    progid_fail(ps->r, "#if: unexpected '%.*s'", (int)t->len, t->s);
  return v;
}

/* Binary operators by precedence level (lowest first), C's. */
static const char *const levels[][5] = {
    {"|", NULL},
    {"^", NULL},
    {"&", NULL},
    {"==", "!=", NULL},
    {"<", ">", "<=", ">=", NULL},
    {"<<", ">>", NULL},
    {"+", "-", NULL},
    {"*", "/", "%", NULL},
};
#define NLEVELS ((int)(sizeof(levels) / sizeof(levels[0])))

static struct val apply(struct parser *ps, const char *op, struct val a,
                        struct val b)
{
  int uns = a.uns || b.uns;
  unsigned long long x = (unsigned long long)a.v, y = (unsigned long long)b.v;
  long long r;

  if (!a.known || !b.known)
    return unknown_val();
  if ((!strcmp(op, "/") || !strcmp(op, "%")) && !b.v) {
    progid_fail(ps->r, "#if: division by zero");
    return unknown_val();
  }
  if (!strcmp(op, "+"))
    r = (long long)(x + y);
  else if (!strcmp(op, "-"))
    r = (long long)(x - y);
  else if (!strcmp(op, "*"))
    r = uns ? (long long)(x * y) : (long long)(x * y);
  else if (!strcmp(op, "/"))
    r = uns ? (long long)(x / y)
            : (a.v == LLONG_MIN && b.v == -1 ? a.v : a.v / b.v);
  else if (!strcmp(op, "%"))
    r = uns ? (long long)(x % y) : (b.v == -1 ? 0 : a.v % b.v);
  else if (!strcmp(op, "<<"))
    r = (long long)(y >= 64 ? 0 : x << y);
  else if (!strcmp(op, ">>"))
    r = y >= 64 ? 0 : uns ? (long long)(x >> y) : a.v >> y;
  else if (!strcmp(op, "&"))
    r = (long long)(x & y);
  else if (!strcmp(op, "^"))
    r = (long long)(x ^ y);
  else if (!strcmp(op, "|"))
    r = (long long)(x | y);
  else {
    int c = uns ? (x > y) - (x < y) : (a.v > b.v) - (a.v < b.v);
    if (!strcmp(op, "=="))
      r = c == 0;
    else if (!strcmp(op, "!="))
      r = c != 0;
    else if (!strcmp(op, "<"))
      r = c < 0;
    else if (!strcmp(op, ">"))
      r = c > 0;
    else if (!strcmp(op, "<="))
      r = c <= 0;
    else
      r = c >= 0;
    return known_val(r, 0);
  }
  return known_val(r, uns);
}

static struct val binary(struct parser *ps, int lv)
{
  struct val a;

  if (lv >= NLEVELS)
    return primary(ps);
  a = binary(ps, lv + 1);
  for (;;) {
    const struct tok *t = ps_peek(ps);
    const char *op = NULL;
    int k;
    for (k = 0; t && levels[lv][k]; k++)
      if (progid_is_punct(t, levels[lv][k]))
        op = levels[lv][k];
    if (!op || ps->r->fail)
      return a;
    ps->i++;
    a = apply(ps, op, a, binary(ps, lv + 1));
  }
}

static struct val logic_and(struct parser *ps)
{
  struct val a = binary(ps, 0);

  while (!ps->r->fail && ps_accept(ps, "&&")) {
    struct val b = binary(ps, 0);
    if ((a.known && !a.v) || (b.known && !b.v))
      a = known_val(0, 0);
    else if (a.known && b.known)
      a = known_val(1, 0);
    else
      a = unknown_val();
  }
  return a;
}

static struct val logic_or(struct parser *ps)
{
  struct val a = logic_and(ps);

  while (!ps->r->fail && ps_accept(ps, "||")) {
    struct val b = logic_and(ps);
    if ((a.known && a.v) || (b.known && b.v))
      a = known_val(1, 0);
    else if (a.known && b.known)
      a = known_val(0, 0);
    else
      a = unknown_val();
  }
  return a;
}

static struct val cond(struct parser *ps)
{
  struct val c = logic_or(ps), a, b;

  if (ps->r->fail || !ps_accept(ps, "?"))
    return c;
  a = cond(ps);
  if (!ps_accept(ps, ":")) {
    progid_fail(ps->r, "#if: ':' missing");
    return c;
  }
  b = cond(ps);
  if (c.known)
    return c.v ? a : b;
  if (a.known && b.known && a.v == b.v)
    return a;
  return unknown_val();
}

static const char *const has_ops[] = {
    "__has_include",       "__has_include_next", "__has_attribute",
    "__has_cpp_attribute", "__has_builtin",      "__has_feature",
    "__has_extension",     "__has_c_attribute",  NULL};

/* Evaluate an #if/#elif expression; *shown gets the expression as
 * evaluated (for the identity when it is undecided). */
int progid_eval_if(struct run *r, const struct tok *in, int n,
                   struct tv *shown)
{
  struct tv a = {0};
  struct parser ps;
  struct val v;
  int k, i;

  for (k = 0; k < n && !r->fail; k++) {
    const struct tok *t = &in[k];
    struct tok u = {NULL, 0, T_UNK, 1, NULL};
    int paren = 0;
    if (progid_is_ident(t, "defined")) {
      const struct tok *nm;
      struct mst ms;
      if (k + 1 < n && progid_is_punct(&in[k + 1], "(")) {
        paren = 1;
        k++;
      }
      if (k + 1 >= n || in[k + 1].kind != T_IDENT ||
          (paren && (k + 2 >= n || !progid_is_punct(&in[k + 2], ")")))) {
        progid_fail(r, "#if: malformed defined");
        break;
      }
      nm = &in[++k];
      k += paren;
      progid_name_kind(r, nm->s, nm->len, &ms);
      if (ms.k == M_POISON) {
        progid_fail(
            r,
            "'%.*s' is defined differently in branches of a condition it "
            "cannot decide",
            (int)nm->len, nm->s);
        break;
      }
      if (ms.k == M_UNKNOWN) {
        char *s = progid_aalloc(r, nm->len + 10);
        if (!s)
          break;
        u.len = (unsigned)snprintf(s, nm->len + 10, "defined %.*s",
                                   (int)nm->len, nm->s);
        u.s = s;
      } else {
        u.kind = T_NUM;
        u.s = ms.k == M_DEF ? "1" : "0";
        u.len = 1;
      }
      progid_tv_push(r, &a, &u);
      continue;
    }
    for (i = 0; has_ops[i] && !progid_is_ident(t, has_ops[i]); i++)
      ;
    if (has_ops[i] && k + 1 < n && progid_is_punct(&in[k + 1], "(")) {
      int depth = 0, k0 = k;
      for (k++; k < n; k++) {
        if (progid_is_punct(&in[k], "("))
          depth++;
        else if (progid_is_punct(&in[k], ")") && --depth == 0)
          break;
      }
      u.s = in[k0].s;
      u.len = (unsigned)((k < n ? in[k].s + in[k].len
                                : in[n - 1].s + in[n - 1].len) -
                         in[k0].s);
      progid_tv_push(r, &a, &u);
      continue;
    }
    progid_tv_push(r, &a, t);
  }
  if (!r->fail)
    progid_expand(r, a.v, a.n, shown);
  progid_tv_free(&a);
  for (k = 0; k < shown->n && !r->fail; k++) {
    struct tok *t = &shown->v[k];
    if (t->kind != T_IDENT)
      continue;
    if (progid_name_kind(r, t->s, t->len, NULL) == M_UNKNOWN) {
      t->kind = T_UNK; /* a name a header or the compiler may define */
    } else {
      t->kind = T_NUM;
      t->s = "0";
      t->len = 1;
    }
  }
  if (r->fail)
    return V_UNK;
  ps.r = r;
  ps.t = shown->v;
  ps.n = shown->n;
  ps.i = 0;
  v = cond(&ps);
  if (!r->fail && ps.i != ps.n)
    progid_fail(r, "#if: unexpected '%.*s'", (int)ps.t[ps.i].len,
                ps.t[ps.i].s);
  if (r->fail)
    return V_UNK;
  return !v.known ? V_UNK : v.v ? V_TRUE : V_FALSE;
}
