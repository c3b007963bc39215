/* initfrom.c - read an ordinary CUDA program's sizes, time line, own
 * check, kernels and libraries out of its source (see initfrom.h). */
#include "initfrom.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analyze.h"
#include "cutok.h"

struct scan {
  const struct cutok_list *l;
  const struct analyze_report *r;
  struct initfrom_info *info;
};

static int is(const struct cutok_list *l, size_t i, const char *s)
{
  return cutok_is(l, i, s);
}

static int ident(const struct cutok_list *l, size_t i)
{
  return i < l->n && l->v[i].kind == CUTOK_IDENT;
}

/* Whether line LINE lies inside a kernel or device function: no host code
 * (arguments, prints, library calls) is looked for there. */
static int device_line(const struct analyze_report *r, int line)
{
  size_t i;
  for (i = 0; i < r->nfuncs; i++)
    if ((r->funcs[i].is_kernel || r->funcs[i].is_device) &&
        line >= r->funcs[i].start_line && line <= r->funcs[i].end_line)
      return 1;
  return 0;
}

static int host_tok(const struct scan *s, size_t i)
{
  return !device_line(s->r, s->l->v[i].line);
}

/* The text of a string literal token without its quotes and prefix, with
 * the common escapes decoded ("\n" becomes a newline); cut to n-1. */
static void str_text(const struct cutok_list *l, size_t i, char *out, size_t n)
{
  const char *p = l->src + l->v[i].off, *e = p + l->v[i].len;
  size_t k = 0;

  while (p < e && *p != '"')
    p++;
  if (p < e)
    p++;
  if (e > p && e[-1] == '"')
    e--;
  while (p < e && k + 1 < n) {
    if (*p == '\\' && p + 1 < e) {
      p++;
      out[k++] = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
      p++;
      continue;
    }
    out[k++] = *p++;
  }
  out[k] = '\0';
}

/* The text of the string literal at i and of those right after it, joined
 * as the compiler joins "abc " "def"; *last is the last one's index. */
static void str_joined(const struct cutok_list *l, size_t i, char *out,
                       size_t n, size_t *last)
{
  size_t k = 0;

  out[0] = '\0';
  for (*last = i; i < l->n && l->v[i].kind == CUTOK_STRING; i++) {
    k = strlen(out);
    str_text(l, i, out + k, n - k);
    *last = i;
  }
}

/* ---- numbers ---- */

/* A constant expression of integer literals with + - * / << and
 * parentheses ("1 << 20", "4 * 1024"): 0 and *v set, else -1. */
static int const_eval(const struct cutok_list *l, size_t *i, size_t end,
                      long long *v, int prec)
{
  long long a, b;
  char t[40], *stop;

  if (*i >= end)
    return -1;
  if (is(l, *i, "(")) {
    (*i)++;
    if (const_eval(l, i, end, &a, 0) || !is(l, *i, ")"))
      return -1;
    (*i)++;
  } else if (is(l, *i, "-")) {
    (*i)++;
    if (const_eval(l, i, end, &a, 3))
      return -1;
    a = -a;
  } else if (l->v[*i].kind == CUTOK_NUMBER) {
    cutok_text(l, *i, t, sizeof(t));
    a = strtoll(t, &stop, 0);
    while (*stop == 'u' || *stop == 'U' || *stop == 'l' || *stop == 'L')
      stop++;
    if (*stop)
      return -1; /* a float, a digit separator */
    (*i)++;
  } else {
    return -1;
  }
  for (;;) {
    int p = is(l, *i, "<<")                    ? 1
            : is(l, *i, "+") || is(l, *i, "-") ? 1
            : is(l, *i, "*") || is(l, *i, "/") ? 2
                                               : 0;
    char op[4];
    if (!p || p <= prec - 1 || *i + 1 >= end)
      break;
    if (p < prec)
      break;
    cutok_text(l, *i, op, sizeof(op));
    (*i)++;
    if (const_eval(l, i, end, &b, p + 1))
      return -1;
    if (!strcmp(op, "<<"))
      a = b >= 0 && b < 62 ? a << b : a;
    else if (!strcmp(op, "+"))
      a += b;
    else if (!strcmp(op, "-"))
      a -= b;
    else if (!strcmp(op, "*"))
      a *= b;
    else if (b)
      a /= b;
  }
  *v = a;
  return 0;
}

