/* sandbox.c - bubblewrap for candidate children; see sandbox.h. */
#define _GNU_SOURCE
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "proc.h"
#include "units.h"

#define SB_ARGS_MAX 256

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static enum sandbox_mode mode = SANDBOX_AUTO;
static int probed;
static struct sandbox_state st;
static struct sandbox_limits limits;

static void confine_path(char *out, size_t n);

const char *sandbox_mode_name(enum sandbox_mode m)
{
  return m == SANDBOX_BWRAP ? "bwrap" : m == SANDBOX_NONE ? "none" : "auto";
}

const char *sandbox_kind_name(enum sandbox_kind k)
{
  return k == SANDBOX_KIND_BWRAP       ? "bwrap"
         : k == SANDBOX_KIND_SUBREAPER ? "subreaper"
                                       : "refused";
}

static int configure_limits(const struct config *cfg, struct err *e)
{
  static const struct {
    const char *key;
    size_t off;
  } keys[] = {
      {"memory", offsetof(struct sandbox_limits, memory)},
      {"file_size", offsetof(struct sandbox_limits, file_size)},
      {"tmp_size", offsetof(struct sandbox_limits, tmp_size)},
      {"processes", offsetof(struct sandbox_limits, processes)},
  };
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  unsigned long long ram = pages > 0 && psz > 0 ? (unsigned long long)pages *
                                                      (unsigned long long)psz
                                                : 0;
  struct sandbox_limits l;

  l.memory = ram / 2 > (4ULL << 30) ? ram / 2 : (4ULL << 30);
  l.file_size = 4ULL << 30;
  l.tmp_size = 2ULL << 30;
  l.processes = 1024;
  for (size_t i = 0; cfg && i < sizeof(keys) / sizeof(keys[0]); i++) {
    const struct config_entry *v = config_find(cfg, "sandbox", keys[i].key);
    unsigned long long *dst = (unsigned long long *)((char *)&l + keys[i].off);
    struct err ue;
    if (v && (units_parse_size(NULL, v->value, dst, &ue) || !*dst))
      return err_set(e, ERR_CONFIG,
                     "%s: [sandbox] %s '%.40s' is not a positive size (e.g. "
                     "512M, 4G)",
                     v->origin, keys[i].key, v->value);
  }
  limits = l;
  return 0;
}

int sandbox_configure(const struct config *cfg, const char *flag,
                      struct err *e)
{
  const struct config_entry *v =
      cfg ? config_find(cfg, "sandbox", "mode") : NULL;
  const char *s = flag ? flag : v ? v->value : "auto";
  enum sandbox_mode m;

  if (!strcmp(s, "auto"))
    m = SANDBOX_AUTO;
  else if (!strcmp(s, "bwrap"))
    m = SANDBOX_BWRAP;
  else if (!strcmp(s, "none"))
    m = SANDBOX_NONE;
  else
    return err_set(e, ERR_CONFIG,
                   "%s: sandbox mode '%.40s' is not one of auto, bwrap, none",
                   flag ? "--sandbox" : v->origin, s);
  if (configure_limits(cfg, e))
    return e->code;
  pthread_mutex_lock(&mu);
  mode = m;
  probed = 0;
  pthread_mutex_unlock(&mu);
  return 0;
}

void sandbox_reset(void)
{
  pthread_mutex_lock(&mu);
  mode = SANDBOX_AUTO;
  probed = 0;
  pthread_mutex_unlock(&mu);
}

/* The first non-empty line of s, or "(no output)". */
static void first_line(const char *s, char *out, size_t n)
{
  while (*s == '\n' || *s == ' ')
    s++;
  snprintf(out, n, "%.*s", (int)strcspn(s, "\n"), *s ? s : "(no output)");
}

