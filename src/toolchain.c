/* toolchain.c - probe nvcc, CUDA and NCCL; see toolchain.h. */
#define _GNU_SOURCE
#include "toolchain.h"

#include <ctype.h>
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "proc.h"

static int path_exists(const char *dir, const char *file)
{
  char p[TC_PATH * 2];

  snprintf(p, sizeof(p), "%s/%s", dir, file);
  return access(p, R_OK) == 0;
}

static void copy(char *dst, const char *src)
{
  snprintf(dst, TC_PATH, "%s", src);
}

/* Run a command and copy its trimmed stdout into out; 0 on exit 0. */
static int capture(const char *const *argv, char *out, size_t n)
{
  int ok;
  char *s = proc_capture(argv, 64 * 1024, &ok);

  if (!s)
    return ERR_PROC;
  snprintf(out, n, "%s", s);
  free(s);
  return ok ? 0 : ERR_PROC;
}

static int header_version(const char *incdir)
{
  char p[TC_PATH * 2], line[256];
  int major = -1, minor = -1, patch = -1;
  FILE *f;

  snprintf(p, sizeof(p), "%s/nccl.h", incdir);
  f = fopen(p, "r");
  if (!f)
    return 0;
  while (fgets(line, sizeof(line), f)) {
    sscanf(line, "#define NCCL_MAJOR %d", &major);
    sscanf(line, "#define NCCL_MINOR %d", &minor);
    sscanf(line, "#define NCCL_PATCH %d", &patch);
  }
  fclose(f);
  if (major < 0 || minor < 0 || patch < 0)
    return 0;
  /* NCCL_VERSION(X,Y,Z) for 2.9+: X*10000 + Y*100 + Z */
  return major * 10000 + minor * 100 + patch;
}

static int library_version(const char *libdir)
{
  char p[TC_PATH * 2];
  int (*get)(int *);
  void *h;
  int v = 0;

  snprintf(p, sizeof(p), "%s/libnccl.so.2", libdir);
  h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return 0;
  *(void **)&get = dlsym(h, "ncclGetVersion");
  if (!get || get(&v) != 0)
    v = 0;
  dlclose(h);
  return v;
}

/* dir := the canonical form of path (symlinks and ".." resolved); 0 on
 * success.  Canonical paths keep the doctor's report and the build's cache
 * key stable however nvcc was reached. */
static int canonical(const char *path, char *dir)
{
  char *r = realpath(path, NULL);

  if (!r)
    return -1;
  copy(dir, r);
  free(r);
  return 0;
}

/* Ask nvcc itself where <nccl.h> is: `nvcc -M` of a one-line file prints
 * the headers it resolved, with nvcc's whole search path (its own target
 * include directory, CPATH, /usr/include...).  This finds NCCL wherever the
 * compiler would, which is what the build needs.  0 and the directory, or
 * -1 when nvcc cannot see nccl.h. */
static int nvcc_nccl_include(const char *nvcc, char *dir)
{
  const char *t = getenv("TMPDIR");
  char src[TC_PATH], *out, *p, *tok;
  int fd, ok, rc = -1;

  snprintf(src, sizeof(src), "%s/cuco-nccl-probe.XXXXXX",
           t && *t ? t : "/tmp");
  fd = mkstemp(src);
  if (fd < 0)
    return -1;
  if (write(fd, "#include <nccl.h>\n", 18) != 18) {
    close(fd);
    unlink(src);
    return -1;
  }
  close(fd);
  {
    const char *const argv[] = {nvcc, "-M", "-x", "cu", src, NULL};
    out = proc_capture(argv, 256 * 1024, &ok);
  }
  unlink(src);
  if (!out)
    return -1;
  /* make's dependency syntax: backslash-space is a space in a path, a
   * backslash-newline continues the line, whitespace separates paths */
  for (p = out, tok = out; ok && rc && *p; tok = p) {
    char *w = tok;
    size_t n;
    while (*p && !isspace((unsigned char)*p)) {
      if (p[0] == '\\' && p[1] == ' ')
        p++;
      else if (p[0] == '\\' && (p[1] == '\n' || p[1] == '\r' || !p[1]))
        break;
      *w++ = *p++;
    }
    if (*p == '\\')
      p++;
    if (*p)
      p++;
    *w = '\0';
    n = strlen(tok);
    if (n > 7 && !strcmp(tok + n - 7, "/nccl.h")) {
      tok[n - 7] = '\0';
      rc = canonical(tok, dir);
    }
  }
  free(out);
  return rc;
}