/* The default written in tokens [a, b): its text, and *val when it is a
 * positive integer. */
static void set_default(const struct cutok_list *l, size_t a, size_t b,
                        struct initfrom_arg *arg)
{
  long long v;
  size_t i = a;

  if (a >= b)
    return;
  cutok_span(l, a, b, arg->def, sizeof(arg->def));
  if (const_eval(l, &i, b, &v, 0) == 0 && i == b && v > 0 && v <= (1LL << 40))
    arg->defval = (long)v;
}

/* The end of the expression starting at i: the next ',' ';' or ')' at
 * this depth. */
static size_t expr_end(const struct cutok_list *l, size_t i)
{
  while (i < l->n && !is(l, i, ",") && !is(l, i, ";") && !is(l, i, ")") &&
         !is(l, i, "}") && !is(l, i, ":"))
    i = l->v[i].match > (long)i ? (size_t)l->v[i].match + 1 : i + 1;
  return i;
}

/* VAR's default: "VAR = CONST" in a declaration or an assignment of host
 * code before line BEFORE (the first one). */
static void find_default(const struct scan *s, struct initfrom_arg *arg,
                         int before)
{
  const struct cutok_list *l = s->l;
  size_t i;

  for (i = 1; i + 2 < l->n; i++) {
    size_t e;
    if (!is(l, i + 1, "=") || !ident(l, i) || l->v[i].line > before ||
        !host_tok(s, i))
      continue;
    if (l->v[i].len != strlen(arg->name) ||
        memcmp(l->src + l->v[i].off, arg->name, l->v[i].len) ||
        is(l, i - 1, ".") || is(l, i - 1, "->"))
      continue;
    e = expr_end(l, i + 2);
    set_default(l, i + 2, e, arg);
    if (arg->def[0])
      return;
  }
}

/* ---- command-line arguments ---- */

static int conv_call(const struct cutok_list *l, size_t i)
{
  static const char *const c[] = {
      "atoi",     "atol",  "atoll",  "strtol", "strtoll", "strtoul",
      "strtoull", "atof",  "strtod", "strtof", "stoi",    "stol",
      "stoll",    "stoul", "stoull", "stof",   "stod",    NULL};
  int k;
  for (k = 0; c[k]; k++)
    if (is(l, i, c[k]))
      return 1;
  return 0;
}

/* The variable assigned by the statement around token AT: the last name of
 * the lvalue before the first '=' of the statement ("cfg.m = conv(...)":
 * m; "int seq = argc > 1 ? ..." : seq). 0 when there is none. */
static int assigned_var(const struct cutok_list *l, size_t lo, size_t at,
                        char *out, size_t n)
{
  size_t s = at, k;

  while (s > lo && !is(l, s - 1, ";") && !is(l, s - 1, "{") &&
         !is(l, s - 1, "}") && !is(l, s - 1, ":"))
    s--;
  for (k = s; k < at; k++)
    if (is(l, k, "=") && k > s && ident(l, k - 1)) {
      cutok_text(l, k - 1, out, n);
      return 1;
    }
  return 0;
}

static struct initfrom_arg *add_arg(struct initfrom_info *in, const char *name)
{
  int i;
  struct initfrom_arg *a;

  if (!*name || strlen(name) >= sizeof(in->args[0].name))
    return NULL;
  for (i = 0; i < in->nargs; i++)
    if (!strcmp(in->args[i].name, name))
      return NULL; /* parsed twice (short and long option): the first */
  if (in->nargs >= INITFROM_MAX_ARGS)
    return NULL;
  a = &in->args[in->nargs++];
  memset(a, 0, sizeof(*a));
  snprintf(a->name, sizeof(a->name), "%s", name);
  return a;
}

/* getopt(argc, argv, "m:n:k:"), then "case 'm': m = CONV(optarg);" with
 * CONV atoi, strtol... (conv_call). */
