/* proc.c - child processes with deadlines and capped output; see proc.h.
 *
 * The child is started by a supervisor (see below) into a new process
 * group.  We poll its pipes, the supervisor's report pipe and a pidfd of
 * the supervisor; the pidfd tells us when it exits without a SIGCHLD
 * handler, which would be process-global state.  posix_spawn cannot make
 * a subreaper, hence fork: the supervisor only makes system calls.
 */
#define _GNU_SOURCE
#include "proc.h"

#include "redact.h"
#include "sandbox.h"
#include "utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

const char *const proc_env_default_allow[] = {
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TERM",
    "TMPDIR",
    "USER",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
    "CPATH", /* nvcc and gcc search these for headers (NCCL may be there) */
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES",
    "NCCL_*",
    "CUCO_RT_*",
    "OMPI_*",
    "PMI_*",
    "PMIX_*",
    "SLURM_*",
    "NVSHMEM_DISABLE_NVLS",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    NULL};

/* proc_stop_on(): a process-wide stop request (set by a signal handler)
 * that cancels every child as its own opts.cancel would. */
static const volatile int *stop_all;

void proc_stop_on(const volatile int *flag)
{
  stop_all = flag;
}

static double now_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int name_allowed(const char *kv, const char *const *allow)
{
  size_t klen = strcspn(kv, "=");
  size_t i;

  for (i = 0; allow && allow[i]; i++) {
    size_t alen = strlen(allow[i]);
    if (alen && allow[i][alen - 1] == '*') {
      if (klen >= alen - 1 && !strncmp(kv, allow[i], alen - 1))
        return 1;
    } else if (alen == klen && !strncmp(kv, allow[i], klen)) {
      return 1;
    }
  }
  return 0;
}

char **proc_env_new(const char *const *allow, const char *const *extra)
{
  size_t n = 0, i, k = 0;
  char **env;

  for (i = 0; environ && environ[i]; i++)
    n++;
  for (i = 0; extra && extra[i]; i++)
    n++;
  env = calloc(n + 1, sizeof(*env));
  if (!env)
    return NULL;
  for (i = 0; environ && environ[i]; i++) {
    size_t klen = strcspn(environ[i], "=");
    size_t j;
    int overridden = 0;
    if (!name_allowed(environ[i], allow))
      continue;
    for (j = 0; extra && extra[j]; j++)
      if (!strncmp(extra[j], environ[i], klen + 1))
        overridden = 1;
    if (overridden)
      continue;
    if (!(env[k++] = strdup(environ[i])))
      goto fail;
  }
  for (i = 0; extra && extra[i]; i++)
    if (!(env[k++] = strdup(extra[i])))
      goto fail;
  return env;
fail:
  proc_env_free(env);
  return NULL;
}

void proc_env_free(char **envp)
{
  size_t i;

  if (!envp)
    return;
  for (i = 0; envp[i]; i++)
    free(envp[i]);
  free(envp);
}

const char *proc_which(const char *cmd, const char *path_var, char *out,
                       size_t n)
{
  const char *path = path_var ? path_var : getenv("PATH");

  if (strchr(cmd, '/')) {
    snprintf(out, n, "%s", cmd);
    return out;
  }
  if (!path)
    path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    size_t len = strcspn(path, ":");
    if (len && len + strlen(cmd) + 2 <= n) {
      snprintf(out, n, "%.*s/%s", (int)len, path, cmd);
      if (access(out, X_OK) == 0)
        return out;
    }
    path += len;
    if (*path == ':')
      path++;
  }
  if (n)
    out[0] = '\0';
  return NULL;
}

/* posix_spawnp looks argv[0] up in *our* PATH; we want the child's. */
static const char *resolve(const char *cmd, const char *const *envp, char *out,
                           size_t n)
{
  const char *path = "/usr/local/bin:/usr/bin:/bin";
  size_t i;

  for (i = 0; envp && envp[i]; i++)
    if (!strncmp(envp[i], "PATH=", 5))
      path = envp[i] + 5;
  return proc_which(cmd, path, out, n);
}

