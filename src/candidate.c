/* candidate.c - EVOLVE blocks, frozen text, forbidden calls; see
 * candidate.h. */
#include "candidate.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARK_START "EVOLVE-BLOCK-START"
#define MARK_END   "EVOLVE-BLOCK-END"

/* 1 when the line (len bytes, no newline) is "<blanks>// MARK<rest>". */
static int is_marker(const char *ln, size_t len, const char *mark)
{
  size_t i = 0, ml = strlen(mark);

  while (i < len && (ln[i] == ' ' || ln[i] == '\t'))
    i++;
  if (i + 2 > len || ln[i] != '/' || ln[i + 1] != '/')
    return 0;
  i += 2;
  while (i < len && (ln[i] == ' ' || ln[i] == '\t'))
    i++;
  return i + ml <= len && !strncmp(ln + i, mark, ml);
}

int candidate_blocks(const char *code, struct candidate_blocks *out,
                     struct err *e)
{
  size_t p = 0, n = strlen(code);
  int line = 1, open = 0;

  out->n = 0;
  while (p < n) {
    const char *ln = code + p, *nl = memchr(ln, '\n', n - p);
    size_t len = nl ? (size_t)(nl - ln) : n - p;
    size_t next = p + len + (nl ? 1 : 0);
    if (is_marker(ln, len, MARK_START)) {
      if (open)
        return err_set(e, ERR_CHECK,
                       "line %d: EVOLVE-BLOCK-START inside the block opened "
                       "at line %d (blocks do not nest)",
                       line, out->b[out->n].start_line);
      if (out->n >= CANDIDATE_MAX_BLOCKS)
        return err_set(e, ERR_CHECK, "line %d: more than %d EVOLVE blocks",
                       line, CANDIDATE_MAX_BLOCKS);
      open = 1;
      out->b[out->n].start = next;
      out->b[out->n].start_line = line;
    } else if (is_marker(ln, len, MARK_END)) {
      if (!open)
        return err_set(e, ERR_CHECK,
                       "line %d: EVOLVE-BLOCK-END without a START", line);
      open = 0;
      out->b[out->n].end = p;
      out->b[out->n].end_line = line;
      out->n++;
    }
    p = next;
    line++;
  }
  if (open)
    return err_set(e, ERR_CHECK, "line %d: EVOLVE-BLOCK-START is never closed",
                   out->b[out->n].start_line);
  return 0;
}

char *candidate_block_text(const char *code, const struct candidate_blocks *bl,
                           int i)
{
  size_t len;
  char *s;

  if (i < 0 || i >= bl->n)
    return NULL;
  len = bl->b[i].end - bl->b[i].start;
  s = malloc(len + 1);
  if (!s)
    return NULL;
  memcpy(s, code + bl->b[i].start, len);
  s[len] = '\0';
  return s;
}

char *candidate_replace_blocks(const char *code, const char *const *contents,
                               int n, struct err *e)
{
  struct candidate_blocks bl;
  size_t total, p = 0, at = 0;
  char *out;
  int i;

  if (candidate_blocks(code, &bl, e))
    return NULL;
  if (n != bl.n) {
    err_set(e, ERR_CHECK, "%d block contents given, the code has %d blocks", n,
            bl.n);
    return NULL;
  }
  total = strlen(code) + 1;
  for (i = 0; i < n; i++)
    total += strlen(contents[i]) + 1;
  if (total > CANDIDATE_MAX_BYTES * 2) {
    err_set(e, ERR_TOOBIG, "candidate over %u bytes", CANDIDATE_MAX_BYTES);
    return NULL;
  }
  out = malloc(total);
  if (!out) {
    err_set(e, ERR_NOMEM, "out of memory");
    return NULL;
  }
  for (i = 0; i < n; i++) {
    size_t cl = strlen(contents[i]);
    memcpy(out + at, code + p, bl.b[i].start - p);
    at += bl.b[i].start - p;
    memcpy(out + at, contents[i], cl);
    at += cl;
    if (cl && contents[i][cl - 1] != '\n')
      out[at++] = '\n';
    p = bl.b[i].end;
  }
  memcpy(out + at, code + p, strlen(code + p) + 1);
  return out;
}