static void args_getopt(struct scan *s)
{
  const struct cutok_list *l = s->l;
  char spec[128] = "", letter[8], var[64];
  size_t i, j;

  for (i = 0; i + 1 < l->n && !spec[0]; i++) {
    size_t depth = 0;
    if (!(is(l, i, "getopt") || is(l, i, "getopt_long") ||
          is(l, i, "getopt_long_only")) ||
        !is(l, i + 1, "("))
      continue;
    for (j = i + 2; j < l->n && !is(l, j, ")"); j++) {
      if (is(l, j, ","))
        depth++;
      else if (depth == 2 && l->v[j].kind == CUTOK_STRING)
        str_text(l, j, spec, sizeof(spec));
    }
  }
  if (!spec[0])
    return;
  for (i = 0; i + 2 < l->n; i++) {
    struct initfrom_arg *a;
    char *p;
    if (!is(l, i, "case") || l->v[i + 1].kind != CUTOK_CHAR || !host_tok(s, i))
      continue;
    cutok_text(l, i + 1, letter, sizeof(letter));
    if (strlen(letter) != 3 || letter[1] == ':' ||
        !(p = strchr(spec, letter[1])) || p[1] != ':')
      continue;
    /* the case's statements: to the next case, default or break */
    for (j = i + 2; j < l->n && !is(l, j, "case") && !is(l, j, "default") &&
                    !is(l, j, "break");
         j++) {
      if (is(l, j, "optarg") && assigned_var(l, i + 3, j, var, sizeof(var))) {
        if ((a = add_arg(s->info, var)) != NULL) {
          snprintf(a->flag, sizeof(a->flag), "-%c", letter[1]);
          a->line = l->v[i].line;
        }
        break;
      }
      if (is(l, j, "sscanf") && is(l, j + 1, "(")) {
        size_t k, e = (size_t)l->v[j + 1].match;
        for (k = j + 2; k + 1 < e; k++)
          if (is(l, k, "&") && ident(l, k + 1)) {
            cutok_text(l, k + 1, var, sizeof(var));
            if ((a = add_arg(s->info, var)) != NULL) {
              snprintf(a->flag, sizeof(a->flag), "-%c", letter[1]);
              a->line = l->v[i].line;
            }
            break;
          }
        break;
      }
    }
  }
}

/* A literal that is exactly a flag: "-n", "--tokens", "--tokens=". */
static int flag_literal(const char *t)
{
  size_t i = 1;

  if (t[0] != '-')
    return 0;
  if (t[1] == '-')
    i = 2;
  if (!isalpha((unsigned char)t[i]))
    return 0;
  for (; t[i]; i++)
    if (!(isalnum((unsigned char)t[i]) || t[i] == '_' || t[i] == '-' ||
          (t[i] == '=' && !t[i + 1])))
      return 0;
  return 1;
}

/* if (!strcmp(argv[i], "--tokens") ...) tokens = CONV(argv[++i]); */
static void args_flags(struct scan *s)
{
  const struct cutok_list *l = s->l;
  size_t i, j;
  char lit[64], var[64];

  for (i = 0; i < l->n; i++) {
    size_t cond, body, end;
    struct initfrom_arg *a;
    if (l->v[i].kind != CUTOK_STRING || !host_tok(s, i))
      continue;
    str_text(l, i, lit, sizeof(lit));
    if (!flag_literal(lit))
      continue;
    /* the if whose condition holds it */
    for (cond = i; cond > 0; cond--)
      if (is(l, cond, "(") && l->v[cond].match > (long)i && cond > 0 &&
          is(l, cond - 1, "if"))
        break;
    if (!cond)
      continue;
    body = (size_t)l->v[cond].match + 1;
    if (is(l, body, "{") && l->v[body].match > (long)body)
      end = (size_t)l->v[body].match;
    else
      for (end = body; end < l->n && !is(l, end, ";");)
        end = l->v[end].match > (long)end ? (size_t)l->v[end].match + 1
                                          : end + 1;
    for (j = body; j < end; j++)
      if (is(l, j, "argv") && assigned_var(l, body, j, var, sizeof(var)))
        break;
    if (j >= end || !(a = add_arg(s->info, var)))
      continue;
    a->joined = lit[strlen(lit) - 1] == '=';
    snprintf(a->flag, sizeof(a->flag), "%.*s",
             (int)strlen(lit) - (a->joined ? 1 : 0), lit);
    a->line = l->v[i].line;
  }
}

