/* launcher.c - ranks through mpirun or srun; see launcher.h. */
#define _GNU_SOURCE
#include "launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "proc.h"

#define OUT_MAX   (1u << 20)
#define ERR_MAX   (256u * 1024u)
#define ENV_MAX   16
#define RANKS_MAX 1024
#define GRACE_S   10.0 /* after scancel, before we kill srun ourselves */

static const char *const default_tmpl[] = {
    "",
    "mpirun -np {nranks} {hostfile} {asroot} --bind-to none {env} {bin} "
    "{args}",
    "srun --ntasks={nranks} --exact --kill-on-bad-exit=1 --job-name={name} "
    "{gpus} {time} -v {bin} {args}",
};
static const char *const kind_names[] = {"local", "mpirun", "srun"};

const char *launcher_default_template(enum launcher_kind k)
{
  return (unsigned)k <= LAUNCHER_SRUN ? default_tmpl[k] : "";
}

const char *launcher_name(enum launcher_kind k)
{
  return (unsigned)k <= LAUNCHER_SRUN ? kind_names[k] : "?";
}

int launcher_parse_kind(const char *s)
{
  int i;

  for (i = 0; s && i <= LAUNCHER_SRUN; i++)
    if (!strcmp(s, kind_names[i]))
      return i;
  return -1;
}

int launcher_config(const struct config *cfg, const char *cli,
                    struct launcher *l, struct err *e)
{
  const struct config_entry *en = config_find(cfg, "launch", "launcher");
  const char *name = cli ? cli : en ? en->value : "local", *t, *hf;
  char path[1024], prog[256];
  int k = launcher_parse_kind(name);

  memset(l, 0, sizeof(*l));
  if (k < 0) {
    if (cli)
      return err_set(e, ERR_USAGE,
                     "--launcher: '%s' is not local, mpirun or srun", cli);
    return err_set(e, ERR_CONFIG,
                   "%s: launcher '%s' is not local, mpirun "
                   "or srun",
                   en->origin, name);
  }
  l->kind = (enum launcher_kind)k;
  if (l->kind == LAUNCHER_LOCAL)
    return 0;
  t = config_get(cfg, "launch", name, default_tmpl[k]);
  if (strlen(t) >= sizeof(l->tmpl) || !strstr(t, "{bin}")) {
    en = config_find(cfg, "launch", name);
    return err_set(
        e, ERR_CONFIG, "%s: the %s template %s", en ? en->origin : "[launch]",
        name, strlen(t) >= sizeof(l->tmpl) ? "is too long" : "has no {bin}");
  }
  snprintf(l->tmpl, sizeof(l->tmpl), "%s", t);
  hf = getenv("CUCO_HOSTFILE");
  hf = config_get(cfg, "launch", "hostfile", hf ? hf : "");
  if (*hf && access(hf, R_OK)) {
    en = config_find(cfg, "launch", "hostfile");
    return err_set(e, ERR_CONFIG, "%s: hostfile %s: %s",
                   en ? en->origin : "env CUCO_HOSTFILE", hf, strerror(errno));
  }
  snprintf(l->hostfile, sizeof(l->hostfile), "%s", hf);
  snprintf(prog, sizeof(prog), "%.*s", (int)strcspn(l->tmpl, " \t"), l->tmpl);
  if (!proc_which(prog, NULL, path, sizeof(path)))
    return err_set(e, ERR_NOTFOUND,
                   "launcher %s: '%s' is not in PATH (cuco doctor lists the "
                   "launchers it finds)",
                   name, prog);
  return 0;
}

/* The launcher's whole-token placeholders. */
static int list_token(void *ud, const char *name, size_t len,
                      struct tmpl_argv *a)
{
  const struct launcher_vars *v = ud;
  char tmp[64];
  int i, rc = 0;

#define IS(s) (len == strlen(s) && !strncmp(name, s, len))
  if (IS("bin")) {
    rc = tmpl_push(a, v->argv[0]);
  } else if (IS("args")) {
    for (i = 1; v->argv[i] && rc == 0; i++)
      rc = tmpl_push(a, v->argv[i]);
  } else if (IS("hostfile")) {
    if (v->hostfile && *v->hostfile)
      rc = tmpl_push(a, "--hostfile") || tmpl_push(a, v->hostfile);
  } else if (IS("asroot")) {
    if (v->as_root)
      rc = tmpl_push(a, "--allow-run-as-root");
  } else if (IS("env")) {
    for (i = 0; v->env_names && v->env_names[i] && rc == 0; i++)
      rc = tmpl_push(a, "-x") || tmpl_push(a, v->env_names[i]);
  } else if (IS("gpus")) {
    if (v->gpus_per_rank > 0 && v->allocation_gpus) {
      snprintf(tmp, sizeof(tmp), "--gpus-per-task=%d", v->gpus_per_rank);
      rc = tmpl_push(a, tmp);
    }
  } else if (IS("time")) {
    double t = v->timeout_s > 0 ? v->timeout_s : 120;
    snprintf(tmp, sizeof(tmp), "--time=%d", (int)(t / 60) + 2);
    rc = tmpl_push(a, tmp);
  } else {
    return 0;
  }
  return rc ? -1 : 1;
}