static int line_at(const char *s, size_t off)
{
  int line = 1;
  size_t i;

  for (i = 0; i < off; i++)
    if (s[i] == '\n')
      line++;
  return line;
}

/* Quote at most 60 bytes of the line starting at s. */
static void quote_line(const char *s, char *out, size_t n)
{
  size_t len = strcspn(s, "\n");

  snprintf(out, n, "%.*s%s", (int)(len > 60 ? 60 : len), s,
           len > 60 ? "..." : "");
}

/* Compare seed[a0, a1) with cand[b0, b1); on a difference describe the
 * first differing line. */
static int compare_segment(const char *seed, size_t a0, size_t a1,
                           const char *cand, size_t b0, size_t b1,
                           struct err *e)
{
  size_t i = 0, la = a1 - a0, lb = b1 - b0, ls;
  char qa[80], qb[80];

  if (la == lb && !memcmp(seed + a0, cand + b0, la))
    return 0;
  while (i < la && i < lb && seed[a0 + i] == cand[b0 + i])
    i++;
  /* back to the start of the line holding the first difference */
  ls = i;
  while (ls > 0 && seed[a0 + ls - 1] != '\n')
    ls--;
  quote_line(cand + b0 + ls, qb, sizeof(qb));
  quote_line(seed + a0 + ls, qa, sizeof(qa));
  if (ls >= lb)
    snprintf(qb, sizeof(qb), "(nothing)");
  if (ls >= la)
    snprintf(qa, sizeof(qa), "(nothing)");
  return err_set(e, ERR_CHECK,
                 "frozen text differs from the seed at line %d: '%s' (seed "
                 "line %d: '%s')",
                 line_at(cand, b0 + ls), qb, line_at(seed, a0 + ls), qa);
}

int candidate_check_frozen(const char *seed, const char *cand, struct err *e)
{
  struct candidate_blocks sb, cb;
  size_t sp = 0, cp = 0;
  int i;

  if (candidate_blocks(seed, &sb, e))
    return err_wrap(e, "seed");
  if (candidate_blocks(cand, &cb, e))
    return ERR_CHECK;
  if (sb.n != cb.n)
    return err_set(e, ERR_CHECK,
                   "the candidate has %d EVOLVE blocks, the seed has %d", cb.n,
                   sb.n);
  for (i = 0; i <= sb.n; i++) {
    size_t se = i < sb.n ? sb.b[i].start : strlen(seed);
    size_t ce = i < cb.n ? cb.b[i].start : strlen(cand);
    if (compare_segment(seed, sp, se, cand, cp, ce, e))
      return ERR_CHECK;
    if (i < sb.n) {
      sp = sb.b[i].end;
      cp = cb.b[i].end;
    }
  }
  return 0;
}

/* ---- forbidden constructs ---- */

struct forbidden {
  const char *name;
  int device_only; /* host collectives: only for device candidates */
  int any_use;     /* the identifier anywhere, not only as a call */
  const char *why;
};

