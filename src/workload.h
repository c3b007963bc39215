/* workload.h - a workload folder's workload.ini (docs/contracts.md §2).
 *
 * A struct workload is a plain record filled by workload_load(): names,
 * rank counts, files, sizes and their verify/bench sets, tolerance, the
 * directive space ([space]) and the CUCO-PARAM knobs ([params]).  Freeform
 * workloads add build/run command templates ([freeform]).  Every error
 * names "workload.ini:LINE".
 */
#ifndef CUCO_WORKLOAD_H
#define CUCO_WORKLOAD_H

#include "err.h"

#define WORKLOAD_PATH        1024
#define WORKLOAD_NAME        64
#define WORKLOAD_MAX_RANKS   16
#define WORKLOAD_MAX_FILES   8
#define WORKLOAD_MAX_LIBS    8
#define WORKLOAD_MAX_FORBID  32
#define WORKLOAD_MAX_SIZES   32
#define WORKLOAD_MAX_KV      8
#define WORKLOAD_MAX_SET     16
#define WORKLOAD_MAX_PARAMS  16
#define WORKLOAD_MAX_CHOICES 32
#define WORKLOAD_VALUE       64

enum workload_kind {
  WORKLOAD_RUNTIME = 0, /* built against runtime/ (contracts §4) */
  WORKLOAD_FREEFORM = 1 /* any program printing one metrics JSON line */
};

/* One problem size: "small_a" = M=256,K=512,N=384.  Explicit shapes have
 * name == params ("M=4104,K=8192,N=28680"). */
struct workload_size {
  char name[WORKLOAD_NAME];
  char params[256]; /* canonical "K=V,K=V" as the binary's --params */
  int nkv;
  char keys[WORKLOAD_MAX_KV][32];
  long vals[WORKLOAD_MAX_KV];
};

/* The directive values one workload allows.  A dimension with no values
 * (n == 0) means the workload has no such dimension: a candidate naming
 * it is rejected.  Values are lower-case words as in contracts §3. */
struct workload_dim {
  int n;
  char v[8][16];
};

struct workload_space {
  int present; /* a [space] section exists */
  struct workload_dim backend, placement, sync, issuer;
  unsigned long long chunk_min, chunk_max; /* 0,0 = no chunk dimension */
};

/* A CUCO-PARAM knob and its allowed values (integers or identifiers). */
struct workload_param {
  char name[WORKLOAD_NAME];
  int nchoices;
  char choices[WORKLOAD_MAX_CHOICES][WORKLOAD_VALUE];
};

struct workload {
  char dir[WORKLOAD_PATH];      /* the folder, as given */
  char ini_path[WORKLOAD_PATH]; /* dir/workload.ini */
  char name[WORKLOAD_NAME];
  char description[512];
  enum workload_kind kind;
  int nranks;
  int ranks[WORKLOAD_MAX_RANKS]; /* rank counts allowed, ascending */
  int nbaselines;
  char baselines[WORKLOAD_MAX_FILES][128]; /* file names in dir; [0] = "the" */
  /* [workload] bar: the baselines whose per-size minimum median is the bar
   * to beat (default: baselines[0] alone); each is one of baselines. */
  int nbar;
  char bar[WORKLOAD_MAX_FILES][128];
  char seed[128];      /* file name in dir */
  char reference[128]; /* "" for freeform */
  int nlibs;
  char libs[WORKLOAD_MAX_LIBS][WORKLOAD_NAME]; /* "cublas" -> -lcublas */
  /* identifiers a candidate's EVOLVE blocks may not use (frozen helpers
   * that would hand it the answer); candidate_check_names */
  int nforbid;
  char forbid[WORKLOAD_MAX_FORBID][WORKLOAD_NAME];
  /* [workload] needs_gpu = no: a runtime workload whose harness runs on
   * the host (test fixtures); eval and evolve then run it without a GPU */
  int host_only;
  int nsizes;
  struct workload_size sizes[WORKLOAD_MAX_SIZES];
  int nverify, nbench;
  int verify[WORKLOAD_MAX_SET]; /* indices into sizes[] */
  int bench[WORKLOAD_MAX_SET];
  double tol_rel_l2; /* 0 when unset (the binary's default applies) */
  double tol_floor;  /* [tolerance] floor: lower bound of frozen
                        thresholds (thresh.h); 0 when unset */
  struct workload_space space;
  int nparams;
  struct workload_param params[WORKLOAD_MAX_PARAMS];
  /* [freeform]: command templates, split into argv on blanks; see
   * eval.h for the placeholders. */
  char ff_build[1024];
  char ff_run[1024];
  /* optional: the workload's own check of a run's output (docs/contracts.md
   * 4f): built once per evaluation where the candidate cannot write, run
   * after every run; its JSON line's "ok" is the verdict, the program's
   * own is not believed */
  char ff_check_build[1024];
  char ff_check[1024];
  char ff_metric[WORKLOAD_NAME]; /* JSON key of the time, default time_ms */
  int ff_repeat;                 /* bench runs per size, default 3 */
  /* [allow] symbols: comma-separated patterns that widen the symbol
   * allowlist (allow.h) for this workload; "" when none */
  char allow_symbols[1024];
};

/* Load DIR/workload.ini into *w (caller storage; nothing to free).
 * ERR_IO when the file cannot be read, ERR_PARSE/ERR_CONFIG with
 * "DIR/workload.ini:LINE: ..." for a bad value, a missing required key
 * (name, kind, ranks, seed, sets) or a file it names that is missing. */
int workload_load(const char *dir, struct workload *w,
                  struct err *e) WARN_UNUSED;

/* Find a size by name; NULL if none.  Borrowed. */
const struct workload_size *workload_find_size(const struct workload *w,
                                               const char *name);

/* Parse "M=256,K=512" (explicit shape) into *s with name = params.
 * ERR_PARSE naming the bad token. */
int workload_parse_shape(const char *text, struct workload_size *s,
                         struct err *e) WARN_UNUSED;

/* Resolve a --sizes LIST: comma/space separated size names and explicit
 * shapes ("small_a,M=4104,K=8192,N=28680,full_4k"; a repeated key starts a
 * new shape).  Fills out[0..*n).  ERR_USAGE naming an unknown size name or
 * a malformed shape; ERR_TOOBIG past max. */
int workload_resolve_sizes(const struct workload *w, const char *list,
                           struct workload_size *out, int max, int *n,
                           struct err *e) WARN_UNUSED;

/* True when nranks is one of the workload's rank counts. */
int workload_allows_ranks(const struct workload *w, int nranks);

/* 0 when the seed is a real one; ERR_CONFIG ("DIR/seed.cu is the
 * placeholder `cuco init` wrote ...: run `cuco transform DIR` first") when
 * it is still the copy of the baseline that `cuco init` writes. */
int workload_check_seed(const struct workload *w, struct err *e) WARN_UNUSED;

/* The workload's param knob named `name`, or NULL.  Borrowed. */
const struct workload_param *workload_find_param(const struct workload *w,
                                                 const char *name);

#endif
