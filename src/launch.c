/* launch.c - rank processes, deadline, progress files, RESULT.json; see
 * launch.h. */
#include "launch.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "launcher.h"
#include "proc.h"
#include "redact.h"

#define ARGS_MAX 128

struct rank_job {
  const char *argv[ARGS_MAX + 12];
  char rank_s[16], nranks_s[16], local_s[16];
  char **env;
  const char *cwd;
  double timeout_s;
  const volatile int *cancel;
  const char *const *rw; /* writable in the sandbox */
  const char *stdin_data;
  int judge; /* a trusted judge: no sandbox of its own */
  volatile int finished;
  int started_ok;
  struct proc_result res;
  struct err err;
  pthread_t th;
};

static double now_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *rank_main(void *arg)
{
  struct rank_job *j = arg;
  struct proc_opts o = {0};

  o.argv = j->argv;
  o.envp = (const char *const *)j->env;
  o.cwd = j->cwd;
  o.timeout_s = j->timeout_s;
  o.out_max = LAUNCH_LOG_MAX;
  o.err_max = LAUNCH_LOG_MAX;
  o.cancel = j->cancel;
  /* a candidate's ranks (proc.h); a judge sandboxes its worker itself */
  o.sandbox = j->judge ? PROC_SANDBOX_OFF : PROC_SANDBOX_RANKS;
  o.rw_dirs = j->rw;
  o.stdin_data = j->stdin_data;
  j->started_ok = proc_run(&o, &j->res, &j->err) == 0;
  __atomic_store_n(&j->finished, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

int launch_stage_rank(const char *stage)
{
  static const char *const order[] = {"init",  "setup",    "verify", "warmup",
                                      "timed", "teardown", "done",   NULL};
  int i;

  for (i = 0; order[i]; i++)
    if (!strncmp(stage, order[i], strlen(order[i])))
      return i;
  return -1;
}

static int is_num(const json_t *j)
{
  return json_is_number(j);
}

json_t *launch_read_result(const char *path, struct err *e)
{
  struct buf b = BUF_INIT(LAUNCH_RESULT_MAX);
  char chunk[16384];
  json_error_t je;
  json_t *j = NULL, *t;
  const char *st, *mode;
  FILE *f = fopen(path, "rb");
  size_t r;

  if (!f) {
    err_set(e, ERR_IO, "no RESULT.json (%s)", strerror(errno));
    return NULL;
  }
  while ((r = fread(chunk, 1, sizeof(chunk), f)) > 0)
    (void)buf_append(&b, chunk, r);
  fclose(f);
  if (buf_error(&b)) {
    err_set(e, ERR_TOOBIG, "RESULT.json over %u bytes", LAUNCH_RESULT_MAX);
    goto fail;
  }
  (void)redact_buf(&b); /* its strings are stored and shown */
  j = json_loadb(buf_str(&b), b.len, JSON_REJECT_DUPLICATES, &je);
  if (!j) {
    err_set(e, ERR_PARSE, "RESULT.json:%d: %s", je.line, je.text);
    goto fail;
  }
  if (!json_is_object(j) ||
      json_integer_value(json_object_get(j, "schema")) != 1) {
    err_set(e, ERR_PARSE, "RESULT.json: not an object with schema 1");
    goto fail;
  }
  if (json_integer_value(json_object_get(j, "checks_skipped")) != 0) {
    err_set(
        e, ERR_PARSE,
        "RESULT.json: checks were skipped (checks_skipped "
        "%lld)",
        (long long)json_integer_value(json_object_get(j, "checks_skipped")));
    goto fail;
  }
  st = json_string_value(json_object_get(j, "status"));
  mode = json_string_value(json_object_get(j, "mode"));
  if (!st || (strcmp(st, "ok") && strcmp(st, "verify_failed") &&
              strcmp(st, "error"))) {
    err_set(e, ERR_PARSE, "RESULT.json: bad status");
    goto fail;
  }
  if (!mode || (strcmp(mode, "verify") && strcmp(mode, "bench"))) {
    err_set(e, ERR_PARSE, "RESULT.json: bad mode");
    goto fail;
  }
  if (!strcmp(st, "ok")) {
    t = json_object_get(j, "verify");
    if (!json_is_object(t) || !json_is_boolean(json_object_get(t, "passed"))) {
      err_set(e, ERR_PARSE, "RESULT.json: status ok without verify.passed");
      goto fail;
    }
    if (!strcmp(mode, "bench")) {
      t = json_object_get(j, "timing");
      if (!json_is_object(t) || !is_num(json_object_get(t, "median_ms")) ||
          !(json_number_value(json_object_get(t, "median_ms")) > 0)) {
        err_set(e, ERR_PARSE, "RESULT.json: bench without timing.median_ms");
        goto fail;
      }
    }
  }
  buf_release(&b);
  return j;
fail:
  buf_release(&b);
  json_decref(j);
  return NULL;
}

/* The LD_LIBRARY_PATH the ranks get: ours lib_dirs first. */
static void lib_path(const char *first, char *out, size_t n)
{
  const char *cur = getenv("LD_LIBRARY_PATH");

  snprintf(out, n, "LD_LIBRARY_PATH=%s%s%s", first ? first : "",
           first && *first && cur && *cur ? ":" : "", cur ? cur : "");
}

static void describe(const struct launch_opts *o, struct launch_result *r,
                     struct rank_job *jobs)
{
  char how[128], stages[LAUNCH_MAX_RANKS][64];
  int sizes[LAUNCH_MAX_RANKS];
  size_t used = 0;
  int i, worst = INT_MAX;

  for (i = 0; i < o->nranks; i++)
    sizes[i] = launcher_read_progress(o->result_path, i, stages[i],
                                      sizeof(stages[i]));
  if (r->timed_out) {
    for (i = 0; i < o->nranks; i++) {
      int sr;
      if (jobs[i].started_ok && jobs[i].res.outcome == PROC_EXITED)
        continue; /* it finished */
      /* a --plan run: an earlier size is less advanced than any stage of
       * a later one */
      sr = launch_stage_rank(stages[i]) + 100 * (sizes[i] > 0 ? sizes[i] : 0);
      if (sr < worst) {
        worst = sr;
        r->hang_rank = i;
      }
    }
    if (r->hang_rank < 0)
      r->hang_rank = 0;
    r->hang_size = sizes[r->hang_rank];
    snprintf(r->hang_stage, sizeof(r->hang_stage), "%s", stages[r->hang_rank]);
    used = (size_t)snprintf(r->what, sizeof(r->what),
                            "hang: timed out after %.0f s; rank %d did not "
                            "finish (last stage '%s')",
                            r->hang_after_s, r->hang_rank,
                            *r->hang_stage ? r->hang_stage : "none");
    for (i = 0; i < o->nranks && used < sizeof(r->what); i++)
      if (i != r->hang_rank)
        used += (size_t)snprintf(r->what + used, sizeof(r->what) - used,
                                 "; rank %d at '%s'", i,
                                 *stages[i] ? stages[i] : "none");
    return;
  }
  if (r->failed_rank >= 0) {
    struct rank_job *j = &jobs[r->failed_rank];
    const char *tail = buf_str(&j->res.err);
    size_t tl = strlen(tail);
    /* the last non-empty line of its stderr says why */
    while (tl && (tail[tl - 1] == '\n' || tail[tl - 1] == ' '))
      tl--;
    {
      size_t st = tl;
      while (st && tail[st - 1] != '\n')
        st--;
      snprintf(r->what, sizeof(r->what), "rank %d: %s%s%.*s", r->failed_rank,
               j->started_ok ? proc_describe(&j->res, how, sizeof(how))
                             : j->err.msg,
               tl ? ": " : "", (int)(tl - st > 300 ? 300 : tl - st),
               tail + st);
    }
    return;
  }
  snprintf(r->what, sizeof(r->what), "all %d ranks exited 0", o->nranks);
}

/* A --plan run's watch at NOW: AT[i] is the size rank i's progress file
 * named at the last check and SINCE[i] when it first did.  1 when a rank
 * still running has named the same size for over size_timeout_s. */
static int size_stalled(const struct launch_opts *o, struct rank_job *jobs,
                        int started, int *at, double *since, double now)
{
  int i, stalled = 0;

  for (i = 0; i < started; i++) {
    char st[64];
    int sz;
    if (__atomic_load_n(&jobs[i].finished, __ATOMIC_SEQ_CST))
      continue;
    sz = launcher_read_progress(o->result_path, i, st, sizeof(st));
    if (sz != at[i])
      at[i] = sz, since[i] = now;
    else if (now - since[i] > o->size_timeout_s)
      stalled = 1;
  }
  return stalled;
}

int launch_run(const struct launch_opts *o, struct launch_result *r,
               struct err *e)
{
  struct rank_job *jobs;
  struct buf log = BUF_INIT(LAUNCH_LOG_MAX * 4);
  char idfile[2048], ldp[8192], cvd[512], *extra[5], resdir[2048], wdir[2100];
  const char *rw[2] = {resdir, NULL};
  volatile int cancel = 0;
  double t0 = now_s(), fail_at = 0, checked = t0, since[LAUNCH_MAX_RANKS];
  int i, n = o->nranks, started = 0, rc = 0, size_hang = 0,
         at[LAUNCH_MAX_RANKS];

  if (o->launcher && o->launcher->kind != LAUNCHER_LOCAL)
    return launch_run_ext(o, r, e);
  memset(r, 0, sizeof(*r));
  r->exit_code = -1;
  r->failed_rank = r->hang_rank = r->hang_size = -1;
  if (n < 1 || n > LAUNCH_MAX_RANKS || o->nargs > ARGS_MAX)
    return err_set(e, ERR_USAGE, "bad rank count %d", n);
  jobs = calloc((size_t)n, sizeof(*jobs));
  if (!jobs)
    return err_set(e, ERR_NOMEM, "out of memory");
  snprintf(idfile, sizeof(idfile), "%s/nccl-id.%ld.%ld", o->work_dir,
           (long)getpid(), (long)(t0 * 1000) % 1000000);
  unlink(idfile);
  unlink(o->result_path);
  for (i = 0; i < n; i++) {
    char p[2100];
    snprintf(p, sizeof(p), "%s.rank%d.progress", o->result_path, i);
    unlink(p);
  }
  snprintf(resdir, sizeof(resdir), "%s", o->result_path);
  if (strrchr(resdir, '/'))
    *strrchr(resdir, '/') = '\0';
  else
    snprintf(resdir, sizeof(resdir), ".");
  lib_path(o->lib_dirs, ldp, sizeof(ldp));
  extra[0] = "NCCL_NVLS_ENABLE=0";
  extra[1] = ldp;
  extra[2] = NULL;
  if (o->gpus) {
    snprintf(cvd, sizeof(cvd), "CUDA_VISIBLE_DEVICES=%s", o->gpus);
    extra[2] = cvd;
  }
  extra[3] = NULL;
  if (o->judges && o->worker_dir) {
    snprintf(wdir, sizeof(wdir), "CUCO_WORKER_DIR=%s", o->worker_dir);
    extra[extra[2] ? 3 : 2] = wdir;
  }
  extra[4] = NULL;
  for (i = 0; i < n; i++) {
    struct rank_job *j = &jobs[i];
    int k = 0, a;
    j->argv[k++] = o->bin;
    for (a = 0; a < o->nargs; a++)
      j->argv[k++] = o->args[a];
    snprintf(j->rank_s, sizeof(j->rank_s), "%d", i);
    snprintf(j->nranks_s, sizeof(j->nranks_s), "%d", n);
    snprintf(j->local_s, sizeof(j->local_s), "%d", i);
    j->argv[k++] = "--rank";
    j->argv[k++] = j->rank_s;
    j->argv[k++] = "--nranks";
    j->argv[k++] = j->nranks_s;
    j->argv[k++] = "--local-rank";
    j->argv[k++] = j->local_s;
    j->argv[k++] = "--id-file";
    j->argv[k++] = idfile;
    j->argv[k] = NULL;
    j->env = proc_env_new(proc_env_default_allow, (const char *const *)extra);
    j->cwd = o->work_dir;
    j->timeout_s = o->timeout_s > 0 ? o->timeout_s : 120;
    j->cancel = &cancel;
    j->rw = rw;
    j->stdin_data = o->stdin_data;
    j->judge = o->judges;
    if (!j->env) {
      rc = err_set(e, ERR_NOMEM, "out of memory");
      break;
    }
  }
  for (i = 0; rc == 0 && i < n; i++) {
    if (pthread_create(&jobs[i].th, NULL, rank_main, &jobs[i])) {
      rc = err_set(e, ERR_PROC, "cannot start a thread for rank %d", i);
      __atomic_store_n(&cancel, 1, __ATOMIC_SEQ_CST);
      break;
    }
    started++;
  }
  for (i = 0; i < n; i++)
    at[i] = -2, since[i] = t0;
  /* Watch: a failed rank lets the others stop for fail_grace_s, then
   * they are cancelled (a peer blocked in NCCL would wait forever).  A
   * --plan run: a rank that stays at one size for size_timeout_s hangs
   * (checked twice a second), so the whole-run limit (a size's times the
   * sizes) does not make a hang at the first size wait for all of them. */
  for (;;) {
    int running = 0;
    for (i = 0; i < started; i++) {
      struct rank_job *j = &jobs[i];
      if (!__atomic_load_n(&j->finished, __ATOMIC_SEQ_CST)) {
        running++;
        continue;
      }
      if (!fail_at && (!j->started_ok || !proc_ok(&j->res)))
        fail_at = now_s();
    }
    if (!running)
      break;
    if (o->size_timeout_s > 0 && !size_hang && now_s() - checked >= 0.5) {
      checked = now_s();
      size_hang = size_stalled(o, jobs, started, at, since, checked);
      if (size_hang)
        __atomic_store_n(&cancel, 1, __ATOMIC_SEQ_CST);
    }
    if (fail_at &&
        now_s() - fail_at > (o->fail_grace_s > 0 ? o->fail_grace_s : 5.0))
      __atomic_store_n(&cancel, 1, __ATOMIC_SEQ_CST);
    {
      struct timespec ts = {0, 50 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  for (i = 0; i < started; i++)
    pthread_join(jobs[i].th, NULL);
  r->wall_s = now_s() - t0;
  if (rc)
    goto out;
  if (!jobs[0].started_ok) {
    rc = err_set(e, ERR_PROC, "%s", jobs[0].err.msg);
    goto out;
  }
  r->all_ok = 1;
  for (i = 0; i < n; i++) {
    struct rank_job *j = &jobs[i];
    if (j->started_ok &&
        (j->res.outcome == PROC_TIMEDOUT || (size_hang && j->res.canceled)))
      r->timed_out = 1;
    if (!j->started_ok || !proc_ok(&j->res)) {
      r->all_ok = 0;
      /* the first rank that failed on its own, not one we cancelled */
      if (r->failed_rank < 0 && !(j->started_ok && j->res.canceled) &&
          !(j->started_ok && j->res.outcome == PROC_TIMEDOUT))
        r->failed_rank = i;
    }
    (void)buf_printf(&log, "--- rank %d (%s) ---\n", i,
                     j->started_ok ? "ran" : j->err.msg);
    if (j->started_ok) {
      (void)buf_puts(&log, buf_str(&j->res.out));
      (void)buf_puts(&log, buf_str(&j->res.err));
    }
  }
  if (jobs[0].res.outcome == PROC_EXITED)
    r->exit_code = jobs[0].res.exit_code;
  if (!r->all_ok && r->failed_rank < 0 && !r->timed_out)
    r->failed_rank = 0;
  if (r->timed_out)
    r->failed_rank = -1;
  r->hang_after_s = size_hang          ? o->size_timeout_s
                    : o->timeout_s > 0 ? o->timeout_s
                                       : 120.0;
  describe(o, r, jobs);
  {
    struct err re;
    r->result = launch_read_result(o->result_path, &re);
    if (!r->result)
      snprintf(r->result_error, sizeof(r->result_error), "%s", re.msg);
  }
out:
  for (i = 0; i < n; i++) {
    if (jobs[i].started_ok)
      proc_result_release(&jobs[i].res);
    proc_env_free(jobs[i].env);
  }
  unlink(idfile);
  free(jobs);
  r->log = buf_detach(&log, NULL);
  return rc;
}

void launch_result_release(struct launch_result *r)
{
  if (!r)
    return;
  free(r->log);
  json_decref(r->result);
  r->log = NULL;
  r->result = NULL;
}
