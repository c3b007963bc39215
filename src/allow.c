/* allow.c - the symbol allowlist and the raw-system-call scan; see
 * allow.h.  nm and objdump (binutils) run through proc.c; names are
 * demangled here with libiberty, as nm -C does. */
#define _GNU_SOURCE
#include "allow.h"

#include <errno.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "proc.h"

#define PAT_MAX    256
#define NM_OUT_MAX (16u << 20)
#define OD_OUT_MAX (256u << 20)
#define TOOL_T_S   120.0

enum { SC_ALL = 0, SC_CANDIDATE = 1, SC_BASELINE = 2, SC_FREEFORM = 3 };

struct allow_pat {
  char *pat;
  int scope; /* SC_*: who the line applies to */
  int deny;  /* a "!PATTERN" line */
};

struct allow {
  struct allow_pat *v;
  int n, cap;
  char widened[512]; /* the workload's [allow] symbols, for a hint */
};

void allow_free(struct allow *a)
{
  int i;

  if (!a)
    return;
  for (i = 0; i < a->n; i++)
    free(a->v[i].pat);
  free(a->v);
  free(a);
}

static int add(struct allow *a, const char *p, size_t len, int scope,
               struct err *e)
{
  char *s;

  if (a->n == a->cap) {
    int nc = a->cap ? a->cap * 2 : 64;
    struct allow_pat *nv = realloc(a->v, (size_t)nc * sizeof(*nv));
    if (!nv)
      return err_set(e, ERR_NOMEM, "out of memory");
    a->v = nv;
    a->cap = nc;
  }
  a->v[a->n].deny = len && *p == '!';
  if (a->v[a->n].deny) {
    p++;
    len--;
  }
  s = strndup(p, len);
  if (!s)
    return err_set(e, ERR_NOMEM, "out of memory");
  a->v[a->n].pat = s;
  a->v[a->n++].scope = scope;
  return 0;
}

/* [p, p+len) without blanks at either end. */
static void trim(const char **p, size_t *len)
{
  while (*len && (**p == ' ' || **p == '\t' || **p == '\r')) {
    (*p)++;
    (*len)--;
  }
  while (*len && ((*p)[*len - 1] == ' ' || (*p)[*len - 1] == '\t' ||
                  (*p)[*len - 1] == '\r'))
    (*len)--;
}

struct allow *allow_load(const char *path, struct err *e)
{
  struct allow *a = calloc(1, sizeof(*a));
  char line[1024];
  int lineno = 0, scope = SC_ALL;
  FILE *f;

  if (!a) {
    err_set(e, ERR_NOMEM, "out of memory");
    return NULL;
  }
  f = fopen(path, "r");
  if (!f) {
    err_set(e, ERR_IO, "%s: %s", path, strerror(errno));
    free(a);
    return NULL;
  }
  while (fgets(line, sizeof(line), f)) {
    const char *p = line;
    size_t len = strcspn(line, "\n");
    lineno++;
    if (line[len] != '\n' && !feof(f)) {
      err_set(e, ERR_PARSE, "%s:%d: line over %zu bytes", path, lineno,
              sizeof(line) - 2);
      goto fail;
    }
    trim(&p, &len);
    if (!len || *p == '#')
      continue;
    if (*p == '[') {
      if (len == 5 && !strncmp(p, "[all]", 5))
        scope = SC_ALL;
      else if (len == 11 && !strncmp(p, "[candidate]", 11))
        scope = SC_CANDIDATE;
      else if (len == 10 && !strncmp(p, "[baseline]", 10))
        scope = SC_BASELINE;
      else if (len == 10 && !strncmp(p, "[freeform]", 10))
        scope = SC_FREEFORM;
      else {
        err_set(e, ERR_PARSE,
                "%s:%d: unknown section '%.*s' ([all], [candidate], "
                "[baseline], [freeform])",
                path, lineno, (int)len, p);
        goto fail;
      }
      continue;
    }
    if (len >= PAT_MAX) {
      err_set(e, ERR_PARSE, "%s:%d: pattern over %d bytes", path, lineno,
              PAT_MAX - 1);
      goto fail;
    }
    if (add(a, p, len, scope, e))
      goto fail;
  }
  fclose(f);
  return a;
fail:
  fclose(f);
  allow_free(a);
  return NULL;
}

