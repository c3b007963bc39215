/* sandbox.h - how children run for a candidate are isolated.
 *
 * [sandbox] mode (cuco.ini, $CUCO_SANDBOX or --sandbox):
 *   auto   bubblewrap when it can run here, else the subreaper only (the
 *          fallback is announced once on stderr, never silent);
 *   bwrap  bubblewrap or refuse to run candidates;
 *   none   the subreaper only.
 * Every child of proc.c, sandboxed or not, runs under a subreaper that
 * kills its whole tree at the deadline and when it exits (proc.h).
 * With bubblewrap a candidate child also gets: new user, PID, IPC, UTS,
 * cgroup and network namespaces (no network; ranks of one run keep the
 * host network so NCCL can bootstrap), no capabilities (--cap-drop ALL), a
 * fresh /proc, a minimal /dev with the GPU nodes (/dev/nvidia*) bound, /
 * read-only with /tmp, /root, /home, /var, /run, /mnt, /media and /srv
 * replaced by empty tmpfs (only the paths the command names, and the
 * LD_LIBRARY_PATH folders, bound back read-only), and writable only its
 * work dir and the dirs its caller names.
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
struct sandbox_state {
  enum sandbox_mode mode;
  enum sandbox_kind kind;
  char bwrap[512];  /* its path, "" when not found */
  char version[64]; /* "bubblewrap 0.8.0", "" when unknown */
  char why[256];    /* one line: why this kind */
};
void sandbox_state(struct sandbox_state *out);

const char *sandbox_mode_name(enum sandbox_mode m);
const char *sandbox_kind_name(enum sandbox_kind k);

/* The argv that runs exe (with argv[1..]) under bubblewrap: cwd and the
 * NULL-terminated rw list writable (missing ones skipped), share_net
 * keeping the host network, IPC and /dev/shm (the ranks of one run).
 * Malloc'd, freed with sandbox_argv_free(); NULL on allocation failure. */
char **sandbox_argv(const char *exe, const char *const *argv, const char *cwd,
                    const char *const *rw, int share_net);
void sandbox_argv_free(char **argv);

/* Forget the probe and the mode (unit tests). */
void sandbox_reset(void);

#endif
