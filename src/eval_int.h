/* eval_int.h - what the parts of the cascade share (not an API for other
 * modules).  Each part calls only those below it, never back up:
 *   eval_verdict.c  eval_fail/eval_pass/eval_log_append/eval_now
 *   eval_thresh.c   frozen thresholds        (uses eval_verdict)
 *   eval_ff.c       freeform runs            (uses eval_verdict)
 *   eval.c          eval_candidate()         (uses all three)
 * eval_cheats.c and eval_cli.c use eval.h only. */
#ifndef CUCO_EVAL_INT_H
#define CUCO_EVAL_INT_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"
#include "eval.h"
#include "thresh.h"
#include "workload.h"

/* Paths and sizes of one evaluation. */
struct eval_ctx {
  char work_dir[WORKLOAD_PATH];
  int temp; /* work_dir is ours to remove */
  char src_path[WORKLOAD_PATH + 200];
  char bin_path[WORKLOAD_PATH + 200];
  char impl_obj[2048]; /* runtime kind: the implementation's object */
  char cache_dir[WORKLOAD_PATH];
  char runtime_dir[WORKLOAD_PATH];
  char machine_path[WORKLOAD_PATH + 32];
  char lib_dirs[2 * WORKLOAD_PATH + 2];
  /* the judge (runtime/rt_split.cu): the workload's baseline built as a
   * binary of its own, the folder its workers may write, the file holding
   * the worker's command; judge_bin "" = the in-process runtime */
  char judge_bin[WORKLOAD_PATH + 200];
  char worker_dir[WORKLOAD_PATH + 32];
  char worker_file[WORKLOAD_PATH + 32];
  /* freeform: the workload's check, built once where the candidate cannot
   * write (ff_check_dir, removed with the evaluation); "" = none yet */
  char ff_check_dir[WORKLOAD_PATH + 32];
  char ff_checker[WORKLOAD_PATH + 64];
  /* the program that runs is the program that was checked (issue 47):
   * its hash after the allowlist, checked again before every run */
  unsigned long long bin_hash;
  int bin_hashed;
  int ranks;
  int nv, nb;
  struct workload_size vsizes[WORKLOAD_MAX_SIZES];
  struct workload_size bsizes[WORKLOAD_MAX_SIZES];
};

double eval_now(void);

/* Whether x->bin_path still has the hash it had when it was checked: 0
 * yes (or not hashed yet), 1 no (the verdict set: a rejection naming
 * it), <0 it could not be read (*e set). */
int eval_bin_unchanged(const struct eval_opts *o, struct eval_ctx *x,
                       enum eval_stage st, struct eval_result *r,
                       struct err *e);

/* eval_verdict.c: record a failed stage ("STAGE: message") and report
 * it. */
void eval_fail(struct eval_result *r, const struct eval_opts *o,
               enum eval_stage st, enum eval_status status, const char *fmt,
               ...) PRINTF_LIKE(5, 6);
void eval_pass(const struct eval_opts *o, enum eval_stage st, const char *fmt,
               ...) PRINTF_LIKE(3, 4);
void eval_log_append(char **log, const char *text);

/* eval_ff.c: one freeform run (verify: once; bench: [freeform] repeat times)
 * of one size.  0 passed (*out = its metrics), 1 failed (verdict set), <0
 * internal error. */
int eval_ff_run(const struct eval_opts *o, struct eval_ctx *x,
                const struct workload_size *s, const char *mode,
                struct eval_result *r, json_t **out, struct err *e);

/* Frozen thresholds of one size (eval_thresh.c). */
struct eval_thresh {
  char key[600];
  struct thresh t;
  int found;     /* t holds frozen thresholds */
  int now;       /* frozen by this very run */
  char why[300]; /* when not found: why not */
};

/* Look the size's thresholds up (before its run).  <0 on a bad store. */
int eval_thresh_before(const struct eval_opts *o, const struct eval_ctx *x,
                       const struct workload_size *s, struct eval_thresh *th,
                       struct err *e) WARN_UNUSED;
/* After a passing run RES of size S at stage ST: check a freeform
 * program's errors against frozen thresholds (1 = failed, verdict set),
 * freeze them when this is the first baseline's first run, and record
 * them as SIZE_METRICS["thresholds"].  <0 on an internal error. */
int eval_thresh_after(const struct eval_opts *o, const struct eval_ctx *x,
                      const struct workload_size *s, enum eval_stage st,
                      const json_t *res, struct eval_result *r,
                      struct eval_thresh *th, json_t *size_metrics,
                      struct err *e) WARN_UNUSED;
/* Append "SIZE rel_l2<=.. row<=.. block<=.. (frozen from F)" to TEXT. */
void eval_thresh_note(const struct workload_size *s,
                      const struct eval_thresh *th, char *text, size_t n);

#endif
