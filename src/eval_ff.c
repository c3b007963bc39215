/* eval_ff.c - freeform runs and the cheat suite; see eval.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "build.h"
#include "buf.h"
#include "candidate.h"
#include "cheat.h"
#include "eval.h"
#include "eval_int.h"
#include "launcher.h"
#include "proc.h"
#include "workload.h"

#define FF_OUT_MAX (1u << 20)

double eval_now(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The last stdout line that starts with '{', parsed. */
static json_t *last_json_line(const char *out, char *why, size_t n)
{
  const char *p = out, *last = NULL;
  json_error_t je;
  json_t *j;

  while (*p) {
    size_t len = strcspn(p, "\n");
    size_t i = 0;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
      i++;
    if (i < len && p[i] == '{')
      last = p + i;
    p += len;
    p += *p ? 1 : 0;
  }
  if (!last) {
    snprintf(why, n, "the program printed no JSON metrics line");
    return NULL;
  }
  j = json_loadb(last, strcspn(last, "\n"), JSON_REJECT_DUPLICATES, &je);
  if (!j || !json_is_object(j)) {
    snprintf(why, n, "metrics line is not a JSON object: %s",
             j ? "not an object" : je.text);
    json_decref(j);
    return NULL;
  }
  return j;
}

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return x < y ? -1 : x > y;
}

/* One run of the program's ranks through mpirun/srun (launcher.h): rank R
 * may write METRICS.rankR.progress ($CUCO_PROGRESS_PREFIX) so a hang names
 * the rank.  Its output goes to *pr (outcome EXITED 0 when every rank
 * passed).  0 ran ok, 1 candidate failure (verdict set), <0 internal. */
static int ff_launched(const struct eval_opts *o, struct eval_ctx *x,
                       const struct workload_size *s, const char *mode,
                       const char *const *argv, struct eval_result *r,
                       struct proc_result *pr, struct err *e)
{
  enum eval_stage st =
      !strcmp(mode, "verify") ? EVAL_STAGE_VERIFY : EVAL_STAGE_BENCH;
  struct launcher_run_opts lo = {0};
  struct launcher_result lr;
  char prefix[WORKLOAD_PATH + 64], pkv[WORKLOAD_PATH + 96], label[300];
  const char *extra[2];
  int rc;

  snprintf(prefix, sizeof(prefix), "%s/metrics.json", x->work_dir);
  snprintf(pkv, sizeof(pkv), "CUCO_PROGRESS_PREFIX=%s", prefix);
  snprintf(label, sizeof(label), "%s:%s:%s", o->impl_name ? o->impl_name : "-",
           mode, s->name);
  extra[0] = pkv;
  extra[1] = NULL;
  lo.l = o->launcher;
  lo.argv = argv;
  lo.nranks = x->ranks;
  lo.env_extra = extra;
  lo.work_dir = x->work_dir;
  lo.progress_prefix = prefix;
  lo.label = label;
  lo.timeout_s = o->run_timeout_s > 0 ? o->run_timeout_s : 120;
  rc = launcher_run(&lo, &lr, e);
  if (rc) {
    launcher_result_release(&lr);
    return rc;
  }
  {
    char head[700];
    snprintf(head, sizeof(head), "=== %s %s (%s): %s ===\n", mode, s->name,
             s->params, lr.what);
    eval_log_append(&r->verify_log, head);
    eval_log_append(&r->verify_log, buf_str(&lr.out));
    eval_log_append(&r->verify_log, buf_str(&lr.err));
  }
  if (lr.interrupted)
    r->interrupted = 1;
  if (!lr.all_ok) {
    if (lr.timed_out)
      r->hang_rank = lr.hang_rank;
    eval_fail(r, o, st, "failed", "size %s: %s", s->name, lr.what);
    launcher_result_release(&lr);
    return 1;
  }
  memset(pr, 0, sizeof(*pr));
  pr->out = lr.out; /* moved */
  buf_init(&lr.out, 1);
  buf_init(&pr->err, 1);
  launcher_result_release(&lr);
  return 0;
}

/* One run of the program. 0 ok (*met set), 1 candidate failure. */
static int ff_once(const struct eval_opts *o, struct eval_ctx *x,
                   const struct workload_size *s, const char *mode,
                   struct eval_result *r, json_t **met, double *val,
                   struct err *e)
{
  enum eval_stage st =
      !strcmp(mode, "verify") ? EVAL_STAGE_VERIFY : EVAL_STAGE_BENCH;
  struct build_vars v = {0};
  struct proc_opts po = {0};
  struct proc_result pr;
  char seed_s[32], outp[WORKLOAD_PATH + 32], how[128], why[256];
  char **argv, **env;
  json_t *j, *ok;
  int rc;

