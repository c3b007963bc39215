/* launch.h - run a workload binary as N rank processes on this node.
 *
 * Every rank gets the same arguments plus --rank R --nranks N --local-rank
 * L --id-file PATH (rank 0 writes the NCCL unique id there, the others read
 * it), an allow-listed environment with NCCL_NVLS_ENABLE=0 and the NCCL
 * and CUDA library folders first in LD_LIBRARY_PATH, and CUDA_VISIBLE_DEVICES
 * = the GPU list (rank L uses device L of it).  Past the deadline every
 * rank is killed; a rank that fails makes the others stop after a short
 * grace.  The per-rank progress files (RESULT.json.rankN.progress) say
 * which rank did not finish.
 */
#ifndef CUCO_LAUNCH_H
#define CUCO_LAUNCH_H

#include <jansson.h>

#include "err.h"

struct launcher;

#define LAUNCH_MAX_RANKS  64
#define LAUNCH_RESULT_MAX (8u * 1024u * 1024u) /* RESULT.json cap */
#define LAUNCH_LOG_MAX    (64u * 1024u)

struct launch_opts {
  const char *bin;         /* the binary */
  const char *const *args; /* arguments of every rank, after bin */
  int nargs;
  int nranks;              /* processes; 1 for a virtual-rank run */
  const char *gpus;        /* "0,1,..."; NULL = keep our
                              CUDA_VISIBLE_DEVICES, ranks use 0..N-1 */
  const char *work_dir;    /* cwd of the ranks; the id file goes here */
  const char *result_path; /* the --out path the args carry */
  const char *lib_dirs;    /* "A:B" put first in LD_LIBRARY_PATH */
  double timeout_s;        /* whole run; <= 0: 120 */
  double size_timeout_s;   /* > 0 (a --plan run, local ranks): also a
                              hang when a rank's progress file names the
                              same size ("size I") this long */
  double fail_grace_s;     /* after a rank fails; <= 0: 5 */
  const char *stdin_data;  /* NULL, or what every rank reads on stdin (the
                              per-run secret: never argv, env or a file) */
  const struct launcher *launcher; /* NULL or local: the ranks are our
                                      children; mpirun/srun: launch_ext.c */
  int judges;                      /* the ranks are trusted judges (bin is the
                                      workload's baseline, runtime/rt_split.cu):
                                      not sandboxed themselves; each starts its
                                      worker, the candidate, under the sandbox
                                      command its --judge-worker file holds */
  const char *worker_dir;          /* judges: the folder the workers may write
                                      (CUCO_WORKER_DIR: their NCCL id file) */
};

struct launch_result {
  int all_ok;             /* every rank exited 0 */
  int timed_out;          /* the deadline passed */
  int exit_code;          /* rank 0's exit status (-1 if it did not exit) */
  int failed_rank;        /* first rank that failed (exit != 0, signal), -1 */
  int hang_rank;          /* on timeout: the least advanced rank, -1 */
  char hang_stage[64];    /* its last progress stage ("" = none written) */
  int hang_size;          /* the --plan size it was at ("size I"), -1 */
  double hang_after_s;    /* the limit that ran out (whole run or size) */
  char what[512];         /* one line: what happened, naming ranks */
  char *log;              /* capped tails of every rank's stdout/stderr */
  json_t *result;         /* RESULT.json when present and valid, else NULL */
  char result_error[256]; /* why result is NULL ("" if it is not) */
  double wall_s;
  int interrupted; /* mpirun/srun: killed while cuco was stopping
                      (an allocation that ended): no verdict */
};

/* Run the ranks.  0 when they ran (whatever happened: see *r); negative
 * when they could not be started (ERR_PROC/ERR_IO/ERR_NOMEM).  The caller
 * calls launch_result_release() either way. */
int launch_run(const struct launch_opts *o, struct launch_result *r,
               struct err *e) WARN_UNUSED;

void launch_result_release(struct launch_result *r);

/* launch_run() through mpirun or srun (launch_ext.c): one launcher process,
 * ranks from its variables, the id file in work_dir (a folder every node
 * must see).  Same contract as launch_run(). */
int launch_run_ext(const struct launch_opts *o, struct launch_result *r,
                   struct err *e) WARN_UNUSED;

/* Read and validate a RESULT.json (contracts §4): at most
 * LAUNCH_RESULT_MAX bytes, an object with schema 1, a status of ok |
 * verify_failed | error, a mode, and for an ok bench run a timing object
 * with a positive median_ms.  New reference or NULL with *e set. */
json_t *launch_read_result(const char *path, struct err *e);

/* Rank order of a progress stage: init 0, setup 1, verify 2, warmup 3,
 * timed 4, teardown 5, done 6; -1 unknown/empty. */
int launch_stage_rank(const char *stage);

#endif
