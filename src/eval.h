/* eval.h - the evaluation cascade: static -> build -> verify -> bench.
 *
 * eval_candidate() is the one entry point `cuco eval` and `cuco evolve`
 * share.  It never exits and never crashes on a bad candidate: every
 * verdict lands in struct eval_result.  A returned error means the
 * evaluation itself could not be done (no temp dir, no nvcc, OOM).
 *
 * Freeform workloads ([freeform] in workload.ini) build and run with the
 * workload's command templates.  A template is split into argv on blanks
 * (no shell); placeholders inside tokens:
 *   {src} candidate source  {bin} binary to produce  {dir} workload dir
 *   {work} work dir  {params} "K=V,K=V"  {size} size name  {mode}
 *   verify|bench  {seed} input seed  {out} metrics file path
 * and a token that is exactly {flags} expands to the directive -D flags
 * (zero or more argv entries).  The program prints one JSON object line
 * (the last line of stdout starting with '{'), e.g. {"time_ms": 1.5,
 * "ok": true}; "ok": false or a non-zero exit fails verify.  Freeform
 * results carry "verified_by": "program" (the harness cannot check them).
 */
#ifndef CUCO_EVAL_H
#define CUCO_EVAL_H

#include <jansson.h>
#include <pthread.h>

#include "err.h"

struct workload;
struct toolchain;
struct launcher;

/* allowlist: the built object's undefined symbols must be on the runtime's
 * symbols.allow and its host code holds no raw system call (allow.h). */
enum eval_stage {
  EVAL_STAGE_STATIC = 0,
  EVAL_STAGE_BUILD = 1,
  EVAL_STAGE_ALLOWLIST = 2,
  EVAL_STAGE_VERIFY = 3,
  EVAL_STAGE_BENCH = 4,
  EVAL_STAGE_DONE = 5
};

/* "static", "build", "allowlist", "verify", "bench", "done" (the DB's
 * stage column). */
const char *eval_stage_name(enum eval_stage s);
/* Inverse of eval_stage_name; -1 when unknown. */
int eval_stage_parse(const char *name);

/* How an evaluation went.  The zero value is FAILED, so a result that was
 * never filled in is not taken for a pass. */
enum eval_status {
  EVAL_STATUS_FAILED = 0,
  EVAL_STATUS_REJECTED = 1,
  EVAL_STATUS_OK = 2
};

/* "failed", "rejected", "ok" (the DB's and the JSON's status words). */
const char *eval_status_name(enum eval_status s);
/* Inverse of eval_status_name; -1 when unknown. */
int eval_status_parse(const char *name);

/* Called after each stage with its verdict line ("ok", "rejected: ...",
 * "failed: ...").  May be NULL. */
typedef void (*eval_progress_fn)(void *ud, enum eval_stage stage, int ok,
                                 const char *verdict);

struct eval_opts {
  const struct workload *wl;  /* required */
  const struct toolchain *tc; /* required for runtime workloads */
  const char *impl_name;      /* e.g. "seed.cu", "cand_17.cu": the file
                                 name written in the work dir */
  int device_candidate;       /* static checks (frozen text vs seed,
                                 directives, no host collectives);
                                 0 for baselines */
  const char *seed_code;      /* frozen reference; NULL = read wl seed */
  int ranks;                  /* 0 = the workload's smallest */
  int vranks;                 /* > 0: virtual ranks in one process */
  const char *sizes;          /* NULL = the workload's verify + bench
                                 sets; else a --sizes LIST used for
                                 both stages */
  int static_only;            /* stop after the static checks */
  int compile_only;           /* stop after build and the allowlist
                                 (linked, not run: no GPU needed) */
  int skip_bench;             /* stop after verify */
  const char *work_dir;       /* where sources, binaries, results go;
                                 NULL = a fresh temp dir removed after */
  const char *cache_dir;      /* object cache; NULL = ~/.cache/cuco or
                                 $CUCO_CACHE_DIR */
  const char *runtime_dir;    /* runtime/ folder; NULL = found as
                                 build_find_runtime() says */
  const char *gpus;           /* "0,1": CUDA devices for the ranks;
                                 NULL = 0..ranks-1 */
  const json_t *machine;      /* doctor_probe() JSON, written to
                                 MACHINE.json and passed via --machine;
                                 borrowed, may be NULL */
  double build_timeout_s;     /* 0 = 300 */
  double run_timeout_s;       /* per binary run; 0 = 120 */
  unsigned long seed;         /* input seed; 0 = 1234 */
  const char *secret;         /* 32 hex digits: the per-run secret of every
                                 run (a replay); NULL = a fresh one drawn
                                 per run (docs/contracts.md section 4d) */
  eval_progress_fn progress;
  void *progress_ud;
  /* NULL or local: ranks are our children; else mpirun/srun (launcher.h),
   * freeform runs too */
  const struct launcher *launcher;
  /* NULL, or a lock held from the first run of the binary to the end of
   * its bench: evaluations that share a GPU group take turns there, while
   * the static checks and build of one overlap the other's runs (evolve's
   * build-ahead workers, docs/evolve.md) */
  pthread_mutex_t *run_lock;
  int build_nice; /* > 0: the compilers run at this nice value, so that a
                     build beside a timed run takes CPU only it leaves */
  /* runtime workloads, real ranks: every size of a stage runs in ONE
   * process of the binary (its --plan, docs/contracts.md section 4), so
   * that CUDA, NCCL and the libraries start once per stage, not per size
   * (issue 26; the default since 2026-12-03); 1: a process per size */
  int per_size_process;
};

