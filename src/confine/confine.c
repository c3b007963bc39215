/* cuco-confine - the last step before a candidate's program (or its
 * compiler) starts, inside bubblewrap (src/sandbox.c puts it there):
 * resource limits, then a system-call filter (libseccomp), then exec.
 * Both survive execve and cannot be lifted by the program: limits can only
 * be lowered without CAP_SYS_RESOURCE (dropped), and a seccomp filter stays
 * for the life of the process and its children (no_new_privs is set).
 *
 *   cuco-confine [--fsize BYTES] [--data BYTES] [--as BYTES]
 *                [--nproc-extra N] [--nofile N] [--sockets unix|inet]
 *                -- PROGRAM [ARG...]
 *
 * --fsize  largest file the program may write (SIGXFSZ beyond)
 * --data   its private writable memory (RLIMIT_DATA: heap and anonymous
 *          mappings; CUDA's address-space reservations are not counted)
 * --as     its whole address space (never for CUDA programs)
 * --nproc-extra  RLIMIT_NPROC counts every task of the real uid, so the
 *          limit is the tasks running now on the machine plus N
 * --sockets  the socket families allowed: unix (and netlink, which
 *          getifaddrs needs) or also inet/inet6 (NCCL's bootstrap)
 * Exits 126 with one line on stderr when a step fails (never runs the
 * program unconfined), 127 when PROGRAM cannot be executed. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define FAIL 126

/* What no candidate needs: debugging or reading other processes, mounts and
 * namespaces, kernel keys, BPF and perf, modules and kexec, the clock, the
 * system's swap, accounting and logs, handles that bypass path lookup. */
static const char *const denied[] = {"ptrace",
                                     "process_vm_readv",
                                     "process_vm_writev",
                                     "mount",
                                     "umount2",
                                     "pivot_root",
                                     "chroot",
                                     "move_mount",
                                     "open_tree",
                                     "fsopen",
                                     "fsmount",
                                     "fsconfig",
                                     "fspick",
                                     "mount_setattr",
                                     "unshare",
                                     "setns",
                                     "keyctl",
                                     "add_key",
                                     "request_key",
                                     "bpf",
                                     "perf_event_open",
                                     "kexec_load",
                                     "kexec_file_load",
                                     "init_module",
                                     "finit_module",
                                     "delete_module",
                                     "reboot",
                                     "swapon",
                                     "swapoff",
                                     "syslog",
                                     "acct",
                                     "settimeofday",
                                     "clock_settime",
                                     "clock_adjtime",
                                     "adjtimex",
                                     "iopl",
                                     "ioperm",
                                     "quotactl",
                                     "lookup_dcookie",
                                     "userfaultfd",
                                     "open_by_handle_at",
                                     "name_to_handle_at",
                                     "personality",
                                     "uselib",
                                     "vhangup",
                                     NULL};

static void die(const char *what, const char *why)
{
  fprintf(stderr, "cuco-confine: %s: %s\n", what, why);
  exit(FAIL);
}

static unsigned long long number(const char *opt, const char *s)
{
  char *end;
  unsigned long long v;

  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno || end == s || *end)
    die(opt, "not a whole number");
  return v;
}

static void limit(int res, const char *name, unsigned long long v)
{
  struct rlimit r;

  if (getrlimit(res, &r) != 0)
    die(name, strerror(errno));
  if (r.rlim_max != RLIM_INFINITY && v > r.rlim_max)
    v = r.rlim_max; /* only ever lower */
  r.rlim_cur = r.rlim_max = v;
  if (setrlimit(res, &r) != 0)
    die(name, strerror(errno));
}

/* The tasks on the machine now: /proc/loadavg's "running/total". */
static unsigned long long tasks_now(void)
{
  FILE *f = fopen("/proc/loadavg", "r");
  unsigned long long total = 0;
  double a, b, c;
  unsigned run;

  if (f) {
    if (fscanf(f, "%lf %lf %lf %u/%llu", &a, &b, &c, &run, &total) != 5)
      total = 0;
    fclose(f);
  }
  return total ? total : 4096;
}

static void deny(scmp_filter_ctx ctx, uint32_t action, const char *name,
                 unsigned n, const struct scmp_arg_cmp *cmp)
{
  int nr = seccomp_syscall_resolve_name(name);
  int rc;

  if (nr == __NR_SCMP_ERROR)
    return; /* not a call of this kernel's ABI */
  rc = seccomp_rule_add_array(ctx, action, nr, n, cmp);
  if (rc < 0)
    die(name, strerror(-rc));
}

static void filter(int inet)
{
  static const unsigned long long ns_flags[] = {
      CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,   CLONE_NEWNET,
      CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP};
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  int i, rc;

  if (!ctx)
    die("seccomp", "cannot start a filter");
  for (i = 0; denied[i]; i++)
    deny(ctx, SCMP_ACT_ERRNO(EPERM), denied[i], 0, NULL);
  /* threads and processes, but no new namespaces */
  for (i = 0; i < (int)(sizeof(ns_flags) / sizeof(ns_flags[0])); i++) {
    struct scmp_arg_cmp c =
        SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]);
    deny(ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, &c);
  }
  /* clone3's flags sit behind a pointer a filter cannot read: glibc falls
   * back to clone on ENOSYS */
  deny(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
  /* socket families: unix and netlink, and inet/inet6 for ranks */
  for (i = 0; i < AF_MAX; i++) {
    struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)i);
    if (i == AF_UNIX || i == AF_NETLINK ||
        (inet && (i == AF_INET || i == AF_INET6)))
      continue;
    deny(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &c);
  }
  {
    struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_GE, (scmp_datum_t)AF_MAX);
    deny(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &c);
  }
  /* typing into the terminal cuco runs in */
  {
    struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI);
    deny(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, &c);
  }
  /* the 32-bit and x32 system-call ABIs are not added: the default
   * bad-architecture action kills a process that tries them */
  rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc < 0)
    die("seccomp", strerror(-rc));
}

int main(int argc, char **argv)
{
  int i, inet = 0;

  limit(RLIMIT_CORE, "core", 0);
  for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v)
      die(o, "needs a value");
    if (!strcmp(o, "--fsize"))
      limit(RLIMIT_FSIZE, o, number(o, v));
    else if (!strcmp(o, "--data"))
      limit(RLIMIT_DATA, o, number(o, v));
    else if (!strcmp(o, "--as"))
      limit(RLIMIT_AS, o, number(o, v));
    else if (!strcmp(o, "--nofile"))
      limit(RLIMIT_NOFILE, o, number(o, v));
    else if (!strcmp(o, "--nproc-extra"))
      limit(RLIMIT_NPROC, o, tasks_now() + number(o, v));
    else if (!strcmp(o, "--sockets")) {
      if (strcmp(v, "unix") && strcmp(v, "inet"))
        die(o, "not one of unix, inet");
      inet = !strcmp(v, "inet");
    } else
      die(o, "unknown option");
    i++;
  }
  if (i + 1 >= argc)
    die("usage", "cuco-confine [OPTION VALUE]... -- PROGRAM [ARG]...");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    die("no_new_privs", strerror(errno));
  filter(inet);
  execvp(argv[i + 1], argv + i + 1);
  fprintf(stderr, "cuco-confine: %s: %s\n", argv[i + 1], strerror(errno));
  return 127;
}