static void drain(int *fd, struct buf *b, int echo_fd)
{
  char chunk[8192];
  ssize_t r = read(*fd, chunk, sizeof(chunk));

  if (r > 0) {
    /* Past the cap we keep reading (so the child never blocks on a full
     * pipe) but drop the bytes; buf_append flags the cut. */
    (void)buf_append(b, chunk, (size_t)r);
    if (echo_fd >= 0) {
      struct buf t = BUF_INIT(sizeof(chunk));
      ssize_t w;
      (void)buf_append(&t, chunk, (size_t)r);
      (void)redact_buf(&t); /* best effort: a secret may span chunks */
      (void)utf8_sanitize_text(t.data, t.len);
      w = write(echo_fd, buf_str(&t), t.len);
      (void)w;
      buf_release(&t);
    }
  } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
    close(*fd);
    *fd = -1;
  }
}

static int status_to_result(int status, struct proc_result *res)
{
  if (WIFEXITED(status)) {
    res->outcome = PROC_EXITED;
    res->exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res->outcome = PROC_SIGNALED;
    res->term_signal = WTERMSIG(status);
  }
  return 0;
}

/* ---- the supervisor ----------------------------------------------------
 *
 * A fork of cuco that never execs: between fork and _exit it only makes
 * system calls (async-signal-safe), since the parent may have threads.
 * It is the child subreaper of the child's tree and reports over a pipe in
 * fixed records (each under PIPE_BUF, so atomic).  Signals from proc_run:
 * SIGTERM = SIGTERM the tree, SIGUSR1 = SIGKILL the tree, reap it, report
 * and exit.  SIGUSR1 is also its parent-death signal. */

enum { REP_STARTED = 1, REP_EXEC_FAILED, REP_EXITED, REP_DONE };

struct rep {
  int kind, a, b, c, d;
};

struct sup {
  const char *exe;
  char *const *argv;
  char *const *envp;
  const char *cwd;
  const char *stdin_path;
  int in_r; /* >= 0: the read end of the stdin_data pipe (else stdin_path) */
  int out_w, err_w, rep_w;
  pid_t parent;
  int classify; /* count escapes (not under bwrap: its --new-session) */
  int nice;     /* > 0: setpriority before exec (proc_opts.nice) */
};

#define SUP_SEEN_MAX 512

static void sup_report(int fd, int kind, int a, int b, int c, int d)
{
  struct rep r = {kind, a, b, c, d};
  ssize_t w = write(fd, &r, sizeof(r));

  (void)w;
}

