/* proc.c - child processes with deadlines and capped output; see proc.h.
 *
 * The child is started with posix_spawn into a new process group, so that
 * killpg() reaches everything it spawned.  We poll its pipes and a pidfd;
 * the pidfd tells us when it exits without a SIGCHLD handler, which would
 * be process-global state.
 */
#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
      ssize_t w = write(echo_fd, chunk, (size_t)r);
      (void)w;
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

int proc_run(const struct proc_opts *o, struct proc_result *res, struct err *e)
{
  static const char *const empty_env[] = {NULL};
  const char *const *envp = o->envp ? o->envp : empty_env;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  int outp[2] = {-1, -1}, errp[2] = {-1, -1}, inp[2] = {-1, -1};
  int pidfd = -1, status = 0, rc = ERR_PROC, reaped = 0;
  double start, deadline, kill_at = 0;
  int term_sent = 0, timed_out = 0;
  char pathbuf[4096];
  const char *exe;
  pid_t pid;

  memset(res, 0, sizeof(*res));
  buf_init(&res->out, o->out_max ? o->out_max : (1u << 20));
  buf_init(&res->err, o->err_max ? o->err_max : (1u << 20));
  if (!o->argv || !o->argv[0])
    return err_set(e, ERR_PROC, "no command to run");
  exe = resolve(o->argv[0], envp, pathbuf, sizeof(pathbuf));
  if (!exe)
    return err_set(e, ERR_PROC, "%s: command not found", o->argv[0]);
  if (pipe2(outp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
    err_set(e, ERR_PROC, "pipe: %s", strerror(errno));
    goto out_close;
  }
  /* stdin_data: written whole before the start (a pipe holds 4 KiB or
   * more), our end closed, so the child reads it and then EOF. */
  if (o->stdin_data) {
    size_t len = strlen(o->stdin_data);
    if (len > 4096 || pipe2(inp, O_CLOEXEC) ||
        write(inp[1], o->stdin_data, len) != (ssize_t)len) {
      err_set(e, ERR_PROC, "stdin pipe: %s",
              len > 4096 ? "data over 4 KiB" : strerror(errno));
      goto out_close;
    }
    close(inp[1]);
    inp[1] = -1;
  }
  /* Our ends only: we poll them and must never block on one while the
   * other fills up.  The child's ends stay blocking. */
  fcntl(outp[0], F_SETFL, O_NONBLOCK);
  fcntl(errp[0], F_SETFL, O_NONBLOCK);
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
                                      POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  {
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
  }
  if (inp[0] >= 0)
    posix_spawn_file_actions_adddup2(&fa, inp[0], 0);
  else
    posix_spawn_file_actions_addopen(
        &fa, 0, o->stdin_path ? o->stdin_path : "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
  posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
  if (o->cwd)
    posix_spawn_file_actions_addchdir_np(&fa, o->cwd);
  start = now_s();
  rc = posix_spawn(&pid, exe, &fa, &attr, (char *const *)o->argv,
                   (char *const *)envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc) {
    err_set(e, ERR_PROC, "%s: cannot start: %s", o->argv[0], strerror(rc));
    rc = ERR_PROC;
    goto out_close;
  }
  res->pid = pid;
  if (inp[0] >= 0)
    close(inp[0]);
  inp[0] = -1;
  close(outp[1]);
  close(errp[1]);
  outp[1] = errp[1] = -1;
  pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  deadline = o->timeout_s > 0 ? start + o->timeout_s : 0;

  while (!reaped || outp[0] >= 0 || errp[0] >= 0) {
    struct pollfd pf[3];
    int n = 0, ms = 100;
    double t = now_s();

    if (!reaped && deadline && t >= deadline && !term_sent) {
      killpg(pid, SIGTERM);
      term_sent = 1;
      timed_out = 1;
      kill_at = t + (o->grace_s > 0 ? o->grace_s : 2.0);
    }
    if (!reaped && o->cancel && *o->cancel && !term_sent) {
      killpg(pid, SIGTERM);
      term_sent = 1;
      res->canceled = 1;
      kill_at = t + (o->grace_s > 0 ? o->grace_s : 2.0);
    }
    if (term_sent && t >= kill_at) {
      killpg(pid, SIGKILL);
      kill_at = t + 3600;
    }
    if (outp[0] >= 0)
      pf[n++] = (struct pollfd){.fd = outp[0], .events = POLLIN};
    if (errp[0] >= 0)
      pf[n++] = (struct pollfd){.fd = errp[0], .events = POLLIN};
    if (!reaped && pidfd >= 0)
      pf[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
    if (n == 0)
      ms = 10; /* only waiting to reap: poll briefly */
    if (poll(pf, (nfds_t)n, ms) < 0 && errno != EINTR)
      break;
    if (outp[0] >= 0)
      drain(&outp[0], &res->out, o->echo ? 1 : -1);
    if (errp[0] >= 0)
      drain(&errp[0], &res->err, o->echo ? 2 : -1);
    if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
      reaped = 1;
      /* The leader is gone; anything it left in its group (holding our
       * pipes open, or just running) is killed now, so no survivors. */
      killpg(pid, SIGKILL);
    }
  }
  res->wall_s = now_s() - start;
  status_to_result(status, res);
  if (timed_out)
    res->outcome = PROC_TIMEDOUT;
  rc = 0;
out_close:
  if (inp[0] >= 0)
    close(inp[0]);
  if (inp[1] >= 0)
    close(inp[1]);
  if (pidfd >= 0)
    close(pidfd);
  if (outp[0] >= 0)
    close(outp[0]);
  if (outp[1] >= 0)
    close(outp[1]);
  if (errp[0] >= 0)
    close(errp[0]);
  if (errp[1] >= 0)
    close(errp[1]);
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
  return res->outcome == PROC_EXITED && res->exit_code == 0;
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