#define EVAL_PLAN_MAX 32 /* sizes in one --plan process (RT_PLAN_MAX) */
#define EVAL_LOG_MAX  (64u * 1024u)

struct eval_result {
  enum eval_stage stage;   /* the stage reached (DONE when all passed) */
  enum eval_status status; /* ok, failed or rejected */
  char error[512];         /* one line; "" when ok */
  int hang_rank;           /* rank that did not finish, -1 if none */
  char *build_log;         /* malloc'd, capped at EVAL_LOG_MAX; may be NULL */
  char *verify_log;        /* ditto: verify/bench stdout+stderr tails */
  json_t *directives;      /* directive_to_json(); NULL when none */
  json_t *metrics;         /* {"SIZE": {"mode":..,"timing":{..},"verify":
                              {..}}, ...} per verify/bench size; owned */
  int has_score;           /* bench done: the numbers below are valid */
  double median_ms;        /* geometric mean over bench sizes of medians */
  double noise_ms;         /* median_ms * max over sizes of (ci95 half
                              width / median) */
  double score;            /* 1000 / median_ms: higher is better */
  double build_s, verify_s, bench_s; /* wall time per stage */
  double wait_s;     /* waited for eval_opts.run_lock (another's runs) */
  int protocol_test; /* vranks run: times are not performance */
  /* a run was killed while cuco was stopping (e.g. its Slurm allocation
   * ended): no verdict on the code */
  int interrupted;
};

/* Evaluate `code` (the whole source of one implementation) through the
 * cascade.  Returns 0 when the evaluation ran (r->status says how it
 * went) and negative with *e set when it could not be run at all.  The
 * caller releases *r with eval_result_release() in both cases. */
int eval_candidate(const struct eval_opts *o, const char *code,
                   struct eval_result *r, struct err *e) WARN_UNUSED;

/* Free what *r owns; NULL-safe; *r can be reused afterwards. */
void eval_result_release(struct eval_result *r);

/* The result as JSON (stage, status, error, hang_rank, metrics,
 * directives, median_ms, noise_ms, score, times).  New reference. */
json_t *eval_result_json(const struct eval_result *r);

/* What a cheat-suite run judged.  A cheat whose expected stage did not run
 * (--static-only, --compile-only: no GPU) is not judged, and counts in
 * need_build or need_gpu, never as caught. */
struct eval_cheat_tally {
  int n;                       /* cheats found */
  int caught[EVAL_STAGE_DONE]; /* rejected at the stage expected */
  int failures;                /* judged, not caught as expected (or no
                                  valid CUCO-EXPECT-REJECT line) */
  int need_build;              /* expected at build/allowlist, static only */
  int need_gpu;                /* expected at verify/bench, not run */
  int need_bench;              /* expected at bench, run with --no-bench */
  int need_ranks;              /* 'ranks>=N' on its line, run with fewer */
};

#define EVAL_MAX_CHEATS 256

/* Run every cheat of WL/cheats/ (NAME.edit: an edit of the seed; NAME.cu: a
 * whole file; see cheat.h) through the cascade (as device candidates) and
 * check each is rejected at the stage its "// CUCO-EXPECT-REJECT: STAGE
 * words" line names (a later stage than expected is a failure; so is a
 * pass).  Prints one line per cheat via progress and fills *t.  Returns 0
 * when it ran; a malformed edit file or two cheats of one name stop it
 * before any runs (ERR_PARSE naming the file). */
int eval_cheats(const struct eval_opts *o, struct eval_cheat_tally *t,
                struct err *e) WARN_UNUSED;

/* Write each cheat of WL/cheats/ as OUT_DIR/NAME.cu, the whole source it
 * stands for (header lines, then the seed with its edit applied), creating
 * OUT_DIR; *written counts them.  Errors as eval_cheats, and ERR_IO. */
int eval_cheats_write(const struct eval_opts *o, const char *out_dir,
                      int *written, struct err *e) WARN_UNUSED;

/* One line: "cheats: 16 of 16 caught as expected" when every cheat was
 * judged and caught, else e.g. "cheats: 1 rejected at static as expected,
 * 15 need a GPU (not judged)". */
void eval_cheat_summary(const struct eval_cheat_tally *t, char *out, size_t n);

#endif
