/* evolve_resume.c - what `cuco evolve --resume` keeps and what a stop
 * says: the run's recorded settings (runs.config_json) against the
 * command line, and the one line that names the command to continue
 * with.  Declared in search_impl.h. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "search_impl.h"

enum kind { K_INT, K_ULONG, K_DOUBLE, K_STR };

/* A setting of the run: its key in config_json, its option (NULL: set in
 * cuco.ini only, never on the command line), whether it is part of what
 * the run measured (an override would make its numbers incomparable: it
 * is refused) and where it lives in struct evolve_opts. */
struct setting {
  const char *key, *flag;
  int fixed;
  enum kind kind;
  size_t off;
};

#define OPT(f) offsetof(struct evolve_opts, f)
static const struct setting settings[] = {
    {"generations", "generations", 0, K_INT, OPT(generations)},
    {"islands", "islands", 1, K_INT, OPT(islands)},
    {"ranks", "ranks", 1, K_INT, OPT(ranks)},
    {"vranks", "vranks", 1, K_INT, OPT(vranks)},
    {"sizes", "sizes", 1, K_STR, OPT(sizes)},
    {"seed", "seed", 0, K_ULONG, OPT(seed)},
    {"budget_usd", "budget-usd", 0, K_DOUBLE, OPT(budget_usd)},
    {"llm_name", "llm", 0, K_STR, OPT(llm)},
    {"migrate_every", NULL, 0, K_INT, OPT(migrate_every)},
    {"meta_every", NULL, 0, K_INT, OPT(meta_every)},
    {"novelty", NULL, 0, K_DOUBLE, OPT(novelty)},
    {"explore_fraction", NULL, 0, K_DOUBLE, OPT(explore_fraction)},
};
#undef OPT

int evolve_given(const struct evolve *s, const char *flag)
{
  size_t n = strlen(flag);
  int i;

  /* main.c's front door (cliopt.h) hands every command canonical names,
   * "--name=value" split in two */
  for (i = 1; i < s->argc && strcmp(s->argv[i], "--"); i++)
    if (!strncmp(s->argv[i], "--", 2) && !strncmp(s->argv[i] + 2, flag, n) &&
        (s->argv[i][2 + n] == '\0' || s->argv[i][2 + n] == '='))
      return 1;
  return 0;
}

/* The value of setting t in o, as text (for messages). */
static void show(const struct setting *t, const struct evolve_opts *o,
                 char *out, size_t n)
{
  const char *p = (const char *)o + t->off;

  switch (t->kind) {
  case K_INT:
    snprintf(out, n, "%d", *(const int *)p);
    break;
  case K_ULONG:
    snprintf(out, n, "%lu", *(const unsigned long *)p);
    break;
  case K_DOUBLE: {
    double d;
    memcpy(&d, p, sizeof(d));
    snprintf(out, n, "%g", d);
    break;
  }
  case K_STR:
    snprintf(out, n, "%s",
             *(const char *const *)p ? *(const char *const *)p : "");
    break;
  }
}

/* Store recorded value v of setting t into o (strings are copied into
 * s->rec_str, which outlives the run). */
static int put(struct evolve *s, const struct setting *t, const json_t *v)
{
  char *p = (char *)&s->o + t->off;
  char *copy;

  switch (t->kind) {
  case K_INT:
    *(int *)p = (int)json_integer_value(v);
    return 0;
  case K_ULONG:
    *(unsigned long *)p = (unsigned long)json_integer_value(v);
    return 0;
  case K_DOUBLE: {
    double d = json_number_value(v);
    memcpy(p, &d, sizeof(d));
    return 0;
  }
  case K_STR:
    if (!*json_string_value(v)) {
      *(const char **)p = NULL; /* recorded as "": the default */
      return 0;
    }
    copy = strdup(json_string_value(v));
    if (!copy || s->nrec_str >= EVOLVE_REC_STR) {
      free(copy);
      return ERR_NOMEM;
    }
    s->rec_str[s->nrec_str++] = copy;
    *(const char **)p = copy;
    return 0;
  }
  return 0;
}

/* Whether recorded v differs from what o holds for t. */
static int differs(const struct setting *t, const struct evolve_opts *o,
                   const json_t *v)
{
  char a[160], b[160];

  show(t, o, a, sizeof(a));
  if (json_is_string(v))
    snprintf(b, sizeof(b), "%s", json_string_value(v));
  else if (json_is_integer(v))
    snprintf(b, sizeof(b), "%lld", (long long)json_integer_value(v));
  else
    snprintf(b, sizeof(b), "%g", json_number_value(v));
  return strcmp(a, b) != 0;
}

/* One setting: the recorded value unless the command line gave one; an
 * override is noted in s->resume_note, or refused for a fixed setting. */
static int keep(struct evolve *s, const struct setting *t, const json_t *v,
                struct err *e)
{
  char was[160], now[160];
  size_t len = strlen(s->resume_note);