static const struct forbidden forbidden[] = {
    {"ncclAllGather", 1, 1, "host collective in a device candidate"},
    {"ncclAllReduce", 1, 1, "host collective in a device candidate"},
    {"ncclReduceScatter", 1, 1, "host collective in a device candidate"},
    {"ncclReduce", 1, 1, "host collective in a device candidate"},
    {"ncclBroadcast", 1, 1, "host collective in a device candidate"},
    {"ncclBcast", 1, 1, "host collective in a device candidate"},
    {"ncclAlltoAll", 1, 1, "host collective in a device candidate"},
    {"ncclAllToAll", 1, 1, "host collective in a device candidate"},
    {"ncclGather", 1, 1, "host collective in a device candidate"},
    {"ncclScatter", 1, 1, "host collective in a device candidate"},
    {"ncclSend", 1, 1, "host point-to-point in a device candidate"},
    {"ncclRecv", 1, 1, "host point-to-point in a device candidate"},
    {"ncclPutSignal", 1, 1, "host one-sided call in a device candidate"},
    {"ncclSignal", 1, 1, "host one-sided call in a device candidate"},
    {"ncclWaitSignal", 1, 1, "host one-sided call in a device candidate"},
    {"ncclGroupStart", 1, 1, "host NCCL group in a device candidate"},
    {"ncclGroupEnd", 1, 1, "host NCCL group in a device candidate"},
    {"main", 0, 0, "a candidate has no main"},
    {"wl_input_post", 0, 1,
     "input generation belongs to the trusted reference"},
    {"wl_reference", 0, 1,
     "the reference is trusted and never in a candidate"},
    {"wl_work", 0, 1, "the minimal work is declared by the trusted reference"},
    {"system", 0, 0, "process control"},
    {"popen", 0, 0, "process control"},
    {"fork", 0, 0, "process control"},
    {"vfork", 0, 0, "process control"},
    {"execl", 0, 0, "process control"},
    {"execlp", 0, 0, "process control"},
    {"execle", 0, 0, "process control"},
    {"execv", 0, 0, "process control"},
    {"execvp", 0, 0, "process control"},
    {"execve", 0, 0, "process control"},
    {"execvpe", 0, 0, "process control"},
    {"posix_spawn", 0, 0, "process control"},
    {"posix_spawnp", 0, 0, "process control"},
    {"kill", 0, 0, "process control"},
    {"raise", 0, 0, "process control"},
    {"signal", 0, 0, "process control"},
    {"sigaction", 0, 0, "process control"},
    {"ptrace", 0, 0, "process control"},
    {"syscall", 0, 0, "process control"},
    {"exit", 0, 0, "process control"},
    {"_exit", 0, 0, "process control"},
    {"_Exit", 0, 0, "process control"},
    {"quick_exit", 0, 0, "process control"},
    {"abort", 0, 0, "process control"},
    {"atexit", 0, 0, "process control"},
    {"at_quick_exit", 0, 0, "process control"},
    {"dlopen", 0, 0, "loading code"},
    {"dlsym", 0, 0, "loading code"},
    {"fopen", 0, 0, "file access (results are the harness's)"},
    {"freopen", 0, 0, "file access (results are the harness's)"},
    {"fdopen", 0, 0, "file access (results are the harness's)"},
    {"open", 0, 0, "file access (results are the harness's)"},
    {"openat", 0, 0, "file access (results are the harness's)"},
    {"creat", 0, 0, "file access (results are the harness's)"},
    {"remove", 0, 0, "file access (results are the harness's)"},
    {"unlink", 0, 0, "file access (results are the harness's)"},
    {"rename", 0, 0, "file access (results are the harness's)"},
    {"chdir", 0, 0, "file access (results are the harness's)"},
    {"setenv", 0, 0, "environment edit"},
    {"putenv", 0, 0, "environment edit"},
    {"unsetenv", 0, 0, "environment edit"},
    {"cudaDeviceReset", 0, 0, "resets the harness's device state"},
    {NULL, 0, 0, NULL}};

/* Lexer state carried across a region. */
enum lex_state { LX_CODE, LX_LINE_COMMENT, LX_BLOCK_COMMENT, LX_STR, LX_CHR };

/* Copy region [a, b) of code into clean[] with comments and literal
 * contents blanked (newlines kept).  Returns the state at b. */
