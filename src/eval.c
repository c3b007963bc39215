/* eval.c - the evaluation cascade; see eval.h.  The freeform runner is in
 * eval_ff.c, the frozen thresholds in eval_thresh.c, the verdict helpers
 * in eval_verdict.c (eval_int.h); the cheat suite, a client of
 * eval_candidate(), in eval_cheats.c; the command in eval_cli.c. */
#define _GNU_SOURCE
#include "eval.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "allow.h"
#include "build.h"
#include "buf.h"
#include "candidate.h"
#include "directive.h"
#include "eval_int.h"
#include "sandbox.h"
#include "file.h"
#include "launch.h"
#include "log.h"
#include "toolchain.h"
#include "workload.h"

/* ---- static stage ---- */

static int stage_static(const struct eval_opts *o, const char *code,
                        struct directive_set *d, struct eval_result *r,
                        struct err *e)
{
  const struct workload *w = o->wl;
  char *seed = NULL;
  struct err ce = {0, ""};
  int device = w->kind == WORKLOAD_RUNTIME;

  memset(d, 0, sizeof(*d));
  if (strlen(code) > CANDIDATE_MAX_BYTES) {
    eval_fail(r, o, EVAL_STAGE_STATIC, EVAL_STATUS_REJECTED,
              "candidate is %zu bytes, over the %u cap", strlen(code),
              CANDIDATE_MAX_BYTES);
    return 1;
  }
  if (!o->device_candidate) {
    eval_pass(o, EVAL_STAGE_STATIC, "ok (not a candidate: no checks)");
    return 0;
  }
  if (o->seed_code) {
    seed = strdup(o->seed_code);
  } else {
    char p[WORKLOAD_PATH + 160];
    snprintf(p, sizeof(p), "%s/%s", w->dir, w->seed);
    seed = file_read_text(p, CANDIDATE_MAX_BYTES, e);
    if (!seed)
      return err_wrap(e, "seed");
  }
  if (!seed)
    return err_set(e, ERR_NOMEM, "out of memory");
  const char *forbid[WORKLOAD_MAX_FORBID];
  for (int i = 0; i < w->nforbid; i++)
    forbid[i] = w->forbid[i];
  if (candidate_check(seed, code, device, &ce) ||
      candidate_check_names(code, forbid, w->nforbid,
                            "workload.ini forbids it in candidates", &ce) ||
      directive_parse(code, d, &ce) || directive_validate(d, w, &ce)) {
    eval_fail(r, o, EVAL_STAGE_STATIC, EVAL_STATUS_REJECTED, "%s", ce.msg);
    free(seed);
    return 1;
  }
  free(seed);
  r->directives = directive_to_json(d);
  {
    struct directive_flags f;
    struct buf b = BUF_INIT(1024);
    int i;
    directive_flags(d, &f);
    for (i = 0; i < f.n; i++)
      (void)buf_printf(&b, "%s%s", i ? " " : "", f.v[i] + 2);
    eval_pass(o, EVAL_STAGE_STATIC, "ok%s%s", f.n ? ": " : "", buf_str(&b));
    buf_release(&b);
  }
  return 0;
}

/* ---- build stage ---- */

/* What every build of this evaluation shares: IMPL built into OUT. */
static void build_base(const struct eval_opts *o, const struct eval_ctx *x,
                       const char *impl, const char *out,
                       struct build_opts *bo)
{
  bo->wl = o->wl;
  bo->tc = o->tc;
  bo->runtime_dir = x->runtime_dir;
  bo->impl_path = impl;
  bo->out_bin = out;
  bo->cache_dir = x->cache_dir;
  bo->timeout_s = o->build_timeout_s > 0 ? o->build_timeout_s : 300;
  bo->work_dir = x->work_dir;
  bo->nice = o->build_nice;
}

static int stage_build(const struct eval_opts *o, struct eval_ctx *x,
                       const struct directive_set *d, struct eval_result *r,
                       struct err *e)
{
  struct directive_flags f;
  const char *fl[DIRECTIVE_MAX_FLAGS];
  struct build_opts bo = {0};
  struct build_result br;
  struct err be = {0, ""};
  int i, rc, ncomp, ncached;

  directive_flags(d, &f);
  for (i = 0; i < f.n; i++)
    fl[i] = f.v[i];
  build_base(o, x, x->src_path, x->bin_path, &bo);
  bo.dflags = fl;
  bo.ndflags = f.n;
  bo.vranks = o->vranks;
  bo.compile_only = o->compile_only;
  rc = build_run(&bo, &br, &be);
  r->build_s = br.wall_s;
  ncomp = br.compiled;
  ncached = br.cached;
  snprintf(x->impl_obj, sizeof(x->impl_obj), "%s", br.impl_obj);
  if (br.log)
    eval_log_append(&r->build_log, br.log);
  if (rc == ERR_BUILD || rc == ERR_TIMEOUT) {
    eval_fail(r, o, EVAL_STAGE_BUILD, EVAL_STATUS_FAILED, "%s", be.msg);
    build_result_release(&br);
    return 1;
  }
  if (rc) {
    err_set(e, rc, "build: %s", be.msg);
    build_result_release(&br);
    return rc;
  }
  if (o->wl->kind == WORKLOAD_RUNTIME)
    eval_pass(o, EVAL_STAGE_BUILD, "ok (%.1f s; %d compiled, %d cached; %s)",
              r->build_s, ncomp, ncached, br.link_note);
  else
    eval_pass(o, EVAL_STAGE_BUILD, "ok (%.1f s)", r->build_s);
  build_result_release(&br);
  return 0;
}

/* ---- the judge (docs/contracts.md 4f) ---- */