int allow_widen(struct allow *a, const char *list, struct err *e)
{
  const char *p = list;

  while (*p) {
    size_t len = strcspn(p, ",");
    const char *q = p;
    size_t ql = len;
    trim(&q, &ql);
    if (ql >= PAT_MAX)
      return err_set(e, ERR_PARSE, "pattern '%.40s...' over %d bytes", q,
                     PAT_MAX - 1);
    if (ql && *q == '!')
      return err_set(e, ERR_PARSE,
                     "'%.*s': a workload widens the list, it cannot deny",
                     (int)ql, q);
    if (ql && add(a, q, ql, SC_ALL, e))
      return ERR_NOMEM;
    if (ql && strlen(a->widened) + ql + 3 < sizeof(a->widened))
      snprintf(a->widened + strlen(a->widened),
               sizeof(a->widened) - strlen(a->widened), "%s%.*s",
               *a->widened ? ", " : "", (int)ql, q);
    p += len;
    p += *p ? 1 : 0;
  }
  return 0;
}

int allow_glob(const char *pat, const char *name)
{
  const char *star = NULL, *resume = NULL;

  while (*name) {
    if (*pat == '*') {
      star = pat++;
      resume = name;
    } else if (*pat == '?' || *pat == *name) {
      pat++;
      name++;
    } else if (star) {
      pat = star + 1;
      name = ++resume;
    } else {
      return 0;
    }
  }
  while (*pat == '*')
    pat++;
  return !*pat;
}

/* Whether a line of scope SC (not [freeform]) concerns the program. */
static int in_scope(int sc, int baseline)
{
  return sc == SC_ALL || (sc == SC_BASELINE && baseline) ||
         (sc == SC_CANDIDATE && !baseline);
}

/* A [freeform] line's verdict on the name: 0 denied, 1 allowed, -1 none. */
static int freeform_verdict(const struct allow *a, const char *name,
                            const char *demangled)
{
  int i, pass;

  for (pass = 0; pass < 2; pass++)
    for (i = 0; i < a->n; i++) {
      const struct allow_pat *p = &a->v[i];
      if (p->scope != SC_FREEFORM || p->deny != !pass)
        continue;
      if (allow_glob(p->pat, name) ||
          (demangled && allow_glob(p->pat, demangled)))
        return pass;
    }
  return -1;
}

int allow_match_program(const struct allow *a, const char *name,
                        const char *demangled, int baseline, int freeform)
{
  int i, pass, v;

  /* a freeform program is a whole program: its [freeform] lines decide
   * first */
  if (freeform && (v = freeform_verdict(a, name, demangled)) >= 0)
    return v;
  /* denials first, whatever their place in the file */
  for (pass = 0; pass < 2; pass++)
    for (i = 0; i < a->n; i++) {
      const struct allow_pat *p = &a->v[i];
      if (p->deny != !pass || !in_scope(p->scope, baseline))
        continue;
      if (allow_glob(p->pat, name) ||
          (demangled && allow_glob(p->pat, demangled)))
        return pass;
    }
  return 0;
}

int allow_match(const struct allow *a, const char *name, const char *demangled,
                int baseline)
{
  return allow_match_program(a, name, demangled, baseline, 0);
}

/* Run a binutils tool; its stdout in *out (caller releases). */
static int run_tool(const char *const *argv, size_t cap, struct buf *out,
                    struct err *e)
{
  char **env = proc_env_new(proc_env_default_allow, NULL);
  struct proc_opts o = {0};
  struct proc_result r;
  char how[128];
  int rc;

  if (!env)
    return err_set(e, ERR_NOMEM, "out of memory");
  o.argv = argv;
  o.envp = (const char *const *)env;
  o.timeout_s = TOOL_T_S;
  o.out_max = cap;
  o.err_max = 64 * 1024;
  rc = proc_run(&o, &r, e);
  proc_env_free(env);
  if (rc)
    return err_wrap(e, "%s (binutils)", argv[0]);
  if (!proc_ok(&r)) {
    const char *t = buf_str(&r.err);
    rc = err_set(e, ERR_PROC, "%s %s: %s: %.*s", argv[0],
                 argv[1] ? argv[1] : "", proc_describe(&r, how, sizeof(how)),
                 (int)strcspn(t, "\n"), t);
  } else if (buf_error(&r.out)) {
    rc = err_set(e, ERR_TOOBIG, "%s: output over %zu bytes", argv[0], cap);
  }
  if (rc) {
    proc_result_release(&r);
    return rc;
  }
  *out = r.out;
  buf_init(&r.out, 1);
  proc_result_release(&r);
  return 0;
}

