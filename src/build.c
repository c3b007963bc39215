/* build.c - nvcc builds with an object cache, freeform builds; see
 * build.h. */
#define _GNU_SOURCE
#include "build.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "file.h"
#include "objcache.h"
#include "proc.h"
#include "toolchain.h"
#include "workload.h"

#define MAX_ARGS  256
#define MAX_UNITS 64
#define PATHN     2048
#define MAX_WRAP  16

void build_default_cache(char *out, size_t n)
{
  const char *c = getenv("CUCO_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"),
             *h = getenv("HOME");

  if (c && *c)
    snprintf(out, n, "%s", c);
  else if (x && *x)
    snprintf(out, n, "%s/cuco", x);
  else if (h && *h)
    snprintf(out, n, "%s/.cache/cuco", h);
  else
    snprintf(out, n, "/tmp/cuco-cache-%u", (unsigned)getuid());
}

static int has_runtime(const char *dir)
{
  char p[PATHN];

  snprintf(p, sizeof(p), "%s/runtime.h", dir);
  return access(p, R_OK) == 0;
}

int build_find_runtime(const struct config *cfg, const char *wl_dir, char *out,
                       size_t n, struct err *e)
{
  const char *c = cfg ? config_get(cfg, "build", "runtime_dir", NULL) : NULL;
  const char *env = getenv("CUCO_RUNTIME_DIR");
  char exe[PATHN], cand[PATHN];
  ssize_t len;

  if (env && *env)
    c = env;
  if (c) {
    if (!has_runtime(c))
      return err_set(e, ERR_NOTFOUND, "runtime dir %s has no runtime.h", c);
    snprintf(out, n, "%s", c);
    return 0;
  }
  snprintf(cand, sizeof(cand), "%s/../../runtime", wl_dir);
  if (has_runtime(cand)) {
    snprintf(out, n, "%s", cand);
    return 0;
  }
  len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len > 0) {
    char *slash;
    exe[len] = '\0';
    slash = strrchr(exe, '/');
    if (slash)
      *slash = '\0';
    /* beside cuco, one up (a build folder of the checkout: build/,
     * build-gpu/), or an installed share/ tree */
    static const char *const rel[] = {"runtime", "../runtime",
                                      "../share/cuco/runtime"};
    size_t i;
    for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
      snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]);
      if (has_runtime(cand)) {
        snprintf(out, n, "%s", cand);
        return 0;
      }
    }
  }
  return err_set(e, ERR_NOTFOUND,
                 "no runtime/ found (looked at $CUCO_RUNTIME_DIR, "
                 "%s/../../runtime, beside cuco, one folder up and in "
                 "../share/cuco); set [build] runtime_dir",
                 wl_dir);
}

/* Whether libdir has the unversioned libnccl.so that -lnccl needs. */
static int nccl_has_devlink(const char *libdir)
{
  char p[PATH_MAX];

  snprintf(p, sizeof(p), "%s/libnccl.so", libdir);
  return access(p, R_OK) == 0;
}

/* Whether libdir holds libnccl.so.2 (what the binary loads). */
static int nccl_found(const char *libdir)
{
  char p[PATH_MAX];

  snprintf(p, sizeof(p), "%s/libnccl.so.2", libdir);
  return access(p, R_OK) == 0;
}

/* After a link with --warn-unresolved-symbols (no NCCL library to link
 * against): every "undefined reference to `X'" the linker warned about
 * must be an NCCL symbol; anything else is a missing definition, the
 * link error a real link would have had.  0 or ERR_BUILD naming it. */
static int missing_non_nccl(const char *log, struct err *e)
{
  static const char key[] = "undefined reference to `";
  const char *p = log;

  while ((p = strstr(p, key))) {
    const char *name = p + sizeof(key) - 1;
    size_t len = strcspn(name, "'\n");
    p = name;
    if (len >= 4 && !strncmp(name, "nccl", 4))
      continue;
    return err_set(e, ERR_BUILD, "undefined reference to '%.*s'",
                   (int)(len > 160 ? 160 : len), name);
  }
  return 0;
}

