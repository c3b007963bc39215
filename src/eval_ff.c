/* eval_ff.c - freeform runs (eval.h explains the templates). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "build.h"
#include "buf.h"
#include "candidate.h"
#include "eval.h"
#include "eval_int.h"
#include "file.h"
#include "launcher.h"
#include "sandbox.h"
#include "proc.h"
#include "workload.h"

#define FF_OUT_MAX (1u << 20)

/* The last stdout line that starts with '{', parsed.  ONLY: it must be the
 * only such line (the program's metrics; a second one, say written at exit
 * over the first, is refused). */
static json_t *last_json_line(const char *out, int only, char *why, size_t n)
{
  const char *p = out, *last = NULL;
  json_error_t je;
  json_t *j;
  int lines = 0;

  while (*p) {
    size_t len = strcspn(p, "\n");
    size_t i = 0;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
      i++;
    if (i < len && p[i] == '{')
      last = p + i, lines++;
    p += len;
    p += *p ? 1 : 0;
  }
  if (!last) {
    snprintf(why, n, "the program printed no JSON metrics line");
    return NULL;
  }
  if (only && lines > 1) {
    snprintf(why, n,
             "the program printed %d JSON metrics lines: one is the contract, "
             "and a second is not believed",
             lines);
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
  char **wrapped = NULL;
  int rc;

  snprintf(prefix, sizeof(prefix), "%s/metrics.json", x->work_dir);
  snprintf(pkv, sizeof(pkv), "CUCO_PROGRESS_PREFIX=%s", prefix);
  snprintf(label, sizeof(label), "%s:%s:%s", o->impl_name ? o->impl_name : "-",
           mode, s->name);
  extra[0] = pkv;
  extra[1] = NULL;
  /* issue 47: each rank under the same sandbox as a local run, on its node
   * (bwrap and cuco-confine at the same paths there), with the host
   * network so the ranks reach each other, and the run's own /dev/shm */
  {
    struct sandbox_state ss;
    sandbox_state(&ss);
    if (ss.kind == SANDBOX_KIND_REFUSED)
      return err_set(e, ERR_PROC, "not run: no sandbox: %s", ss.why);
    if (ss.kind == SANDBOX_KIND_BWRAP) {
      char shm[WORKLOAD_PATH + 16];
      const char *rw[] = {x->work_dir, NULL};
      struct sandbox_req q = {argv[0], argv, x->work_dir, rw, shm, 1, 1, NULL};
      snprintf(shm, sizeof(shm), "%s/.shm", x->work_dir);
      if ((rc = file_mkdirs(shm, e)))
        return rc;
      if (!(wrapped = sandbox_argv_for(&q)))
        return err_set(e, ERR_NOMEM, "out of memory");
    }
  }
  lo.l = o->launcher;
  lo.argv = wrapped ? (const char *const *)wrapped : argv;
  lo.nranks = x->ranks;
  lo.env_extra = extra;
  lo.work_dir = x->work_dir;
  lo.progress_prefix = prefix;
  lo.label = label;
  lo.timeout_s = o->run_timeout_s > 0 ? o->run_timeout_s : 120;
  rc = launcher_run(&lo, &lr, e);
  sandbox_argv_free(wrapped);
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
    eval_fail(r, o, st, EVAL_STATUS_FAILED, "size %s: %s", s->name, lr.what);
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

/* Run ARGV (freed here) in the work folder, sandboxed without network,
 * under the run deadline, its output captured: the candidate's program and
 * the workload's check of what it wrote alike.  0 ran (*pr set), <0. */
static int ff_run_argv(const struct eval_opts *o, const struct eval_ctx *x,
                       char **argv, struct proc_result *pr, struct err *e)
{
  struct proc_opts po = {0};
  char **env = proc_env_new(proc_env_default_allow, NULL);
  int rc;

  po.argv = (const char *const *)argv;
  po.envp = (const char *const *)env;
  po.cwd = x->work_dir;
  po.sandbox = PROC_SANDBOX_ISOLATED;
  po.timeout_s = o->run_timeout_s > 0 ? o->run_timeout_s : 120;
  po.out_max = FF_OUT_MAX;
  po.err_max = EVAL_LOG_MAX;
  rc = proc_run(&po, pr, e);
  tmpl_argv_free(argv);
  proc_env_free(env);
  return rc;
}

/* Build the workload's check ([freeform] check_build) once per evaluation,
 * into a folder of the cache that no candidate run is given.  0, or <0. */
static int ff_check_prepare(const struct eval_opts *o, struct eval_ctx *x,
                            struct err *e)
{
  struct build_vars v = {0};
  struct proc_opts po = {0};
  struct proc_result pr;
  const char *rw[2];
  char **argv, **env, how[128], dir[PATH_MAX];
  int rc;

  if (x->ff_checker[0] || !o->wl->ff_check[0])
    return 0;
  /* the build runs in its own folder: {dir} must not be relative */
  if (!realpath(o->wl->dir, dir))
    snprintf(dir, sizeof(dir), "%s", o->wl->dir);
  snprintf(x->ff_check_dir, sizeof(x->ff_check_dir), "%s/ffcheck.XXXXXX",
           x->cache_dir);
  if ((rc = file_mkdirs(x->cache_dir, e)))
    return rc;
  if (!mkdtemp(x->ff_check_dir)) {
    rc =
        err_set(e, ERR_IO, "mkdtemp %s: %s", x->ff_check_dir, strerror(errno));
    x->ff_check_dir[0] = '\0';
    return rc;
  }
  snprintf(x->ff_checker, sizeof(x->ff_checker), "%s/check", x->ff_check_dir);
  if (!o->wl->ff_check_build[0])
    return 0;
  v.bin = x->ff_checker;
  v.dir = dir;
  v.work = x->ff_check_dir;
  argv = build_template_argv(o->wl->ff_check_build, &v, e);
  if (!argv)
    return err_wrap(e, "%s [freeform] check_build", o->wl->ini_path);
  env = proc_env_new(proc_env_default_allow, NULL);
  rw[0] = x->ff_check_dir;
  rw[1] = NULL;
  po.argv = (const char *const *)argv;
  po.envp = (const char *const *)env;
  po.cwd = x->ff_check_dir;
  po.sandbox = PROC_SANDBOX_ISOLATED;
  po.rw_dirs = rw;
  po.timeout_s = o->build_timeout_s > 0 ? o->build_timeout_s : 300;
  rc = proc_run(&po, &pr, e);
  tmpl_argv_free(argv);
  proc_env_free(env);
  if (rc)
    return rc;
  if (!proc_ok(&pr)) {
    rc = err_set(e, ERR_CONFIG, "%s [freeform] check_build: %s: %.200s",
                 o->wl->ini_path, proc_describe(&pr, how, sizeof(how)),
                 buf_str(&pr.err));
    x->ff_checker[0] = '\0';
  }
  proc_result_release(&pr);
  return rc;
}

/* The workload's check of the run just made ([freeform] check): 0 passed
 * (its metrics, if any, added to MET), 1 failed (verdict set), <0. */
static int ff_check_run(const struct eval_opts *o, struct eval_ctx *x,
                        const struct workload_size *s, const char *mode,
                        const struct build_vars *pv, struct eval_result *r,
                        json_t *met, struct err *e)
{
  enum eval_stage st =
      !strcmp(mode, "verify") ? EVAL_STAGE_VERIFY : EVAL_STAGE_BENCH;
  struct build_vars v = *pv;
  struct proc_result pr;
  char **argv, how[128], why[256];
  json_t *j;
  int rc;

  v.bin = x->ff_checker;
  argv = build_template_argv(o->wl->ff_check, &v, e);
  if (!argv)
    return err_wrap(e, "%s [freeform] check", o->wl->ini_path);
  if ((rc = ff_run_argv(o, x, argv, &pr, e))) /* it reads what the */
    return rc;                                /* candidate wrote   */
  j = proc_ok(&pr) ? last_json_line(buf_str(&pr.out), 0, why, sizeof(why))
                   : NULL;
  if (!proc_ok(&pr))
    snprintf(why, sizeof(why), "%s", proc_describe(&pr, how, sizeof(how)));
  proc_result_release(&pr);
  if (!j || !json_is_true(json_object_get(j, "ok"))) {
    const char *er = j ? json_string_value(json_object_get(j, "error")) : NULL;
    eval_fail(r, o, st, EVAL_STATUS_FAILED,
              "size %s: verification failed (the workload's check, run by "
              "cuco)%s%s",
              s->name, j ? (er ? ": " : "") : ": ", j ? (er ? er : "") : why);
    json_decref(j);
    return 1;
  }
  json_object_set_new(met, "check", j);
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
  struct proc_result pr;
  char seed_s[32], outp[WORKLOAD_PATH + 32], how[128], why[256];
  char **argv;
  json_t *j, *ok;
  int rc;

  double wall_ms = 0;

  *met = NULL;
  if ((rc = ff_check_prepare(o, x, e)))
    return rc;
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
    tmpl_argv_free(argv);
    if (rc)
      return rc;
    goto parse;
  }
  if ((rc = ff_run_argv(o, x, argv, &pr, e))) /* the candidate runs */
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
    eval_fail(r, o, st, EVAL_STATUS_FAILED, "size %s: %s%s%s%.*s", s->name,
              pr.outcome == PROC_TIMEDOUT ? "hang: " : "",
              proc_describe(&pr, how, sizeof(how)), tl > b ? ": " : "",
              (int)(tl - b > 200 ? 200 : tl - b), t + b);
    proc_result_release(&pr);
    return 1;
  }
  wall_ms = pr.wall_s * 1e3;
parse:
  j = last_json_line(buf_str(&pr.out), 1, why, sizeof(why));
  proc_result_release(&pr);
  if (!j) {
    eval_fail(r, o, st, EVAL_STATUS_FAILED, "size %s: %s", s->name, why);
    return 1;
  }
  ok = json_object_get(j, "ok");
  /* with a check of the workload's own, the program's "ok" is not what
   * decides (it may have defined its check away); without one it is all
   * there is, and the results say so (verified_by) */
  if (!o->wl->ff_check[0] && ok && !json_is_true(ok)) {
    const char *er = json_string_value(json_object_get(j, "error"));
    eval_fail(r, o, st, EVAL_STATUS_FAILED,
              "size %s: verification failed (the program's own check)%s%s",
              s->name, er ? ": " : "", er ? er : "");
    json_decref(j);
    return 1;
  }
  *val = json_number_value(json_object_get(j, o->wl->ff_metric));
  if (!json_is_number(json_object_get(j, o->wl->ff_metric)) || !(*val > 0)) {
    eval_fail(r, o, st, EVAL_STATUS_FAILED,
              "size %s: metrics line has no positive "
              "'%s'",
              s->name, o->wl->ff_metric);
    json_decref(j);
    return 1;
  }
  /* the program's time is its word: believed only inside what cuco's own
   * clock saw of the whole run, and never below a nanosecond */
  if (!isfinite(*val) || *val < 1e-6 || (wall_ms > 0 && *val > wall_ms + 1)) {
    eval_fail(r, o, st, EVAL_STATUS_FAILED,
              "size %s: '%s' %g ms is impossible: the whole run took %.3f ms "
              "on cuco's clock (a time must be finite, at least 1e-6 ms and "
              "within the run)",
              s->name, o->wl->ff_metric, *val, wall_ms);
    json_decref(j);
    return 1;
  }
  if (wall_ms > 0)
    json_object_set_new(j, "cuco_wall_ms", json_real(wall_ms));
  if (x->ff_checker[0] &&
      (rc = ff_check_run(o, x, s, mode, &v, r, j, e)) != 0) {
    json_decref(j);
    return rc;
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
    rc = eval_bin_unchanged(
        o, x, !strcmp(mode, "bench") ? EVAL_STAGE_BENCH : EVAL_STAGE_VERIFY, r,
        e);
    if (!rc)
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
  json_object_set_new(res, "verified_by",
                      json_string(o->wl->ff_check[0] ? "cuco" : "program"));
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
