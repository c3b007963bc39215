/* cliopt.c - exact option names, deprecated spellings, unit suffixes and
 * global options anywhere, for every command alike (cliopt.h). */
#include "cliopt.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

/* One normalization in progress: the tables and a cursor over argv. */
struct norm {
  const char *who;
  const struct cliopt *opts, *globals;
  int flags;
  FILE *notes;
  struct cliopt_args *a;
  struct err *e;
  int argc, i;
  char **argv;
};

/* A match: the canonical entry and whether it is a global option. */
struct match {
  const struct cliopt *o;
  int global;
};

static int push(struct cliopt_args *a, char *s)
{
  a->argv[a->argc++] = s;
  a->argv[a->argc] = NULL;
  return 0;
}

/* A new string owned by *a, or NULL. */
static char *own_fmt(struct cliopt_args *a, const char *fmt, ...)
    PRINTF_LIKE(2, 3);
static char *own_fmt(struct cliopt_args *a, const char *fmt, ...)
{
  va_list ap;
  char *s;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !(s = malloc((size_t)n + 1)))
    return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  a->owned[a->nowned++] = s;
  return s;
}

static void note(const struct norm *n, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void note(const struct norm *n, const char *fmt, ...)
{
  va_list ap;

  if (!n->notes)
    return;
  fprintf(n->notes, "%s: ", n->who);
  va_start(ap, fmt);
  vfprintf(n->notes, fmt, ap);
  va_end(ap);
  fputc('\n', n->notes);
}

/* The entry an alias stands for (the alias itself if its table lacks it:
 * a table's mistake, which the unit tests would show). */
static const struct cliopt *canonical(const struct cliopt *table,
                                      const struct cliopt *o)
{
  const struct cliopt *t;

  if (!o->alias_of)
    return o;
  for (t = table; t->name; t++)
    if (!t->alias_of && !strcmp(t->name, o->alias_of))
      return t;
  return o;
}

static int find_exact(const struct cliopt *table, const char *name, size_t len,
                      const struct cliopt **o)
{
  const struct cliopt *t;

  for (t = table; t && t->name; t++)
    if (strlen(t->name) == len && !strncmp(t->name, name, len)) {
      *o = t;
      return 1;
    }
  return 0;
}

/* Add the canonical entries of table that name[0..len) is a prefix of to
 * m[*nm], once each. */
static void find_prefix(const struct cliopt *table, int global,
                        const char *name, size_t len, struct match *m, int *nm,
                        int max)
{
  const struct cliopt *t;
  int k;

  for (t = table; t && t->name; t++) {
    const struct cliopt *c = canonical(table, t);
    if (strncmp(t->name, name, len))
      continue;
    for (k = 0; k < *nm && m[k].o != c; k++)
      ;
    if (k == *nm && *nm < max)
      m[(*nm)++] = (struct match){c, global};
  }
}

/* "--a is ambiguous: --alpha, --apple" into *e. */
static int ambiguous(const struct norm *n, const char *name, size_t len,
                     const struct match *m, int nm)
{
  char list[200];
  size_t used = 0;
  int k;

  list[0] = '\0';
  for (k = 0; k < nm && used < sizeof(list); k++)
    used += (size_t)snprintf(list + used, sizeof(list) - used, "%s--%s",
                             k ? ", " : "", m[k].o->name);
  return err_set(n->e, ERR_USAGE, "--%.*s is ambiguous: %s", (int)len, name,
                 list);
}

/* The option that --name[0..len) stands for: 1 and *m, 0 when it is
 * unknown, or ERR_USAGE (ambiguous). */
static int lookup_long(const struct norm *n, const char *name, size_t len,
                       struct match *m)
{
  struct match cand[64];
  const struct cliopt *o;
  int nm = 0, global = 0;

  if (!len)
    return 0;
  if (find_exact(n->opts, name, len, &o) ||
      (global = find_exact(n->globals, name, len, &o))) {
    *m = (struct match){canonical(global ? n->globals : n->opts, o), global};
    if (o->alias_of)
      note(n, "--%s is deprecated; use --%s", o->name, m->o->name);
    return 1;
  }
  find_prefix(n->opts, 0, name, len, cand, &nm, 64);
  find_prefix(n->globals, 1, name, len, cand, &nm, 64);
  if (nm > 1)
    return ambiguous(n, name, len, cand, nm);
  if (nm == 0)
    return 0;
  *m = cand[0];
  note(n, "--%.*s taken as --%s", (int)len, name, m->o->name);
  return 1;
}

/* *v converted for o's kind: the string as written when it needs no
 * conversion, else a new one in seconds or bytes. */
static int convert(struct norm *n, const struct cliopt *o, char **v)
{
  char flag[64];
  double secs;
  unsigned long long bytes;

  snprintf(flag, sizeof(flag), "--%s", o->name);
  if (o->kind == CLIOPT_DURATION) {
    if (units_parse_duration(flag, *v, &secs, n->e))
      return ERR_USAGE;
    if (units_has_suffix(*v))
      *v = own_fmt(n->a, "%.15g", secs);
  } else if (o->kind == CLIOPT_SIZE) {
    if (units_parse_size(flag, *v, &bytes, n->e))
      return ERR_USAGE;
    if (units_has_suffix(*v))
      *v = own_fmt(n->a, "%llu", bytes);
  }
  return *v ? 0 : err_set(n->e, ERR_NOMEM, "out of memory");
}

/* Hand on option m with value v (NULL: none): to the globals, or to the
 * command's argv as spelled (its text when that is already right). */
static int emit(struct norm *n, const struct match *m, char *spelled, char *v)
{
  const char *name = m->o->pass_as ? m->o->pass_as : m->o->name;
  char *arg = spelled;

  if (m->global) {
    if (n->a->nglobals >= CLIOPT_MAX_GLOBALS)
      return err_set(n->e, ERR_USAGE, "more than %d global options",
                     CLIOPT_MAX_GLOBALS);
    n->a->globals[n->a->nglobals++] = (struct cliopt_hit){m->o, v};
    return 0;
  }
  if (!arg && !(arg = own_fmt(n->a, "--%s", name)))
    return err_set(n->e, ERR_NOMEM, "out of memory");
  push(n->a, arg);
  if (v)
    push(n->a, v);
  return 0;
}

/* The value of option m: inline ("--x=V", "-xV") or the next argument.
 * NULL in *v when there is none: a global option's error, or the
 * command's parser's to report. */
static int take_value(struct norm *n, const struct match *m, char *inl,
                      const char *spelled, char **v)
{
  *v = inl;
  if (!*v && n->i + 1 < n->argc)
    *v = n->argv[++n->i];
  if (!*v)
    return m->global ? err_set(n->e, ERR_USAGE,
                               "option '%s' requires an argument", spelled)
                     : 0;
  return convert(n, m->o, v);
}

static int do_long(struct norm *n)
{
  char *arg = n->argv[n->i], *name = arg + 2, *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  const char *canon;
  struct match m;
  char *v = NULL;
  int rc = lookup_long(n, name, len, &m);

  if (rc < 0)
    return rc;
  if (rc == 0 && (n->flags & CLIOPT_STRICT))
    return err_set(n->e, ERR_USAGE, "unrecognized option '%.*s'",
                   (int)(len + 2), arg);
  if (rc == 0)
    return push(n->a, arg);
  canon = m.o->pass_as ? m.o->pass_as : m.o->name;
  if (m.o->kind == CLIOPT_FLAG && eq) {
    /* a global's error here; a command's own parser says what is wrong */
    if (m.global)
      return err_set(n->e, ERR_USAGE,
                     "option '--%s' doesn't allow an argument", m.o->name);
    if (!(v = own_fmt(n->a, "--%s%s", canon, eq)))
      return err_set(n->e, ERR_NOMEM, "out of memory");
    return push(n->a, v);
  }
  if (m.o->kind != CLIOPT_FLAG &&
      (rc = take_value(n, &m, eq ? eq + 1 : NULL, arg, &v)))
    return rc;
  return emit(n, &m, !eq && !strcmp(name, canon) ? arg : NULL, v);
}

static int find_short(const struct cliopt *table, int global, char c,
                      struct match *m)
{
  const struct cliopt *t;

  for (t = table; t && t->name; t++)
    if (t->short_name == c && !t->alias_of) {
      *m = (struct match){t, global};
      return 1;
    }
  return 0;
}

/* "-x", "-xyz", "-oFILE", "-o FILE": every letter known, else the
 * cluster is left as it is for the command's parser (or, strict, an
 * error). */
static int do_short(struct norm *n)
{
  char *arg = n->argv[n->i], *p;
  struct match m;
  int rc;

  for (p = arg + 1; *p; p++) {
    if (find_short(n->opts, 0, *p, &m) || find_short(n->globals, 1, *p, &m)) {
      if (m.o->kind != CLIOPT_FLAG)
        break; /* the rest is its value */
      continue;
    }
    if (n->flags & CLIOPT_STRICT)
      return err_set(n->e, ERR_USAGE, "unrecognized option '-%c'", *p);
    return push(n->a, arg);
  }
  for (p = arg + 1; *p; p++) {
    char *v = NULL, *spelled;
    if (!find_short(n->opts, 0, *p, &m))
      find_short(n->globals, 1, *p, &m);
    spelled = arg[2] ? own_fmt(n->a, "-%c", *p) : arg;
    if (!spelled)
      return err_set(n->e, ERR_NOMEM, "out of memory");
    if (m.o->kind == CLIOPT_FLAG) {
      if ((rc = emit(n, &m, spelled, NULL)))
        return rc;
      continue;
    }
    if ((rc = take_value(n, &m, p[1] ? p + 1 : NULL, spelled, &v)))
      return rc;
    return emit(n, &m, spelled, v);
  }
  return 0;
}

/* Copy argv[n->i..argc) as it is. */
static void copy_rest(struct norm *n)
{
  for (; n->i < n->argc; n->i++)
    push(n->a, n->argv[n->i]);
}

int cliopt_normalize(const char *who, const struct cliopt *opts,
                     const struct cliopt *globals, int flags, int argc,
                     char **argv, FILE *notes, struct cliopt_args *a,
                     struct err *e)
{
  struct norm n = {who, opts, globals, flags, notes, a, e, argc, 1, argv};
  size_t cap = 2;
  int rc = 0, k;

  /* an argument makes at most one per letter, and two ("--x=v") */
  for (k = 1; k < argc; k++)
    cap += strlen(argv[k]) + 2;
  a->argv = calloc(cap, sizeof(*a->argv));
  a->owned = calloc(cap, sizeof(*a->owned));
  if (!a->argv || !a->owned)
    return err_set(e, ERR_NOMEM, "out of memory");
  push(a, argc > 0 ? argv[0] : NULL);
  for (; n.i < argc && !rc; n.i++) {
    char *arg = argv[n.i];
    if (!strcmp(arg, "--") || (arg[0] != '-' || !arg[1])) {
      if (!strcmp(arg, "--") || (flags & CLIOPT_STOP))
        break;
      push(a, arg);
    } else if (arg[1] == '-') {
      rc = do_long(&n);
    } else {
      rc = do_short(&n);
    }
  }
  if (!rc)
    copy_rest(&n);
  return rc;
}

void cliopt_args_release(struct cliopt_args *a)
{
  int k;

  for (k = 0; k < a->nowned; k++)
    free(a->owned[k]);
  free(a->owned);
  free(a->argv);
  memset(a, 0, sizeof(*a));
}