/* seq = argc > 1 ? CONV(argv[1]) : 2048;  if (argc > 5) g = CONV(argv[5]); */
static void args_positional(struct scan *s)
{
  const struct cutok_list *l = s->l;
  size_t i;
  char var[64], num[16];

  for (i = 0; i + 3 < l->n; i++) {
    struct initfrom_arg *a;
    long pos;
    size_t k, q;
    if (!is(l, i, "argv") || !is(l, i + 1, "[") ||
        l->v[i + 2].kind != CUTOK_NUMBER || !is(l, i + 3, "]") ||
        !host_tok(s, i) || i < 2 || !is(l, i - 1, "(") || !conv_call(l, i - 2))
      continue;
    pos = strtol(cutok_text(l, i + 2, num, sizeof(num)), NULL, 10);
    if (pos < 1 || pos > 32 || !assigned_var(l, 0, i, var, sizeof(var)))
      continue;
    if (!(a = add_arg(s->info, var)))
      continue;
    a->pos = (int)pos;
    a->line = l->v[i].line;
    /* "cond ? conv(argv[N]) : DEFAULT" */
    q = (size_t)l->v[i - 1].match + 1;
    if (is(l, q, ":")) {
      k = expr_end(l, q + 1);
      set_default(l, q + 1, k, a);
    }
  }
}

/* ---- the time line and the program's own check ---- */

/* Where in TEXT a time unit starts after a number's conversion or at the
 * literal's start: its factor to ms, or 0. */
static double unit_at(const char *p, size_t *len)
{
  static const struct {
    const char *u;
    double f;
  } units[] = {{"ms", 1},        {"msec", 1},    {"millisec", 1},
               {"us", 1e-3},     {"usec", 1e-3}, {"\xc2\xb5s", 1e-3},
               {"ns", 1e-6},     {"s", 1e3},     {"sec", 1e3},
               {"seconds", 1e3}, {NULL, 0}};
  int k;
  double best = 0;
  size_t bl = 0;

  for (k = 0; units[k].u; k++) {
    size_t n = strlen(units[k].u);
    if (!strncmp(p, units[k].u, n) && !isalpha((unsigned char)p[n]) &&
        n > bl) {
      best = units[k].f;
      bl = n;
    }
  }
  *len = bl;
  return best;
}

/* The literal text right after the number up to the next conversion or
 * line end, trimmed: what follows the number on the printed line. */
static int time_suffix(const char *after, char *out, size_t n, double *f)
{
  size_t ul, k = 0;
  const char *p = after;

  while (*p == ' ')
    p++;
  if (!(*f = unit_at(p, &ul)))
    return 0;
  for (p = after; *p && *p != '%' && *p != '\n' && *p != '"' && *p != '\'' &&
                  *p != '\\' && k + 1 < n;)
    out[k++] = *p++;
  while (k > 0 && (out[k - 1] == ' ' || out[k - 1] == '\t'))
    k--;
  out[k] = '\0';
  return k > 0;
}

static int score_literal(const char *t)
{
  int sc = 0;
  if (strstr(t, "iter") || strstr(t, "/it") || strstr(t, "per "))
    sc += 2;
  if (strstr(t, "avg") || strstr(t, "mean") || strstr(t, "median") ||
      strstr(t, "time") || strstr(t, "Time"))
    sc += 1;
  if (strstr(t, "init") || strstr(t, "setup") || strstr(t, "total") ||
      strstr(t, "usage"))
    sc -= 2;
  return sc;
}

