/* progid_int.h - what progid.c (directives, files, the identity) and
 * progid_expand.c (macro expansion, #if expressions) share (internal). */
#ifndef CUCO_PROGID_INT_H
#define CUCO_PROGID_INT_H

#include <stddef.h>
#include <xxhash.h>

#include "err.h"

#define MAX_FILES     64         /* headers kept by one context */
#define MAX_HEADER    (1u << 20) /* bytes of one header */
#define MAX_INCLUDE   24         /* #include nesting */
#define MAX_EXPAND    200        /* nested argument expansions */
#define MAX_CONTEXTS  20000      /* macro expansions open at once */
#define MAX_STEPS     8000000UL  /* tokens looked at by the expander */
#define MAX_GROUPS    32         /* groups of one #if chain */
#define MAX_UNDECIDED 12         /* nested conditions it cannot decide */
#define MAX_CODE_TOKS (4u << 20)

enum tkind { T_IDENT, T_NUM, T_STR, T_CHR, T_PUNCT, T_PP, T_PLACE, T_UNK };

/* A hide set: macro ids in ascending order, immutable (shared). */
struct hs {
  int id;
  const struct hs *next;
};

struct tok {
  const char *s;
  unsigned len;
  unsigned char kind, space; /* space: whitespace before it */
  const struct hs *hs;
};

enum dkind {
  D_NULL,
  D_IF,
  D_IFDEF,
  D_IFNDEF,
  D_ELIF,
  D_ELIFDEF,
  D_ELIFNDEF,
  D_ELSE,
  D_ENDIF,
  D_DEFINE,
  D_UNDEF,
  D_INCLUDE,
  D_BADINC, /* include_next, import */
  D_PRAGMA,
  D_LINE,
  D_ERROR,
  D_OTHER,
};

struct pdir {
  int kind;
  char *clean;   /* the line without continuations */
  size_t rest;   /* offset of what follows the directive's name */
  struct tok *t; /* tokens of the rest (into clean), NULL: did not lex */
  int nt;
  int next; /* a conditional: token index of its next sibling, else -1 */
};

struct pfile {
  char *path; /* NULL: the candidate */
  char *dir;  /* its folder, "" for the candidate */
  char *text;
  struct tok *t;
  int nt;
  int *dix; /* token index -> index into d, -1 */
  struct pdir *d;
  int nd;
  int bad;
  char why[160];
  int id; /* place in the context's cache, -1 for the candidate */
};

struct progid {
  char **dirs;
  int ndirs;
  struct pfile *files[MAX_FILES];
  int nfiles;
};

struct mdef {
  int fn, variadic, np;
  const struct tok *par;
  const struct tok *body;
  int nb;
};

enum { M_UNKNOWN, M_UNDEF, M_DEF, M_POISON };

struct mst {
  unsigned char k;
  const struct mdef *d;
};

struct state {
  struct mst *m;
  int n;
};

struct achunk {
  struct achunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

struct run {
  struct progid *p;
  XXH64_state_t *xh;
  struct achunk *arena;
  char **nm; /* interned names */
  unsigned *nl;
  int nn, capn;
  int *ht; /* open addressing: id + 1, 0 empty */
  size_t hcap;
  struct state st;
  unsigned char once[MAX_FILES];
  int pinned[16]; /* names a -U flag says no header defines */
  int npinned;
  int undecided, incdepth, edepth;
  unsigned long steps;
  int fail, nomem;
  char why[200];
};

/* A growable token vector (malloc'd). */
struct tv {
  struct tok *v;
  int n, cap;
};

/* #if values: false, true, or a name only a system header or the
 * compiler could define decides */
enum { V_FALSE, V_TRUE, V_UNK };

/* progid.c */

/* Record the first reason the preprocessor stops (r->why); later ones are
 * ignored. */
void progid_fail(struct run *r, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* progid_fail for want of memory (sets r->nomem). */
void progid_nomem(struct run *r);
/* n bytes of the run's arena (freed with the run); NULL: progid_nomem. */
void *progid_aalloc(struct run *r, size_t n);
/* Append *t to v (malloc'd); -1: progid_nomem. */
int progid_tv_push(struct run *r, struct tv *v, const struct tok *t);
void progid_tv_free(struct tv *v);
/* Is t the punctuator / identifier p? */
int progid_is_punct(const struct tok *t, const char *p);
int progid_is_ident(const struct tok *t, const char *p);
/* The id of a name seen as a macro name, or -1. */
int progid_name_find(const struct run *r, const char *s, size_t n);
/* What the state says of id (-1: unknown). */
struct mst progid_state_get(const struct state *st, int id);
/* M_UNKNOWN, M_UNDEF, M_DEF or M_POISON for a name (a CUCO_* name nothing
 * defined is undefined); *out (may be NULL) gets the state. */
int progid_name_kind(const struct run *r, const char *s, size_t n,
                     struct mst *out);
/* Tokens of text[0..len), brackets unmatched; *out malloc'd.  0 or a
 * cutok error. */
int progid_lex(const char *text, size_t len, struct tok **out, int *n,
               struct err *e);

/* progid_expand.c */

/* h with id added (the arena's). */
const struct hs *progid_hs_add(struct run *r, const struct hs *h, int id);
/* Expand in[0..n) as C does, appending to out. */
void progid_expand(struct run *r, const struct tok *in, int n, struct tv *out);
/* The index of parameter t of d, or -1. */
int progid_param_of(const struct mdef *d, const struct tok *t);
/* Evaluate an #if/#elif expression (defined, __has_*, macros, then C's
 * integer arithmetic in three values): V_FALSE, V_TRUE or V_UNK; *shown
 * gets the expression as evaluated. */
int progid_eval_if(struct run *r, const struct tok *in, int n,
                   struct tv *shown);

#endif