/* Run bwrap the way candidates get it, on /bin/true. */
static void probe(void)
{
  char truep[512], **argv = NULL, **env;
  struct proc_opts o = {0};
  struct proc_result r;
  struct err e;
  const char *va[] = {NULL, "--version", NULL};
  char *ver;
  int ok;

  memset(&st, 0, sizeof(st));
  st.mode = mode;
  if (!limits.memory)
    (void)configure_limits(NULL, &e); /* the defaults cannot fail */
  st.limits = limits;
  confine_path(st.confine, sizeof(st.confine));
  st.kind = SANDBOX_KIND_SUBREAPER; /* until bwrap is seen to work */
  if (mode == SANDBOX_NONE) {
    st.kind = SANDBOX_KIND_SUBREAPER;
    snprintf(st.why, sizeof(st.why),
             "[sandbox] mode is none: candidates run unconfined");
    /* the explicit choice, said once per process */
    log_warn("sandbox: [sandbox] mode is none: candidates run without "
             "namespaces, filter or limits, contained by a subreaper only");
    return;
  }
  if (!proc_which("bwrap", NULL, st.bwrap, sizeof(st.bwrap))) {
    snprintf(st.why, sizeof(st.why),
             "bubblewrap (bwrap) is not installed (apt-get install "
             "bubblewrap)");
    goto unusable;
  }
  if (!st.confine[0]) {
    snprintf(st.why, sizeof(st.why),
             "cuco-confine is missing beside the cuco executable (make "
             "builds it; CUCO_CONFINE may name it)");
    goto unusable;
  }
  va[0] = st.bwrap;
  ver = proc_capture(va, 256, &ok);
  if (ver && ok)
    snprintf(st.version, sizeof(st.version), "%.*s", (int)strcspn(ver, "\n"),
             ver);
  free(ver);
  if (!proc_which("true", NULL, truep, sizeof(truep)))
    snprintf(truep, sizeof(truep), "/bin/true");
  {
    const char *const targv[] = {truep, NULL};
    struct sandbox_req q = {truep, targv, NULL, NULL, NULL, 0, 0, NULL};
    argv = sandbox_argv_for(&q);
  }
  env = proc_env_new(proc_env_default_allow, NULL);
  o.argv = (const char *const *)argv;
  o.envp = (const char *const *)env;
  o.timeout_s = 20;
  o.err_max = 4096;
  if (!argv || !env) {
    snprintf(st.why, sizeof(st.why), "out of memory");
    proc_env_free(env);
    sandbox_argv_free(argv);
    goto unusable;
  }
  if (proc_run(&o, &r, &e) == 0) {
    if (proc_ok(&r)) {
      st.kind = SANDBOX_KIND_BWRAP;
      snprintf(st.why, sizeof(st.why),
               "%s works here (mode %s): namespaces, no capabilities, uid "
               "%d inside, seccomp filter, limits, no network, only the "
               "system dirs and the named paths",
               st.bwrap, sandbox_mode_name(mode), SANDBOX_UID);
    } else {
      char how[128], line[200];
      st.kind = SANDBOX_KIND_SUBREAPER;
      first_line(*buf_str(&r.err) ? buf_str(&r.err) : buf_str(&r.out), line,
                 sizeof(line));
      snprintf(st.why, sizeof(st.why), "%s cannot run here (%s: %s)", st.bwrap,
               proc_describe(&r, how, sizeof(how)), line);
    }
    proc_result_release(&r);
  } else {
    snprintf(st.why, sizeof(st.why), "%s cannot start: %s", st.bwrap, e.msg);
  }
  proc_env_free(env);
  sandbox_argv_free(argv);
  if (st.kind == SANDBOX_KIND_BWRAP)
    return;
unusable:
  /* never unconfined unless asked for (issue 47): mode none is the
   * explicit choice */
  st.kind = SANDBOX_KIND_REFUSED;
  {
    size_t n = strlen(st.why);
    snprintf(st.why + n, sizeof(st.why) - n,
             "; to run candidates unconfined, set [sandbox] mode = none "
             "(or CUCO_SANDBOX=none)");
  }
}

void sandbox_state(struct sandbox_state *out)
{
  pthread_mutex_lock(&mu);
  if (!probed) {
    probe();
    probed = 1;
  }
  *out = st;
  pthread_mutex_unlock(&mu);
}

struct sb_args {
  char *v[SB_ARGS_MAX + 1];
  int n, oom;
};

static void add(struct sb_args *a, const char *s)
{
  if (a->n >= SB_ARGS_MAX || !(a->v[a->n] = strdup(s))) {
    a->oom = 1;
    return;
  }
  a->n++;
}

/* bwrap wants absolute paths; a missing one is skipped. */
static void bind(struct sb_args *a, const char *how, const char *path)
{
  char real[4096];

  if (!path || !*path || !realpath(path, real))
    return;
  add(a, how);
  add(a, real);
  add(a, real);
}

/* What the sandbox's root holds (issue 47): the system's programs,
 * libraries, configuration and toolkits (CUDA, NCCL under /usr or /opt),
 * and /sys (the CUDA driver and NCCL read the PCI topology there).  The
 * rest of the host (/root, /home, /var, /run, /tmp, /mnt, /srv, /work...)
 * is absent: only the paths the command names are bound back. */
static const char *const system_dirs[] = {
    "/usr",    "/bin", "/sbin", "/lib", "/lib32", "/lib64",
    "/libx32", "/etc", "/opt",  "/sys", NULL};

/* Files under /etc that hold secrets (another user's password hashes, the
 * host's private keys): a candidate may be root-mapped, so they are
 * covered by an empty file or folder. */
