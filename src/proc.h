/* proc.h - the only way cuco starts children.
 *
 * A child runs in its own process group with an explicit argv, an explicit
 * environment and working directory.  Its stdout and stderr are captured
 * up to a cap each.  Between cuco and the child sits a supervisor (a fork
 * of cuco that never execs) that is the child subreaper of the child's
 * whole tree: processes that setsid() or double-fork are reparented to it,
 * not to init.  Past the deadline the tree gets SIGTERM, then SIGKILL after
 * a grace period; when the child exits, whatever it left running is killed
 * (after PROC_LINGER_S if it still holds the output pipes).  cuco stops
 * waiting on the pipes at the deadline plus grace whoever holds them.  The
 * outcome (exit status, signal, timeout) is reported distinctly, and
 * left-over processes are named (proc_describe).  With .sandbox set the
 * child runs under bubblewrap when sandbox.h says so.  Captured output has
 * every secret of redact.h replaced.
 */
#ifndef CUCO_PROC_H
#define CUCO_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "buf.h"
#include "err.h"

struct proc_opts {
  const char *const *argv;    /* argv[0] is looked up in PATH of envp */
  const char *const *envp;    /* full environment of the child; NULL = empty */
  const char *cwd;            /* NULL = inherit */
  const char *stdin_path;     /* NULL = /dev/null */
  double timeout_s;           /* <= 0: no deadline */
  double grace_s;             /* SIGTERM -> SIGKILL delay; <= 0: 2 s */
  size_t out_max;             /* cap on captured stdout; 0: 1 MiB */
  size_t err_max;             /* cap on captured stderr; 0: 1 MiB */
  int echo;                   /* also copy the child's output to ours */
  const volatile int *cancel; /* NULL, or a flag another thread sets to
                                 stop the child early: its group gets
                                 SIGTERM then SIGKILL, res->canceled = 1 */
  /* issue 21: the sandbox of a child run for a candidate */
  int sandbox;                /* PROC_SANDBOX_*; 0: none (tools, probes) */
  const char *const *rw_dirs; /* sandboxed: writable besides cwd, TMPDIR
                                 and a private /tmp; NULL-terminated */
  const char *stdin_data;     /* NULL, or bytes (at most 4 KiB) the child
                                 reads from its stdin through a pipe, then
                                 EOF; overrides stdin_path */
  int nice;                   /* > 0: the child runs at this nice value
                                 (a build beside another's timed run) */
};

enum proc_sandbox {
  PROC_SANDBOX_OFF = 0,
  PROC_SANDBOX_ISOLATED = 1, /* no network */
  PROC_SANDBOX_RANKS = 2,    /* host network, IPC and /dev/shm kept */
};

/* How long a process the child left behind may keep the output pipes open
 * after the child exited before it is killed. */
#define PROC_LINGER_S 1.0

enum proc_outcome {
  PROC_EXITED = 0,   /* exit_code is valid */
  PROC_SIGNALED = 1, /* term_signal is valid */
  PROC_TIMEDOUT = 2, /* killed by us at the deadline */
};

struct proc_result {
  enum proc_outcome outcome;
  int exit_code;
  int term_signal;
  pid_t pid;
  int canceled; /* stopped through opts.cancel (outcome SIGNALED) */
  double wall_s;
  struct buf out;  /* captured stdout, out.toobig if cut */
  struct buf err;  /* captured stderr, err.toobig if cut */
  int strays;      /* processes left running when the child exited (or,
                      at the deadline, outside its process group): killed */
  int escaped;     /* of those (or at the deadline), how many had left the
                      child's process group (setpgid/setsid) */
  int setsid;      /* of those, how many had called setsid() */
  int held_output; /* a stray kept stdout/stderr open past PROC_LINGER_S */
  int sup_lost;    /* the supervisor died early (killed by the child?) */
  int sandboxed;   /* ran under bubblewrap */
  int candidate;   /* opts.sandbox was set (the wording of proc_describe) */
};

/* Run a child to completion.  On success (the child ran, whatever its exit
 * status) returns 0 and fills *res, which the caller frees with
 * proc_result_release().  Returns ERR_PROC if it could not be started. */
int proc_run(const struct proc_opts *o, struct proc_result *res,
             struct err *e) WARN_UNUSED;

void proc_result_release(struct proc_result *res);

/* Stop every child, running or started later, as its opts.cancel would
 * once *flag is non-zero (cuco evolve's SIGINT/SIGTERM/SIGHUP handler sets
 * it: the in-flight candidates end at once, to be evaluated again on
 * --resume).  NULL turns it off.  Process-wide, like the signal itself. */
void proc_stop_on(const volatile int *flag);

/* True when the child exited with status 0 and left nothing running. */
int proc_ok(const struct proc_result *res);

/* One line describing the outcome: "exit 3", "signal 11 (SIGSEGV)",
 * "timed out after 5.0 s", followed by what was left behind: "; a process
 * left by the candidate (setsid) held its output open: killed".  Writes
 * into buf of size n; returns buf. */
const char *proc_describe(const struct proc_result *res, char *buf, size_t n);

/* Find an executable: cmd itself if it holds a '/', else the first
 * PATH entry (path_var; NULL = our own $PATH) holding it.  Writes the path
 * into out and returns out, or NULL (out = "") when not found. */
const char *proc_which(const char *cmd, const char *path_var, char *out,
                       size_t n);

/* Run argv with the default allow-listed environment and a 30 s deadline;
 * its stdout (capped at out_max, trailing newlines and spaces trimmed) is
 * returned malloc'd, and *ok says whether it exited 0.  NULL when it could
 * not be started. */
char *proc_capture(const char *const *argv, size_t out_max, int *ok);

/* Build a NULL-terminated environment holding only the variables named in
 * `allow` that are set in ours, then `extra` ("K=V" strings, may be NULL).
 * The caller frees it with proc_env_free(). */
char **proc_env_new(const char *const *allow, const char *const *extra);
void proc_env_free(char **envp);

/* The default allow-list: PATH, HOME, LANG, LD_LIBRARY_PATH, CUDA_*,
 * NCCL_*, TMPDIR and the like; never API keys. */
extern const char *const proc_env_default_allow[];

#endif