/* Build the workload's first baseline as the judge of every real-rank run
 * (trusted code: the runtime, the reference, the baseline), and write the
 * command its workers run: the candidate's binary, under the sandbox when
 * it is active (the judge itself is not sandboxed: it must write the
 * result where the worker cannot).  0, 1 failed (verdict set), <0 error. */
static int stage_judge(const struct eval_opts *o, struct eval_ctx *x,
                       struct eval_result *r, struct err *e)
{
  struct build_opts bo = {0};
  struct build_result br;
  struct err be = {0, ""};
  struct sandbox_state ss;
  char base[WORKLOAD_PATH + 140], **wargv = NULL;
  struct buf cmd = BUF_INIT(64 * 1024);
  const char *one[2];
  const char *rw[2];
  int rc, i;

  snprintf(base, sizeof(base), "%s/%s", o->wl->dir, o->wl->baselines[0]);
  snprintf(x->judge_bin, sizeof(x->judge_bin), "%s/judge.bin", x->work_dir);
  build_base(o, x, base, x->judge_bin, &bo);
  rc = build_run(&bo, &br, &be);
  r->build_s += br.wall_s;
  build_result_release(&br);
  if (rc == ERR_BUILD || rc == ERR_TIMEOUT) {
    eval_fail(r, o, EVAL_STAGE_BUILD, EVAL_STATUS_FAILED, "the judge (%s): %s",
              o->wl->baselines[0], be.msg);
    return 1;
  }
  if (rc)
    return err_set(e, rc, "building the judge: %s", be.msg);
  snprintf(x->worker_dir, sizeof(x->worker_dir), "%s/worker", x->work_dir);
  snprintf(x->worker_file, sizeof(x->worker_file), "%s/WORKER.argv",
           x->work_dir);
  if ((rc = file_mkdirs(x->worker_dir, e)))
    return rc;
  sandbox_state(&ss);
  if (ss.kind == SANDBOX_KIND_REFUSED)
    return err_set(e, ERR_PROC, "not run: no sandbox: %s", ss.why);
  one[0] = x->bin_path;
  one[1] = NULL;
  rw[0] = x->worker_dir;
  rw[1] = NULL;
  if (ss.kind == SANDBOX_KIND_BWRAP) {
    /* one rank: no network at all (NCCL bootstraps on the namespace's own
     * loopback); ranks: the host's, to reach each other */
    char shm[4096];
    struct sandbox_req q = {x->bin_path,  one, x->worker_dir, rw, shm,
                            x->ranks > 1, 1,   NULL};
    snprintf(shm, sizeof(shm), "%s/shm", x->worker_dir);
    if ((rc = file_mkdirs(shm, e)))
      return rc;
    /* the judge gives its worker the ranks' LD_LIBRARY_PATH: x->lib_dirs
     * (NCCL's and CUDA's library folders) before cuco's own */
    char ldp[sizeof(x->lib_dirs) + 4096];
    const char *cur = getenv("LD_LIBRARY_PATH");
    snprintf(ldp, sizeof(ldp), "%s%s%s", x->lib_dirs,
             *x->lib_dirs && cur && *cur ? ":" : "", cur ? cur : "");
    q.ld_path = ldp;
    wargv = sandbox_argv_for(&q);
    if (!wargv)
      return err_set(e, ERR_NOMEM, "out of memory");
    for (i = 0; wargv[i]; i++)
      (void)buf_append(&cmd, wargv[i], strlen(wargv[i]) + 1);
    sandbox_argv_free(wargv);
  } else {
    (void)buf_append(&cmd, x->bin_path, strlen(x->bin_path) + 1);
  }
  rc = buf_error(&cmd) ? err_set(e, ERR_TOOBIG, "worker command too long")
                       : file_write(x->worker_file, cmd.data, cmd.len, e);
  buf_release(&cmd);
  return rc;
}

/* ---- allowlist stage ---- */

static int is_elf(const char *path)
{
  unsigned char m[4] = {0};
  FILE *f = fopen(path, "rb");
  size_t n;

  if (!f)
    return 0;
  n = fread(m, 1, 4, f);
  fclose(f);
  return n == 4 && m[0] == 0x7f && m[1] == 'E' && m[2] == 'L' && m[3] == 'F';
}

/* Judge what the compiler produced (allow.h): the implementation's object
 * (runtime workloads) or the program (freeform) calls only what
 * RUNTIME/symbols.allow, widened by workload.ini [allow], lists. */
static int stage_allowlist(const struct eval_opts *o, struct eval_ctx *x,
                           struct eval_result *r, struct err *e)
{
  const struct workload *w = o->wl;
  int runtime = w->kind == WORKLOAD_RUNTIME;
  const char *path = runtime ? x->impl_obj : x->bin_path;
  const char *rd = strrchr(x->runtime_dir, '/');
  char lp[WORKLOAD_PATH + 32], shown[WORKLOAD_PATH + 64], label[200];
  char wide[WORKLOAD_PATH + 64] = "";
  struct err ae = {0, ""};
  struct allow *a;
  int rc;