static void find_time(struct scan *s)
{
  const struct cutok_list *l = s->l;
  struct initfrom_info *in = s->info;
  char t[512], suf[48];
  size_t i;
  int best = -100;

  for (i = 0; i < l->n; i++) {
    const char *p;
    double f;
    size_t last;
    if (l->v[i].kind != CUTOK_STRING || !host_tok(s, i))
      continue;
    str_joined(l, i, t, sizeof(t), &last);
    /* printf("... %.3f ms/iter"): a float conversion, then a unit */
    for (p = strchr(t, '%'); p; p = strchr(p + 1, '%')) {
      const char *c = p + 1;
      if (*c == '%') {
        p++;
        continue;
      }
      c += strspn(c, "-+ #0");
      c += strspn(c, "0123456789*");
      if (*c == '.')
        c += 1 + strspn(c + 1, "0123456789*");
      if (*c == 'l' || *c == 'L')
        c++;
      if (!strchr("fFeEgG", *c) || !*c)
        continue;
      if (time_suffix(c + 1, suf, sizeof(suf), &f) &&
          score_literal(t) >= best) {
        best = score_literal(t);
        snprintf(in->time_suffix, sizeof(in->time_suffix), "%s", suf);
        in->time_factor = f;
        in->time_line = l->v[i].line;
      }
    }
    /* std::cout << ms << " ms/iter": the literal starts with the unit */
    if (i > 1 && is(l, i - 1, "<<") && !is(l, i - 2, "<<") && t[0] == ' ' &&
        time_suffix(t, suf, sizeof(suf), &f) && score_literal(t) + 1 >= best) {
      best = score_literal(t) + 1;
      snprintf(in->time_suffix, sizeof(in->time_suffix), "%s", suf);
      in->time_factor = f;
      in->time_line = l->v[i].line;
    }
    i = last;
  }
}

/* The verdict word of STEM in a literal, case as printed: "PASSED",
 * "passed", "FAIL", "Failure"; not "password" or "failover". */
static int check_word(const char *t, const char *stem, char *out, size_t n)
{
  static const char *const tails[] = {"", "ed", "es", "s", "ure", NULL};
  size_t sl = strlen(stem);
  const char *p;
  int k;

  for (p = t; *p; p++) {
    size_t b = sl;
    if (strncasecmp(p, stem, sl) || (p > t && isalpha((unsigned char)p[-1])))
      continue;
    while (isalpha((unsigned char)p[b]))
      b++;
    for (k = 0; tails[k]; k++)
      if (b - sl == strlen(tails[k]) && !strncasecmp(p + sl, tails[k], b - sl))
        break;
    if (!tails[k] || b >= n)
      continue;
    snprintf(out, n, "%.*s", (int)b, p);
    return 1;
  }
  return 0;
}

static void find_check(struct scan *s)
{
  const struct cutok_list *l = s->l;
  struct initfrom_info *in = s->info;
  char t[512], w[32];
  size_t i, j;

  for (i = 0; i < l->n && !in->pass[0]; i++) {
    size_t last;
    if (l->v[i].kind != CUTOK_STRING || !host_tok(s, i))
      continue;
    str_joined(l, i, t, sizeof(t), &last);
    if (!check_word(t, "pass", w, sizeof(w))) {
      i = last;
      continue;
    }
    snprintf(in->pass, sizeof(in->pass), "%s", w);
    in->check_line = l->v[i].line;
    /* its FAIL: a literal of the same statement or the lines around */
    for (j = i > 40 ? i - 40 : 0; j < l->n && j < i + 40; j++) {
      if (l->v[j].kind != CUTOK_STRING || abs(l->v[j].line - l->v[i].line) > 3)
        continue;
      str_text(l, j, t, sizeof(t));
      if (check_word(t, "fail", w, sizeof(w))) {
        snprintf(in->fail, sizeof(in->fail), "%s", w);
        break;
      }
    }
  }
}

/* ---- kernels, libraries, calls ---- */

static int blank_or_comment(const char *src, size_t len, int from, int to)
{
  int line = 1;
  size_t i = 0;

  while (i < len && line < from) /* to the start of line FROM */
    line += src[i++] == '\n';
  while (i < len && line <= to) {
    size_t e = i;
    while (e < len && src[e] != '\n')
      e++;
    while (i < e && (src[i] == ' ' || src[i] == '\t'))
      i++;
    if (i < e && strncmp(src + i, "//", 2) && strncmp(src + i, "/*", 2) &&
        src[i] != '*')
      return 0;
    i = e + 1;
    line++;
  }
  return 1;
}