/* The launcher's in-word placeholders. */
static const char *word_value(void *ud, const char *name, size_t len,
                              char *tmp, size_t tmpn)
{
  const struct launcher_vars *v = ud;

  if (IS("nranks")) {
    snprintf(tmp, tmpn, "%d", v->nranks);
    return tmp;
  }
  if (IS("name"))
    return v->name ? v->name : "cuco";
  if (IS("work"))
    return v->work ? v->work : ".";
  return NULL;
#undef IS
}

char **launcher_expand(const char *tmpl, const struct launcher_vars *v,
                       struct err *e)
{
  const struct tmpl_hooks h = {
      "launcher template",
      "inside a word: {nranks} {name} {work}; alone: {bin} {args} "
      "{hostfile} {asroot} {env} {gpus} {time}",
      list_token, word_value, (void *)v};

  return tmpl_expand(tmpl, &h, e);
}

int launcher_find_cancel(const char *text, char *id, size_t idn, char *reason,
                         size_t rn, int *job)
{
  const char *p = text;

  *id = *reason = '\0';
  *job = 0;
  while (text && (p = strstr(p, "*** ")) != NULL) {
    const char *q = p + 4, *end = strstr(q, " ***"), *c, *due;
    int isjob = !strncmp(q, "JOB ", 4);
    size_t il;
    if (!end)
      return 0;
    if ((strncmp(q, "STEP ", 5) && !isjob) || !(c = strstr(q, " CANCELLED")) ||
        c > end || memchr(q, '\n', (size_t)(end - q))) {
      p = q;
      continue;
    }
    q += isjob ? 4 : 5;
    il = strcspn(q, " ");
    snprintf(id, idn, "%.*s", (int)(il < 31 ? il : 31), q);
    due = strstr(c, " DUE TO ");
    if (due && due < end) {
      due += 8;
      snprintf(reason, rn, "%.*s", (int)(end - due), due);
    }
    *job = isjob;
    return 1;
  }
  return 0;
}

static int env_count(const char *name)
{
  const char *v = getenv(name);
  long x;

  if (!v || !*v)
    return 0;
  /* "4", "gpu:4", "h200:4": the number after the last ':' */
  if (strrchr(v, ':'))
    v = strrchr(v, ':') + 1;
  if (config_parse_long(v, &x) || x < 0 || x > 100000)
    return 0;
  return (int)x;
}

int launcher_slurm_slots(int per, int use_gpus, int *gpus)
{
  const char *jg = getenv("SLURM_JOB_GPUS"), *cpn;
  int g, t;

  *gpus = 0;
  if (!getenv("SLURM_JOB_ID"))
    return 0;
  if (per < 1)
    per = 1;
  g = env_count("SLURM_GPUS");
  if (!g)
    g = env_count("SLURM_GPUS_ON_NODE") *
        (env_count("SLURM_NNODES") ? env_count("SLURM_NNODES") : 1);
  if (!g && jg && *jg) { /* "0,1,2,3" on this node */
    g = 1;
    for (; *jg; jg++)
      g += *jg == ',';
  }
  if (g > 0) {
    *gpus = 1;
    if (use_gpus)
      return g / per;
  }
  t = env_count("SLURM_NTASKS");
  cpn = getenv("SLURM_JOB_CPUS_PER_NODE");
  if (!t && cpn) { /* "2" or "4(x2),2" */
    while (*cpn) {
      char *end;
      long c = strtol(cpn, &end, 10), rep = 1;
      if (end == cpn)
        break;
      if (!strncmp(end, "(x", 2))
        rep = strtol(end + 2, &end, 10), end += *end == ')';
      t += (int)(c * rep);
      cpn = end + (*end == ',');
    }
  }
  return t / per;
}

