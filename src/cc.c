/* cc.c - `cuco cc`: run one compiler command through the object cache
 * (objcache.h), as ccache does: a repeated compile of the same arguments
 * over the same inputs replays the compiler's output and exit status 0 and
 * writes the same object, without running the compiler. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "build.h"
#include "buf.h"
#include "cmd.h"
#include "objcache.h"
#include "proc.h"

#define CC_OUT_MAX (4u << 20)

extern char **environ;

/* Where the compile writes: the value of -o/--output-file; NULL when the
 * command is not one cacheable compile (no output, dependency or
 * preprocess-only flags of its own, input from stdin). */
static const char *output_of(int argc, char **argv, int *at)
{
  const char *o = NULL;
  int i;

  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if ((!strcmp(a, "-o") || !strcmp(a, "--output-file")) && i + 1 < argc) {
      if (o)
        return NULL;
      o = argv[i + 1];
      *at = i++;
    } else if (!strncmp(a, "-M", 2) || !strncmp(a, "--generate-dep", 14) ||
               !strcmp(a, "-E") || !strcmp(a, "--preprocess") ||
               !strcmp(a, "-") || !strncmp(a, "-o", 2) || !strcmp(a, "-run") ||
               !strcmp(a, "--run")) {
      return NULL;
    }
  }
  return o;
}

/* The source file of the command: its one word (not an option, not the
 * output) that names an existing C, C++ or CUDA file.  NULL when there is
 * none or more than one: then the key holds every word as written. */
static const char *source_of(int argc, char **argv, int out_at)
{
  static const char *const ext[] = {".cu", ".c", ".cc", ".cpp", ".cxx", NULL};
  const char *found = NULL;
  int i, k;

  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *dot = strrchr(argv[i], '.');
    struct stat st;
    if (i == out_at || i == out_at + 1 || a[0] == '-' || !dot)
      continue;
    for (k = 0; ext[k] && strcmp(dot, ext[k]); k++)
      ;
    if (!ext[k] || stat(a, &st) || !S_ISREG(st.st_mode))
      continue;
    if (found)
      return NULL;
    found = a;
  }
  return found;
}

static int run_compiler(const char *const *argv, struct proc_result *r,
                        struct err *e)
{
  struct proc_opts o = {0};

  o.argv = argv;
  o.envp = (const char *const *)environ;
  o.out_max = CC_OUT_MAX;
  o.err_max = CC_OUT_MAX;
  return proc_run(&o, r, e);
}

static int exit_of(const struct proc_result *r)
{
  if (r->outcome == PROC_EXITED)
    return r->exit_code;
  return 128 + (r->term_signal > 0 ? r->term_signal : 1);
}

static double now_s(void)
{
  struct timespec t;

  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int cmd_cc(struct cmd_ctx *ctx, int argc, char **argv)
{
  const char *dir_opt = NULL, *outp;
  char dir[4096], dep[OBJCACHE_PATH + 64];
  struct buf id = BUF_INIT(80 * 1024), bo = BUF_INIT(CC_OUT_MAX),
             be = BUF_INIT(CC_OUT_MAX);
  struct proc_result r;
  struct objcache c;
  struct err e = {0, ""};
  const char **kargv = NULL, **run = NULL;
  double t0 = now_s();
  int i, at = -1, k, rc, status = CMD_FAIL, locked = 0;

  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--"))
      break;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
      return cmd_usage(ctx, 1);
    if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc)
      dir_opt = argv[++i];
    else if (argv[i][0] == '-')
      return cmd_bad_usage(ctx, "unrecognized option '%s'", argv[i]);
    else
      break;
  }
  if (i < argc && !strcmp(argv[i], "--"))
    i++;
  if (i >= argc)
    return cmd_bad_usage(ctx, "no compiler command given");
  argv += i;
  argc -= i;
  if (dir_opt)
    snprintf(dir, sizeof(dir), "%s", dir_opt);
  else
    build_default_cache(dir, sizeof(dir));
  kargv = calloc((size_t)argc + 4, sizeof(*kargv));
  run = calloc((size_t)argc + 4, sizeof(*run));
  if (!kargv || !run) {
    cmd_error(ctx, "out of memory");
    goto out;
  }
  outp = output_of(argc, argv, &at);
  if (!outp || objcache_ident(argv[0], &id))
    goto uncached; /* not one compile we can key */
  /* the compiler by its resolved path (in the ident): "nvcc" and
   * "/usr/local/cuda/bin/nvcc" are one compiler */
  kargv[0] = "";
  for (i = 1, k = 1; i < argc; i++)
    if (i != at && i != at + 1)
      kargv[k++] = argv[i];
  /* keyed as cuco eval's builds key theirs (build.c): the source by its
   * name and text, the -I folders by their place when every path is
   * absolute, so `make cuda` and cuco eval share their compiles */
  if ((rc = objcache_open(&c, dir, buf_str(&id), kargv, k,
                          source_of(argc, argv, at), OBJCACHE_RELOCATE, &e))) {
    /* a cache we cannot use must not fail the compile */
    fprintf(stderr, "cuco cc: object cache off: %s\n", e.msg);
    goto uncached;
  }
  if ((rc = objcache_get(&c, outp, &bo, &be, &e)) == 0) {
    if (objcache_lock(&c, &e) == 0)
      locked = 1;
    /* another process may have compiled it while we waited */
    rc = objcache_get(&c, outp, &bo, &be, &e);
  }
  if (rc < 0) {
    cmd_error(ctx, "object cache: %s", e.msg);
    goto out_unlock;
  }
  if (rc == 1) {
    fputs(buf_str(&bo), stdout);
    fputs(buf_str(&be), stderr);
    status = CMD_OK;
    objcache_log("hit", now_s() - t0, argc, (const char *const *)argv);
    goto out_unlock;
  }
  objcache_tmp(&c, ".d", dep, sizeof(dep));
  for (i = 0; i < argc; i++)
    run[i] = argv[i];
  run[argc] = "-MD";
  run[argc + 1] = "-MF";
  run[argc + 2] = dep;
  if (run_compiler(run, &r, &e)) {
    cmd_error(ctx, "%s: %s", argv[0], e.msg);
    goto out_tmp;
  }
  fputs(buf_str(&r.out), stdout);
  fputs(buf_str(&r.err), stderr);
  status = exit_of(&r);
  if (status == 0 && !r.out.toobig && !r.err.toobig &&
      objcache_put(&c, dep, outp, buf_str(&r.out), r.out.len, buf_str(&r.err),
                   r.err.len, &e))
    fprintf(stderr, "cuco cc: not cached: %s\n", e.msg);
  proc_result_release(&r);
  objcache_log(status == 0 ? "miss" : "fail", now_s() - t0, argc,
               (const char *const *)argv);
out_tmp:
  unlink(dep);
out_unlock:
  if (locked)
    objcache_unlock(&c);
  goto out;
uncached:
  for (i = 0; i < argc; i++)
    run[i] = argv[i];
  run[argc] = NULL;
  if (run_compiler(run, &r, &e)) {
    cmd_error(ctx, "%s: %s", argv[0], e.msg);
    goto out;
  }
  fputs(buf_str(&r.out), stdout);
  fputs(buf_str(&r.err), stderr);
  status = exit_of(&r);
  proc_result_release(&r);
  objcache_log("uncached", now_s() - t0, argc, (const char *const *)argv);
out:
  free(kargv);
  free(run);
  buf_release(&id);
  buf_release(&bo);
  buf_release(&be);
  return status;
}