static void find_kernels(struct scan *s, const char *src, size_t len)
{
  struct initfrom_info *in = s->info;
  size_t i;

  for (i = 0; i < s->r->nfuncs; i++) {
    const struct analyze_func *f = &s->r->funcs[i];
    if (!f->is_kernel && !f->is_device)
      continue;
    if (in->nkernels > 0 &&
        blank_or_comment(src, len, in->kernel_hi[in->nkernels - 1] + 1,
                         f->start_line - 1)) {
      in->kernel_hi[in->nkernels - 1] = f->end_line;
      continue;
    }
    if (in->nkernels >= 32) { /* one block to the last */
      in->kernel_hi[31] = f->end_line;
      continue;
    }
    in->kernel_lo[in->nkernels] = f->start_line;
    in->kernel_hi[in->nkernels++] = f->end_line;
  }
}

static void add_lib(struct initfrom_info *in, const char *lib)
{
  int i;
  for (i = 0; i < in->nlibs; i++)
    if (!strcmp(in->libs[i], lib))
      return;
  if (in->nlibs < INITFROM_MAX_LIBS)
    snprintf(in->libs[in->nlibs++], sizeof(in->libs[0]), "%s", lib);
}

static void find_includes(struct scan *s)
{
  static const struct {
    const char *header, *lib;
  } h[] = {{"cublas_v2.h", "cublas"},
           {"cublas.h", "cublas"},
           {"cublasLt.h", "cublasLt"},
           {"curand.h", "curand"},
           {"cufft.h", "cufft"},
           {"cusparse.h", "cusparse"},
           {"cusparse_v2.h", "cusparse"},
           {"cusolverDn.h", "cusolver"},
           {NULL, NULL}};
  const struct cutok_list *l = s->l;
  size_t i;

  for (i = 0; i < l->n; i++) {
    const char *p = l->src + l->v[i].off, *e = p + l->v[i].len;
    char hdr[128];
    size_t n;
    int k;
    if (l->v[i].kind != CUTOK_PP)
      continue;
    p++;
    while (p < e && (*p == ' ' || *p == '\t'))
      p++;
    if (e - p < 8 || strncmp(p, "include", 7))
      continue;
    p += 7;
    while (p < e && (*p == ' ' || *p == '\t'))
      p++;
    if (p >= e || (*p != '<' && *p != '"'))
      continue;
    s->info->local_includes |= *p == '"';
    p++;
    for (n = 0; p + n < e && p[n] != '>' && p[n] != '"' && n + 1 < sizeof(hdr);
         n++)
      hdr[n] = p[n];
    hdr[n] = '\0';
    if (!strcmp(hdr, "mpi.h"))
      s->info->uses_mpi = 1;
    for (k = 0; h[k].header; k++)
      if (!strcmp(hdr, h[k].header))
        add_lib(s->info, h[k].lib);
  }
}

static int defined_here(const struct scan *s, const char *name)
{
  const struct cutok_list *l = s->l;
  size_t i, n = strlen(name);

  for (i = 0; i < s->r->nfuncs; i++)
    if (!strcmp(s->r->funcs[i].name, name))
      return 1;
  for (i = 0; i < l->n; i++) { /* a function-like macro of the file */
    const char *p = l->src + l->v[i].off, *e = p + l->v[i].len;
    if (l->v[i].kind != CUTOK_PP)
      continue;
    p++;
    while (p < e && (*p == ' ' || *p == '\t'))
      p++;
    if (e - p < 7 || strncmp(p, "define", 6))
      continue;
    p += 6;
    while (p < e && (*p == ' ' || *p == '\t'))
      p++;
    if ((size_t)(e - p) > n && !strncmp(p, name, n) &&
        !(isalnum((unsigned char)p[n]) || p[n] == '_'))
      return 1;
  }
  return 0;
}

static int not_a_function(const char *name)
{
  static const char *const w[] = {"if",
                                  "for",
                                  "while",
                                  "switch",
                                  "return",
                                  "sizeof",
                                  "alignof",
                                  "decltype",
                                  "static_cast",
                                  "const_cast",
                                  "reinterpret_cast",
                                  "dynamic_cast",
                                  "catch",
                                  "dim3",
                                  "defined",
                                  "int",
                                  "long",
                                  "short",
                                  "unsigned",
                                  "float",
                                  "double",
                                  "char",
                                  "bool",
                                  "size_t",
                                  "void",
                                  "__attribute__",
                                  "__declspec",
                                  "assert",
                                  NULL};
  int k;
  for (k = 0; w[k]; k++)
    if (!strcmp(name, w[k]))
      return 1;
  return 0;
}