  snprintf(lp, sizeof(lp), "%s/%s", x->runtime_dir, ALLOW_FILE);
  /* "runtime/symbols.allow": the folder's name, not the whole path */
  snprintf(shown, sizeof(shown), "%s/%s", rd ? rd + 1 : x->runtime_dir,
           ALLOW_FILE);
  a = allow_load(lp, &ae);
  if (!a)
    return err_set(e, ae.code, "allowlist: %s", ae.msg);
  if (w->allow_symbols[0]) {
    if ((rc = allow_widen(a, w->allow_symbols, &ae))) {
      allow_free(a);
      return err_set(e, rc, "%s [allow] symbols: %s", w->ini_path, ae.msg);
    }
    snprintf(wide, sizeof(wide), "; widened by %s/workload.ini [allow]: %s",
             w->name, w->allow_symbols);
  }
  {
    /* name it as the user knows it: the source's stem + .o, or the
     * program's file name */
    const char *b = strrchr(x->src_path, '/') ? strrchr(x->src_path, '/') + 1
                                              : x->src_path;
    const char *dot = strrchr(b, '.');
    if (runtime)
      snprintf(label, sizeof(label), "%.*s.o",
               (int)(dot ? dot - b : (long)strlen(b)), b);
    else
      snprintf(label, sizeof(label), "%s",
               strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
  }
  if (!*path || access(path, R_OK)) {
    allow_free(a);
    eval_fail(r, o, EVAL_STAGE_ALLOWLIST, EVAL_STATUS_REJECTED,
              "the build made no %s to judge", runtime ? "object" : "program");
    return 1;
  }
  if (!runtime && !is_elf(path)) {
    /* a freeform build may make a script: there are no symbols to judge */
    allow_free(a);
    eval_pass(o, EVAL_STAGE_ALLOWLIST,
              "skipped (%s is not an ELF program: nothing to judge)", label);
    return 0;
  }
  rc = allow_check(a, path, label, !runtime, !o->device_candidate, shown, &ae);
  allow_free(a);
  if (rc == ERR_CHECK) {
    if (*wide)
      snprintf(ae.msg + strlen(ae.msg), sizeof(ae.msg) - strlen(ae.msg),
               " [%s/workload.ini [allow] widens it]", w->name);
    eval_fail(r, o, EVAL_STAGE_ALLOWLIST, EVAL_STATUS_REJECTED, "%s", ae.msg);
    return 1;
  }
  if (rc)
    return err_set(e, rc, "allowlist: %s", ae.msg);
  if ((rc = file_hash64(x->bin_path, &x->bin_hash, e)))
    return rc;
  x->bin_hashed = 1;
  eval_pass(o, EVAL_STAGE_ALLOWLIST,
            "ok (%s calls only what %s allows%s; no raw system call)", label,
            shown, wide);
  return 0;
}

int eval_bin_unchanged(const struct eval_opts *o, struct eval_ctx *x,
                       enum eval_stage st, struct eval_result *r,
                       struct err *e)
{
  unsigned long long h;
  int rc;