/* The directory of the libnccl.so.2 the dynamic loader would pick (its
 * default paths, LD_LIBRARY_PATH, ld.so.cache); 0 and the directory. */
static int loader_nccl_lib(char *dir)
{
  void *h = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_LOCAL);
  void *sym;
  Dl_info info;
  int rc = -1;

  if (!h)
    return -1;
  sym = dlsym(h, "ncclGetVersion");
  if (sym && dladdr(sym, &info) && info.dli_fname) {
    char tmp[TC_PATH];
    copy(tmp, info.dli_fname);
    rc = canonical(dirname(tmp), dir);
  }
  dlclose(h);
  return rc;
}

/* The library when it is not where the headers' source put it: beside the
 * headers (../lib64, ../lib), beside CUDA's libraries, then (unless a
 * configured nccl_home said otherwise) wherever the loader finds it. */
static void find_nccl_lib(struct toolchain *tc, int configured)
{
  char cand[2][TC_PATH + 16], dir[TC_PATH];
  int i;

  tc->nccl_lib[0] = '\0';
  snprintf(cand[0], sizeof(cand[0]), "%s/../lib64", tc->nccl_include);
  snprintf(cand[1], sizeof(cand[1]), "%s/../lib", tc->nccl_include);
  for (i = 0; i < 2 && tc->nccl_include[0] && !configured; i++)
    if (path_exists(cand[i], "libnccl.so.2") && canonical(cand[i], dir) == 0) {
      copy(tc->nccl_lib, dir);
      return;
    }
  if (tc->cuda_lib[0] && path_exists(tc->cuda_lib, "libnccl.so.2"))
    copy(tc->nccl_lib, tc->cuda_lib);
  else if (!configured && loader_nccl_lib(dir) == 0)
    copy(tc->nccl_lib, dir);
}

/* NCCL's headers and library, first found wins: [build] nccl_home
 * (CUCO_NCCL_HOME), the nvidia-nccl Python package, NCCL_HOME, next to
 * nvcc, then wherever nvcc and the loader find them. */
static void find_nccl(const struct config *cfg, struct toolchain *tc)
{
  const char *home = config_get(cfg, "build", "nccl_home", NULL);
  const char *env_home = getenv("NCCL_HOME");
  char dir[TC_PATH];
  const char *const py[] = {
      "python3", "-c",
      "import nvidia.nccl,os;print(list(nvidia.nccl.__path__)[0])", NULL};

  if (home) { /* configured: taken as is, never second-guessed */
    snprintf(tc->nccl_include, TC_PATH, "%s/include", home);
    snprintf(tc->nccl_lib, TC_PATH, "%s/lib", home);
  } else if (capture(py, dir, sizeof(dir)) == 0 &&
             path_exists(dir, "include/nccl.h")) {
    snprintf(tc->nccl_include, TC_PATH, "%s/include", dir);
    snprintf(tc->nccl_lib, TC_PATH, "%s/lib", dir);
  } else if (env_home && *env_home &&
             path_exists(env_home, "include/nccl.h")) {
    snprintf(tc->nccl_include, TC_PATH, "%s/include", env_home);
    snprintf(tc->nccl_lib, TC_PATH, "%s/lib", env_home);
  } else if (tc->cuda_home[0] &&
             path_exists(tc->cuda_home, "include/nccl.h")) {
    snprintf(tc->nccl_include, TC_PATH, "%s/include", tc->cuda_home);
    copy(tc->nccl_lib, tc->cuda_lib);
  } else if (tc->nvcc[0] && nvcc_nccl_include(tc->nvcc, dir) == 0) {
    copy(tc->nccl_include, dir);
  }
  if (!path_exists(tc->nccl_include, "nccl.h"))
    tc->nccl_include[0] = '\0';
  if (!path_exists(tc->nccl_lib, "libnccl.so.2"))
    find_nccl_lib(tc, home != NULL);
  if (tc->nccl_include[0])
    tc->nccl_header_version = header_version(tc->nccl_include);
  if (tc->nccl_lib[0])
    tc->nccl_library_version = library_version(tc->nccl_lib);
}