static const char *const etc_files[] = {"/etc/shadow",  "/etc/gshadow",
                                        "/etc/shadow-", "/etc/gshadow-",
                                        "/etc/sudoers", NULL};
static const char *const etc_dirs[] = {"/etc/ssh", "/etc/ssl/private",
                                       "/etc/sudoers.d", "/etc/cuco", NULL};

static int under_system(const char *p)
{
  for (int i = 0; system_dirs[i]; i++) {
    size_t n = strlen(system_dirs[i]);
    if (!strncmp(p, system_dirs[i], n) && (p[n] == '/' || !p[n]))
      return 1;
  }
  return 0;
}

static void bind_system(struct sb_args *a)
{
  char target[4096];
  struct stat sb;
  int i;

  for (i = 0; system_dirs[i]; i++) {
    ssize_t n;
    if (lstat(system_dirs[i], &sb) != 0)
      continue;
    if (S_ISLNK(sb.st_mode)) { /* merged /usr: /bin -> usr/bin */
      n = readlink(system_dirs[i], target, sizeof(target) - 1);
      if (n <= 0)
        continue;
      target[n] = '\0';
      add(a, "--symlink");
      add(a, target);
      add(a, system_dirs[i]);
    } else if (S_ISDIR(sb.st_mode)) {
      add(a, "--ro-bind");
      add(a, system_dirs[i]);
      add(a, system_dirs[i]);
    }
  }
  for (i = 0; etc_files[i]; i++)
    if (lstat(etc_files[i], &sb) == 0 && S_ISREG(sb.st_mode)) {
      add(a, "--ro-bind");
      add(a, "/dev/null");
      add(a, etc_files[i]);
    }
  for (i = 0; etc_dirs[i]; i++)
    if (lstat(etc_dirs[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
      add(a, "--tmpfs");
      add(a, etc_dirs[i]);
    }
}

/* Bind back, read-only, a path the command reads outside the system dirs:
 * a folder itself, a file's folder; never a top-level folder (/work,
 * /home) as a whole. */
static void bind_named_one(struct sb_args *a, const char *p, size_t len)
{
  char dir[4096], real[4096];
  struct stat sb;

  if (!len || p[0] != '/' || len >= sizeof(dir))
    return;
  memcpy(dir, p, len);
  dir[len] = '\0';
  if (!realpath(dir, real) || under_system(real) || stat(real, &sb) != 0)
    return;
  if (!S_ISDIR(sb.st_mode)) {
    char *slash = strrchr(real, '/');
    if (!slash)
      return;
    *slash = '\0';
  }
  if (!real[0] || !strchr(real + 1, '/'))
    return; /* "/" or a top-level folder */
  add(a, "--ro-bind");
  add(a, real);
  add(a, real);
}

/* Every absolute path in S: at its start or after a space, quote, '=',
 * ',', ':' or an -I/-L flag ("-I/x", "-Xlinker=-rpath,/x", a freeform
 * build's shell line "cc -o /w/bin /w/main.c"). */
static void bind_named_in(struct sb_args *a, const char *s)
{
  for (const char *c = s; c && *c; c++) {
    size_t n;
    if (*c != '/' || (c > s && !strchr(" \t\"'=,:IL", c[-1])))
      continue;
    n = strcspn(c, " \t\"';:,");
    bind_named_one(a, c, n);
    c += n ? n - 1 : 0;
  }
}

static void bind_named_reads(const struct sandbox_req *r, struct sb_args *a)
{
  char real[4096], here[4096];
  int i;

  /* a relative path in argv resolves in the child's cwd, or in ours */
  if (!r->cwd && getcwd(here, sizeof(here)))
    bind_named_one(a, here, strlen(here));
  bind_named_in(a, r->exe);
  for (i = 1; r->argv && r->argv[i]; i++) {
    const char *p = r->argv[i];
    if (p[0] != '-' && p[0] != '/' && realpath(p, real))
      bind_named_one(a, real, strlen(real));
    else
      bind_named_in(a, p);
  }
  bind_named_in(a, r->ld_path ? r->ld_path : getenv("LD_LIBRARY_PATH"));
}

/* cuco-confine: $CUCO_CONFINE (an install that keeps it elsewhere, the
 * unit tests' binaries), else beside the cuco executable; "" when neither
 * is executable. */
static void confine_path(char *out, size_t n)
{
  char exe[4096];
  const char *env = getenv("CUCO_CONFINE");
  ssize_t len;
  char *slash;

  out[0] = '\0';
  if (env && *env) {
    if (env[0] == '/' && access(env, X_OK) == 0)
      snprintf(out, n, "%s", env);
    return;
  }
  len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len <= 0)
    return;
  exe[len] = '\0';
  if (!(slash = strrchr(exe, '/')))
    return;
  *slash = '\0';
  snprintf(out, n, "%s/cuco-confine", exe);
  if (access(out, X_OK) != 0)
    out[0] = '\0';
}

static void add_num(struct sb_args *a, const char *opt, unsigned long long v)
{
  char num[32];

  snprintf(num, sizeof(num), "%llu", v);
  add(a, opt);
  add(a, num);
}

/* cuco-confine's options and "--": limits and the system-call filter. */
static void add_confine(struct sb_args *a, const char *confine,
                        const struct sandbox_req *r)
{
  char libs[4096];
  struct stat sb;

  /* the helper alone (its folder is cuco's build folder: not the
   * candidate's to read), and the libs/ folder a GPU bundle's rpath names */
  if (!under_system(confine)) {
    add(a, "--ro-bind");
    add(a, confine);
    add(a, confine);
    snprintf(libs, sizeof(libs), "%s", confine);
    snprintf(strrchr(libs, '/'),
             sizeof(libs) - (size_t)(strrchr(libs, '/') - libs), "/libs");
    if (stat(libs, &sb) == 0 && S_ISDIR(sb.st_mode)) {
      add(a, "--ro-bind");
      add(a, libs);
      add(a, libs);
    }
  }
  add(a, "--");
  add(a, confine);
  add_num(a, "--fsize", limits.file_size);
  add_num(a, "--data", limits.memory);
  add_num(a, "--nproc-extra", limits.processes);
  add(a, "--sockets");
  add(a, r->inet ? "inet" : "unix");
}

char **sandbox_argv_for(const struct sandbox_req *r)
{
  struct sb_args a = {{0}, 0, 0};
  char **out, confine[4096];
  DIR *d;
  int i;

  if (!limits.memory) {
    struct err e;
    (void)configure_limits(NULL, &e); /* the defaults cannot fail */
  }
  add(&a, st.bwrap[0] ? st.bwrap : "bwrap");
  add(&a, "--unshare-all");
  add(&a, "--unshare-user");
  if (r->share_net)
    add(&a, "--share-net");
  add(&a, "--die-with-parent");
  add(&a, "--new-session");
  add(&a, "--cap-drop"); /* none of root's capabilities inside */
  add(&a, "ALL");
  add_num(&a, "--uid", SANDBOX_UID);
  add_num(&a, "--gid", SANDBOX_UID);
  bind_system(&a);
  add(&a, "--dev");
  add(&a, "/dev");
  add(&a, "--proc");
  add(&a, "/proc");
  add_num(&a, "--size", limits.tmp_size);
  add(&a, "--tmpfs");
  add(&a, "/tmp");
  add(&a, "--setenv");
  add(&a, "TMPDIR");
  add(&a, "/tmp");
  /* GPU nodes: nvidia0.., nvidiactl, nvidia-uvm*, nvidia-caps/. */
  d = opendir("/dev");
  while (d) {
    struct dirent *de = readdir(d);
    char p[300];
    if (!de)
      break;
    if (strncmp(de->d_name, "nvidia", 6))
      continue;
    snprintf(p, sizeof(p), "/dev/%s", de->d_name);
    bind(&a, "--dev-bind", p);
  }
  if (d)
    closedir(d);
  bind_named_reads(r, &a);
  /* shared memory: the run's own folder (its ranks meet there, NCCL's SHM
   * transport), else a private one; never the host's /dev/shm */
  if (r->shm && *r->shm) {
    add(&a, "--bind");
    add(&a, r->shm);
    add(&a, "/dev/shm");
  } else {
    add_num(&a, "--size", limits.tmp_size);
    add(&a, "--tmpfs");
    add(&a, "/dev/shm");
  }
  bind(&a, "--bind", r->cwd);
  for (i = 0; r->rw && r->rw[i]; i++)
    bind(&a, "--bind", r->rw[i]);
  if (r->cwd) {
    char real[4096];
    add(&a, "--chdir");
    add(&a, realpath(r->cwd, real) ? real : r->cwd);
  }
  confine_path(confine, sizeof(confine));
  if (confine[0])
    add_confine(&a, confine, r);
  add(&a, "--");
  add(&a, r->exe);
  for (i = 1; r->argv && r->argv[i]; i++)
    add(&a, r->argv[i]);
  if (a.oom) {
    for (i = 0; i < a.n; i++)
      free(a.v[i]);
    return NULL;
  }
  out = calloc((size_t)a.n + 1, sizeof(*out));
  if (!out) {
    for (i = 0; i < a.n; i++)
      free(a.v[i]);
    return NULL;
  }
  memcpy(out, a.v, (size_t)a.n * sizeof(*out));
  return out;
}

void sandbox_argv_free(char **argv)
{
  size_t i;

  for (i = 0; argv && argv[i]; i++)
    free(argv[i]);
  free(argv);
}