  if (!x->bin_hashed)
    return 0;
  if ((rc = file_hash64(x->bin_path, &h, e)))
    return rc;
  if (h == x->bin_hash)
    return 0;
  eval_fail(r, o, st, EVAL_STATUS_REJECTED,
            "the program changed after it was checked (%s): a candidate may "
            "not rewrite its binary",
            x->bin_path);
  return 1;
}

/* ---- runs of a runtime binary ---- */

/* The first failed check of a RESULT.json, as words. */
static void first_failed_check(const json_t *res, char *out, size_t n)
{
  const json_t *checks =
      json_object_get(json_object_get(res, "verify"), "checks");
  size_t i;

  *out = '\0';
  for (i = 0; i < json_array_size(checks); i++) {
    const json_t *c = json_array_get(checks, i);
    if (json_is_true(json_object_get(c, "passed")))
      continue;
    snprintf(out, n,
             "rank %d output %s (%s): rel_l2 %.3g tol %.3g nan %d "
             "poison %d%s%s",
             (int)json_integer_value(json_object_get(c, "rank")),
             json_string_value(json_object_get(c, "output"))
                 ? json_string_value(json_object_get(c, "output"))
                 : "?",
             json_string_value(json_object_get(c, "step"))
                 ? json_string_value(json_object_get(c, "step"))
                 : "?",
             json_number_value(json_object_get(c, "rel_l2")),
             json_number_value(json_object_get(c, "tol")),
             (int)json_integer_value(json_object_get(c, "nan")),
             (int)json_integer_value(json_object_get(c, "poison")),
             json_string_length(json_object_get(c, "reason")) ? ": " : "",
             json_string_value(json_object_get(c, "reason"))
                 ? json_string_value(json_object_get(c, "reason"))
                 : "");
    return;
  }
}

/* " [replay: --seed N --secret HEX]" from RESULT.json R into OUT. */
static void replay_hint(const json_t *res, char *out, size_t n)
{
  const json_t *rp = json_object_get(res, "replay");
  const char *sec = json_string_value(json_object_get(rp, "secret"));

  *out = '\0';
  if (sec && json_is_integer(json_object_get(rp, "seed")))
    snprintf(out, n, " [replay: --seed %lld --secret %s]",
             (long long)json_integer_value(json_object_get(rp, "seed")), sec);
}

/* How the run of the binary ended, for judging one size's RESULT.json. */
struct run_end {
  int timed_out, hang_rank, exit_code, all_ok;
  const char *what, *result_error;
};

/* Judge one size's RESULT.json RES (NULL: none was written) of a run that
 * ended as RE says.  0 passed, 1 the candidate failed (verdict set); *out
 * gets a reference to RES either way. */
static int judge_size(const struct eval_opts *o, enum eval_stage st,
                      const struct workload_size *s, const struct run_end *re,
                      json_t *res, struct eval_result *r, json_t **out)
{
  const char *status;
  char replay[96] = "";
  int rc = 1;

  if (res)
    replay_hint(res, replay, sizeof(replay));
  if (re->timed_out) {
    r->hang_rank = re->hang_rank;
    eval_fail(r, o, st, EVAL_STATUS_FAILED, "size %s: %s", s->name, re->what);
    goto fail;
  }
  if (!res) {
    eval_fail(r, o, st, EVAL_STATUS_FAILED, "size %s: %s; %s", s->name,
              re->what, re->result_error);
    goto fail;
  }
  status = json_string_value(json_object_get(res, "status"));
  if (!status)
    status = "";
  if (!strcmp(status, "verify_failed") || re->exit_code == 3) {
    char why[300];
    first_failed_check(res, why, sizeof(why));
    eval_fail(r, o, st, EVAL_STATUS_FAILED,
              "size %s: verification failed: %s%s", s->name,
              *why ? why : re->what, replay);
    goto fail;
  }
  if (strcmp(status, "ok") || !re->all_ok ||
      !json_is_true(
          json_object_get(json_object_get(res, "verify"), "passed"))) {
    const char *er = json_string_value(json_object_get(res, "error"));
    if (er && *er)
      eval_fail(r, o, st, EVAL_STATUS_FAILED, "size %s: %s (rank 0 exit %d)%s",
                s->name, er, re->exit_code, replay);
    else
      eval_fail(r, o, st, EVAL_STATUS_FAILED, "size %s: %s", s->name,
                re->what);
    goto fail;
  }
  if (json_is_true(json_object_get(res, "protocol_test")))
    r->protocol_test = 1;
  rc = 0;
fail:
  *out = res ? json_incref(res) : NULL;
  return rc;
}

/* The three tolerances a run of one size gets, as words ("-": none, the
 * binary's default): the frozen thresholds (thresh.h), else workload.ini's
 * rel_l2 alone. */
static void tol_words(const struct eval_opts *o, const struct eval_thresh *th,
                      char t[3][32])
{
  snprintf(t[0], 32, "-");
  snprintf(t[1], 32, "-");
  snprintf(t[2], 32, "-");
  if (th && th->found) {
    snprintf(t[0], 32, "%.6g", th->t.rel_l2);
    if (th->t.row > 0)
      snprintf(t[1], 32, "%.6g", th->t.row);
    if (th->t.block > 0)
      snprintf(t[2], 32, "%.6g", th->t.block);
  } else if (o->wl->tol_rel_l2 > 0) {
    snprintf(t[0], 32, "%g", o->wl->tol_rel_l2);
  }
}

/* Write the --plan file of SIZES (runtime/rt_internal.cuh): a line per
 * size, NAME PARAMS TOL LOCAL_TOL BLOCK_TOL ('-': the command line's). */
static int write_plan(const struct eval_opts *o, const char *path,
                      const struct workload_size *sizes,
                      const struct eval_thresh *ths, int n, struct err *e)
{
  struct buf b = BUF_INIT(1024);
  int i, rc;

  for (i = 0; i < n; i++) {
    char t[3][32];
    tol_words(o, &ths[i], t);
    (void)buf_printf(&b, "%s %s %s %s %s\n", sizes[i].name, sizes[i].params,
                     t[0], t[1], t[2]);
  }
  rc = file_write(path, buf_str(&b), strlen(buf_str(&b)), e);
  buf_release(&b);
  return rc;
}

/* Whether SIZES can go through one --plan run: names and params without
 * blanks (a plan line is blank-separated). */
static int plan_ok(const struct workload_size *sizes, int n)
{
  int i;

  for (i = 0; i < n; i++)
    if (strpbrk(sizes[i].name, " \t\n") || strpbrk(sizes[i].params, " \t\n") ||
        !*sizes[i].params)
      return 0;
  return 1;
}

/* Run the binary on N sizes in one mode: one process per size, or with
 * N > 1 (and not eval_opts.per_size_process) all of them in one process
 * (--plan).
 * rcs[i]: 0 size i passed (its metrics in outs[i]), 1 the candidate failed
 * there (verdict set), -1 not run (an earlier size failed).  0, or
 * negative on an internal error. */
static int run_sizes(const struct eval_opts *o, struct eval_ctx *x,
                     const struct workload_size *sizes, int n,
                     const char *mode, const struct eval_thresh *ths,
                     struct eval_result *r, json_t **outs, int *rcs,
                     struct err *e)
{
  enum eval_stage st =
      !strcmp(mode, "verify") ? EVAL_STAGE_VERIFY : EVAL_STAGE_BENCH;
  const struct workload_size *s = &sizes[0];
  const struct eval_thresh *th = &ths[0];
  const char *args[40];
  char seed_s[32], tols[3][32], vr_s[16], resp[WORKLOAD_PATH + 64],
      plan[WORKLOAD_PATH + 64];
  struct launch_opts lo = {0};
  struct launch_result lr;
  struct run_end re;
  char secret[40];
  int na = 0, rc, i, multi = n > 1;
  double t0, wall_ms,
      per_run_s = o->run_timeout_s > 0 ? o->run_timeout_s : 120;