/* sm_NN or sm_NNa: it becomes part of compiler words */
static int arch_valid(const char *a)
{
  size_t i = 3, n = strlen(a);

  if (n < 5 || n > 8 || strncmp(a, "sm_", 3))
    return 0;
  while (i < n && a[i] >= '0' && a[i] <= '9')
    i++;
  return i >= 5 && (i == n || (i == n - 1 && a[i] == 'a'));
}

void tc_arch_flag(const struct toolchain *tc, char *buf, unsigned n)
{
  size_t len = strlen(tc->arch);

  if (len > 3 && tc->arch[len - 1] == 'a')
    snprintf(buf, n, "-gencode=arch=compute_%s,code=%s", tc->arch + 3,
             tc->arch);
  else
    snprintf(buf, n, "-arch=%s", tc->arch);
}

int tc_probe(const struct config *cfg, struct toolchain *tc, struct err *e)
{
  const char *nvcc = config_get(cfg, "build", "nvcc", NULL);
  char out[4096], tmp[TC_PATH];
  const char *v;

  memset(tc, 0, sizeof(*tc));
  /* sm_90a by default: the GEMM tile v2 (wgmma + TMA) that the per_tile
   * placements use is Hopper-specific code; H100/H200 run it */
  v = config_get(cfg, "build", "arch", "sm_90a");
  if (!arch_valid(v))
    return err_set(e, ERR_CONFIG,
                   "[build] arch (or CUCO_CUDA_ARCH) '%.40s' is not a target "
                   "like sm_90 or sm_90a",
                   v);
  snprintf(tc->arch, sizeof(tc->arch), "%s", v);
  if (nvcc)
    copy(tc->nvcc, nvcc);
  else if (!proc_which("nvcc", NULL, tc->nvcc, TC_PATH) &&
           access("/usr/local/cuda/bin/nvcc", X_OK) == 0)
    copy(tc->nvcc, "/usr/local/cuda/bin/nvcc");
  if (tc->nvcc[0]) {
    const char *const argv[] = {tc->nvcc, "--version", NULL};
    if (access(tc->nvcc, X_OK) != 0)
      return err_set(e, ERR_BUILD, "nvcc '%s' is not executable", tc->nvcc);
    if (capture(argv, out, sizeof(out)))
      return err_set(e, ERR_BUILD,
                     "'%s --version' failed: the CUDA "
                     "toolchain is broken",
                     tc->nvcc);
    v = strstr(out, ", V");
    if (v)
      sscanf(v + 3, "%63s", tc->nvcc_version);
    /* nvcc may be a symlink (/usr/local/bin/nvcc -> .../cuda/bin/nvcc):
     * CUDA's home is the one of the real file */
    if (canonical(tc->nvcc, tmp))
      copy(tmp, tc->nvcc);
    copy(tc->cuda_home, dirname(dirname(tmp)));
    snprintf(tc->cuda_lib, TC_PATH, "%s/lib64", tc->cuda_home);
  }
  find_nccl(cfg, tc);
  return 0;
}

void tc_version_str(int code, char *buf, unsigned n)
{
  if (!code)
    snprintf(buf, n, "unknown");
  else
    snprintf(buf, n, "%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
}