static enum lex_state lex_scan(const char *code, size_t a, size_t b,
                               char *clean, int keep_literals)
{
  enum lex_state st = LX_CODE;
  size_t i;

  for (i = a; i < b; i++) {
    char c = code[i], n = i + 1 < b ? code[i + 1] : '\0';
    char *o = &clean[i - a];
    *o = c == '\n' ? '\n' : ' ';
    switch (st) {
    case LX_CODE:
      if (c == '/' && n == '/') {
        st = LX_LINE_COMMENT;
        i++;
        clean[i - a] = ' ';
      } else if (c == '/' && n == '*') {
        st = LX_BLOCK_COMMENT;
        i++;
        clean[i - a] = ' ';
      } else if (c == '"') {
        st = LX_STR;
        *o = keep_literals ? c : ' ';
      } else if (c == '\'') {
        st = LX_CHR;
        *o = keep_literals ? c : ' ';
      } else {
        *o = c;
      }
      break;
    case LX_LINE_COMMENT:
      if (c == '\n')
        st = LX_CODE;
      break;
    case LX_BLOCK_COMMENT:
      if (c == '*' && n == '/') {
        st = LX_CODE;
        i++;
        clean[i - a] = ' ';
      }
      break;
    case LX_STR:
    case LX_CHR:
      if (keep_literals)
        *o = c;
      if (c == '\\' && i + 1 < b) {
        i++;
        clean[i - a] = keep_literals || code[i] == '\n' ? code[i] : ' ';
      } else if (c == (st == LX_STR ? '"' : '\'') || c == '\n') {
        st = LX_CODE;
      }
      break;
    }
  }
  return st;
}

/* lex_scan without the literals' contents: what the code does. */
static enum lex_state lex_clean(const char *code, size_t a, size_t b,
                                char *clean)
{
  return lex_scan(code, a, b, clean, 0);
}

static int ident_char(char c)
{
  return isalnum((unsigned char)c) || c == '_';
}

/* Brace depth change and preprocessor-conditional depth of a cleaned
 * region; *pp_bad set when an #endif/#else has no #if in the region. */
static void region_balance(const char *clean, size_t len, int *braces, int *pp,
                           int *pp_bad)
{
  size_t i;
  int bol = 1;

  *braces = *pp = *pp_bad = 0;
  for (i = 0; i < len; i++) {
    char c = clean[i];
    if (c == '{')
      (*braces)++;
    else if (c == '}')
      (*braces)--;
    if (bol && c == '#') {
      size_t j = i + 1;
      while (j < len && (clean[j] == ' ' || clean[j] == '\t'))
        j++;
      if (!strncmp(clean + j, "if", 2))
        (*pp)++;
      else if (!strncmp(clean + j, "endif", 5) && --(*pp) < 0)
        *pp_bad = 1;
      else if ((!strncmp(clean + j, "else", 4) ||
                !strncmp(clean + j, "elif", 4)) &&
               *pp <= 0)
        *pp_bad = 1;
    }
    if (c == '\n')
      bol = 1;
    else if (c != ' ' && c != '\t')
      bol = 0;
  }
}

/* After "#define"/"#undef": does the macro name start with CUCO_? */
static int macro_is_cuco(const char *p)
{
  p += strspn(p, " \t");
  return !strncmp(p, "CUCO_", 5);
}

/* The #define at clean[at] names macro `p`; 1 when the previous
 * non-blank line is "#ifndef" of the same name (a default, which -D
 * flags override). */
static int guarded_define(const char *clean, size_t at, const char *p)
{
  char name[128], prev[160];
  size_t nl, s, e2;

  p += strspn(p, " \t");
  snprintf(name, sizeof(name), "%.*s", (int)strcspn(p, " \t\n("), p);
  if (at == 0)
    return 0;
  e2 = at - 1; /* the newline ending the previous line */
  while (e2 > 0 &&
         (clean[e2] == '\n' || clean[e2] == ' ' || clean[e2] == '\t'))
    e2--;
  s = e2;
  while (s > 0 && clean[s - 1] != '\n')
    s--;
  nl = e2 - s + 1;
  snprintf(prev, sizeof(prev), "%.*s", (int)(nl < 159 ? nl : 159), clean + s);
  {
    const char *q = prev + strspn(prev, " \t");
    if (*q != '#')
      return 0;
    q++;
    q += strspn(q, " \t");
    if (strncmp(q, "ifndef", 6))
      return 0;
    q += 6;
    q += strspn(q, " \t");
    return !strncmp(q, name, strlen(name)) &&
           strspn(q + strlen(name), " \t") == strlen(q + strlen(name));
  }
}