  for (i = 0; i < n; i++)
    rcs[i] = -1, outs[i] = NULL;
  if ((rc = eval_bin_unchanged(o, x, st, r, e)) != 0) {
    rcs[0] = rc == 1 ? 1 : -1;
    return rc == 1 ? 0 : rc;
  }
  /* The per-run secret reaches every rank on its stdin (never argv, env
   * or a file): given (a replay) or fresh for this run. */
  if (o->secret) {
    snprintf(secret, sizeof(secret), "%.32s\n", o->secret);
  } else {
    unsigned long long k[2];
    if (getrandom(k, sizeof(k), 0) != (ssize_t)sizeof(k))
      return err_set(e, ERR_IO, "getrandom: %s", strerror(errno));
    snprintf(secret, sizeof(secret), "%016llx%016llx\n", k[0], k[1]);
    k[0] = k[1] = 0;
  }
  snprintf(resp, sizeof(resp), "%s/RESULT.json", x->work_dir);
  snprintf(seed_s, sizeof(seed_s), "%lu", o->seed ? o->seed : 1234UL);
  args[na++] = "--workload";
  args[na++] = o->wl->name;
  args[na++] = "--impl";
  args[na++] = o->impl_name ? o->impl_name : "candidate.cu";
  if (multi) {
    snprintf(plan, sizeof(plan), "%s/PLAN.%s", x->work_dir, mode);
    if ((rc = write_plan(o, plan, sizes, ths, n, e)))
      return rc;
    for (i = 0; i < n; i++) {
      char p[WORKLOAD_PATH + 80];
      snprintf(p, sizeof(p), "%s.%d", resp, i);
      unlink(p);
    }
    args[na++] = "--plan";
    args[na++] = plan;
  } else {
    args[na++] = "--params";
    args[na++] = s->params;
    if (strcmp(s->name, s->params)) {
      args[na++] = "--size-name";
      args[na++] = s->name;
    }
  }
  args[na++] = "--mode";
  args[na++] = mode;
  args[na++] = "--seed";
  args[na++] = seed_s;
  args[na++] = "--secret-fd";
  args[na++] = "0";
  if (!multi) { /* a plan carries each size's tolerances */
    static const char *const flag[3] = {"--tol", "--local-tol", "--block-tol"};
    tol_words(o, th, tols);
    for (i = 0; i < 3; i++)
      if (strcmp(tols[i], "-")) {
        args[na++] = flag[i];
        args[na++] = tols[i];
      }
  }
  /* verify also runs the perturbed steps (a busy GPU, late inputs): they
   * catch candidates that do not wait for what they consume */
  if (st == EVAL_STAGE_VERIFY)
    args[na++] = "--perturb";
  args[na++] = "--out";
  args[na++] = resp;
  if (*x->machine_path) {
    args[na++] = "--machine";
    args[na++] = x->machine_path;
  }
  if (o->vranks > 0) {
    snprintf(vr_s, sizeof(vr_s), "%d", o->vranks);
    args[na++] = "--vranks";
    args[na++] = vr_s;
  }
  if (x->judge_bin[0]) {
    /* the judge first, its worker file, then the contract's arguments */
    memmove(args + 2, args, sizeof(args[0]) * (size_t)na);
    args[0] = "--judge-worker";
    args[1] = x->worker_file;
    na += 2;
    lo.bin = x->judge_bin;
    lo.judges = 1;
    lo.worker_dir = x->worker_dir;
  } else {
    lo.bin = x->bin_path;
  }
  lo.args = args;
  lo.nargs = na;
  lo.nranks = o->vranks > 0 ? 1 : x->ranks;
  lo.gpus = o->gpus;
  lo.work_dir = x->work_dir;
  lo.result_path = resp;
  lo.lib_dirs = x->lib_dirs;
  /* the per-run limit holds for every size of a plan: the whole process
   * gets the sizes' sum, and each size the limit (the launcher watches the
   * ranks' progress files, which name the size) */
  lo.timeout_s = per_run_s * n;
  if (multi)
    lo.size_timeout_s = per_run_s;
  lo.stdin_data = secret;
  lo.launcher = o->launcher;
  t0 = eval_now();
  rc = launch_run(&lo, &lr, e);
  memset(secret, 0, sizeof(secret));
  /* Launch to exit as cuco saw it (ms), beside the rank's phases_ms: the
   * difference is what no phase covers (spawn, NCCL teardown, exit). */
  wall_ms = round((eval_now() - t0) * 1e4) / 10;
  if (lr.interrupted)
    r->interrupted = 1;
  if (lr.log) {
    char head[160];
    if (multi)
      snprintf(head, sizeof(head), "=== %s %d sizes in one process (%s) ===\n",
               mode, n, plan);
    else
      snprintf(head, sizeof(head), "=== %s %s (%s) ===\n", mode, s->name,
               s->params);
    eval_log_append(&r->verify_log, head);
    eval_log_append(&r->verify_log, lr.log);
  }
  if (rc) {
    launch_result_release(&lr);
    return rc;
  }
  re.timed_out = lr.timed_out;
  re.hang_rank = lr.hang_rank;
  re.exit_code = lr.exit_code;
  re.all_ok = lr.all_ok;
  re.what = lr.what;
  re.result_error = lr.result_error;
  if (!multi) {
    if (json_is_object(lr.result))
      json_object_set_new(lr.result, "wall_ms", json_real(wall_ms));
    rcs[0] = judge_size(o, st, s, &re, lr.result, r, &outs[0]);
    launch_result_release(&lr);
    return 0;
  }
  for (i = 0; i < n; i++) {
    char p[WORKLOAD_PATH + 80], rerr[256] = "";
    struct err je = {0, ""};
    struct run_end ok = {0, -1, 0, 1, "", ""};
    json_t *res;
    const char *status;
    int ended;
    snprintf(p, sizeof(p), "%s.%d", resp, i);
    res = launch_read_result(p, &je);
    if (!res)
      snprintf(rerr, sizeof(rerr), "%s", je.msg);
    status = res ? json_string_value(json_object_get(res, "status")) : NULL;
    /* the process ended at this size: no result, not ok, the last, or
     * the size a hung rank was at (its progress file says; rank 0 may
     * have written results past it where ranks do not wait for each
     * other, as the test fixture's) */
    ended = !res || !status || strcmp(status, "ok") || i == n - 1 ||
            (re.timed_out && lr.hang_size == i);
    if (res) {
      json_object_set_new(res, "process_wall_ms", json_real(wall_ms));
      json_object_set_new(res, "process_sizes", json_integer(n));
    }
    if (ended) {
      if (!res)
        re.result_error = rerr;
      rcs[i] = judge_size(o, st, &sizes[i], &re, res, r, &outs[i]);
    } else {
      rcs[i] = judge_size(o, st, &sizes[i], &ok, res, r, &outs[i]);
    }
    json_decref(res);
    if (rcs[i] || ended)
      break;
  }
  launch_result_release(&lr);
  return 0;
}

/* Keep only what the DB and reports need of a RESULT.json. */
static json_t *slim(json_t *res)
{
  json_t *o = json_object();
  static const char *const keep[] = {
      "params",        "size",   "nranks",    "vranks",  "protocol_test",
      "mode",          "status", "error",     "verify",  "timing",
      "bound",         "replay", "phases_ms", "wall_ms", "process_wall_ms",
      "process_sizes", NULL};
  int i;

  for (i = 0; keep[i]; i++) {
    json_t *v = json_object_get(res, keep[i]);
    if (v)
      json_object_set(o, keep[i], v);
  }
  return o;
}

/* Stage over a set of sizes; fills metrics[mode][size]. */
static int stage_runs(const struct eval_opts *o, struct eval_ctx *x,
                      const struct workload_size *sizes, int n,
                      const char *mode, struct eval_result *r, struct err *e)
{
  enum eval_stage st =
      !strcmp(mode, "verify") ? EVAL_STAGE_VERIFY : EVAL_STAGE_BENCH;
  json_t *bymode = json_object_get(r->metrics, mode);
  double t0 = eval_now(), logsum = 0, worst_rel = 0, fracsum = 0;
  char note[1200] = "", sol[96] = "";
  struct eval_thresh ths[EVAL_PLAN_MAX];
  json_t *pres[EVAL_PLAN_MAX];
  int prc[EVAL_PLAN_MAX];
  int nfrac = 0, plan;
  int i, rc = 0;

  if (!bymode) {
    bymode = json_object();
    json_object_set_new(r->metrics, mode, bymode);
  }
  /* one process for every size of the stage (unless per_size_process) */
  plan = !o->per_size_process && n > 1 && o->wl->kind == WORKLOAD_RUNTIME &&
         o->vranks <= 0 && n <= EVAL_PLAN_MAX && plan_ok(sizes, n);
  if (plan) {
    for (i = 0; i < n; i++)
      if ((rc = eval_thresh_before(o, x, &sizes[i], &ths[i], e)))
        return rc;
    if ((rc = run_sizes(o, x, sizes, n, mode, ths, r, pres, prc, e)))
      return rc;
  }
  for (i = 0; i < n; i++) {
    json_t *res = NULL, *sm;
    struct eval_thresh th;
    if (plan) {
      th = ths[i];
      res = pres[i];
      rc = prc[i];
      if (rc < 0) { /* not run: only after a failure, which ended the loop */
        rc = err_set(e, ERR_INTERNAL, "size %s was not run", sizes[i].name);
        break;
      }
    } else if ((rc = eval_thresh_before(o, x, &sizes[i], &th, e))) {
      break;
    } else if (o->wl->kind == WORKLOAD_FREEFORM) {
      rc = eval_ff_run(o, x, &sizes[i], mode, r, &res, e);
    } else {
      int one = -1;
      rc = run_sizes(o, x, &sizes[i], 1, mode, &th, r, &res, &one, e);
      if (!rc)
        rc = one;
    }
    if (res) {
      sm = o->wl->kind == WORKLOAD_FREEFORM ? json_incref(res) : slim(res);
      json_object_set_new(bymode, sizes[i].name, sm);
      if (rc == 0) {
        rc = eval_thresh_after(o, x, &sizes[i], st, res, r, &th, sm, e);
        eval_thresh_note(&sizes[i], &th, note, sizeof(note));
      } else if (rc > 0 && th.found) { /* say what it was held to */
        size_t l = strlen(r->error);
        json_object_set_new(sm, "thresholds", thresh_json(&th.t));
        snprintf(r->error + l, sizeof(r->error) - l,
                 " [frozen thresholds from %s: rel_l2<=%.3g row<=%.3g "
                 "block<=%.3g]",
                 th.t.baseline, th.t.rel_l2, th.t.row, th.t.block);
      }
      if (rc == 0 && st == EVAL_STAGE_BENCH) {
        json_t *t = o->wl->kind == WORKLOAD_FREEFORM
                        ? res
                        : json_object_get(res, "timing");
        double med = json_number_value(json_object_get(t, "median_ms"));
        double lo = json_number_value(json_object_get(t, "ci95_lo_ms"));
        double hi = json_number_value(json_object_get(t, "ci95_hi_ms"));
        double rel = med > 0 && hi >= lo ? (hi - lo) / 2 / med : 0;
        double frac = json_number_value(
            json_object_get(json_object_get(res, "bound"), "fraction"));
        logsum += log(med);
        if (rel > worst_rel)
          worst_rel = rel;
        if (frac > 0) { /* docs/contracts.md section 4e */
          fracsum += log(frac);
          nfrac++;
        }
      }
      json_decref(res);
    }
    if (rc)
      break;
  }
  if (plan) /* what a stop left unread */
    for (i = i + 1; i < n; i++)
      json_decref(pres[i]);
  if (st == EVAL_STAGE_VERIFY)
    r->verify_s = eval_now() - t0;
  else
    r->bench_s = eval_now() - t0;
  if (rc)
    return rc;
  if (st == EVAL_STAGE_BENCH && n > 0) {
    r->median_ms = exp(logsum / n);
    r->noise_ms = r->median_ms * worst_rel;
    r->score = 1000.0 / r->median_ms;
    r->has_score = !r->protocol_test;
    if (nfrac)
      snprintf(sol, sizeof(sol), ", %.3g%% of the speed-of-light bound",
               100.0 * exp(fracsum / nfrac));
    eval_pass(o, st,
              "ok: %d size%s, median %.4g ms (geomean)%s, noise %.2g ms%s; "
              "thresholds: %s",
              n, n == 1 ? "" : "s", r->median_ms, sol, r->noise_ms,
              r->protocol_test ? " [protocol test: not performance]" : "",
              note);
  } else {
    eval_pass(o, st, "ok: %d size%s passed%s; thresholds: %s", n,
              n == 1 ? "" : "s",
              o->wl->kind != WORKLOAD_FREEFORM ? ""
              : o->wl->ff_check[0]
                  ? " (checked by the workload's check, run by cuco)"
                  : " (checked by the program, not the harness)",
              note);
  }
  return 0;
}

static int pick_sizes(const struct eval_opts *o, struct eval_ctx *x,
                      struct eval_result *r, struct err *e)
{
  const struct workload *w = o->wl;
  struct err se = {0, ""};
  int i;

