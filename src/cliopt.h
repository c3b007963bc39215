/* cliopt.h - cuco's front door for options, run by main.c before a
 * command's own parser (getopt_long) sees its arguments, so that every
 * command follows the same conventions (git's and curl's):
 *
 *  - long names are exact; a unique prefix is taken with a note on stderr
 *    ("cuco evolve: --gen taken as --generations"); an ambiguous one is an
 *    error that lists the candidates;
 *  - a deprecated spelling is rewritten to its canonical name with a note
 *    ("cuco transform: --budget is deprecated; use --budget-usd");
 *  - durations ("10m") and sizes ("16M") become plain numbers (seconds,
 *    bytes), so the command reads what it always read;
 *  - global options are taken out wherever they stand, before or after
 *    the command.
 *
 * An option the table does not know is left for the command's parser,
 * which then names it ("unrecognized option"). */
#ifndef CUCO_CLIOPT_H
#define CUCO_CLIOPT_H

#include <stdio.h>

#include "err.h"

enum cliopt_kind {
  CLIOPT_FLAG,     /* no value */
  CLIOPT_VALUE,    /* a value, passed on as written */
  CLIOPT_DURATION, /* 90, 90s, 10m, 2h: passed on in seconds */
  CLIOPT_SIZE,     /* 4096, 64K, 16M, 1G: passed on in bytes */
};

/* One option.  A table ends with an entry whose name is NULL. */
struct cliopt {
  const char *name;      /* long name without "--" */
  char short_name;       /* 0: none */
  enum cliopt_kind kind; /* unused for an alias */
  const char *alias_of;  /* set: a deprecated spelling of this name */
  const char *pass_as;   /* the name the command's parser reads, if not
                            name (a rename its parser has not caught up
                            with) */
  int id;                /* for main.c: which global option this is */
};

#define CLIOPT_MAX_GLOBALS 32

/* A global option found on the line: the table's entry and its value
 * (NULL for a flag; borrowed from argv or from the cliopt_args). */
struct cliopt_hit {
  const struct cliopt *opt;
  const char *value;
};

/* The rewritten line.  Zero it before cliopt_normalize; release it with
 * cliopt_args_release whatever cliopt_normalize returned. */
struct cliopt_args {
  int argc;
  char **argv; /* argv[argc] is NULL; the strings are borrowed or owned */
  struct cliopt_hit globals[CLIOPT_MAX_GLOBALS];
  int nglobals;
  char **owned; /* strings made here */
  int nowned;
};

/* flags of cliopt_normalize: CLIOPT_STRICT, an unknown option is an error
 * (no parser follows); CLIOPT_STOP, options end at the first non-option
 * argument (the rest is someone else's: cuco cc's compiler line) */
#define CLIOPT_STRICT 1
#define CLIOPT_STOP   2

/* Rewrite argv[1..argc) into a->argv (a->argv[0] = argv[0]) as described
 * at the top: options of opts (NULL: none) renamed to their canonical (or
 * pass_as) names, "--name=value" split in two, values converted by kind;
 * options of globals (NULL: none) moved to a->globals in the order given.
 * Everything after "--" (which is kept) or, with CLIOPT_STOP, from the
 * first non-option on is copied as it is.  Notes go to notes (NULL:
 * none), each a line "WHO: ...".  0; ERR_USAGE with a one-line message
 * naming the option (and for a value, the value) in *e: an ambiguous
 * prefix, a bad duration or size, a missing value or, with CLIOPT_STRICT,
 * an unknown option; ERR_NOMEM. */
int cliopt_normalize(const char *who, const struct cliopt *opts,
                     const struct cliopt *globals, int flags, int argc,
                     char **argv, FILE *notes, struct cliopt_args *a,
                     struct err *e) WARN_UNUSED;

/* Free what cliopt_normalize made; a zeroed struct is fine. */
void cliopt_args_release(struct cliopt_args *a);

#endif
