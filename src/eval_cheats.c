/* eval_cheats.c - the cheat suite (eval.h): every cheat of a workload run
 * through eval_candidate() like any candidate, and checked to be rejected
 * at the stage its CUCO-EXPECT-REJECT line names. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"
#include "cheat.h"
#include "eval.h"
#include "file.h"
#include "workload.h"

static int cmp_s(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "// CUCO-EXPECT-REJECT: verify stale flags" -> stage + words. */
static int expect_line(const char *code, int *stage, char *words, size_t n)
{
  const char *p = strstr(code, "CUCO-EXPECT-REJECT:");
  char st[32];
  size_t len;

  if (!p)
    return -1;
  p += strlen("CUCO-EXPECT-REJECT:");
  p += strspn(p, " \t");
  len = strcspn(p, " \t\n");
  snprintf(st, sizeof(st), "%.*s", (int)(len < 31 ? len : 31), p);
  *stage = eval_stage_parse(st);
  p += len;
  p += strspn(p, " \t");
  snprintf(words, n, "%.*s", (int)strcspn(p, "\n"), p);
  return *stage < 0 || *stage >= EVAL_STAGE_DONE ? -1 : 0;
}

/* Drop the CUCO-EXPECT-REJECT line(s): they are for the suite, and a
 * line outside the blocks would fail the frozen-text check by itself. */
static void strip_expect(char *code)
{
  char *p;

  while ((p = strstr(code, "CUCO-EXPECT-REJECT:"))) {
    char *bol = p, *eol = strchr(p, '\n');
    while (bol > code && bol[-1] != '\n')
      bol--;
    eol = eol ? eol + 1 : p + strlen(p);
    memmove(bol, eol, strlen(eol) + 1);
  }
}

/* A cheat may carry a header of // comment lines (what it does) before
 * the seed's text; drop it so only the cheat's real edits are judged. */
static void strip_header(char *code, const char *seed)
{
  size_t fl = strcspn(seed, "\n");
  char *p = code;

  if (!fl || !strncmp(code, seed, fl + 1))
    return;
  while (*p) {
    const char *q = p + strspn(p, " \t");
    if (!strncmp(p, seed, fl) && p[fl] == seed[fl]) {
      memmove(code, p, strlen(p) + 1);
      return;
    }
    if (q[0] != '/' || q[1] != '/')
      return; /* not a comment header: judge the file as it is */
    p += strcspn(p, "\n");
    p += *p ? 1 : 0;
  }
}

void eval_cheat_summary(const struct eval_cheat_tally *t, char *out, size_t n)
{
  int caught = 0, st, parts = 0;
  size_t l;

  for (st = 0; st < EVAL_STAGE_DONE; st++)
    caught += t->caught[st];
  if (!t->failures && !t->need_build && !t->need_gpu && !t->need_bench &&
      !t->need_ranks) {
    snprintf(out, n, "cheats: %d of %d caught as expected", caught, t->n);
    return;
  }
  snprintf(out, n, "cheats:");
  for (st = 0; st < EVAL_STAGE_DONE; st++)
    if (t->caught[st]) {
      l = strlen(out);
      snprintf(out + l, n - l, "%s %d rejected at %s as expected",
               parts++ ? "," : "", t->caught[st],
               eval_stage_name((enum eval_stage)st));
    }
  if (t->failures) {
    l = strlen(out);
    snprintf(out + l, n - l, "%s %d NOT caught as expected",
             parts++ ? "," : "", t->failures);
  }
  {
    /* the cheats that were not judged, by what their stage needed */
    const struct {
      int count;
      const char *what;
    } nj[] = {{t->need_build, "a build (not judged)"},
              {t->need_gpu, "a GPU (not judged)"},
              {t->need_bench, "the bench (not judged: --no-bench)"},
              {t->need_ranks, "more ranks (not judged)"}};
    size_t k;
    for (k = 0; k < sizeof(nj) / sizeof(nj[0]); k++) {
      if (!nj[k].count)
        continue;
      l = strlen(out);
      snprintf(out + l, n - l, "%s %d need%s %s", parts++ ? "," : "",
               nj[k].count, nj[k].count == 1 ? "s" : "", nj[k].what);
    }
  }
}

/* The rank count a cheat's CUCO-EXPECT-REJECT words ask for ("ranks>=N":
 * a protocol cheat that one rank cannot expose); 1 when they ask none. */