static size_t put_uint(char *p, unsigned long v)
{
  char t[24];
  size_t n = 0, i;

  do {
    t[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (i = 0; i < n; i++)
    p[i] = t[n - 1 - i];
  return n;
}

/* Parse a decimal at *p; advances *p. */
static long get_uint(const char **p, const char *end)
{
  long v = -1;

  while (*p < end && (**p < '0' || **p > '9'))
    (*p)++;
  while (*p < end && **p >= '0' && **p <= '9') {
    v = (v < 0 ? 0 : v * 10) + (**p - '0');
    (*p)++;
  }
  return v;
}

static ssize_t read_small(const char *path, char *buf, size_t n)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  size_t len = 0;
  ssize_t r;

  if (fd < 0)
    return -1;
  while (len + 1 < n && (r = read(fd, buf + len, n - 1 - len)) > 0)
    len += (size_t)r;
  close(fd);
  buf[len] = '\0';
  return (ssize_t)len;
}

struct linux_dirent64_ {
  unsigned long long d_ino;
  long long d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

/* Without /proc/PID/task/TID/children: every /proc/N/stat whose ppid is
 * us. */
static int sup_scan(pid_t self, pid_t *out, int max)
{
  char dents[8192];
  int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
  long r;

  if (fd < 0)
    return 0;
  while (n < max &&
         (r = syscall(SYS_getdents64, fd, dents, sizeof(dents))) > 0) {
    long off = 0;
    while (off < r && n < max) {
      struct linux_dirent64_ *de = (struct linux_dirent64_ *)(dents + off);
      char path[64] = "/proc/", st[512];
      const char *q, *end;
      size_t l = 6, k;
      off += de->d_reclen;
      if (de->d_name[0] < '0' || de->d_name[0] > '9')
        continue;
      for (k = 0; de->d_name[k] && l < 40; k++)
        path[l++] = de->d_name[k];
      memcpy(path + l, "/stat", 6);
      if (read_small(path, st, sizeof(st)) <= 0)
        continue;
      q = strrchr(st, ')');
      if (!q)
        continue;
      end = st + strlen(st);
      q += 2; /* ") S " : skip the state letter */
      while (q < end && *q != ' ')
        q++;
      if (get_uint(&q, end) == (long)self) {
        const char *nq = de->d_name;
        out[n++] = (pid_t)get_uint(&nq, nq + strlen(nq));
      }
    }
  }
  close(fd);
  return n;
}

/* Our direct children (orphans of the tree are reparented to us). */
static int sup_children(pid_t self, pid_t *out, int max)
{
  char path[96] = "/proc/", buf[8192];
  const char *p, *end;
  size_t l = 6;
  ssize_t len;
  int n = 0;
  long v;

  l += put_uint(path + l, (unsigned long)self);
  memcpy(path + l, "/task/", 6);
  l += 6;
  l += put_uint(path + l, (unsigned long)self);
  memcpy(path + l, "/children", 10);
  len = read_small(path, buf, sizeof(buf));
  if (len < 0)
    return sup_scan(self, out, max);
  p = buf;
  end = buf + len;
  while (n < max && (v = get_uint(&p, end)) > 0)
    out[n++] = (pid_t)v;
  return n;
}

/* Whether any child (running or zombie) is left. */
static int sup_has_children(void)
{
  siginfo_t si;

  return !(waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 &&
           errno == ECHILD);
}

/* Reap what has exited; the leader's status is reported. */
static void sup_reap(const struct sup *s, pid_t leader, int *leader_alive)
{
  pid_t p;
  int st;

  while ((p = waitpid(-1, &st, WNOHANG)) > 0)
    if (p == leader && *leader_alive) {
      *leader_alive = 0;
      sup_report(s->rep_w, REP_EXITED, st, 0, 0, 0);
    }
}

static void sup_term(pid_t leader, int leader_alive, int sig)
{
  pid_t kids[256];
  int n, i;

  if (leader_alive)
    kill(-leader, sig);
  n = sup_children(getpid(), kids, 256);
  for (i = 0; i < n; i++)
    kill(kids[i], sig);
}

/* Whether PID has exited and waits to be reaped (state Z in its stat). */
static int sup_is_zombie(pid_t pid)
{
  char path[64] = "/proc/", buf[512];
  const char *p;
  size_t l = 6;
  ssize_t len;

  l += put_uint(path + l, (unsigned long)pid);
  memcpy(path + l, "/stat", 6);
  len = read_small(path, buf, sizeof(buf) - 1);
  if (len <= 0)
    return 1; /* gone already */
  buf[len] = '\0';
  p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
  return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* SIGKILL the whole tree until we have no child left; report. */
static void __attribute__((noreturn))
sup_finish(const struct sup *s, pid_t leader, int leader_alive)
{
  static pid_t seen[SUP_SEEN_MAX];
  pid_t kids[256], self = getpid(), sid = getsid(0);
  int nseen = 0, strays = 0, escaped = 0, setsid_n = 0, iter, i, n;

  if (leader_alive)
    kill(-leader, SIGKILL);
  /* Not left running: what has exited already (reaped first, zombies
   * skipped below), and, when the leader ended by itself, a child that
   * ends with it (a launcher's helper exiting just after srun does):
   * 200 ms for those to go before anything left counts as a stray. */
  sup_reap(s, leader, &leader_alive);
  for (iter = 0; !leader_alive && iter < 20 && sup_has_children(); iter++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
    sup_reap(s, leader, &leader_alive);
  }
  for (iter = 0; iter < 100000; iter++) {
    n = sup_children(self, kids, 256);
    for (i = 0; i < n; i++) {
      int j, known = 0;
      /* Under bwrap the kernel kills the PID namespace with its init: what
       * is left is bwrap's own teardown, no stray of the candidate. */
      if (kids[i] != leader && s->classify && !sup_is_zombie(kids[i])) {
        for (j = 0; j < nseen; j++)
          known |= seen[j] == kids[i];
        if (!known) {
          pid_t pg = getpgid(kids[i]), ks = getsid(kids[i]);
          if (nseen < SUP_SEEN_MAX)
            seen[nseen++] = kids[i];
          strays++;
          if (pg >= 0 && pg != leader) {
            escaped++;
            setsid_n += ks >= 0 && ks != sid;
          }
        }
      }
      kill(kids[i], SIGKILL);
    }
    sup_reap(s, leader, &leader_alive);
    if (!sup_has_children())
      break;
    if (n == 0) {
      struct timespec ts = {0, 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  sup_report(s->rep_w, REP_DONE, strays, escaped, setsid_n, 0);
  _exit(0);
}

/* Close every descriptor but 0-2 and keep[0..n): the fork holds copies of
 * all of cuco's, pipes of other threads' children included. */
static void sup_close_others(const int *keep, int n)
{
  int lo = 3, i, j, k[4] = {0, 0, 0, 0};

  for (i = 0; i < n; i++)
    k[i] = keep[i];
  for (i = 0; i < n; i++) /* sort the few */
    for (j = i + 1; j < n; j++)
      if (k[j] < k[i]) {
        int t = k[i];
        k[i] = k[j];
        k[j] = t;
      }
  for (i = 0; i <= n; i++) {
    int hi = i < n ? k[i] - 1 : INT_MAX;
    if (hi >= lo && syscall(SYS_close_range, lo, hi, 0) < 0) {
      int fd;
      for (fd = lo; fd <= hi && fd < 65536; fd++)
        close(fd);
    }
    if (i < n)
      lo = k[i] + 1;
  }
}

static void __attribute__((noreturn))
sup_leader(const struct sup *s, int exec_w)
{
  struct sigaction dfl;
  sigset_t none;
  int fd, sig, err;

  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (sig = 1; sig < NSIG; sig++)
    (void)sigaction(sig, &dfl, NULL);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  fd = s->in_r >= 0
           ? s->in_r
           : open(s->stdin_path ? s->stdin_path : "/dev/null", O_RDONLY);
  if (fd < 0)
    goto fail;
  if (fd != 0) {
    dup2(fd, 0);
    close(fd);
  }
  if (dup2(s->out_w, 1) < 0 || dup2(s->err_w, 2) < 0)
    goto fail;
  if (s->cwd && chdir(s->cwd))
    goto fail;
  /* best effort: a lower priority is always allowed */
  if (s->nice > 0)
    (void)setpriority(PRIO_PROCESS, 0, s->nice);
  /* The rest close at exec (exec_w is O_CLOEXEC already). */
  (void)syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
  execve(s->exe, s->argv, s->envp);
fail:
  err = errno;
  {
    ssize_t w = write(exec_w, &err, sizeof(err));
    (void)w;
  }
  _exit(127);
}

static void __attribute__((noreturn)) sup_main(const struct sup *s)
{
  int keep[4] = {s->out_w, s->err_w, s->rep_w, s->in_r};
  int execp[2], err = 0, leader_alive = 1;
  struct sigaction dfl;
  sigset_t all, waitset;
  pid_t leader;
  ssize_t r;

  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  (void)sigaction(SIGCHLD, &dfl, NULL);
  sup_close_others(keep, s->in_r >= 0 ? 4 : 3);
  prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0);
  if (getppid() != s->parent)
    _exit(0);
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  if (pipe2(execp, O_CLOEXEC)) {
    sup_report(s->rep_w, REP_EXEC_FAILED, errno, 0, 0, 0);
    _exit(0);
  }
  leader = fork();
  if (leader == 0) {
    close(execp[0]);
    sup_leader(s, execp[1]);
  }
  close(execp[1]);
  close(s->out_w);
  close(s->err_w);
  if (s->in_r >= 0)
    close(s->in_r);
  if (leader < 0) {
    sup_report(s->rep_w, REP_EXEC_FAILED, errno, 0, 0, 0);
    _exit(0);
  }
  setpgid(leader, leader); /* both sides, against the race */
  do
    r = read(execp[0], &err, sizeof(err));
  while (r < 0 && errno == EINTR);
  close(execp[0]);
  if (r == (ssize_t)sizeof(err)) {
    waitpid(leader, NULL, 0);
    sup_report(s->rep_w, REP_EXEC_FAILED, err, 0, 0, 0);
    _exit(0);
  }
  sup_report(s->rep_w, REP_STARTED, (int)leader, 0, 0, 0);
  sigemptyset(&waitset);
  sigaddset(&waitset, SIGCHLD);
  sigaddset(&waitset, SIGTERM);
  sigaddset(&waitset, SIGUSR1);
  for (;;) {
    struct timespec ts = {0, 200 * 1000 * 1000};
    siginfo_t info;
    int sig = sigtimedwait(&waitset, &info, &ts);
    sup_reap(s, leader, &leader_alive);
    if (getppid() != s->parent)
      sig = SIGUSR1; /* cuco is gone: so is everything it started */
    if (sig == SIGTERM)
      sup_term(leader, leader_alive, SIGTERM);
    if (sig == SIGUSR1)
      sup_finish(s, leader, leader_alive);
    if (!leader_alive && !sup_has_children()) {
      sup_report(s->rep_w, REP_DONE, 0, 0, 0, 0);
      _exit(0);
    }
  }
}

/* ---- proc_run ---------------------------------------------------------- */

struct run_state {
  int leader_done, term_sent, usr1_sent, timed_out, got_done;
  int status;
  double kill_at, linger_at, hard_at;
};

/* Read what the supervisor reported; closes *fd at EOF. */
static void read_reports(int *fd, struct run_state *s, struct proc_result *res,
                         double t)
{
  struct rep r;
  ssize_t n;

  while (*fd >= 0) {
    n = read(*fd, &r, sizeof(r));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      return;
    if (n != (ssize_t)sizeof(r)) {
      close(*fd);
      *fd = -1;
      return;
    }
    if (r.kind == REP_EXITED && !s->leader_done) {
      s->leader_done = 1;
      s->status = r.a;
      s->linger_at = t + PROC_LINGER_S;
    } else if (r.kind == REP_DONE) {
      s->got_done = 1;
      if (s->timed_out || res->canceled) {
        res->escaped = r.b;
        res->setsid = r.c;
      } else {
        res->strays = r.a;
        res->escaped = r.b;
        res->setsid = r.c;
      }
    }
  }
}

static void close_fd(int *fd)
{
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

/* Everything is prepared: fork the supervisor and wait for it. */
static int supervise(const struct proc_opts *o, struct sup *sp,
                     struct proc_result *res, struct err *e)
{
  int outp[2] = {-1, -1}, errp[2] = {-1, -1}, repp[2] = {-1, -1};
  int inp[2] = {-1, -1};
  int pidfd = -1, sst, sup_reaped = 0, rc = ERR_PROC;
  double start, deadline, grace = o->grace_s > 0 ? o->grace_s : 2.0;
  struct run_state s;
  struct rep first;
  pid_t sup;
  ssize_t n;

  memset(&s, 0, sizeof(s));
  if (pipe2(outp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC) ||
      pipe2(repp, O_CLOEXEC)) {
    err_set(e, ERR_PROC, "pipe: %s", strerror(errno));
    goto out_close;
  }
  /* stdin_data (the runtime's per-run secret): written whole before the
   * start (a pipe holds 4 KiB or more), our end closed, so the child reads
   * it and then EOF; nothing of it is on the command line or in a file. */
  sp->in_r = -1;
  if (o->stdin_data) {
    size_t len = strlen(o->stdin_data);
    if (len > 4096 || pipe2(inp, O_CLOEXEC) ||
        write(inp[1], o->stdin_data, len) != (ssize_t)len) {
      err_set(e, ERR_PROC, "stdin pipe: %s",
              len > 4096 ? "data over 4 KiB" : strerror(errno));
      goto out_close;
    }
    close_fd(&inp[1]);
    sp->in_r = inp[0];
  }
  sp->out_w = outp[1];
  sp->err_w = errp[1];
  sp->rep_w = repp[1];
  sp->parent = getpid();
  start = now_s();
  sup = fork();
  if (sup < 0) {
    err_set(e, ERR_PROC, "%s: cannot start: fork: %s", o->argv[0],
            strerror(errno));
    goto out_close;
  }
  if (sup == 0)
    sup_main(sp);
  close_fd(&inp[0]);
  close_fd(&outp[1]);
  close_fd(&errp[1]);
  close_fd(&repp[1]);
  do
    n = read(repp[0], &first, sizeof(first));
  while (n < 0 && errno == EINTR);
  if (n != (ssize_t)sizeof(first) || first.kind != REP_STARTED) {
    waitpid(sup, NULL, 0);
    if (n == (ssize_t)sizeof(first) && first.kind == REP_EXEC_FAILED)
      err_set(e, ERR_PROC, "%s: cannot start: %s", o->argv[0],
              strerror(first.a));
    else
      err_set(e, ERR_PROC, "%s: cannot start: the supervisor failed",
              o->argv[0]);
    goto out_close;
  }
  res->pid = (pid_t)first.a;
  fcntl(outp[0], F_SETFL, O_NONBLOCK);
  fcntl(errp[0], F_SETFL, O_NONBLOCK);
  fcntl(repp[0], F_SETFL, O_NONBLOCK);
  pidfd = (int)syscall(SYS_pidfd_open, sup, 0);
  deadline = o->timeout_s > 0 ? start + o->timeout_s : 0;

  while (!sup_reaped || outp[0] >= 0 || errp[0] >= 0 || repp[0] >= 0) {
    struct pollfd pf[4];
    int np = 0;
    double t = now_s();

    if (!s.leader_done && !s.term_sent) {
      if (deadline && t >= deadline)
        s.term_sent = s.timed_out = 1;
      else if ((o->cancel && *o->cancel) || (stop_all && *stop_all))
        s.term_sent = res->canceled = 1;
      if (s.term_sent) {
        if (!sup_reaped)
          kill(sup, SIGTERM);
        s.kill_at = t + grace;
      }
    }
    if (!s.usr1_sent) {
      int go = s.term_sent && t >= s.kill_at;
      if (s.leader_done && outp[0] < 0 && errp[0] < 0)
        go = 1; /* output closed: kill what is left, if anything */
      if (s.leader_done && t >= s.linger_at) {
        go = 1;
        if (outp[0] >= 0 || errp[0] >= 0)
          res->held_output = 1;
      }
      if (go) {
        if (!sup_reaped)
          kill(sup, SIGUSR1);
        s.usr1_sent = 1;
        s.hard_at = t + 2.0;
      }
    }
    if (sup_reaped && (!s.hard_at || s.hard_at > t + 0.5))
      s.hard_at = t + 0.5; /* its tree is dead: who holds the pipes? */
    if (s.hard_at && t >= s.hard_at) {
      /* Stop waiting, whoever holds the pipes. */
      if (!sup_reaped) {
        kill(sup, SIGKILL);
        waitpid(sup, &sst, 0);
        sup_reaped = 1;
      }
      if (!s.leader_done)
        killpg(res->pid, SIGKILL);
      if (outp[0] >= 0 || errp[0] >= 0)
        res->held_output = 1;
      read_reports(&repp[0], &s, res, t);
      break;
    }
    if (outp[0] >= 0)
      pf[np++] = (struct pollfd){.fd = outp[0], .events = POLLIN};
    if (errp[0] >= 0)
      pf[np++] = (struct pollfd){.fd = errp[0], .events = POLLIN};
    if (repp[0] >= 0)
      pf[np++] = (struct pollfd){.fd = repp[0], .events = POLLIN};
    if (!sup_reaped && pidfd >= 0)
      pf[np++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
    if (poll(pf, (nfds_t)np, np ? 50 : 10) < 0 && errno != EINTR)
      break;
    if (outp[0] >= 0)
      drain(&outp[0], &res->out, o->echo ? 1 : -1);
    if (errp[0] >= 0)
      drain(&errp[0], &res->err, o->echo ? 2 : -1);
    read_reports(&repp[0], &s, res, now_s());
    if (!sup_reaped && waitpid(sup, &sst, WNOHANG) == sup)
      sup_reaped = 1;
  }
  res->wall_s = now_s() - start;
  if (!s.got_done)
    res->sup_lost = 1;
  if (s.leader_done) {
    status_to_result(s.status, res);
  } else {
    killpg(res->pid, SIGKILL); /* orphaned when the supervisor died */
    res->outcome = PROC_SIGNALED;
    res->term_signal = SIGKILL;
  }
  /* bwrap reports a signal death of its child as exit 128+N. */
  if (res->sandboxed && res->outcome == PROC_EXITED && res->exit_code > 128 &&
      res->exit_code <= 128 + 64) {
    res->outcome = PROC_SIGNALED;
    res->term_signal = res->exit_code - 128;
  }
  if (s.timed_out)
    res->outcome = PROC_TIMEDOUT;
  (void)redact_buf(&res->out);
  (void)redact_buf(&res->err);
  /* no terminal control from a child reaches a terminal, a log, run.db or
   * a prompt (issue 47) */
  (void)utf8_sanitize_text(res->out.data, res->out.len);
  (void)utf8_sanitize_text(res->err.data, res->err.len);
  rc = 0;
out_close:
  if (pidfd >= 0)
    close(pidfd);
  close_fd(&outp[0]);
  close_fd(&outp[1]);
  close_fd(&errp[0]);
  close_fd(&errp[1]);
  close_fd(&repp[0]);
  close_fd(&repp[1]);
  close_fd(&inp[0]);
  close_fd(&inp[1]);
  return rc;
}

int proc_run(const struct proc_opts *o, struct proc_result *res, struct err *e)
{
  static const char *const empty_env[] = {NULL};
  const char *const *envp = o->envp ? o->envp : empty_env;
  struct sup sp;
  char pathbuf[4096], **wrapped = NULL;
  const char *exe;
  int rc;

  memset(res, 0, sizeof(*res));
  memset(&sp, 0, sizeof(sp));
  buf_init(&res->out, o->out_max ? o->out_max : (1u << 20));
  buf_init(&res->err, o->err_max ? o->err_max : (1u << 20));
  if (!o->argv || !o->argv[0])
    return err_set(e, ERR_PROC, "no command to run");
  exe = resolve(o->argv[0], envp, pathbuf, sizeof(pathbuf));
  if (!exe)
    return err_set(e, ERR_PROC, "%s: command not found", o->argv[0]);
  res->candidate = o->sandbox != PROC_SANDBOX_OFF;
  sp.exe = exe;
  sp.argv = (char *const *)o->argv;
  /* bwrap's own teardown (its init outliving it for a moment) is no
   * stray: its PID namespace dies with it. */
  {
    const char *base = strrchr(exe, '/');
    sp.classify = strcmp(base ? base + 1 : exe, "bwrap") != 0;
  }
  if (o->sandbox != PROC_SANDBOX_OFF) {
    struct sandbox_state ss;
    sandbox_state(&ss);
    if (ss.kind == SANDBOX_KIND_REFUSED)
      return err_set(e, ERR_PROC, "%s: not run: no sandbox: %s", o->argv[0],
                     ss.why);
    if (ss.kind == SANDBOX_KIND_BWRAP) {
      int ranks = o->sandbox == PROC_SANDBOX_RANKS;
      char shm[4096];
      struct sandbox_req q = {exe,  o->argv, o->cwd, o->rw_dirs,
                              NULL, ranks,   ranks,  NULL};
      /* the ranks of one run share a /dev/shm of their own */
      if (ranks && o->cwd &&
          snprintf(shm, sizeof(shm), "%s/.shm", o->cwd) < (int)sizeof(shm) &&
          (mkdir(shm, 0700) == 0 || errno == EEXIST))
        q.shm = shm;
      /* the folders of the child's own LD_LIBRARY_PATH (NCCL's, the
       * ranks' lib dirs), not only cuco's */
      for (int i = 0; envp[i]; i++)
        if (!strncmp(envp[i], "LD_LIBRARY_PATH=", 16))
          q.ld_path = envp[i] + 16;
      wrapped = sandbox_argv_for(&q);
      if (!wrapped)
        return err_set(e, ERR_NOMEM, "out of memory");
      sp.exe = wrapped[0];
      sp.argv = wrapped;
      sp.classify = 0; /* its --new-session is no escape */
      res->sandboxed = 1;
    }
  }
  sp.envp = (char *const *)envp;
  sp.cwd = o->cwd;
  sp.nice = o->nice;
  sp.stdin_path = o->stdin_path;
  rc = supervise(o, &sp, res, e);
  sandbox_argv_free(wrapped);
  return rc;
}

void proc_result_release(struct proc_result *res)
{
  if (!res)
    return;
  buf_release(&res->out);
  buf_release(&res->err);
}

int proc_ok(const struct proc_result *res)
{
  return res->outcome == PROC_EXITED && res->exit_code == 0 && !res->strays &&
         !res->held_output && !res->sup_lost;
}

const char *proc_describe(const struct proc_result *res, char *buf, size_t n)
{
  switch (res->outcome) {
  case PROC_EXITED:
    snprintf(buf, n, "exit %d", res->exit_code);
    break;
  case PROC_SIGNALED:
    snprintf(buf, n, "signal %d (%s)", res->term_signal,
             strsignal(res->term_signal));
    break;
  case PROC_TIMEDOUT:
    snprintf(buf, n, "timed out after %.1f s", res->wall_s);
    break;
  }
  {
    size_t l = strlen(buf);
    const char *who = res->candidate ? "the candidate" : "the command";
    const char *how = res->setsid    ? " (setsid)"
                      : res->escaped ? " (setpgid)"
                                     : "";
    if (res->held_output)
      snprintf(buf + l, n - l,
               "; a process left by %s%s held its output open: killed", who,
               how);
    else if (res->strays)
      snprintf(buf + l, n - l, "; %d process%s left running by %s%s: killed",
               res->strays, res->strays > 1 ? "es" : "", who, how);
    else if (res->escaped)
      snprintf(buf + l, n - l,
               "; %d process%s that left its process group%s: killed",
               res->escaped, res->escaped > 1 ? "es" : "", how);
    l = strlen(buf);
    if (res->sup_lost)
      snprintf(buf + l, n - l, "; its supervisor was killed");
  }
  return buf;
}

char *proc_capture(const char *const *argv, size_t out_max, int *ok)
{
  char **env = proc_env_new(proc_env_default_allow, NULL);
  struct proc_opts o = {0};
  struct proc_result r;
  struct err e;
  char *out = NULL;
  size_t n;

  *ok = 0;
  o.argv = argv;
  o.envp = (const char *const *)env;
  o.timeout_s = 30;
  o.out_max = out_max;
  if (proc_run(&o, &r, &e) == 0) {
    *ok = proc_ok(&r);
    out = buf_detach(&r.out, &n);
    while (out && n && (out[n - 1] == '\n' || out[n - 1] == ' '))
      out[--n] = '\0';
    proc_result_release(&r);
  }
  proc_env_free(env);
  return out;
}