/* The symbol name of one `nm -u` line ("   U name" / "   w name@VER"),
 * written into out without its version; 0 when the line holds none. */
static int nm_name(const char *line, size_t len, char *out, size_t n)
{
  size_t i = 0, k;

  while (i < len && line[i] == ' ')
    i++;
  if (i + 2 >= len || line[i + 1] != ' ')
    return 0;
  i += 2;
  k = len - i;
  /* dynamic symbols carry @VERSION or @@VERSION */
  for (size_t j = i; j < len; j++)
    if (line[j] == '@') {
      k = j - i;
      break;
    }
  snprintf(out, n, "%.*s", (int)k, line + i);
  return *out != '\0';
}

/* Whether nm must load bfd's plugins to list PATH's symbols: binutils' nm
 * otherwise loads every plugin of bfd-plugins to try each file, and with
 * LLVM's LLVMgold.so there (llvm-14's, on the 2-core dev machine) a run took
 * 74 ms instead of 9 ms, several runs for every build judged (issue 27).
 * A plugin only matters for compiler IR (LTO objects), whose calls are in
 * the IR and would be missed: one plugin-less listing of every symbol
 * tells, by failing ("file format not recognized": LLVM bitcode) or by
 * gcc's LTO marker (__gnu_lto_slim, __gnu_lto_v1). */
static int nm_needs_plugins(const char *path)
{
  const char *argv[] = {"nm",        "--plugin", "/dev/null",
                        "--no-sort", path,       NULL};
  struct buf out = BUF_INIT(1);
  struct err e = {0, ""};
  int ir;

  if (run_tool(argv, NM_OUT_MAX, &out, &e))
    return 1;
  ir = strstr(buf_str(&out), " __gnu_lto_") != NULL;
  buf_release(&out);
  return ir;
}

/* nm ARGS... into *out, without bfd's plugins unless PLUGINS. */
static int run_nm(const char *const *args, int plugins, struct buf *out,
                  struct err *e)
{
  const char *argv[12] = {"nm", "--plugin", "/dev/null"};
  size_t i, k = plugins ? 1 : 3;

  for (i = 0; args[i] && k + i + 1 < sizeof(argv) / sizeof(argv[0]); i++)
    argv[k + i] = args[i];
  argv[k + i] = NULL;
  return run_tool(argv, NM_OUT_MAX, out, e);
}

/* As binutils' bfd_demangle: libiberty's cplus_demangle with DMGL_PARAMS |
 * DMGL_ANSI on the name before any @VERSION, the version put back as it
 * was.  Demangling here instead of a second `nm -C` run halves the nm runs
 * (issue 27: every build judges every object, ~1,900 nm runs and 120 s of
 * CPU in a test run). */
void allow_demangle(const char *name, char *out, size_t n)
{
  size_t k = strcspn(name, "@");
  char head[1024], *d = NULL;

  if (k < sizeof(head) && name[0] == '_') {
    memcpy(head, name, k);
    head[k] = '\0';
    d = cplus_demangle(head, DMGL_PARAMS | DMGL_ANSI);
  }
  if (d)
    snprintf(out, n, "%s%s", d, name + k);
  else
    snprintf(out, n, "%s", name);
  free(d);
}

/* Whether a denial of the scope matches NAME or DEMANGLED: no workload
 * line can allow that symbol. */
static int denied(const struct allow *a, const char *name,
                  const char *demangled, int baseline, int freeform)
{
  int i, v;

  if (freeform && (v = freeform_verdict(a, name, demangled)) >= 0)
    return !v;
  for (i = 0; i < a->n; i++) {
    const struct allow_pat *p = &a->v[i];
    if (!p->deny || !in_scope(p->scope, baseline))
      continue;
    if (allow_glob(p->pat, name) ||
        (demangled && allow_glob(p->pat, demangled)))
      return 1;
  }
  return 0;
}

/* The workload.ini line that would allow the refused names MORE ("rand,
 * time") of a freeform program: "; to allow them, add `symbols = rand,
 * time` under [allow] in workload.ini", with the names it allows already
 * when it has the line.  No hint for a name a denial covers. */