/* Whether the #include at CODE[at] names <"/abs"> or a path with "..":
 * the header's name is in the raw text (the cleaned copy blanks it). */
static int bad_system_include(const char *code, size_t at)
{
  const char *p = strchr(code + at, '<'), *nl = strchr(code + at, '\n');
  size_t n;

  if (!p || (nl && p > nl))
    return 0;
  p += 1 + strspn(p + 1, " \t");
  n = strcspn(p, ">\n");
  if (*p == '/')
    return 1;
  for (size_t k = 0; k + 1 < n; k++)
    if (p[k] == '.' && p[k + 1] == '.')
      return 1;
  return 0;
}

/* Assembler directives that read files or place code before or after
 * main, and the attributes that do the latter (issue 47: a cheap first
 * line; the sandboxed compiler and the object check are the boundary).
 * Looked for in the raw text, string literals included. */
static const char *const asm_words[] = {
    "incbin", ".include", "init_array",   "fini_array", ".ctors",
    ".dtors", ".section", ".pushsection", NULL};
static const char *const attr_words[] = {"constructor",     "destructor",
                                         "__constructor__", "__destructor__",
                                         "init_priority",   NULL};

static int check_words(const char *code, size_t a, size_t b, const char *clean,
                       struct err *e)
{
  char *lit = malloc(b - a + 1); /* comments blanked, literals kept */

  if (!lit)
    return err_set(e, ERR_NOMEM, "out of memory");
  lex_scan(code, a, b, lit, 1);
  lit[b - a] = '\0';
  for (int k = 0; asm_words[k]; k++) {
    size_t n = strlen(asm_words[k]);
    for (size_t i = 0; i + n <= b - a; i++)
      if (!memcmp(lit + i, asm_words[k], n) && !ident_char(lit[i + n])) {
        free(lit);
        return err_set(e, ERR_CHECK,
                       "line %d: forbidden assembler directive '%s' inside an "
                       "EVOLVE block (it reads files or places code outside "
                       "the program's flow)",
                       line_at(code, a + i), asm_words[k]);
      }
  }
  free(lit);
  for (size_t i = 0; i < b - a; i++) {
    if (!ident_char(clean[i]) || (i && ident_char(clean[i - 1])))
      continue;
    for (int k = 0; attr_words[k]; k++) {
      size_t n = strlen(attr_words[k]);
      if (!strncmp(clean + i, attr_words[k], n) && !ident_char(clean[i + n]))
        return err_set(e, ERR_CHECK,
                       "line %d: forbidden '%s' inside an EVOLVE block "
                       "(code before or after main)",
                       line_at(code, a + i), attr_words[k]);
    }
  }
  return 0;
}