  *met = NULL;
  snprintf(seed_s, sizeof(seed_s), "%lu", o->seed ? o->seed : 1234UL);
  snprintf(outp, sizeof(outp), "%s/metrics.json", x->work_dir);
  v.src = x->src_path;
  v.bin = x->bin_path;
  v.dir = o->wl->dir;
  v.work = x->work_dir;
  v.params = s->params;
  v.size = s->name;
  v.mode = mode;
  v.seed = seed_s;
  v.out = outp;
  argv = build_template_argv(o->wl->ff_run, &v, e);
  if (!argv)
    return err_wrap(e, "%s [freeform] run", o->wl->ini_path);
  if (o->launcher && o->launcher->kind != LAUNCHER_LOCAL) {
    rc = ff_launched(o, x, s, mode, (const char *const *)argv, r, &pr, e);
    build_argv_free(argv);
    if (rc)
      return rc;
    goto parse;
  }
  env = proc_env_new(proc_env_default_allow, NULL);
  po.argv = (const char *const *)argv;
  po.envp = (const char *const *)env;
  po.cwd = x->work_dir;
  po.sandbox = PROC_SANDBOX_ISOLATED; /* the candidate runs (proc.h) */
  po.timeout_s = o->run_timeout_s > 0 ? o->run_timeout_s : 120;
  po.out_max = FF_OUT_MAX;
  po.err_max = EVAL_LOG_MAX;
  rc = proc_run(&po, &pr, e);
  build_argv_free(argv);
  proc_env_free(env);
  if (rc)
    return rc;
  {
    char head[200];
    snprintf(head, sizeof(head), "=== %s %s (%s): %s ===\n", mode, s->name,
             s->params, proc_describe(&pr, how, sizeof(how)));
    eval_log_append(&r->verify_log, head);
    eval_log_append(&r->verify_log, buf_str(&pr.out));
    eval_log_append(&r->verify_log, buf_str(&pr.err));
  }
  if (!proc_ok(&pr)) {
    const char *t = buf_str(&pr.err);
    size_t tl = strlen(t), b;
    while (tl && (t[tl - 1] == '\n' || t[tl - 1] == ' '))
      tl--;
    b = tl;
    while (b && t[b - 1] != '\n')
      b--;
    if (pr.outcome == PROC_TIMEDOUT)
      r->hang_rank = 0;
    eval_fail(r, o, st, "failed", "size %s: %s%s%s%.*s", s->name,
              pr.outcome == PROC_TIMEDOUT ? "hang: " : "",
              proc_describe(&pr, how, sizeof(how)), tl > b ? ": " : "",
              (int)(tl - b > 200 ? 200 : tl - b), t + b);
    proc_result_release(&pr);
    return 1;
  }
parse:
  j = last_json_line(buf_str(&pr.out), why, sizeof(why));
  proc_result_release(&pr);
  if (!j) {
    eval_fail(r, o, st, "failed", "size %s: %s", s->name, why);
    return 1;
  }
  ok = json_object_get(j, "ok");
  if (ok && !json_is_true(ok)) {
    const char *er = json_string_value(json_object_get(j, "error"));
    eval_fail(r, o, st, "failed",
              "size %s: verification failed (the program's own check)%s%s",
              s->name, er ? ": " : "", er ? er : "");
    json_decref(j);
    return 1;
  }
  *val = json_number_value(json_object_get(j, o->wl->ff_metric));
  if (!json_is_number(json_object_get(j, o->wl->ff_metric)) || !(*val > 0)) {
    eval_fail(r, o, st, "failed",
              "size %s: metrics line has no positive "
              "'%s'",
              s->name, o->wl->ff_metric);
    json_decref(j);
    return 1;
  }
  *met = j;
  return 0;
}

int eval_ff_run(const struct eval_opts *o, struct eval_ctx *x,
                const struct workload_size *s, const char *mode,
                struct eval_result *r, json_t **out, struct err *e)
{
  int reps = !strcmp(mode, "bench") ? o->wl->ff_repeat : 1, i, rc;
  double vals[64];
  json_t *last = NULL, *samples = json_array(), *res;

  *out = NULL;
  if (reps > 64)
    reps = 64;
  for (i = 0; i < reps; i++) {
    json_t *met = NULL;
    rc = ff_once(o, x, s, mode, r, &met, &vals[i], e);
    if (rc) {
      json_decref(samples);
      json_decref(last);
      return rc;
    }
    json_array_append_new(samples, json_real(vals[i]));
    json_decref(last);
    last = met;
  }
  res = json_object();
  json_object_set_new(res, "mode", json_string(mode));
  json_object_set_new(res, "params", json_string(s->params));
  json_object_set_new(res, "verified_by", json_string("program"));
  json_object_set(res, "last", last);
  json_decref(last);
  if (!strcmp(mode, "bench")) {
    qsort(vals, (size_t)reps, sizeof(double), cmp_d);
    json_object_set_new(res, "samples_ms", samples);
    json_object_set_new(
        res, "median_ms",
        json_real(reps % 2 ? vals[reps / 2]
                           : (vals[reps / 2 - 1] + vals[reps / 2]) / 2));
    /* min..max of the runs: with 5 runs it holds the median with
     * probability 1 - 2/32 = 94%. */
    json_object_set_new(res, "ci95_lo_ms", json_real(vals[0]));
    json_object_set_new(res, "ci95_hi_ms", json_real(vals[reps - 1]));
    json_object_set_new(res, "runs", json_integer(reps));
  } else {
    json_decref(samples);
  }
  *out = res;
  return 0;
}

/* ---- the cheat suite ---- */

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
    text = eval_read_text(path, CANDIDATE_MAX_BYTES * 2, &ce);
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
  return eval_read_text(sp, CANDIDATE_MAX_BYTES, &se);
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
    rc = build_mkdirs(out_dir, e);
  for (i = 0; i < n && !rc; i++) {
    char path[WORKLOAD_PATH + 300];
    if (!codes[i]) {
      rc = err_set(e, ERR_IO, "%s", why[i]);
      break;
    }
    snprintf(path, sizeof(path), "%s/%.*s%s", out_dir,
             (int)cheat_name_len(names[i]), names[i], CHEAT_WHOLE_EXT);
    if (!(rc = eval_write_text(path, codes[i], e)))
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
      if (!strcmp(r.status, "ok") && !o->compile_only && !o->static_only &&
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
    if (!strcmp(r.status, "ok") && (o->compile_only || o->static_only) &&
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
    } else if (strcmp(r.status, "ok") && (int)r.stage == want) {
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
               strcmp(r.status, "ok") ? "stopped at " : "it passed",
               strcmp(r.status, "ok") ? eval_stage_name(r.stage) : "",
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