static int cheat_min_ranks(const char *words)
{
  const char *p = strstr(words, "ranks>=");
  long v;

  if (!p)
    return 1;
  v = strtol(p + 7, NULL, 10);
  return v >= 1 && v <= 1024 ? (int)v : 1;
}

/* Every cheat file of WL/cheats (sorted) into names[] and the source it
 * stands for into codes[] (NULL with why[] set when unreadable); a
 * malformed edit or two cheats of one name fail it all. */
static int load_cheats(const struct eval_opts *o, const char *seed,
                       char **names, char **codes, char (*why)[256],
                       int *count, struct err *e)
{
  char dir[WORKLOAD_PATH + 16];
  struct dirent *de;
  DIR *d;
  int n = 0, i, rc = 0;

  *count = 0;
  snprintf(dir, sizeof(dir), "%s/cheats", o->wl->dir);
  d = opendir(dir);
  if (!d)
    return err_set(e, ERR_NOTFOUND, "%s: %s", dir, strerror(errno));
  while ((de = readdir(d)) && n < EVAL_MAX_CHEATS)
    if (cheat_name_len(de->d_name) && (names[n] = strdup(de->d_name)))
      codes[n++] = NULL;
  closedir(d);
  *count = n;
  qsort(names, (size_t)n, sizeof(char *), cmp_s);
  for (i = 1; i < n; i++)
    if (cheat_name_len(names[i]) == cheat_name_len(names[i - 1]) &&
        !strncmp(names[i], names[i - 1], cheat_name_len(names[i])))
      return err_set(e, ERR_PARSE, "%s: %s and %s are one cheat twice", dir,
                     names[i - 1], names[i]);
  for (i = 0; i < n && !rc; i++) {
    char path[WORKLOAD_PATH + 300], *text;
    struct err ce = {0, ""};
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    text = file_read_text(path, CANDIDATE_MAX_BYTES * 2, &ce);
    if (!text) {
      snprintf(why[i], sizeof(why[i]), "%s", ce.msg);
      continue;
    }
    if (!seed &&
        strlen(names[i]) - cheat_name_len(names[i]) == strlen(CHEAT_EDIT_EXT))
      rc = err_set(e, ERR_NOTFOUND, "%s: no seed %s/%s to apply it to", path,
                   o->wl->dir, o->wl->seed);
    else
      rc = cheat_source(path, text, seed ? seed : "", &codes[i], e);
    free(text);
  }
  return rc;
}

/* The text the cheats are judged against (and edits applied to): the
 * given seed code, else the workload's seed file; NULL when unreadable. */
static char *cheat_seed(const struct eval_opts *o)
{
  char sp[WORKLOAD_PATH + 160];
  struct err se;

  if (o->seed_code)
    return strdup(o->seed_code);
  snprintf(sp, sizeof(sp), "%s/%s", o->wl->dir, o->wl->seed);
  return file_read_text(sp, CANDIDATE_MAX_BYTES, &se);
}

static void free_cheats(char **names, char **codes, int n)
{
  int i;

  for (i = 0; i < n; i++) {
    free(names[i]);
    free(codes[i]);
  }
}

int eval_cheats_write(const struct eval_opts *o, const char *out_dir,
                      int *written, struct err *e)
{
  char *names[EVAL_MAX_CHEATS], *codes[EVAL_MAX_CHEATS];
  char(*why)[256] = calloc(EVAL_MAX_CHEATS, sizeof(*why));
  char *seed = cheat_seed(o);
  int n = 0, i, rc = ERR_NOMEM;

  *written = 0;
  if (why)
    rc = load_cheats(o, seed, names, codes, why, &n, e);
  else
    err_set(e, ERR_NOMEM, "out of memory");
  if (!rc)
    rc = file_mkdirs(out_dir, e);
  for (i = 0; i < n && !rc; i++) {
    char path[WORKLOAD_PATH + 300];
    if (!codes[i]) {
      rc = err_set(e, ERR_IO, "%s", why[i]);
      break;
    }
    snprintf(path, sizeof(path), "%s/%.*s%s", out_dir,
             (int)cheat_name_len(names[i]), names[i], CHEAT_WHOLE_EXT);
    if (!(rc = file_write(path, codes[i], strlen(codes[i]), e)))
      ++*written;
  }
  free_cheats(names, codes, n);
  free(why);
  free(seed);
  return rc;
}

int eval_cheats(const struct eval_opts *o, struct eval_cheat_tally *t,
                struct err *e)
{
  char *names[EVAL_MAX_CHEATS], *codes[EVAL_MAX_CHEATS];
  char(*why)[256] = calloc(EVAL_MAX_CHEATS, sizeof(*why));
  char *seed = cheat_seed(o);
  int n = 0, i, rc = ERR_NOMEM;