static void widen_hint(const struct allow *a, const char *more, int n,
                       char *out, size_t outn)
{
  const char *them = n > 1 ? "them" : "it";

  if (!*more)
    *out = '\0';
  else if (!*a->widened)
    snprintf(out, outn,
             "; to allow %s, add `symbols = %s` under [allow] in "
             "workload.ini",
             them, more);
  else if (strlen(a->widened) + strlen(more) < 100)
    snprintf(out, outn,
             "; to allow %s, change the [allow] line in workload.ini to "
             "`symbols = %s, %s`",
             them, a->widened, more);
  else
    snprintf(out, outn,
             "; to allow %s, add %s to [allow] symbols in workload.ini", them,
             more);
}

static int check_symbols(const struct allow *a, const char *path,
                         const char *label, int dynamic, int baseline,
                         const char *list_name, int plugins, struct err *e)
{
  const char *args[] = {"-u", "--no-sort", path, NULL, NULL};
  struct buf raw = BUF_INIT(1);
  const char *p;
  char bad[4][160], more[160] = "", hint[300];
  int nbad = 0, nmore = 0, rc;

  if (dynamic) {
    args[2] = "-D";
    args[3] = path;
  }
  if ((rc = run_nm(args, plugins, &raw, e)))
    goto out;
  for (p = buf_str(&raw); *p;) {
    size_t pl = strcspn(p, "\n");
    char name[1024], dname[1024];
    if (nm_name(p, pl, name, sizeof(name))) {
      allow_demangle(name, dname, sizeof(dname));
      if (!allow_match_program(a, name, dname, baseline, dynamic)) {
        if (nbad < 4)
          snprintf(bad[nbad], sizeof(bad[0]), "%s", dname);
        nbad++;
        if (dynamic && !denied(a, name, dname, baseline, dynamic) &&
            nmore < 8 && strlen(more) + strlen(name) + 3 < sizeof(more))
          snprintf(more + strlen(more), sizeof(more) - strlen(more), "%s%s",
                   nmore++ ? ", " : "", name);
      }
    }
    p += pl;
    p += *p ? 1 : 0;
  }
  if (nbad) {
    char also[400] = "";
    int i;
    for (i = 1; i < nbad && i < 4; i++)
      snprintf(also + strlen(also), sizeof(also) - strlen(also), "%s'%s'",
               i > 1 ? ", " : "; also ", bad[i]);
    if (nbad > 4)
      snprintf(also + strlen(also), sizeof(also) - strlen(also),
               " and %d more", nbad - 4);
    widen_hint(a, more, nmore, hint, sizeof(hint));
    rc = err_set(e, ERR_CHECK, "%s calls '%s' (not on %s%s)%s", label, bad[0],
                 list_name, also, hint);
  }
out:
  buf_release(&raw);
  return rc;
}

/* One `nm --defined-only` line ("ADDR T name"): its type and name. */
static int def_line(const char *line, size_t len, char *type, char *out,
                    size_t n)
{
  const char *sp = memchr(line, ' ', len);

  if (!sp || (size_t)(sp - line) + 3 >= len || sp[2] != ' ')
    return 0;
  *type = sp[1];
  snprintf(out, n, "%.*s", (int)(len - (size_t)(sp + 3 - line)), sp + 3);
  return *out != '\0';
}

/* Whether the list allows DNAME, the demangled form of a C++ symbol, by a
 * pattern written for C++ names ("operator new(*", "rt_stream(wl_ctx*)",
 * "std::terminate()"): a C pattern such as "exp*" is about exp and expf,
 * not about "expert_kernel(float const*)", whose raw name (_Z13expert...)
 * can replace no C function. */
static int cxx_allowed(const struct allow *a, const char *dname, int baseline)
{
  int i;

  if (!allow_match(a, dname, NULL, baseline))
    return 0;
  for (i = 0; i < a->n; i++) {
    const struct allow_pat *p = &a->v[i];
    if (!p->deny && in_scope(p->scope, baseline) && strpbrk(p->pat, "(: ") &&
        allow_glob(p->pat, dname))
      return 1;
  }
  return 0;
}

/* What the implementation defines must not be a name the list allows:
 * a strong global definition of cudaEventElapsedTime, clock_gettime or
 * operator new would replace the library's for the whole program, the
 * harness's own calls included.  The ABI functions it must define are
 * exempt.  Objects: strong text and data (T D B R); programs: functions
 * (T; their data definitions are the linker's copies of stdout & co.). */