static int ends_with(const char *s, const char *suf)
{
  size_t a = strlen(s), b = strlen(suf);

  return a >= b && !strcmp(s + a - b, suf);
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir ending in one of the suffixes; malloc'd strings. */
static int list_dir(const char *dir, const char *const *sufs, char **names,
                    int max, int *n, struct err *e)
{
  DIR *d = opendir(dir);
  struct dirent *de;

  *n = 0;
  if (!d)
    return err_set(e, ERR_IO, "%s: %s", dir, strerror(errno));
  while ((de = readdir(d))) {
    int k, match = 0;
    for (k = 0; sufs[k]; k++)
      match |= ends_with(de->d_name, sufs[k]);
    if (!match || de->d_name[0] == '.')
      continue;
    if (*n >= max) {
      closedir(d);
      return err_set(e, ERR_TOOBIG, "%s: more than %d sources", dir, max);
    }
    names[(*n)++] = strdup(de->d_name);
  }
  closedir(d);
  qsort(names, (size_t)*n, sizeof(char *), cmp_str);
  return 0;
}

static void free_names(char **names, int n)
{
  int i;

  for (i = 0; i < n; i++)
    free(names[i]);
}

/* First line of the log that looks like an error, for the one-line
 * message. */
static void first_error(const char *log, char *out, size_t n)
{
  static const char *const link_errs[] = {"multiple definition of",
                                          "undefined reference to", NULL};
  const char *p = log, *best = NULL;
  int i;

  /* the linker's own words, rather than collect2's "ld returned 1" */
  for (i = 0; link_errs[i] && !best; i++)
    if ((best = strstr(log, link_errs[i]))) {
      snprintf(out, n, "%.*s", (int)strcspn(best, "\n"), best);
      return;
    }
  while (p && *p) {
    size_t len = strcspn(p, "\n");
    if (memmem(p, len, "error", 5) || memmem(p, len, "Error", 5)) {
      best = p;
      break;
    }
    p += len;
    p += *p ? 1 : 0;
  }
  if (!best)
    best = log;
  snprintf(out, n, "%.*s", (int)strcspn(best, "\n"), best);
}

struct argv_b {
  const char *v[MAX_ARGS + 1];
  int n;
};

static void arg(struct argv_b *a, const char *s)
{
  if (a->n < MAX_ARGS)
    a->v[a->n++] = s;
  a->v[a->n] = NULL;
}

/* Run one tool command, appending its output to log.  It compiles a
 * candidate: sandboxed (proc.h), writable only the cache, the output's
 * folder and the work dir. */
static int run_tool(const struct build_opts *bo, const struct argv_b *a,
                    double timeout, struct buf *log, struct err *e)
{
  /* the user's GLIBC_TUNABLES reaches the compiler (malloc on huge pages,
   * glibc.malloc.hugetlb=1: ~8% off an nvcc compile where page faults are
   * dear; tests/run.sh sets it), though no candidate run sees it */
  const char *tun = getenv("GLIBC_TUNABLES");
  char tun_kv[512];
  const char *extra[2] = {NULL, NULL};
  char **env;
  struct proc_opts o = {0};
  struct proc_result r;
  char how[128], outdir[PATHN];
  const char *rw[4] = {bo->cache_dir, outdir, bo->work_dir, NULL};
  int rc, i;

  if (tun && *tun && strlen(tun) < sizeof(tun_kv) - 16) {
    snprintf(tun_kv, sizeof(tun_kv), "GLIBC_TUNABLES=%s", tun);
    extra[0] = tun_kv;
  }
  env = proc_env_new(proc_env_default_allow, extra);
  if (!env)
    return err_set(e, ERR_NOMEM, "out of memory");
  snprintf(outdir, sizeof(outdir), "%s", bo->out_bin ? bo->out_bin : ".");
  if (strrchr(outdir, '/'))
    *strrchr(outdir, '/') = '\0';
  else
    snprintf(outdir, sizeof(outdir), ".");
  if (!bo->work_dir)
    rw[2] = NULL;
  o.sandbox = PROC_SANDBOX_ISOLATED;
  o.rw_dirs = rw;
  o.argv = a->v;
  o.envp = (const char *const *)env;
  o.timeout_s = timeout > 0 ? timeout : 300;
  o.nice = bo->nice;
  o.out_max = BUILD_LOG_MAX;
  o.err_max = BUILD_LOG_MAX;
  (void)buf_puts(log, "$");
  for (i = 0; i < a->n; i++)
    (void)buf_printf(log, " %s", a->v[i]);
  (void)buf_putc(log, '\n');
  rc = proc_run(&o, &r, e);
  proc_env_free(env);
  if (rc)
    return rc;
  (void)buf_puts(log, buf_str(&r.out));
  (void)buf_puts(log, buf_str(&r.err));
  if (r.outcome == PROC_TIMEDOUT) {
    rc = err_set(e, ERR_TIMEOUT, "%s %s", a->v[0],
                 proc_describe(&r, how, sizeof(how)));
  } else if (!proc_ok(&r)) {
    char line[200];
    first_error(*buf_str(&r.err) ? buf_str(&r.err) : buf_str(&r.out), line,
                sizeof(line));
    rc = err_set(e, ERR_BUILD, "%s: %s", proc_describe(&r, how, sizeof(how)),
                 *line ? line : "(no output)");
  }
  proc_result_release(&r);
  return rc;
}

/* One translation unit: its object (beside the binary), its cache entry,
 * and its compile when missing. */
struct unit {
  const struct build_opts *o;
  char src[PATHN];
  char base[160];
  int is_impl;
  int is_rt;         /* a runtime unit */
  const char *rtdir; /* the runtime and workload folders, resolved: */
  const char *wldir; /* one compile, however the folders were named */
  const char *ident; /* the compiler in the cache key (objcache_ident) */
  char obj[PATHN + 64];
  struct argv_b a; /* the compile command */
  char archf[96], rti[PATHN], wli[PATHN], nci[PATHN];
  struct objcache cache;
  int need; /* not in the cache */
  int late; /* found in the cache after waiting for another compile */
  int rc;
  struct err err;
  struct buf log;
};

/* The nvcc command of a unit.  Runtime units do not see the workload's
 * folder (they never include from it), so every workload shares them. */
static void unit_argv(struct unit *u)
{
  const struct build_opts *o = u->o;
  const struct toolchain *tc = o->tc;
  struct argv_b *a = &u->a;
  int i;

  tc_arch_flag(tc, u->archf, sizeof(u->archf));
  snprintf(u->rti, sizeof(u->rti), "-I%s", u->rtdir);
  snprintf(u->wli, sizeof(u->wli), "-I%s", u->wldir);
  snprintf(u->nci, sizeof(u->nci), "-I%s", tc->nccl_include);
  a->n = 0;
  arg(a, tc->nvcc);
  arg(a, u->archf);
  arg(a, "-std=c++17");
  arg(a, "-O3");
  arg(a, u->rti);
  if (!u->is_rt)
    arg(a, u->wli);
  /* -I/usr/include would put a system directory ahead of the compiler's
   * own order (libstdc++'s #include_next breaks); it is searched anyway */
  if (tc->nccl_include[0] && strcmp(tc->nccl_include, "/usr/include") &&
      strcmp(tc->nccl_include, "/usr/local/include"))
    arg(a, u->nci);
  if (o->vranks > 0)
    arg(a, "-DCUCO_VRANKS");
  if (u->is_impl)
    for (i = 0; i < o->ndflags; i++)
      arg(a, o->dflags[i]);
  arg(a, "-c");
  arg(a, u->src);
  arg(a, "-o");
  arg(a, u->obj);
}

/* Open the unit's cache entry and take the object from it when there;
 * u->need when it is not.  The key holds the source's name and text, not
 * its folder: a candidate lands in a fresh work dir each time, and its
 * object must still be found again. */
static int unit_key(struct unit *u, struct err *e)
{
  const char *kv[MAX_ARGS + 1];
  int i, k = 0, rc;

  unit_argv(u);
  /* as cuco cc keys the same command (cc.c): the compiler by its ident,
   * so `make cuda`'s compiles through cuco cc are these */
  kv[k++] = "";
  for (i = 1; i < u->a.n - 2; i++) /* less "-o OBJ" */
    kv[k++] = u->a.v[i];
  if ((rc = objcache_open(&u->cache, u->o->cache_dir, u->ident, kv, k, u->src,
                          OBJCACHE_RELOCATE, e)))
    return rc;
  rc = objcache_get(&u->cache, u->obj, NULL, NULL, e);
  if (rc < 0)
    return rc;
  u->need = rc == 0;
  return 0;
}

/* nvcc -c -MD (the list of inputs for the cache), then the object into
 * the cache.  One process compiles a key at a time; who waited for it
 * takes the other's object. */
static void unit_compile(struct unit *u)
{
  const struct build_opts *o = u->o;
  const char *name = strrchr(u->src, '/') ? strrchr(u->src, '/') + 1 : u->src;
  char dep[OBJCACHE_PATH + 64];
  struct err pe;
  struct timespec t0, t1;
  int locked = objcache_lock(&u->cache, &pe) == 0;

  if (objcache_get(&u->cache, u->obj, NULL, NULL, &pe) == 1) {
    u->late = 1;
    goto out;
  }
  objcache_tmp(&u->cache, ".d", dep, sizeof(dep));
  arg(&u->a, "-MD");
  arg(&u->a, "-MF");
  arg(&u->a, dep);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  u->rc = run_tool(o, &u->a, o->timeout_s, &u->log, &u->err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  objcache_log(u->rc ? "fail" : "miss",
               (double)(t1.tv_sec - t0.tv_sec) +
                   (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
               u->a.n - 3, u->a.v); /* the command, less -MD -MF DEP */
  if (u->rc == 0 &&
      objcache_put(&u->cache, dep, u->obj, NULL, 0, NULL, 0, &pe))
    (void)buf_printf(&u->log, "# %s: not cached: %s\n", name, pe.msg);
  unlink(dep);
  if (u->rc == ERR_BUILD || u->rc == ERR_TIMEOUT)
    err_wrap(&u->err, "%s", name);
out:
  if (locked)
    objcache_unlock(&u->cache);
}

struct pool {
  struct unit *units;
  int n;
  int next; /* taken with __atomic_fetch_add */
};

static void *pool_worker(void *arg)
{
  struct pool *p = arg;
  int i;

  while ((i = __atomic_fetch_add(&p->next, 1, __ATOMIC_SEQ_CST)) < p->n)
    if (p->units[i].need)
      unit_compile(&p->units[i]);
  return NULL;
}

/* Compile the missing units, as many at once as there are CPUs. */
static void compile_missing(struct unit *units, int n)
{
  struct pool p = {units, n, 0};
  pthread_t th[16];
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int need = 0, nt, i, started = 0;

  for (i = 0; i < n; i++)
    need += units[i].need;
  nt = need < ncpu ? need : (int)ncpu;
  if (nt > 16)
    nt = 16;
  for (i = 1; i < nt; i++)
    if (pthread_create(&th[started], NULL, pool_worker, &p) == 0)
      started++;
  pool_worker(&p); /* this thread works too */
  for (i = 0; i < started; i++)
    pthread_join(th[i], NULL);
}

/* The runtime's link.wrap: the calls its code stands between (one symbol a
 * line, '#' comments; runtime/rt_streams.cu says why), as linker words in
 * W.  A runtime without the file wraps nothing.  Count or ERR_CONFIG. */
static int wrap_words(const char *rtdir, char w[MAX_WRAP][128], struct err *e)
{
  char path[PATH_MAX + 16], *text, *line, *save = NULL;
  struct err fe = {0};
  int n = 0, rc = 0;

  snprintf(path, sizeof(path), "%s/link.wrap", rtdir);
  if (access(path, F_OK) != 0)
    return 0;
  if (!(text = file_read_text(path, 16384, &fe)))
    return err_set(e, ERR_CONFIG, "%s: %s", path, fe.msg);
  for (line = strtok_r(text, "\n", &save); line && !rc;
       line = strtok_r(NULL, "\n", &save)) {
    size_t len = strcspn(line, "#");
    while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
      len--;
    if (!len)
      continue;
    if (strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123"
                     "456789_") != len ||
        len > 96 || n == MAX_WRAP)
      rc = err_set(e, ERR_CONFIG, "%s: '%.*s': %s", path, (int)len, line,
                   n == MAX_WRAP ? "more than 16 symbols"
                                 : "not a symbol name");
    else
      snprintf(w[n++], 128, "-Xlinker=--wrap=%.*s", (int)len, line);
  }
  free(text);
  return rc ? rc : n;
}

static int build_nvcc(const struct build_opts *o, struct build_result *r,
                      struct buf *log, struct err *e)
{
  static const char *const cu[] = {".cu", NULL};
  const struct toolchain *tc = o->tc;
  char *units[MAX_UNITS];
  struct unit *jobs = NULL;
  char archf[96], ncl[PATHN], cul[PATHN], rp[PATHN];
  char libs[WORKLOAD_MAX_LIBS][80];
  char objdir[PATHN], rtdir[PATH_MAX], wldir[PATH_MAX], rp_impl[PATH_MAX];
  char wrap[MAX_WRAP][128];
  struct argv_b a = {{0}, 0};
  struct buf ident = BUF_INIT(80 * 1024);
  int nunits = 0, nobj = 0, i, rc, nolib, nwrap;

  if (!tc || !tc->nvcc[0])
    return err_set(e, ERR_PROC,
                   "nvcc not found (set CUCO_NVCC or [build] "
                   "nvcc; see cuco doctor)");
  if (!tc->nccl_include[0])
    return err_set(e, ERR_PROC,
                   "NCCL headers not found (set "
                   "CUCO_NCCL_HOME; see cuco doctor)");
  if (!realpath(o->runtime_dir, rtdir))
    snprintf(rtdir, sizeof(rtdir), "%s", o->runtime_dir);
  if (!realpath(o->wl->dir, wldir))
    snprintf(wldir, sizeof(wldir), "%s", o->wl->dir);
  if ((nwrap = wrap_words(rtdir, wrap, e)) < 0)
    return nwrap;
  snprintf(objdir, sizeof(objdir), "%s", o->out_bin);
  if (strrchr(objdir, '/'))
    *strrchr(objdir, '/') = '\0';
  else
    snprintf(objdir, sizeof(objdir), ".");
  if ((rc = list_dir(o->runtime_dir, cu, units, MAX_UNITS, &nunits, e)))
    goto out;
  jobs = calloc((size_t)nunits + 2, sizeof(*jobs));
  if (!jobs) {
    rc = err_set(e, ERR_NOMEM, "out of memory");
    goto out;
  }
  for (i = 0; i < nunits; i++) {
    snprintf(jobs[i].src, sizeof(jobs[i].src), "%s/%s", rtdir, units[i]);
    snprintf(jobs[i].base, sizeof(jobs[i].base), "rt_%.*s",
             (int)(strlen(units[i]) - 3), units[i]);
    jobs[i].is_rt = 1;
  }
  snprintf(jobs[nunits].src, sizeof(jobs[0].src), "%s/%s", wldir,
           o->wl->reference);
  snprintf(jobs[nunits].base, sizeof(jobs[0].base), "%s_ref", o->wl->name);
  /* absolute, as every other path of the command: then its cache key
   * holds no working folder (objcache.h, OBJCACHE_RELOCATE) */
  if (!realpath(o->impl_path, rp_impl) || strlen(rp_impl) >= PATHN)
    snprintf(rp_impl, sizeof(rp_impl), "%s", o->impl_path);
  snprintf(jobs[nunits + 1].src, sizeof(jobs[0].src), "%s", rp_impl);
  snprintf(jobs[nunits + 1].base, sizeof(jobs[0].base), "%s_impl",
           o->wl->name);
  jobs[nunits + 1].is_impl = 1;
  nobj = nunits + 2;
  /* a compiler whose --version fails is named by its path alone: its
   * compiles then say what is wrong with it, not this */
  if (objcache_ident(tc->nvcc, &ident)) {
    buf_reset(&ident);
    (void)buf_printf(&ident, "%s\n(no --version)", tc->nvcc);
  }
  for (i = 0; i < nobj; i++) {
    jobs[i].o = o;
    jobs[i].rtdir = rtdir;
    jobs[i].wldir = wldir;
    jobs[i].ident = buf_str(&ident);
    buf_init(&jobs[i].log, BUILD_LOG_MAX);
    snprintf(jobs[i].obj, sizeof(jobs[i].obj), "%s/%s.o", objdir,
             jobs[i].base);
    if ((rc = unit_key(&jobs[i], e)))
      goto out;
  }
  compile_missing(jobs, nobj);
  for (i = 0; i < nobj; i++) {
    const char *name = strrchr(jobs[i].src, '/')
                           ? strrchr(jobs[i].src, '/') + 1
                           : jobs[i].src;
    if (!jobs[i].need || jobs[i].late) {
      r->cached++;
      objcache_log("hit", 0, jobs[i].a.n, jobs[i].a.v);
      (void)buf_printf(log, "# %s: cached %s\n", name, jobs[i].obj);
      continue;
    }
    (void)buf_puts(log, buf_str(&jobs[i].log));
    if (jobs[i].rc == 0)
      r->compiled++;
    else if (rc == 0) {
      rc = jobs[i].rc;
      *e = jobs[i].err;
    }
  }
  if (rc)
    goto out;
  snprintf(r->impl_obj, sizeof(r->impl_obj), "%s", jobs[nunits + 1].obj);
  nolib = !tc->nccl_lib[0] || !nccl_found(tc->nccl_lib);
  if (nolib && o->compile_only)
    snprintf(r->link_note, sizeof(r->link_note),
             "no libnccl.so.2 found: linked with NCCL symbols unresolved, "
             "other missing and duplicate definitions checked");
  else
    snprintf(r->link_note, sizeof(r->link_note), "linked against %s%s",
             nolib ? "-lnccl" : tc->nccl_lib, nolib ? "" : "/libnccl.so.2");
  tc_arch_flag(tc, archf, sizeof(archf));
  arg(&a, tc->nvcc);
  arg(&a, archf);
  for (i = 0; i < nobj; i++)
    arg(&a, jobs[i].obj);
  arg(&a, "-o");
  arg(&a, o->out_bin);
  if (tc->nccl_lib[0]) {
    snprintf(ncl, sizeof(ncl), "-L%s", tc->nccl_lib);
    snprintf(rp, sizeof(rp), "-Xlinker=-rpath,%s", tc->nccl_lib);
    arg(&a, ncl);
    arg(&a, rp);
  }
  /* The implementation's stream-creating calls go through the runtime
   * (runtime/rt_streams.cu), so a perturbed step can start its streams
   * late; the runtime's own objects are wrapped too and not recorded. */
  for (i = 0; i < nwrap; i++)
    arg(&a, wrap[i]);
  /* The nvidia-nccl wheel ships libnccl.so.2 without the unversioned
   * link that -lnccl needs (seen on the H200 machines). */
  if (nolib && o->compile_only)
    arg(&a, "-Xlinker=--warn-unresolved-symbols");
  else if (tc->nccl_lib[0] && !nccl_has_devlink(tc->nccl_lib))
    arg(&a, "-Xlinker=-l:libnccl.so.2");
  else
    arg(&a, "-lnccl");
  if (tc->cuda_lib[0]) {
    snprintf(cul, sizeof(cul), "-L%s", tc->cuda_lib);
    arg(&a, cul);
  }
  for (i = 0; i < o->wl->nlibs; i++) {
    snprintf(libs[i], sizeof(libs[i]), "-l%s", o->wl->libs[i]);
    arg(&a, libs[i]);
  }
  {
    size_t from = log->len;
    rc = run_tool(o, &a, o->timeout_s, log, e);
    if (rc == 0 && nolib && o->compile_only)
      rc = missing_non_nccl(buf_str(log) + from, e);
  }
  if (rc == ERR_BUILD)
    err_wrap(e, "link");
out:
  for (i = 0; jobs && i < nobj; i++)
    buf_release(&jobs[i].log);
  free(jobs);
  free_names(units, nunits);
  buf_release(&ident);
  return rc;
}

/* The freeform commands' placeholders: {flags} alone is a list. */
static int flags_token(void *ud, const char *name, size_t len,
                       struct tmpl_argv *a)
{
  const struct build_vars *v = ud;
  int i;

  if (len != 5 || strncmp(name, "flags", 5))
    return 0;
  for (i = 0; i < v->nflags; i++)
    if (tmpl_push(a, v->flags[i]))
      return -1;
  return 1;
}

static const char *var_of(void *ud, const char *name, size_t len, char *tmp,
                          size_t tmpn)
{
  static const char *const names[] = {"src",  "bin",  "dir",  "work", "params",
                                      "size", "mode", "seed", "out",  NULL};
  const struct build_vars *v = ud;
  const char *vals[9];
  int i;

  (void)tmp;
  (void)tmpn;
  vals[0] = v->src;
  vals[1] = v->bin;
  vals[2] = v->dir;
  vals[3] = v->work;
  vals[4] = v->params;
  vals[5] = v->size;
  vals[6] = v->mode;
  vals[7] = v->seed;
  vals[8] = v->out;
  for (i = 0; names[i]; i++)
    if (strlen(names[i]) == len && !strncmp(names[i], name, len))
      return vals[i] ? vals[i] : "";
  return NULL;
}

char **build_template_argv(const char *tmpl, const struct build_vars *v,
                           struct err *e)
{
  const struct tmpl_hooks h = {
      "command",
      "known: {src} {bin} {dir} {work} {params} {size} {mode} {seed} {out}; "
      "alone: {flags}",
      flags_token, var_of, (void *)v};

  return tmpl_expand(tmpl, &h, e);
}

static int build_freeform(const struct build_opts *o, struct build_result *r,
                          struct buf *log, struct err *e)
{
  struct build_vars v = {0};
  struct argv_b a = {{0}, 0};
  char **argv;
  int rc, i;

  (void)r;
  v.src = o->impl_path;
  v.bin = o->out_bin;
  v.dir = o->wl->dir;
  v.work = o->work_dir;
  v.flags = o->dflags;
  v.nflags = o->ndflags;
  argv = build_template_argv(o->wl->ff_build, &v, e);
  if (!argv)
    return err_wrap(e, "%s [freeform] build", o->wl->ini_path);
  for (i = 0; argv[i]; i++)
    arg(&a, argv[i]);
  rc = run_tool(o, &a, o->timeout_s, log, e);
  tmpl_argv_free(argv);
  if (rc == 0 && !o->compile_only && access(o->out_bin, X_OK))
    rc = err_set(e, ERR_BUILD, "the build command made no executable {bin}");
  return rc;
}

int build_run(const struct build_opts *o, struct build_result *r,
              struct err *e)
{
  struct buf log = BUF_INIT(BUILD_LOG_MAX);
  struct timespec t0, t1;
  int rc;

  memset(r, 0, sizeof(*r));
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (o->wl->kind == WORKLOAD_FREEFORM)
    rc = build_freeform(o, r, &log, e);
  else
    rc = build_nvcc(o, r, &log, e);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  r->wall_s = (double)(t1.tv_sec - t0.tv_sec) +
              (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  r->log = buf_detach(&log, NULL);
  return rc;
}

void build_result_release(struct build_result *r)
{
  if (!r)
    return;
  free(r->log);
  r->log = NULL;
}