  if (o->sizes) {
    if (workload_resolve_sizes(w, o->sizes, x->vsizes, WORKLOAD_MAX_SIZES,
                               &x->nv, &se)) {
      err_set(e, ERR_USAGE, "%s", se.msg);
      return ERR_USAGE;
    }
    memcpy(x->bsizes, x->vsizes, sizeof(x->vsizes));
    x->nb = x->nv;
  } else {
    for (i = 0; i < w->nverify; i++)
      x->vsizes[i] = w->sizes[w->verify[i]];
    for (i = 0; i < w->nbench; i++)
      x->bsizes[i] = w->sizes[w->bench[i]];
    x->nv = w->nverify;
    x->nb = w->nbench;
  }
  (void)r;
  return 0;
}

static int prepare(const struct eval_opts *o, struct eval_ctx *x,
                   const char *code, struct err *e)
{
  const struct workload *w = o->wl;
  const char *name = o->impl_name ? o->impl_name : "candidate.cu";
  int rc;

  if (strchr(name, '/') || !*name || !strcmp(name, ".."))
    return err_set(e, ERR_USAGE, "impl name '%s' is not a file name", name);
  if (o->work_dir) {
    snprintf(x->work_dir, sizeof(x->work_dir), "%s", o->work_dir);
    if ((rc = file_mkdirs(x->work_dir, e)))
      return rc;
  } else {
    const char *t = getenv("TMPDIR");
    snprintf(x->work_dir, sizeof(x->work_dir), "%s/cuco-eval.XXXXXX",
             t && *t ? t : "/tmp");
    if (!mkdtemp(x->work_dir))
      return err_set(e, ERR_IO, "mkdtemp %s: %s", x->work_dir,
                     strerror(errno));
    x->temp = 1;
  }
  {
    /* the source keeps the seed's extension: gcc and nvcc go by it */
    const char *sext = strrchr(w->seed, '.'), *dot = strrchr(name, '.');
    int stem = (int)(dot ? dot - name : (long)strlen(name));
    snprintf(x->src_path, sizeof(x->src_path), "%s/%.*s%s", x->work_dir, stem,
             name, sext ? sext : "");
  }
  snprintf(x->bin_path, sizeof(x->bin_path), "%s/%.*s.bin", x->work_dir,
           (int)(strrchr(name, '.') ? strrchr(name, '.') - name
                                    : (long)strlen(name)),
           name);
  if (o->cache_dir)
    snprintf(x->cache_dir, sizeof(x->cache_dir), "%s", o->cache_dir);
  else
    build_default_cache(x->cache_dir, sizeof(x->cache_dir));
  if ((rc = file_write(x->src_path, code, strlen(code), e)))
    return rc;
  x->ranks = o->ranks > 0 ? o->ranks : w->ranks[0];
  if (!workload_allows_ranks(w, o->vranks > 0 ? o->vranks : x->ranks))
    return err_set(e, ERR_USAGE, "%s does not allow %d ranks", w->name,
                   o->vranks > 0 ? o->vranks : x->ranks);
  /* freeform workloads need it too: symbols.allow lives there */
  if (o->runtime_dir)
    snprintf(x->runtime_dir, sizeof(x->runtime_dir), "%s", o->runtime_dir);
  else if ((rc = build_find_runtime(NULL, w->dir, x->runtime_dir,
                                    sizeof(x->runtime_dir), e)))
    return rc;
  if (w->kind == WORKLOAD_RUNTIME) {
    if (!o->tc)
      return err_set(e, ERR_INTERNAL, "no toolchain given");
    snprintf(x->lib_dirs, sizeof(x->lib_dirs), "%s%s%s", o->tc->nccl_lib,
             o->tc->nccl_lib[0] && o->tc->cuda_lib[0] ? ":" : "",
             o->tc->cuda_lib);
  }
  if (o->machine && !o->compile_only) {
    snprintf(x->machine_path, sizeof(x->machine_path), "%s/MACHINE.json",
             x->work_dir);
    if (json_dump_file(o->machine, x->machine_path, JSON_INDENT(1)))
      return err_set(e, ERR_IO, "cannot write %s", x->machine_path);
  }
  return 0;
}

int eval_candidate(const struct eval_opts *o, const char *code,
                   struct eval_result *r, struct err *e)
{
  struct eval_ctx *x = calloc(1, sizeof(*x));
  struct directive_set d;
  int rc, locked = 0;