  memset(t, 0, sizeof(*t));
  if (why)
    rc = load_cheats(o, seed, names, codes, why, &n, e);
  else
    err_set(e, ERR_NOMEM, "out of memory");
  for (i = 0; i < n && rc == 0; i++) {
    char words[200], line[480], wd[WORKLOAD_PATH], shown[300];
    struct eval_opts co = *o;
    struct eval_result r;
    char *code = codes[i];
    int want, caught;
    codes[i] = NULL;
    t->n++;
    /* named as the whole source it stands for (--write-cheats) */
    snprintf(shown, sizeof(shown), "%.*s%s", (int)cheat_name_len(names[i]),
             names[i], CHEAT_WHOLE_EXT);
    if (!code || expect_line(code, &want, words, sizeof(words))) {
      t->failures++;
      if (o->progress)
        o->progress(o->progress_ud, EVAL_STAGE_STATIC, 0,
                    code ? "no valid '// CUCO-EXPECT-REJECT: STAGE words' "
                           "line"
                         : why[i]);
      free(code);
      continue;
    }
    strip_expect(code);
    if (seed)
      strip_header(code, seed);
    co.device_candidate = 1;
    co.impl_name = shown;
    co.progress = NULL;
    if (o->work_dir) {
      snprintf(wd, sizeof(wd), "%s/cheats/%.*s", o->work_dir,
               (int)cheat_name_len(shown), shown);
      co.work_dir = wd;
    }
    rc = eval_candidate(&co, code, &r, e);
    free(code);
    if (rc) {
      eval_result_release(&r);
      break;
    }
    {
      int ranks = o->vranks > 0 ? o->vranks : o->ranks > 0 ? o->ranks : 1;
      int need = cheat_min_ranks(words);
      if (r.status == EVAL_STATUS_OK && !o->compile_only && !o->static_only &&
          (need > ranks || (want == EVAL_STAGE_BENCH && o->skip_bench))) {
        /* it ran, but what exposes it did not: not judged, not caught */
        caught = 1;
        if (need > ranks) {
          t->need_ranks++;
          snprintf(line, sizeof(line),
                   "%s: passed at %d rank%s; its rejection at %s (%s) "
                   "needs %d (not judged: --ranks/--vranks %d)",
                   shown, ranks, ranks == 1 ? "" : "s",
                   eval_stage_name((enum eval_stage)want), words, need, need);
        } else {
          t->need_bench++;
          snprintf(line, sizeof(line),
                   "%s: passed verify; its rejection at bench (%s) needs "
                   "the bench (not judged: --no-bench)",
                   shown, words);
        }
        if (o->progress)
          o->progress(o->progress_ud, r.stage, caught, line);
        eval_result_release(&r);
        continue;
      }
    }
    if (r.status == EVAL_STATUS_OK && (o->compile_only || o->static_only) &&
        want > (int)r.stage) {
      /* its stage did not run here: not judged, not caught */
      int gpu = want >= EVAL_STAGE_VERIFY;
      caught = 1;
      if (gpu)
        t->need_gpu++;
      else
        t->need_build++;
      snprintf(line, sizeof(line),
               "%s: %s; its rejection at %s (%s) needs "
               "a %s run (not judged)",
               shown,
               o->static_only ? "passed the static checks"
                              : "compiled, linked and passed the allowlist",
               eval_stage_name((enum eval_stage)want), words,
               gpu ? "GPU" : "build");
    } else if (r.status != EVAL_STATUS_OK && (int)r.stage == want) {
      caught = 1;
      t->caught[want]++;
      snprintf(line, sizeof(line), "%s: rejected at %s as expected (%s)",
               shown, eval_stage_name(r.stage), r.error);
    } else {
      caught = 0;
      t->failures++;
      snprintf(line, sizeof(line),
               "%s: NOT caught as expected at %s (%s): "
               "%s%s %s",
               shown, eval_stage_name((enum eval_stage)want), words,
               r.status != EVAL_STATUS_OK ? "stopped at " : "it passed",
               r.status != EVAL_STATUS_OK ? eval_stage_name(r.stage) : "",
               r.error);
    }
    if (o->progress)
      o->progress(o->progress_ud, r.stage, caught, line);
    eval_result_release(&r);
  }
  free_cheats(names, codes, n);
  free(why);
  free(seed);
  return rc;
}
