/* tmpl.h - command templates: one expander for the freeform build/run
 * commands (build.h) and the launcher templates (launcher.h).
 *
 * A template is split into argv on blanks and tabs (no shell, no quoting).
 * A token that is exactly "{NAME}" may stand for zero or more entries (the
 * list hook); otherwise every "{NAME}" inside a token is replaced by one
 * value (the word hook). */
#ifndef CUCO_TMPL_H
#define CUCO_TMPL_H

#include <stddef.h>

#include "err.h"

#define TMPL_MAX_ARGS 256

/* The argv being built. */
struct tmpl_argv {
  char **argv;
  int n;
};

struct tmpl_hooks {
  const char *what;  /* "command", "launcher template": named in errors */
  const char *known; /* the placeholders, shown when one is unknown */
  /* NAME (LEN bytes, no braces) stood alone as a token: append its
   * entries with tmpl_push and return 1; 0 when NAME is no list (it is
   * then expanded as a word); -1 when tmpl_push failed.  May be NULL. */
  int (*list)(void *ud, const char *name, size_t len, struct tmpl_argv *a);
  /* The value of NAME inside a word, NULL when unknown; TMP (TMPN bytes)
   * is room for a formatted value. */
  const char *(*word)(void *ud, const char *name, size_t len, char *tmp,
                      size_t tmpn);
  void *ud;
};

/* Append a copy of S; 0, or -1 past TMPL_MAX_ARGS or out of memory. */
int tmpl_push(struct tmpl_argv *a, const char *s) WARN_UNUSED;

/* Expand TMPL into a NULL-terminated malloc'd argv (free it with
 * tmpl_argv_free), or NULL with *e set: ERR_CONFIG for an unknown
 * placeholder, an unclosed '{' or an empty result; ERR_TOOBIG past
 * TMPL_MAX_ARGS entries or 8 KiB a word; ERR_NOMEM. */
char **tmpl_expand(const char *tmpl, const struct tmpl_hooks *h,
                   struct err *e);

/* Free an argv of tmpl_expand; NULL-safe. */
void tmpl_argv_free(char **argv);

#endif