/* ---- running ---- */

struct job {
  const char *const *argv;
  char **env;
  const char *cwd;
  double timeout_s;
  volatile int cancel;
  volatile int finished;
  int started_ok;
  struct proc_result res;
  struct err err;
};

static void *job_main(void *arg)
{
  struct job *j = arg;
  struct proc_opts o = {0};

  o.argv = j->argv;
  o.envp = (const char *const *)j->env;
  o.cwd = j->cwd;
  o.timeout_s = j->timeout_s;
  o.out_max = OUT_MAX;
  o.err_max = ERR_MAX;
  o.cancel = &j->cancel;
  j->started_ok = proc_run(&o, &j->res, &j->err) == 0;
  __atomic_store_n(&j->finished, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

static double mono(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double wall(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

  nanosleep(&ts, NULL);
}

static int stage_order(const char *stage)
{
  static const char *const order[] = {"init",  "setup",    "verify", "warmup",
                                      "timed", "teardown", "done",   NULL};
  int i;

  for (i = 0; order[i]; i++)
    if (!strncmp(stage, order[i], strlen(order[i])))
      return i;
  return -1;
}

int launcher_read_progress(const char *prefix, int rank, char *out, size_t n)
{
  char p[2048], line[128] = "";
  FILE *f;
  int size = -1;

  *out = '\0';
  snprintf(p, sizeof(p), "%s.rank%d.progress", prefix, rank);
  f = fopen(p, "r");
  if (!f)
    return -1;
  if (fgets(line, sizeof(line), f))
    line[strcspn(line, "\r\n")] = '\0';
  snprintf(out, n, "%s", line);
  if (fgets(line, sizeof(line), f) && sscanf(line, "size %d", &size) != 1)
    size = -1;
  fclose(f);
  return size < 0 || size > 1000000 ? -1 : size;
}

/* On our deadline: the least advanced rank that is not done, and what the
 * others were at. */
static void name_hang(const struct launcher_run_opts *o,
                      struct launcher_result *r)
{
  char st[64], others[300] = "";
  size_t used = 0;
  int i, worst = INT_MAX;

  r->hang_rank = r->hang_size = -1;
  if (!o->progress_prefix) {
    snprintf(r->what, sizeof(r->what),
             "hang: timed out after %.0f s (%s run of %d ranks%s%s)",
             o->timeout_s > 0 ? o->timeout_s : 120.0,
             launcher_name(o->l->kind), o->nranks,
             *r->step_id ? ", slurm step " : "", r->step_id);
    return;
  }
  for (i = 0; i < o->nranks && i < RANKS_MAX; i++) {
    int sr,
        size = launcher_read_progress(o->progress_prefix, i, st, sizeof(st));
    sr = stage_order(st);
    if (sr == 6)
      continue;
    /* a --plan run: an earlier size is less advanced than any stage of a
     * later one */
    sr += 100 * (size > 0 ? size : 0);
    if (sr < worst) {
      worst = sr;
      r->hang_rank = i;
      r->hang_size = size;
      snprintf(r->hang_stage, sizeof(r->hang_stage), "%s", st);
    }
  }
  for (i = 0; i < o->nranks && i < RANKS_MAX && used < sizeof(others); i++) {
    if (i == r->hang_rank)
      continue;
    (void)launcher_read_progress(o->progress_prefix, i, st, sizeof(st));
    used += (size_t)snprintf(others + used, sizeof(others) - used,
                             "; rank %d at '%s'", i, *st ? st : "none");
  }
  if (r->hang_rank < 0)
    r->hang_rank = 0;
  snprintf(r->what, sizeof(r->what),
           "hang: timed out after %.0f s; rank %d did not finish (last stage "
           "'%s'%s)%s%s%s",
           o->timeout_s > 0 ? o->timeout_s : 120.0, r->hang_rank,
           *r->hang_stage ? r->hang_stage : "none",
           *r->hang_stage ? "" : ": it never started", others,
           *r->step_id ? "; cancelled slurm step " : "", r->step_id);
}

/* srun: the step id of our step (by name) from squeue, into r->step_id. */
static void find_step(const char *name, struct launcher_result *r)
{
  const char *job = getenv("SLURM_JOB_ID");
  const char *argv[] = {"squeue", "--steps", "--noheader", "--format=%i %j",
                        NULL,     NULL,      NULL};
  char jarg[64], *out, *line;
  int ok;

  if (job && *job) {
    snprintf(jarg, sizeof(jarg), "--jobs=%s", job);
    argv[4] = jarg;
  } else {
    argv[4] = "--me";
  }
  out = proc_capture(argv, 64 * 1024, &ok);
  for (line = out; ok && line && *line;) {
    size_t l = strcspn(line, "\n"), il = strcspn(line, " ");
    if (il < l && l - il - 1 == strlen(name) &&
        !strncmp(line + il + 1, name, l - il - 1) && il < sizeof(r->step_id)) {
      snprintf(r->step_id, sizeof(r->step_id), "%.*s", (int)il, line);
      break;
    }
    line += l + (line[l] == '\n');
  }
  free(out);
}

static void scancel(const char *id)
{
  const char *argv[] = {"scancel", id, NULL};
  int ok;

  free(proc_capture(argv, 4096, &ok));
}

/* "StepId=3.2" in srun -v's lines. */
static void step_from_log(const char *text, struct launcher_result *r)
{
  const char *p = text ? strstr(text, "StepId=") : NULL;
  size_t l;

  if (!p || *r->step_id)
    return;
  p += 7;
  l = strspn(p, "0123456789.");
  if (l && l < sizeof(r->step_id))
    snprintf(r->step_id, sizeof(r->step_id), "%.*s", (int)l, p);
}

static void step_log(const struct launcher_run_opts *o,
                     const struct launcher_result *r, double t0, double t1)
{
  char line[1024];
  int fd, n;

  if (!*o->l->step_log)
    return;
  n = snprintf(line, sizeof(line),
               "step=%s launcher=%s label=%s start=%.3f end=%.3f "
               "outcome=%s\n",
               *r->step_id ? r->step_id : "-", launcher_name(o->l->kind),
               o->label ? o->label : "-", t0, t1,
               r->all_ok      ? "ok"
               : r->timed_out ? "timeout"
               : r->cancelled ? "cancelled"
                              : "failed");
  fd = open(o->l->step_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  if (n > 0)
    (void)!write(fd, line,
                 (size_t)n < sizeof(line) ? (size_t)n : sizeof(line));
  close(fd);
}

static int write_secrets(const struct launcher_run_opts *o, struct err *e)
{
  char p[2048];
  int i;

  for (i = 0; o->secret && i < o->nranks; i++) {
    int fd;
    snprintf(p, sizeof(p), "%s/.cuco-secret.rank%d", o->work_dir, i);
    unlink(p);
    fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 ||
        write(fd, o->secret, o->secret_len) != (ssize_t)o->secret_len) {
      if (fd >= 0)
        close(fd);
      return err_set(e, ERR_IO, "secret file %s: %s", p, strerror(errno));
    }
    if (close(fd))
      return err_set(e, ERR_IO, "secret file %s: %s", p, strerror(errno));
  }
  return 0;
}

static void remove_files(const struct launcher_run_opts *o, int secrets)
{
  char p[2100];
  int i;

  for (i = 0; i < o->nranks && i < RANKS_MAX; i++) {
    if (secrets) {
      snprintf(p, sizeof(p), "%s/.cuco-secret.rank%d", o->work_dir, i);
      unlink(p);
    } else if (o->progress_prefix) {
      snprintf(p, sizeof(p), "%s.rank%d.progress", o->progress_prefix, i);
      unlink(p);
    }
  }
}

/* The last non-empty line of a log that is not srun's -v chatter. */
static void last_line(const char *t, char *out, size_t n)
{
  const char *end = t + strlen(t), *b;

  *out = '\0';
  while (end > t) {
    while (end > t && (end[-1] == '\n' || end[-1] == ' '))
      end--;
    b = end;
    while (b > t && b[-1] != '\n')
      b--;
    if (end > b &&
        (strncmp(b, "srun: ", 6) || !strncmp(b, "srun: error", 11) ||
         !strncmp(b, "srun: fatal", 11))) {
      snprintf(out, n, "%.*s", (int)(end - b > 300 ? 300 : end - b), b);
      return;
    }
    end = b;
  }
}

/* srun's words for a step that could not start because the job (the
 * allocation cuco runs in) has ended. */
static int allocation_gone(const char *t)
{
  static const char *const pat[] = {"has expired",
                                    "Job/step already completing or completed",
                                    "Invalid job id specified",
                                    "Job has been cancelled",
                                    "Unable to confirm allocation",
                                    NULL};
  int i;

  for (i = 0; pat[i]; i++)
    if (strstr(t, pat[i]))
      return 1;
  return 0;
}

/* srun: whether the job cuco runs in is still running.  A step that
 * fails as its allocation is cancelled does not always say so (srun may
 * be killed before it prints), so a failed step asks the controller.
 * 1 running or unknown (no job id, squeue unreachable), 0 ended. */
static int allocation_alive(void)
{
  const char *job = getenv("SLURM_JOB_ID");
  const char *argv[] = {"squeue",      "--noheader", "--states=all",
                        "--format=%T", NULL,         NULL};
  char jarg[64], *out;
  int ok, alive = 1;

  if (!job || !*job)
    return 1;
  snprintf(jarg, sizeof(jarg), "--jobs=%s", job);
  argv[4] = jarg;
  out = proc_capture(argv, 4096, &ok);
  /* squeue's own failure (controller unreachable) proves nothing */
  if (out && ok && strncmp(out, "RUNNING", 7) &&
      strncmp(out, "CONFIGURING", 11))
    alive = 0;
  free(out);
  return alive;
}

static void describe_end(const struct launcher_run_opts *o, struct job *j,
                         struct launcher_result *r)
{
  char id[32], reason[96], how[128], tail[320];
  int isjob;
  const char *errt = buf_str(&j->res.err);

  step_from_log(errt, r);
  if (launcher_find_cancel(errt, id, sizeof(id), reason, sizeof(reason),
                           &isjob) ||
      launcher_find_cancel(buf_str(&j->res.out), id, sizeof(id), reason,
                           sizeof(reason), &isjob)) {
    if (r->timed_out)
      return; /* we cancelled it at our deadline: a hang, named already */
    r->cancelled = 1;
    /* scancel of the job cancels its steps first, and srun may print
     * only the step's line before it is killed: a step cancel asks the
     * controller whether the allocation itself is gone (then it is not
     * the code's failure, and --resume evaluates it again) */
    r->job_ended =
        isjob || (o->l->kind == LAUNCHER_SRUN && !allocation_alive());
    if (!isjob || !*r->step_id)
      snprintf(r->step_id, sizeof(r->step_id), "%s", id);
    snprintf(r->what, sizeof(r->what), "slurm %s %s cancelled: %s%s",
             isjob ? "job" : "step", id,
             *reason ? reason : "by scancel or an administrator",
             r->job_ended && !isjob ? " (its allocation has ended)" : "");
    return;
  }
  if (r->timed_out)
    return;
  if (!r->all_ok && o->l->kind == LAUNCHER_SRUN &&
      (allocation_gone(errt) || !allocation_alive())) {
    const char *job = getenv("SLURM_JOB_ID");
    r->job_ended = 1;
    last_line(errt, tail, sizeof(tail));
    snprintf(r->what, sizeof(r->what),
             "slurm job %s ended: the allocation is gone (%s)",
             job ? job : "?", tail);
    return;
  }
  if (r->all_ok) {
    snprintf(r->what, sizeof(r->what), "all %d ranks exited 0 (%s%s%s)",
             o->nranks, launcher_name(o->l->kind),
             *r->step_id ? ", slurm step " : "", r->step_id);
    return;
  }
  last_line(errt, tail, sizeof(tail));
  snprintf(r->what, sizeof(r->what), "%s%s%s: %s%s%s",
           launcher_name(o->l->kind), *r->step_id ? " step " : "", r->step_id,
           proc_describe(&j->res, how, sizeof(how)), *tail ? ": " : "", tail);
}

static char **make_env(const struct launcher_run_opts *o, const char **names,
                       char (*nm)[64], char *secret_kv, size_t skn)
{
  const char *extra[ENV_MAX + 2];
  int i, k = 0;

  for (i = 0; o->env_extra && o->env_extra[i] && k < ENV_MAX; i++)
    extra[k++] = o->env_extra[i];
  if (o->secret) {
    snprintf(secret_kv, skn, "CUCO_SECRET_PREFIX=%s/.cuco-secret",
             o->work_dir);
    extra[k++] = secret_kv;
  }
  extra[k] = NULL;
  for (i = 0; i < k; i++) {
    snprintf(nm[i], sizeof(nm[i]), "%.*s", (int)strcspn(extra[i], "="),
             extra[i]);
    names[i] = nm[i];
  }
  names[k] = NULL;
  return proc_env_new(proc_env_default_allow, extra);
}

int launcher_run(const struct launcher_run_opts *o, struct launcher_result *r,
                 struct err *e)
{
  static int counter;
  struct launcher_vars v = {0};
  struct job j;
  pthread_t th;
  const char *names[ENV_MAX + 2];
  char nm[ENV_MAX + 2][64], name[64], secret_kv[1200];
  char **argv = NULL;
  double timeout = o->timeout_s > 0 ? o->timeout_s : 120, t0, w0, deadline,
         cancel_at = 0;
  int rc = 0;

  memset(r, 0, sizeof(*r));
  memset(&j, 0, sizeof(j));
  r->exit_code = -1;
  r->hang_rank = r->hang_size = -1;
  buf_init(&r->out, OUT_MAX);
  buf_init(&r->err, ERR_MAX);
  if (o->nranks < 1 || o->nranks > RANKS_MAX || !o->argv || !o->argv[0])
    return err_set(e, ERR_USAGE, "bad launcher run (%d ranks)", o->nranks);
  snprintf(name, sizeof(name), "cuco-%ld-%d", (long)getpid(),
           __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST));
  j.env = make_env(o, names, nm, secret_kv, sizeof(secret_kv));
  if (!j.env)
    return err_set(e, ERR_NOMEM, "out of memory");
  v.argv = o->argv;
  v.nranks = o->nranks;
  v.name = name;
  v.work = o->work_dir;
  v.hostfile = o->l->hostfile;
  v.as_root = geteuid() == 0;
  v.env_names = names;
  v.gpus_per_rank = o->l->gpus_per_rank;
  (void)launcher_slurm_slots(1, 1, &v.allocation_gpus);
  v.timeout_s = timeout;
  argv = launcher_expand(o->l->tmpl, &v, e);
  if (!argv) {
    rc = e->code;
    goto out;
  }
  remove_files(o, 0);
  if ((rc = write_secrets(o, e)))
    goto out;
  j.argv = (const char *const *)argv;
  j.cwd = o->work_dir;
  j.timeout_s = timeout + 3 * GRACE_S; /* ours comes first */
  t0 = mono();
  w0 = wall();
  deadline = t0 + timeout;
  if (pthread_create(&th, NULL, job_main, &j)) {
    rc = err_set(e, ERR_PROC, "cannot start a thread for %s", argv[0]);
    goto out;
  }
  while (!__atomic_load_n(&j.finished, __ATOMIC_SEQ_CST)) {
    double now = mono();
    if (!r->timed_out && now > deadline) {
      r->timed_out = 1;
      if (o->l->kind == LAUNCHER_SRUN) {
        find_step(name, r);
        if (*r->step_id)
          scancel(r->step_id);
        cancel_at = now + GRACE_S;
      } else {
        cancel_at = now;
      }
      name_hang(o, r);
    }
    if (cancel_at && now >= cancel_at)
      __atomic_store_n(&j.cancel, 1, __ATOMIC_SEQ_CST);
    nap(50);
  }
  pthread_join(th, NULL);
  r->wall_s = mono() - t0;
  if (!j.started_ok) {
    rc = err_set(e, ERR_PROC, "%s: %s", launcher_name(o->l->kind), j.err.msg);
    goto out;
  }
  r->started = 1;
  if (j.res.outcome == PROC_TIMEDOUT && !r->timed_out) {
    r->timed_out = 1;
    name_hang(o, r);
  }
  r->all_ok = !r->timed_out && proc_ok(&j.res);
  if (j.res.outcome == PROC_EXITED)
    r->exit_code = j.res.exit_code;
  describe_end(o, &j, r);
  /* cuco is stopping, or the allocation itself ended: not the code's fault */
  if ((o->l->stop && *o->l->stop && !r->all_ok) || r->job_ended)
    r->interrupted = 1;
  (void)buf_append(&r->out, j.res.out.data ? j.res.out.data : "",
                   j.res.out.len);
  (void)buf_append(&r->err, j.res.err.data ? j.res.err.data : "",
                   j.res.err.len);
  step_log(o, r, w0, wall());
  proc_result_release(&j.res);
out:
  remove_files(o, 1);
  tmpl_argv_free(argv);
  proc_env_free(j.env);
  return rc;
}

void launcher_result_release(struct launcher_result *r)
{
  if (!r)
    return;
  buf_release(&r->out);
  buf_release(&r->err);
}