/* Check one region (a block's contents or the whole file). */
static int check_region(const char *code, size_t a, size_t b, int device,
                        int in_block, struct err *e)
{
  char *clean = malloc(b - a + 1);
  enum lex_state st;
  size_t i;
  int rc = 0, bol = 1;

  if (!clean)
    return err_set(e, ERR_NOMEM, "out of memory");
  st = lex_clean(code, a, b, clean);
  clean[b - a] = '\0';
  if (in_block && st != LX_CODE && st != LX_LINE_COMMENT) {
    rc = err_set(e, ERR_CHECK,
                 "line %d: the EVOLVE block ends inside a %s (it would "
                 "swallow frozen text)",
                 line_at(code, b),
                 st == LX_BLOCK_COMMENT ? "comment" : "literal");
    goto out;
  }
  if (in_block) {
    int br, pp, ppbad;
    region_balance(clean, b - a, &br, &pp, &ppbad);
    if (pp || ppbad) {
      rc = err_set(e, ERR_CHECK,
                   "line %d: unbalanced #if/#endif in the EVOLVE block "
                   "ending here",
                   line_at(code, b));
      goto out;
    }
  }
  if (in_block && (rc = check_words(code, a, b, clean, e)))
    goto out;
  for (i = 0; i < b - a; i++) {
    char c = clean[i];
    if (c == '\n') {
      bol = 1;
      continue;
    }
    if (bol && c == '#' && in_block) {
      size_t j = i + 1;
      while (clean[j] == ' ' || clean[j] == '\t')
        j++;
      /* <system> headers are fine; a quoted or computed include could
       * pull the reference, a baseline or the runtime's internals in */
      if (!strncmp(clean + j, "include", 7) &&
          clean[j + 7 + strspn(clean + j + 7, " \t")] != '<') {
        rc = err_set(e, ERR_CHECK,
                     "line %d: forbidden '#include \"...\"' inside an "
                     "EVOLVE block (only <system> headers)",
                     line_at(code, a + i));
        goto out;
      }
      if (!strncmp(clean + j, "include", 7) &&
          bad_system_include(code, a + i)) {
        rc = err_set(e, ERR_CHECK,
                     "line %d: forbidden '#include' of an absolute path or "
                     "one with '..' (only <system> headers by name)",
                     line_at(code, a + i));
        goto out;
      }
      if (!strncmp(clean + j, "undef", 5) && macro_is_cuco(clean + j + 5)) {
        rc = err_set(e, ERR_CHECK,
                     "line %d: forbidden #undef of a CUCO_ directive macro",
                     line_at(code, a + i));
        goto out;
      }
      if (!strncmp(clean + j, "define", 6) && macro_is_cuco(clean + j + 6) &&
          !guarded_define(clean, i, clean + j + 6)) {
        rc = err_set(e, ERR_CHECK,
                     "line %d: a CUCO_ macro may only get a default "
                     "(#ifndef NAME / #define NAME ...), not be redefined",
                     line_at(code, a + i));
        goto out;
      }
    }
    if (c != ' ' && c != '\t')
      bol = 0;
    if (ident_char(c) && (i == 0 || !ident_char(clean[i - 1]))) {
      size_t len = 0, k;
      while (ident_char(clean[i + len]))
        len++;
      for (k = 0; forbidden[k].name; k++) {
        const struct forbidden *f = &forbidden[k];
        size_t j = i + len;
        if (strlen(f->name) != len || strncmp(f->name, clean + i, len))
          continue;
        if (f->device_only && !device)
          continue;
        while (clean[j] == ' ' || clean[j] == '\t' || clean[j] == '\n')
          j++;
        if (!f->any_use && clean[j] != '(')
          continue;
        /* obj.open(...) / p->kill(...) are methods, not the libc call */
        if (!f->any_use && i > 0 &&
            (clean[i - 1] == '.' ||
             (clean[i - 1] == '>' && i > 1 && clean[i - 2] == '-')))
          continue;
        rc = err_set(e, ERR_CHECK, "line %d: forbidden %s '%s' (%s)",
                     line_at(code, a + i), f->any_use ? "use of" : "call",
                     f->name, f->why);
        goto out;
      }
      i += len - 1;
    }
  }
out:
  free(clean);
  return rc;
}

int candidate_check_forbidden(const char *code, int device, struct err *e)
{
  struct candidate_blocks bl;
  int i;

  if (candidate_blocks(code, &bl, e))
    return ERR_CHECK;
  if (bl.n == 0)
    return check_region(code, 0, strlen(code), device, 0, e);
  /* Only block contents: the frozen text is checked byte-for-byte
   * against the seed and so is as trusted as the seed. */
  for (i = 0; i < bl.n; i++)
    if (check_region(code, bl.b[i].start, bl.b[i].end, device, 1, e))
      return ERR_CHECK;
  return 0;
}

