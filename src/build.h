/* build.h - build a workload binary (contracts §4) or a freeform program.
 *
 * Runtime workloads: every translation unit (each runtime .cu file, the
 * workload's reference.cu, the implementation) is compiled by nvcc to an
 * object that is cached under the cache dir by an xxhash of (nvcc, version,
 * arch, NCCL include, flags, the file and every header beside it), then
 * linked:
 *
 *   nvcc -arch=ARCH -std=c++17 -O3 -Iruntime -I<wl dir> -I<nccl include>
 *        [-DCUCO_VRANKS] [directive -D flags, implementation only] -c F.cu
 *   nvcc -arch=ARCH OBJS -o BIN -L<nccl lib> -lnccl -L<cuda lib> -l<libs>
 *
 * So a candidate build compiles only the candidate.  compile_only links
 * too (a link error must never pass CI): against libnccl.so.2 where the
 * toolchain found one, else with -Xlinker --warn-unresolved-symbols, which
 * still fails on duplicate definitions and on any missing definition that
 * is not an NCCL symbol (r->link_note says which was done).
 */
#ifndef CUCO_BUILD_H
#define CUCO_BUILD_H

#include "err.h"
#include "tmpl.h"

struct workload;
struct toolchain;
struct config;

#define BUILD_LOG_MAX (64u * 1024u)

struct build_opts {
  const struct workload *wl;
  const struct toolchain *tc; /* runtime kind only */
  const char *runtime_dir;    /* from build_find_runtime() */
  const char *impl_path;      /* the implementation's source file */
  const char *const *dflags;  /* directive -D flags (impl only) */
  int ndflags;
  int vranks;            /* > 0: add -DCUCO_VRANKS everywhere */
  int compile_only;      /* no GPU run follows: link against NCCL when
                            found, else the unresolved-NCCL link */
  const char *out_bin;   /* binary to write */
  const char *cache_dir; /* created when missing */
  double timeout_s;      /* per compiler run; <= 0: 300 */
  int nice;              /* > 0: compilers run at this nice value */
  /* freeform only: placeholder values for the build template */
  const char *work_dir;
};

struct build_result {
  char *log; /* malloc'd, capped at BUILD_LOG_MAX; may be NULL */
  double wall_s;
  int compiled;        /* objects compiled now */
  int cached;          /* objects taken from the cache */
  char impl_obj[2048]; /* runtime kind: the implementation's object (in
                          the cache); "" otherwise */
  char link_note[160]; /* how it was linked, for the verdict; "" when not */
};

/* Build.  0 on success; ERR_BUILD (compiler failed: *e holds the first
 * error line of the log), ERR_TIMEOUT (a compiler run hit the deadline),
 * else ERR_IO/ERR_PROC/ERR_NOMEM for problems of the machine.  r->log is
 * filled in every case; the caller calls build_result_release(). */
int build_run(const struct build_opts *o, struct build_result *r,
              struct err *e) WARN_UNUSED;

void build_result_release(struct build_result *r);

/* Locate runtime/: [build] runtime_dir or $CUCO_RUNTIME_DIR, else
 * WL_DIR/../../runtime, else next to the cuco executable (./runtime,
 * ../share/cuco/runtime).  The folder must hold runtime.h.  ERR_NOTFOUND
 * naming the places looked at. */
int build_find_runtime(const struct config *cfg, const char *wl_dir, char *out,
                       size_t n, struct err *e) WARN_UNUSED;

/* The default object cache: $CUCO_CACHE_DIR, else $XDG_CACHE_HOME/cuco,
 * else $HOME/.cache/cuco, else /tmp/cuco-cache-UID. */
void build_default_cache(char *out, size_t n);

/* Placeholder values for a freeform template; NULL fields are left as
 * written. */
struct build_vars {
  const char *src, *bin, *dir, *work, *params, *size, *mode, *seed, *out;
  const char *const *flags; /* {flags} expands to these entries */
  int nflags;
};

/* Split `tmpl` on blanks and substitute placeholders.  Returns a
 * NULL-terminated malloc'd argv (free with tmpl_argv_free) or NULL with
 * *e set (ERR_CONFIG for an unknown {placeholder} or an empty command). */
char **build_template_argv(const char *tmpl, const struct build_vars *v,
                           struct err *e);

#endif