  if (!v || json_is_null(v) || (t->kind == K_STR && !json_is_string(v)) ||
      (t->kind != K_STR && !json_is_number(v)))
    return 0; /* not recorded (an older run): as today's defaults */
  if (!t->flag || !evolve_given(s, t->flag))
    return put(s, t, v) ? err_set(e, ERR_NOMEM, "out of memory") : 0;
  if (!differs(t, &s->o, v))
    return 0;
  show(t, &s->o, now, sizeof(now));
  if (json_is_string(v))
    snprintf(was, sizeof(was), "%s", json_string_value(v));
  else if (json_is_integer(v))
    snprintf(was, sizeof(was), "%lld", (long long)json_integer_value(v));
  else
    snprintf(was, sizeof(was), "%g", json_number_value(v));
  if (!*was)
    snprintf(was, sizeof(was), "the default");
  if (t->fixed)
    return err_set(e, ERR_USAGE,
                   "--%s %s: the run in %s was recorded with %s %s and "
                   "--resume keeps it; start a new run (another --out) to "
                   "change it",
                   t->flag, now, s->o.out_dir, t->key, was);
  snprintf(s->resume_note + len, sizeof(s->resume_note) - len,
           "; --%s %s overrides %s", t->flag, now, was);
  s->resume_overrides++;
  return 0;
}

int evolve_recorded(struct evolve *s, struct err *e)
{
  json_t *cfg =
      s->run.config_json ? json_loads(s->run.config_json, 0, NULL) : NULL;
  size_t i;
  int rc = 0;

  s->resume_note[0] = '\0';
  if (!cfg)
    return 0; /* nothing recorded: the command line and defaults */
  /* a run from before budget_usd was kept in config_json: its row's */
  if (!json_object_get(cfg, "budget_usd") && s->run.budget_usd > 0)
    json_object_set_new(cfg, "budget_usd", json_real(s->run.budget_usd));
  s->recorded_generations =
      (int)json_integer_value(json_object_get(cfg, "generations"));
  for (i = 0; !rc && i < sizeof(settings) / sizeof(settings[0]); i++)
    rc = keep(s, &settings[i], json_object_get(cfg, settings[i].key), e);
  /* an offline run (--llm none) stays offline */
  if (!rc && !json_object_get(cfg, "llm_name") && !evolve_given(s, "llm") &&
      json_is_integer(json_object_get(cfg, "llm")) &&
      !json_integer_value(json_object_get(cfg, "llm")))
    s->o.llm = "none";
  json_decref(cfg);
  return rc;
}

/* Append arg to b quoted for a POSIX shell when it needs it. */
static void shell_word(struct buf *b, const char *arg)
{
  const char *safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789-_./=:,+@%";

  if (*arg && strspn(arg, safe) == strlen(arg)) {
    buf_puts(b, arg);
    return;
  }
  buf_putc(b, '\'');
  for (; *arg; arg++) {
    if (*arg == '\'')
      buf_puts(b, "'\\''");
    else
      buf_putc(b, *arg);
  }
  buf_putc(b, '\'');
}

/* The command line as the user typed it (/proc/self/cmdline: main.c and
 * getopt reorder argv, not the bytes), with --resume added when absent. */
static void resume_command(const struct evolve *s, struct buf *b)
{
  FILE *f = fopen("/proc/self/cmdline", "r");
  char arg[4096];
  int c, n = 0, words = 0, resume = 0;

  while (f && (c = fgetc(f)) != EOF) {
    if (c && n < (int)sizeof(arg) - 1) {
      arg[n++] = (char)c;
      continue;
    }
    arg[n] = '\0';
    n = 0;
    buf_puts(b, words++ ? " " : "");
    shell_word(b, arg);
    resume |= !strcmp(arg, "--resume");
  }
  if (f)
    fclose(f);
  if (!words) { /* no /proc: the words the command was given */
    buf_puts(b, "cuco evolve");
    for (c = 1; c < s->argc; c++) {
      buf_putc(b, ' ');
      shell_word(b, s->argv[c]);
      resume |= !strcmp(s->argv[c], "--resume");
    }
  }
  if (!resume)
    buf_puts(b, " --resume");
}

void evolve_stop_message(const struct evolve *s)
{
  struct buf b = BUF_INIT(8192);
  const char *sig = search_stop_signal == SIGINT    ? "SIGINT (Ctrl-C)"
                    : search_stop_signal == SIGTERM ? "SIGTERM"
                    : search_stop_signal == SIGHUP  ? "SIGHUP"
                                                    : "the allocation's end";
  int i;

  buf_printf(&b, "cuco evolve: stopped by %s; ", sig);
  if (s->n_interrupted) {
    buf_printf(&b, "%d candidate%s (", s->n_interrupted,
               s->n_interrupted == 1 ? "" : "s");
    for (i = 0; i < s->n_interrupted && i < SEARCH_MAX_NOTED; i++)
      buf_printf(&b, "%s#%lld", i ? ", " : "",
                 (long long)s->interrupted_ids[i]);
    buf_printf(&b, "%s) recorded as interrupted; ",
               s->n_interrupted > SEARCH_MAX_NOTED ? ", ..." : "");
  }
  buf_puts(&b, "continue the run with: ");
  resume_command(s, &b);
  fprintf(stderr, "%s\n",
          buf_error(&b) ? "cuco evolve: stopped" : buf_str(&b));
  fflush(stderr);
  buf_release(&b);
}