/* Whether the cleaned region [a, b) of CODE uses one of NAMES. */
static int names_in_region(const char *code, size_t a, size_t b,
                           const char *const *names, int n, const char *why,
                           struct err *e)
{
  char *clean = malloc(b - a + 1);
  size_t i;
  int rc = 0, k;

  if (!clean)
    return err_set(e, ERR_NOMEM, "out of memory");
  lex_clean(code, a, b, clean);
  for (i = 0; i < b - a && !rc; i++) {
    size_t len = 0;
    if (!ident_char(clean[i]) || (i > 0 && ident_char(clean[i - 1])))
      continue;
    while (i + len < b - a && ident_char(clean[i + len]))
      len++;
    for (k = 0; k < n; k++)
      if (strlen(names[k]) == len && !strncmp(names[k], clean + i, len)) {
        rc = err_set(e, ERR_CHECK, "line %d: forbidden use of '%s' (%s)",
                     line_at(code, a + i), names[k], why);
        break;
      }
    i += len - 1;
  }
  free(clean);
  return rc;
}

int candidate_check_names(const char *code, const char *const *names, int n,
                          const char *why, struct err *e)
{
  struct candidate_blocks bl;
  int i;

  if (n <= 0)
    return 0;
  if (candidate_blocks(code, &bl, e))
    return ERR_CHECK;
  if (bl.n == 0)
    return names_in_region(code, 0, strlen(code), names, n, why, e);
  for (i = 0; i < bl.n; i++)
    if (names_in_region(code, bl.b[i].start, bl.b[i].end, names, n, why, e))
      return ERR_CHECK;
  return 0;
}

/* Each candidate block must open and close as many braces as the seed's
 * block does: a block may not capture frozen code into another scope. */
static int check_braces(const char *seed, const char *cand, struct err *e)
{
  struct candidate_blocks sb, cb;
  int i;

  if (candidate_blocks(seed, &sb, e) || candidate_blocks(cand, &cb, e) ||
      sb.n != cb.n)
    return ERR_CHECK;
  for (i = 0; i < sb.n; i++) {
    size_t sl = sb.b[i].end - sb.b[i].start, cl = cb.b[i].end - cb.b[i].start;
    char *sc = malloc(sl + 1), *cc = malloc(cl + 1);
    int sbr, cbr, pp, bad, rc = 0;
    if (!sc || !cc) {
      free(sc);
      free(cc);
      return err_set(e, ERR_NOMEM, "out of memory");
    }
    lex_clean(seed, sb.b[i].start, sb.b[i].end, sc);
    lex_clean(cand, cb.b[i].start, cb.b[i].end, cc);
    region_balance(sc, sl, &sbr, &pp, &bad);
    region_balance(cc, cl, &cbr, &pp, &bad);
    if (sbr != cbr)
      rc = err_set(e, ERR_CHECK,
                   "line %d: EVOLVE block %d opens %d more braces than it "
                   "closes (the seed's: %d)",
                   cb.b[i].end_line, i + 1, cbr, sbr);
    free(sc);
    free(cc);
    if (rc)
      return rc;
  }
  return 0;
}

/* Whether identifier NAME (LEN bytes) is a token of the cleaned
 * CLEAN[0..n) outside the blocks BL (offsets into the same text). */
static int frozen_uses(const char *clean, size_t n,
                       const struct candidate_blocks *bl, const char *name,
                       size_t len)
{
  int k = 0;

  for (size_t i = 0; i + len <= n; i++) {
    while (k < bl->n && i >= bl->b[k].end)
      k++;
    if (k < bl->n && i >= bl->b[k].start) {
      i = bl->b[k].end - 1;
      continue;
    }
    if (!memcmp(clean + i, name, len) && (!i || !ident_char(clean[i - 1])) &&
        !ident_char(clean[i + len]))
      return 1;
  }
  return 0;
}