  memset(r, 0, sizeof(*r));
  r->hang_rank = -1;
  r->stage = EVAL_STAGE_STATIC;
  r->status = EVAL_STATUS_FAILED;
  r->metrics = json_object();
  if (!x || !r->metrics) {
    free(x);
    return err_set(e, ERR_NOMEM, "out of memory");
  }
  if ((rc = pick_sizes(o, x, r, e)))
    goto out;
  /* the static stage needs no files: a rejected candidate costs nothing */
  rc = stage_static(o, code, &d, r, e);
  if (rc)
    goto out_verdict;
  if (o->static_only) {
    r->status = EVAL_STATUS_OK;
    goto out;
  }
  if ((rc = prepare(o, x, code, e)))
    goto out;
  r->stage = EVAL_STAGE_BUILD;
  rc = stage_build(o, x, &d, r, e);
  if (rc)
    goto out_verdict;
  r->stage = EVAL_STAGE_ALLOWLIST;
  rc = stage_allowlist(o, x, r, e);
  if (rc)
    goto out_verdict;
  if (o->compile_only) {
    r->status = EVAL_STATUS_OK;
    goto out;
  }
  /* CUCO_JUDGE=in-process: the old single process (measurements of the
   * split's cost only; RESULT.json then says "judge": "in-process") */
  if (o->wl->kind == WORKLOAD_RUNTIME && o->vranks <= 0 &&
      o->wl->nbaselines > 0) {
    const char *jm = getenv("CUCO_JUDGE");
    if (jm && !strcmp(jm, "in-process")) {
      /* said every time: a verdict made beside the candidate can be forged */
      log_warn("CUCO_JUDGE=in-process: %s runs in the judge's own process "
               "(for measuring the split only: its verdict could be forged; "
               "RESULT.json says \"judge\": \"in-process\")",
               o->impl_name ? o->impl_name : "the candidate");
    } else {
      r->stage = EVAL_STAGE_BUILD;
      rc = stage_judge(o, x, r, e);
      if (rc)
        goto out_verdict;
    }
  }
  if (o->run_lock) {
    double t0 = eval_now();
    pthread_mutex_lock(o->run_lock);
    locked = 1;
    r->wait_s = eval_now() - t0;
  }
  r->stage = EVAL_STAGE_VERIFY;
  rc = stage_runs(o, x, x->vsizes, x->nv, "verify", r, e);
  if (rc)
    goto out_verdict;
  r->stage = EVAL_STAGE_BENCH;
  if (o->skip_bench) {
    eval_pass(o, EVAL_STAGE_BENCH, "skipped (--no-bench)");
  } else if (o->vranks > 0) {
    eval_pass(o, EVAL_STAGE_BENCH,
              "skipped (virtual ranks are a protocol test, not "
              "performance)");
    r->protocol_test = 1;
  } else {
    rc = stage_runs(o, x, x->bsizes, x->nb, "bench", r, e);
    if (rc)
      goto out_verdict;
  }
  r->stage = EVAL_STAGE_DONE;
  r->status = EVAL_STATUS_OK;
  r->error[0] = '\0';
out_verdict:
  if (rc > 0)
    rc = 0; /* the candidate failed; the evaluation itself worked */
out:
  if (locked)
    pthread_mutex_unlock(o->run_lock);
  if (x->temp)
    file_rmtree(x->work_dir);
  if (x->ff_check_dir[0])
    file_rmtree(x->ff_check_dir);
  free(x);
  return rc;
}

void eval_result_release(struct eval_result *r)
{
  if (!r)
    return;
  free(r->build_log);
  free(r->verify_log);
  json_decref(r->directives);
  json_decref(r->metrics);
  r->build_log = r->verify_log = NULL;
  r->directives = r->metrics = NULL;
}

json_t *eval_result_json(const struct eval_result *r)
{
  json_t *o = json_object();

  if (!o)
    return NULL;
  json_object_set_new(o, "stage", json_string(eval_stage_name(r->stage)));
  json_object_set_new(o, "status", json_string(eval_status_name(r->status)));
  json_object_set_new(o, "error", json_string(r->error));
  json_object_set_new(o, "hang_rank",
                      r->hang_rank >= 0 ? json_integer(r->hang_rank)
                                        : json_null());
  json_object_set_new(o, "directives",
                      r->directives ? json_incref(r->directives)
                                    : json_null());
  json_object_set_new(o, "metrics",
                      r->metrics ? json_incref(r->metrics) : json_object());
  if (r->has_score) {
    json_object_set_new(o, "median_ms", json_real(r->median_ms));
    json_object_set_new(o, "noise_ms", json_real(r->noise_ms));
    json_object_set_new(o, "score", json_real(r->score));
  } else {
    json_object_set_new(o, "median_ms", json_null());
    json_object_set_new(o, "noise_ms", json_null());
    json_object_set_new(o, "score", json_null());
  }
  json_object_set_new(o, "protocol_test", json_boolean(r->protocol_test));
  json_object_set_new(o, "build_s", json_real(r->build_s));
  json_object_set_new(o, "verify_s", json_real(r->verify_s));
  json_object_set_new(o, "bench_s", json_real(r->bench_s));
  json_object_set_new(o, "wait_s", json_real(r->wait_s));
  {
    /* what confined the candidate: "bwrap", or "subreaper" when the user
     * chose [sandbox] mode = none (issue 47: recorded with every result) */
    struct sandbox_state ss;
    sandbox_state(&ss);
    json_object_set_new(o, "sandbox", json_string(sandbox_kind_name(ss.kind)));
  }
  return o;
}
