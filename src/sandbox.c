/* sandbox.c - bubblewrap for candidate children; see sandbox.h. */
#define _GNU_SOURCE
#include "sandbox.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "proc.h"

#define SB_ARGS_MAX 256

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static enum sandbox_mode mode = SANDBOX_AUTO;
static int probed;
static struct sandbox_state st;

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
  st.kind = SANDBOX_KIND_SUBREAPER; /* until bwrap is seen to work */
  if (mode == SANDBOX_NONE) {
    st.kind = SANDBOX_KIND_SUBREAPER;
    snprintf(st.why, sizeof(st.why), "[sandbox] mode is none");
    return;
  }
  if (!proc_which("bwrap", NULL, st.bwrap, sizeof(st.bwrap))) {
    snprintf(st.why, sizeof(st.why),
             "bubblewrap (bwrap) is not installed (apt-get install "
             "bubblewrap)");
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
    argv = sandbox_argv(truep, targv, NULL, NULL, 0);
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
               "%s works here (mode %s): namespaces, no capabilities, no "
               "network, fresh /proc, read-only /, empty /tmp /root /home "
               "/var /run",
               st.bwrap, sandbox_mode_name(mode));
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
  if (mode == SANDBOX_BWRAP) {
    st.kind = SANDBOX_KIND_REFUSED;
    return;
  }
  st.kind = SANDBOX_KIND_SUBREAPER;
  /* Said once per process, so a fallback is never silent. */
  log_warn("sandbox: %s; candidates run without namespaces, contained by a "
           "subreaper only ([sandbox] mode = none hides this)",
           st.why);
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

/* What the sandbox hides behind an empty tmpfs (issue 47): the private
 * /tmp, and the folders where users, services and other runs keep their
 * files.  The rest of / stays bound read-only (the toolchain, libraries,
 * CUDA and NCCL under /usr, /opt, /etc). */
static const char *const hidden[] = {"/tmp", "/root",  "/home", "/var", "/run",
                                     "/mnt", "/media", "/srv",  NULL};

static const char *under_hidden(const char *p)
{
  for (int i = 0; hidden[i]; i++) {
    size_t n = strlen(hidden[i]);
    if (!strncmp(p, hidden[i], n) && (p[n] == '/' || !p[n]))
      return hidden[i];
  }
  return NULL;
}

/* The hidden folders hide what the command reads from them: the program
 * itself, its sources, its -I/-L folders (a toolchain or a test's fake nvcc
 * under /tmp, a workload in a home folder) and the library folders of
 * LD_LIBRARY_PATH (NCCL from a Python package).  Bind each such path
 * read-only, before the writable binds (a later bind of a folder inside it
 * stays writable); never a whole hidden folder. */
static void bind_hidden_one(struct sb_args *a, const char *p)
{
  char dir[4096];
  struct stat sb;
  const char *h;

  if (!p || p[0] != '/' || !(h = under_hidden(p)))
    return;
  snprintf(dir, sizeof(dir), "%s", p);
  if (stat(dir, &sb) != 0)
    return;
  if (!S_ISDIR(sb.st_mode)) {
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
      return;
    *slash = '\0';
  }
  if (!strcmp(dir, h))
    return; /* never the whole of it */
  bind(a, "--ro-bind", dir);
}

static void bind_hidden_reads(struct sb_args *a, const char *exe,
                              const char *const *argv)
{
  char here[4096], lp[8192], real[4096];
  int i;

  /* where cuco runs: relative paths (a workload '.') resolve there */
  if (getcwd(here, sizeof(here)))
    bind_hidden_one(a, here);
  for (i = -1; argv && (i < 0 || argv[i]); i++) {
    const char *p = i < 0 ? exe : argv[i], *q = NULL;
    if (!p)
      continue;
    /* "-I/x", "-Xlinker=-rpath,/x", "/x": the first absolute path in it */
    for (const char *c = p; *c && !q; c++)
      if (*c == '/' && (c == p || c[-1] == 'I' || c[-1] == 'L' ||
                        c[-1] == ',' || c[-1] == '='))
        q = c;
    if (!q && p[0] != '-' && realpath(p, real))
      q = real; /* a relative path */
    bind_hidden_one(a, q);
  }
  snprintf(lp, sizeof(lp), "%s",
           getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : "");
  for (char *save = NULL, *t = strtok_r(lp, ":", &save); t;
       t = strtok_r(NULL, ":", &save))
    bind_hidden_one(a, t);
}

void sandbox_argv_free(char **argv)
{
  size_t i;

  for (i = 0; argv && argv[i]; i++)
    free(argv[i]);
  free(argv);
}

char **sandbox_argv(const char *exe, const char *const *argv, const char *cwd,
                    const char *const *rw, int share_net)
{
  struct sb_args a = {{0}, 0, 0};
  char **out;
  DIR *d;
  int i;

  add(&a, st.bwrap[0] ? st.bwrap : "bwrap");
  add(&a, "--unshare-all");
  if (share_net) {
    add(&a, "--share-net");
  }
  add(&a, "--die-with-parent");
  add(&a, "--new-session");
  add(&a, "--cap-drop"); /* none of root's capabilities inside */
  add(&a, "ALL");
  add(&a, "--ro-bind");
  add(&a, "/");
  add(&a, "/");
  add(&a, "--dev");
  add(&a, "/dev");
  add(&a, "--proc");
  add(&a, "/proc");
  for (i = 0; hidden[i]; i++) {
    struct stat sb;
    if (stat(hidden[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
      add(&a, "--tmpfs");
      add(&a, hidden[i]);
    }
  }
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
  bind_hidden_reads(&a, exe, argv);
  if (share_net)
    bind(&a, "--bind", "/dev/shm"); /* NCCL's SHM transport */
  bind(&a, "--bind", getenv("TMPDIR"));
  bind(&a, "--bind", cwd);
  for (i = 0; rw && rw[i]; i++)
    bind(&a, "--bind", rw[i]);
  if (cwd) {
    char real[4096];
    add(&a, "--chdir");
    add(&a, realpath(cwd, real) ? real : cwd);
  }
  add(&a, "--");
  add(&a, exe);
  for (i = 1; argv && argv[i]; i++)
    add(&a, argv[i]);
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