static int check_defs(const struct allow *a, const char *path,
                      const char *label, int dynamic, const char *list_name,
                      int plugins, struct err *e)
{
  static const char *const abi[] = {"wl_setup", "wl_step", "wl_teardown",
                                    "main", NULL};
  const char *args[] = {"-g", "--defined-only", "--no-sort", path, NULL};
  const char *types = dynamic ? "T" : "TDBR";
  struct buf raw = BUF_INIT(1);
  const char *p;
  int rc, i;

  if ((rc = run_nm(args, plugins, &raw, e)))
    goto out;
  for (p = buf_str(&raw); *p && !rc;) {
    size_t pl = strcspn(p, "\n");
    char name[1024], dname[1024], t;
    if (!def_line(p, pl, &t, name, sizeof(name))) {
      /* not a symbol line */
    } else if (!strcmp(name, "wl_input_post") ||
               !strcmp(name, "wl_reference")) {
      /* weak in rt.cuh: a candidate's definition would silently become the
       * input hook where the reference has none */
      rc = err_set(e, ERR_CHECK,
                   "%s defines '%s', which only the trusted reference may "
                   "define",
                   label, name);
    } else if (strchr(types, t)) {
      allow_demangle(name, dname, sizeof(dname));
      for (i = 0; abi[i] && strcmp(abi[i], name); i++)
        ;
      if (!abi[i] &&
          (allow_match(a, name, NULL, 0) || allow_match(a, name, NULL, 1) ||
           (strcmp(name, dname) &&
            (cxx_allowed(a, dname, 0) || cxx_allowed(a, dname, 1)))))
        rc = err_set(e, ERR_CHECK,
                     "%s defines '%.120s', a name on %s (it would replace "
                     "what the program links)",
                     label, dname, list_name);
    }
    p += pl;
    p += *p ? 1 : 0;
  }
out:
  buf_release(&raw);
  return rc;
}

/* Whether the instruction text (after the address and raw bytes) is a
 * system call: syscall, sysenter, int $0x80. */
static int is_syscall(const char *s, size_t len, char *what, size_t n)
{
  char ins[160];
  char *tok, *save, *c;
  int prev_int = 0;

  snprintf(ins, sizeof(ins), "%.*s", (int)len, s);
  if ((c = strchr(ins, '#')))
    *c = '\0';
  for (tok = strtok_r(ins, " \t,", &save); tok;
       tok = strtok_r(NULL, " \t,", &save)) {
    if (!strcmp(tok, "syscall") || !strcmp(tok, "sysenter") ||
        (prev_int && (!strcmp(tok, "$0x80") || !strcmp(tok, "0x80")))) {
      snprintf(what, n, "%s%s", prev_int ? "int " : "", tok);
      return 1;
    }
    prev_int = !strcmp(tok, "int");
  }
  return 0;
}

static int check_syscalls(const char *path, const char *label, struct err *e)
{
  const char *argv[] = {"objdump", "-d", "-C", "--no-show-raw-insn",
                        path,      NULL};
  struct buf out = BUF_INIT(1);
  char fn[200] = "?";
  const char *p;
  int rc;

  if ((rc = run_tool(argv, OD_OUT_MAX, &out, e)))
    goto out;
  for (p = buf_str(&out); *p;) {
    size_t len = strcspn(p, "\n");
    const char *lt = memchr(p, '<', len);
    if (len > 3 && p[len - 1] == ':' && p[len - 2] == '>' && lt &&
        p[0] != ' ') {
      /* "0000000000001139 <name>:" */
      snprintf(fn, sizeof(fn), "%.*s", (int)(p + len - 2 - lt - 1), lt + 1);
    } else if (len && p[0] == ' ' && memchr(p, '\t', len)) {
      const char *ins = p + len;
      char what[32];
      while (ins > p && ins[-1] != '\t')
        ins--;
      if (is_syscall(ins, (size_t)(p + len - ins), what, sizeof(what))) {
        rc = err_set(e, ERR_CHECK,
                     "%s makes a raw system call ('%s' in '%.120s')", label,
                     what, fn);
        goto out;
      }
    }
    p += len;
    p += *p ? 1 : 0;
  }
out:
  buf_release(&out);
  return rc;
}

/* Code that runs before or after main (issue 47): nvcc puts exactly one
 * entry in a .cu object's .init_array, its fatbinary registration
 * (__sti____cudaRegisterAll); anything else there, in .ctors or
 * .preinit_array, any .fini_array/.dtors entry, and .init/.fini code are a
 * candidate's constructors and destructors. */
#define RE_OUT_MAX (8u << 20)

