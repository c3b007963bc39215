/* sandbox.h - how children run for a candidate are isolated.
 *
 * [sandbox] mode (cuco.ini, $CUCO_SANDBOX or --sandbox):
 *   auto   bubblewrap when it can run here, else the subreaper only (the
 *          fallback is announced once on stderr, never silent);
 *   bwrap  bubblewrap or refuse to run candidates;
 *   none   the subreaper only.
 * Every child of proc.c, sandboxed or not, runs under a subreaper that
 * kills its whole tree at the deadline and when it exits (proc.h).
 * With bubblewrap a candidate child also gets, issue 47: new user, PID,
 * IPC, UTS, cgroup and network namespaces (no network; only the ranks of a
 * multi-rank run keep the host network so NCCL can bootstrap across
 * processes), no capabilities (--cap-drop ALL), uid and gid 65534 inside, a
 * fresh /proc, a minimal /dev with the GPU nodes (/dev/nvidia*) bound, a
 * root holding only the system dirs read-only (/usr, /bin, /sbin, /lib*,
 * /etc less its secrets, /opt, /sys) and the paths the command names (and
 * the LD_LIBRARY_PATH folders) bound back read-only, a private size-capped
 * /tmp (TMPDIR=/tmp) and /dev/shm (or the run's own shm folder, shared by
 * its ranks), and writable only its work dir and the dirs its caller
 * names.  Inside, cuco-confine (beside the cuco executable) sets the
 * limits below and a seccomp filter (no ptrace, mounts, namespaces, keys,
 * BPF, perf, modules, foreign socket families), then runs the program.
 * Without bubblewrap cuco refuses to run candidates unless [sandbox] mode
 * is none (the explicit choice, warned about and recorded).
 * The mode and the probe result are process-global, like the config.
 */
#ifndef CUCO_SANDBOX_H
#define CUCO_SANDBOX_H

#include <stddef.h>

#include "err.h"

struct config;

enum sandbox_mode { SANDBOX_AUTO = 0, SANDBOX_BWRAP, SANDBOX_NONE };

enum sandbox_kind {
  SANDBOX_KIND_BWRAP = 0, /* candidates run under bubblewrap */
  SANDBOX_KIND_SUBREAPER, /* no namespaces: the subreaper only */
  SANDBOX_KIND_REFUSED,   /* mode bwrap, but bwrap cannot run */
};

/* Set the mode from flag (NULL: not given), else cfg's [sandbox] mode,
 * else auto.  ERR_CONFIG naming where a bad value came from. */
int sandbox_configure(const struct config *cfg, const char *flag,
                      struct err *e) WARN_UNUSED;

/* The state after the probe (run once, on first use; thread-safe). */
/* The uid and gid a sandboxed child has inside its user namespace. */
#define SANDBOX_UID 65534

/* [sandbox] memory, file_size, tmp_size (bytes, K/M/G suffixes) and
 * processes: what cuco-confine and bwrap give a sandboxed child. */
struct sandbox_limits {
  unsigned long long memory;    /* RLIMIT_DATA; default max(4G, RAM/2) */
  unsigned long long file_size; /* RLIMIT_FSIZE; default 4G */
  unsigned long long tmp_size;  /* each of /tmp and /dev/shm; default 2G */
  unsigned long long processes; /* tasks beyond those running; 1024 */
};

struct sandbox_state {
  enum sandbox_mode mode;
  enum sandbox_kind kind;
  struct sandbox_limits limits;
  char confine[512]; /* cuco-confine's path, "" when missing */
  char bwrap[512];   /* its path, "" when not found */
  char version[64];  /* "bubblewrap 0.8.0", "" when unknown */
  char why[256];     /* one line: why this kind */
};
void sandbox_state(struct sandbox_state *out);

const char *sandbox_mode_name(enum sandbox_mode m);
const char *sandbox_kind_name(enum sandbox_kind k);

/* One sandboxed command. */
struct sandbox_req {
  const char *exe;         /* absolute */
  const char *const *argv; /* argv[1..] are its arguments */
  const char *cwd;         /* writable, and where it starts; or NULL */
  const char *const *rw;   /* NULL-terminated: also writable */
  const char *shm;         /* the run's folder for /dev/shm, or NULL */
  int share_net;           /* the host network (multi-rank runs) */
  int inet;                /* may open inet sockets (runs, not builds) */
  const char *ld_path;     /* the child's LD_LIBRARY_PATH (its folders are
                              bound read-only); NULL: cuco's own */
};

/* The argv that runs R under bubblewrap and cuco-confine (missing paths
 * skipped).  Malloc'd, freed with sandbox_argv_free(); NULL on allocation
 * failure. */
char **sandbox_argv_for(const struct sandbox_req *r);
void sandbox_argv_free(char **argv);

/* Forget the probe and the mode (unit tests). */
void sandbox_reset(void);

#endif