/* The name after "#define"/"#undef" at P (cleaned text), into OUT. */
static size_t macro_name(const char *p, char *out, size_t n)
{
  size_t len;

  p += strspn(p, " \t");
  for (len = 0; ident_char(p[len]) && len + 1 < n; len++)
    out[len] = p[len];
  out[len] = '\0';
  return len;
}

/* Whether the blocks of CLEAN (the seed, cleaned) #define or #undef NAME. */
static int blocks_define(const char *clean, const struct candidate_blocks *bl,
                         const char *name)
{
  for (int k = 0; k < bl->n; k++)
    for (size_t i = bl->b[k].start; i < bl->b[k].end; i++) {
      const char *q;
      char got[128];
      if (clean[i] != '#')
        continue;
      q = clean + i + 1 + strspn(clean + i + 1, " \t");
      if (strncmp(q, "define", 6) && strncmp(q, "undef", 5))
        continue;
      macro_name(q + (q[0] == 'd' ? 6 : 5), got, sizeof(got));
      if (!strcmp(got, name))
        return 1;
    }
  return 0;
}

/* Issue 47: a block may not #define or #undef an identifier the frozen
 * text uses (it would change what the frozen text means), unless the
 * seed's own blocks do (the seed is trusted). */
static int check_frozen_macros(const char *seed, const char *cand,
                               const struct candidate_blocks *bl,
                               struct err *e)
{
  size_t n = strlen(cand), sn = strlen(seed);
  char *clean = malloc(n + 1), *sclean = malloc(sn + 1);
  struct candidate_blocks sbl;
  int rc = 0;

  if (!clean || !sclean) {
    free(clean);
    free(sclean);
    return err_set(e, ERR_NOMEM, "out of memory");
  }
  lex_clean(cand, 0, n, clean);
  clean[n] = '\0';
  lex_clean(seed, 0, sn, sclean);
  sclean[sn] = '\0';
  if (candidate_blocks(seed, &sbl, e)) {
    rc = ERR_CHECK;
    goto out;
  }
  for (int k = 0; k < bl->n && !rc; k++)
    for (size_t i = bl->b[k].start; i < bl->b[k].end && !rc; i++) {
      const char *q;
      char name[128];
      size_t len;
      if (clean[i] != '#')
        continue;
      q = clean + i + 1 + strspn(clean + i + 1, " \t");
      if (strncmp(q, "define", 6) && strncmp(q, "undef", 5))
        continue;
      len = macro_name(q + (q[0] == 'd' ? 6 : 5), name, sizeof(name));
      if (len && frozen_uses(clean, n, bl, name, len) &&
          !blocks_define(sclean, &sbl, name))
        rc = err_set(e, ERR_CHECK,
                     "line %d: forbidden #%s of '%s', which the frozen text "
                     "uses (it would change what the frozen text means)",
                     line_at(cand, i), q[0] == 'd' ? "define" : "undef", name);
    }
out:
  free(clean);
  free(sclean);
  return rc;
}

int candidate_check(const char *seed, const char *cand, int device,
                    struct err *e)
{
  struct candidate_blocks bl;
  size_t n = strlen(cand);

  if (n > CANDIDATE_MAX_BYTES)
    return err_set(e, ERR_TOOBIG, "candidate is %zu bytes, over the %u cap", n,
                   CANDIDATE_MAX_BYTES);
  if (n == 0)
    return err_set(e, ERR_CHECK, "candidate is empty");
  if (candidate_blocks(cand, &bl, e))
    return ERR_CHECK;
  if (seed) {
    if (candidate_check_frozen(seed, cand, e))
      return ERR_CHECK;
    if (check_braces(seed, cand, e))
      return ERR_CHECK;
    if (check_frozen_macros(seed, cand, &bl, e))
      return ERR_CHECK;
  }
  return candidate_check_forbidden(cand, device, e);
}