struct elf_view {
  char sec[512][64]; /* section index -> name */
  const char *text;  /* readelf -SsrW output */
};

static int ctor_section(const char *name, int *before)
{
  static const char *const pre[] = {".init_array", ".ctors", ".preinit_array",
                                    NULL};
  static const char *const post[] = {".fini_array", ".dtors", NULL};
  for (int i = 0; pre[i] || post[i]; i++) {
    if (pre[i] && !strncmp(name, pre[i], strlen(pre[i]))) {
      *before = 1;
      return 1;
    }
    if (post[i] && !strncmp(name, post[i], strlen(post[i]))) {
      *before = 0;
      return 1;
    }
  }
  return 0;
}

/* The FUNC symbol at VALUE in the section named SECNAME, into OUT. */
static void func_at(const struct elf_view *v, const char *secname,
                    unsigned long long value, char *out, size_t n)
{
  const char *p = v->text;

  snprintf(out, n, "%s+0x%llx", secname, value);
  for (; *p; p += strcspn(p, "\n"), p += *p ? 1 : 0) {
    unsigned long long val;
    unsigned ndx;
    char type[16], name[256];
    if (sscanf(p, " %*u: %llx %*s %15s %*s %*s %u %255s", &val, type, &ndx,
               name) == 4 &&
        !strcmp(type, "FUNC") && val == value && ndx < 512 &&
        !strcmp(v->sec[ndx], secname)) {
      snprintf(out, n, "%s", name);
      return;
    }
  }
}

static int check_ctors(const char *path, const char *label, struct err *e)
{
  const char *argv[] = {"readelf", "-SsrW", path, NULL};
  struct buf out = BUF_INIT(1);
  struct elf_view *v = calloc(1, sizeof(*v));
  const char *p;
  int rc, in_rel = 0, before = 0;

  if (!v)
    return err_set(e, ERR_NOMEM, "out of memory");
  if ((rc = run_tool(argv, RE_OUT_MAX, &out, e)))
    goto out;
  v->text = buf_str(&out);
  for (p = v->text; *p && !rc; p += strcspn(p, "\n"), p += *p ? 1 : 0) {
    unsigned idx;
    char name[256], target[256], fn[256], dem[300];
    unsigned long long add;
    if (sscanf(p, " [%u] %255s", &idx, name) == 2) {
      if (idx < 512)
        snprintf(v->sec[idx], sizeof(v->sec[idx]), "%s", name);
      if (!strcmp(name, ".init") || !strcmp(name, ".fini"))
        rc = err_set(e, ERR_CHECK,
                     "%s has a %s section: code that runs %s main is "
                     "refused in candidates",
                     label, name, name[2] == 'i' ? "before" : "after");
      continue;
    }
    if (!strncmp(p, "Relocation section '", 20)) {
      const char *q = p + 20;
      q += !strncmp(q, ".rela", 5) ? 5 : !strncmp(q, ".rel", 4) ? 4 : 0;
      snprintf(name, sizeof(name), "%.*s", (int)strcspn(q, "'"), q);
      in_rel = ctor_section(name, &before);
      continue;
    }
    if (!in_rel ||
        sscanf(p, "%*x %*x %*s %*x %255s + %llx", target, &add) != 2)
      continue;
    if (target[0] == '.')
      func_at(v, target, add, fn, sizeof(fn));
    else
      snprintf(fn, sizeof(fn), "%s", target);
    if (before && strstr(fn, "__sti____cudaRegisterAll"))
      continue; /* nvcc's own registration */
    allow_demangle(fn, dem, sizeof(dem));
    rc = err_set(e, ERR_CHECK,
                 "%s runs '%.120s' %s main (a %s): constructors and "
                 "destructors are refused in candidates",
                 label, dem, before ? "before" : "after",
                 before ? "constructor or dynamic initializer" : "destructor");
  }
out:
  buf_release(&out);
  free(v);
  return rc;
}

int allow_check(const struct allow *a, const char *path, const char *label,
                int dynamic, int baseline, const char *list_name,
                struct err *e)
{
  int plugins = nm_needs_plugins(path);
  int rc =
      check_symbols(a, path, label, dynamic, baseline, list_name, plugins, e);

  if (rc || (rc = check_defs(a, path, label, dynamic, list_name, plugins, e)))
    return rc;
  if (!dynamic && !baseline && (rc = check_ctors(path, label, e)))
    return rc;
  return check_syscalls(path, label, e);
}