static void add_call(struct scan *s, const char *name)
{
  struct initfrom_info *in = s->info;
  int i;

  if (!*name || strlen(name) >= sizeof(in->calls[0]) || not_a_function(name) ||
      !strncmp(name, "__", 2) || defined_here(s, name) ||
      analyze_value_kind(s->r, name) != ANALYZE_VAL_UNKNOWN)
    return;
  for (i = 0; i < in->ncalls; i++)
    if (!strcmp(in->calls[i], name))
      return;
  if (in->ncalls < INITFROM_MAX_CALLS)
    snprintf(in->calls[in->ncalls++], sizeof(in->calls[0]), "%s", name);
}

/* Functions host code calls that the file does not define, also inside
 * its macros (CUDACHECK's exit). */
static void find_calls(struct scan *s)
{
  const struct cutok_list *l = s->l;
  char name[64];
  size_t i;

  for (i = 0; i + 1 < l->n; i++) {
    if (l->v[i].kind == CUTOK_PP) {
      const char *p = l->src + l->v[i].off, *e = p + l->v[i].len, *q;
      if (!strstr(p, "define") || (size_t)(strstr(p, "define") - p) > 4)
        continue;
      for (q = p + 1; q < e; q++) {
        const char *b = q;
        size_t n;
        if (!(isalpha((unsigned char)*q) || *q == '_') ||
            isalnum((unsigned char)q[-1]) || q[-1] == '_' || q[-1] == '.' ||
            q[-1] == '>' || q[-1] == ':')
          continue;
        while (q < e && (isalnum((unsigned char)*q) || *q == '_'))
          q++;
        n = (size_t)(q - b);
        while (q < e && (*q == ' ' || *q == '\t'))
          q++;
        if (q < e && *q == '(' && n < sizeof(name)) {
          snprintf(name, sizeof(name), "%.*s", (int)n, b);
          if (strcmp(name, "define"))
            add_call(s, name);
        }
        q--;
      }
      continue;
    }
    if (!ident(l, i) || !is(l, i + 1, "(") || !host_tok(s, i) ||
        (i > 0 && (is(l, i - 1, ".") || is(l, i - 1, "->") ||
                   is(l, i - 1, "::") || is(l, i - 1, "~"))))
      continue;
    cutok_text(l, i, name, sizeof(name));
    /* "T name(" declares or defines; "new T(" constructs */
    if (i > 0 && (ident(l, i - 1) || is(l, i - 1, "*") || is(l, i - 1, "&")) &&
        !is(l, i - 1, "return") && !is(l, i - 1, "else"))
      continue;
    add_call(s, name);
  }
}

int initfrom_infer(const char *name, const char *src, size_t len,
                   const struct analyze_report *r, struct initfrom_info *info,
                   struct err *e)
{
  struct cutok_list l;
  struct scan s;
  int i, kinds = 0;

  memset(info, 0, sizeof(*info));
  if (cutok_lex(src, len, &l, e)) {
    cutok_release(&l);
    return err_wrap(e, "%s", name);
  }
  s.l = &l;
  s.r = r;
  s.info = info;
  args_getopt(&s);
  kinds += info->nargs > 0;
  i = info->nargs;
  args_flags(&s);
  kinds += info->nargs > i;
  i = info->nargs;
  args_positional(&s);
  kinds += info->nargs > i;
  info->parse_style =
      kinds > 1           ? "mixed"
      : !info->nargs      ? ""
      : info->args[0].pos ? "positional"
      : info->args[0].flag[1] == '-' || strlen(info->args[0].flag) > 2
          ? "flags"
          : "getopt";
  for (i = 0; i < info->nargs; i++)
    if (!info->args[i].def[0])
      find_default(&s, &info->args[i], info->args[i].line);
  find_time(&s);
  find_check(&s);
  find_kernels(&s, src, len);
  find_includes(&s);
  find_calls(&s);
  cutok_release(&l);
  return 0;
}
