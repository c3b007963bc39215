/* launcher.h - start the ranks of one run through mpirun or srun.
 *
 * `local` (launch.c starts each rank as its own child) needs nothing from
 * here.  `mpirun` (Open MPI) and `srun` (Slurm) start one launcher process
 * from a command template ([launch] mpirun = / srun = in cuco.ini); the
 * launcher starts the ranks wherever the allocation or hostfile says, and
 * each rank reads its rank, size and local rank from the launcher's
 * variables (OMPI_COMM_WORLD_*, SLURM_PROCID/NTASKS/LOCALID).
 *
 * A template is split on blanks (no shell).  Inside a token: {nranks},
 * {name} (a step name unique to this run), {work} (the work dir).  Tokens
 * that are exactly one of these expand to zero or more arguments:
 *   {bin} {args}   the rank binary, its arguments
 *   {hostfile}     --hostfile PATH when [launch] hostfile or $CUCO_HOSTFILE
 *                  names one (mpirun), else nothing
 *   {asroot}       --allow-run-as-root when cuco runs as root (mpirun)
 *   {env}          -x NAME for each variable cuco sets for the ranks
 *                  (mpirun forwards only those to other nodes)
 *   {gpus}         --gpus-per-task=N when the run wants N GPUs per rank and
 *                  the allocation has GPUs (srun: Slurm binds them)
 *   {time}         --time=M, the run's deadline rounded up to minutes (srun)
 *
 * Deadline: past it, the ranks that did not reach "done" in their progress
 * file (PREFIX.rankR.progress) are named, srun's step is cancelled with
 * scancel (found by its {name} in squeue), and the launcher's process group
 * is killed (mpirun takes its remote daemons and ranks with it).  A step
 * that Slurm itself cancels (time limit, preemption, scancel) is reported as
 * "slurm step J.S cancelled: REASON" from slurmstepd's line.
 *
 * The per-run secret (when a caller has one) goes to remote ranks as one
 * 0600 file per rank in the work dir, WORK/.cuco-secret.rankR; the ranks
 * find it through CUCO_SECRET_PREFIX, read their own and unlink it; cuco
 * unlinks what is left after the run.  The work dir must be on a file
 * system every node sees (the NCCL id file lives there too).
 */
#ifndef CUCO_LAUNCHER_H
#define CUCO_LAUNCHER_H

#include <stddef.h>

#include "buf.h"
#include "err.h"
#include "tmpl.h"

struct config;

enum launcher_kind {
  LAUNCHER_LOCAL = 0,
  LAUNCHER_MPIRUN = 1,
  LAUNCHER_SRUN = 2,
};

#define LAUNCHER_TMPL_MAX 1024

struct launcher {
  enum launcher_kind kind;
  char tmpl[LAUNCHER_TMPL_MAX]; /* the command template (not for local) */
  char hostfile[1024];          /* "" = none */
  char step_log[1024];      /* append one line per run ("" = none): step id,
                               label, start and end (epoch s), outcome */
  int gpus_per_rank;        /* {gpus}: 0 = no GPU binding */
  const volatile int *stop; /* set by a signal handler: a run killed while
                               it is set is an interruption, not a verdict */
};

/* The default template of a kind ("" for local). */
const char *launcher_default_template(enum launcher_kind k);
/* "local", "mpirun", "srun". */
const char *launcher_name(enum launcher_kind k);
/* Inverse of launcher_name; -1 when unknown. */
int launcher_parse_kind(const char *s);

/* Fill *l from [launch] of cfg (launcher, mpirun, srun, hostfile); a
 * non-NULL cli (--launcher NAME) wins over [launch] launcher.  ERR_CONFIG
 * naming file:line for a bad value, ERR_USAGE for a bad --launcher.
 * ERR_NOTFOUND when the launcher's program is not in PATH. */
int launcher_config(const struct config *cfg, const char *cli,
                    struct launcher *l, struct err *e) WARN_UNUSED;

/* Values a template expands with. */
struct launcher_vars {
  const char *const *argv; /* {bin} = argv[0], {args} = the rest */
  int nranks;
  const char *name;
  const char *work;
  const char *hostfile;         /* NULL/"" = {hostfile} is empty */
  int as_root;                  /* {asroot} */
  const char *const *env_names; /* {env}: NULL-terminated names */
  int gpus_per_rank;            /* {gpus}: 0 = empty */
  int allocation_gpus;          /* the allocation has GPUs */
  double timeout_s;             /* {time} */
};

/* Expand tmpl into a NULL-terminated argv (caller frees each string and
 * the array with tmpl_argv_free).  NULL with ERR_CONFIG for an unknown
 * placeholder or an unclosed '{', ERR_TOOBIG past 256 arguments. */
char **launcher_expand(const char *tmpl, const struct launcher_vars *v,
                       struct err *e);

/* Find slurmstepd's "*** STEP 3.2 ON node CANCELLED AT T [DUE TO R] ***"
 * (or "*** JOB 3 ...") in text.  1 when found: *id gets "3.2" (or "3"),
 * *reason the words after DUE TO ("" when none), *job 1 for a whole job;
 * 0 when there is no such line. */
int launcher_find_cancel(const char *text, char *id, size_t idn, char *reason,
                         size_t rn, int *job);

/* Slots of a Slurm allocation for runs of `per` ranks: with use_gpus, its
 * GPUs (SLURM_GPUS, SLURM_GPUS_ON_NODE x SLURM_NNODES, SLURM_JOB_GPUS) over
 * per when it has GPUs (*gpus = 1); else its tasks (SLURM_NTASKS, else the
 * CPUs of SLURM_JOB_CPUS_PER_NODE) over per.  0 outside an allocation. */
int launcher_slurm_slots(int per, int use_gpus, int *gpus);

struct launcher_run_opts {
  const struct launcher *l;
  const char *const *argv; /* the rank binary and its arguments */
  int nranks;
  const char *const *env_extra; /* "K=V" set for the ranks (and forwarded
                                   by {env}) */
  const char *work_dir;         /* cwd; the shared folder of the run */
  const char *progress_prefix;  /* ranks write PREFIX.rankR.progress; NULL:
                                   no per-rank progress */
  const char *label;            /* for the step log */
  const unsigned char *secret;  /* NULL = none */
  size_t secret_len;
  double timeout_s; /* <= 0: 120 */
};

struct launcher_result {
  int started;   /* the launcher process ran */
  int all_ok;    /* it exited 0 */
  int exit_code; /* its exit status, -1 when killed */
  int timed_out; /* our deadline passed */
  int hang_rank; /* on timeout: the least advanced rank, -1 */
  int hang_size; /* and the --plan size it was at (progress "size I"), -1 */
  char hang_stage[64];
  int cancelled;    /* Slurm cancelled the step (not our deadline) */
  int job_ended;    /* ... the whole job (allocation) */
  int interrupted;  /* l->stop was set when it ended */
  char step_id[32]; /* "3.2" when known */
  char what[512];   /* one line: what happened, naming ranks or the step */
  struct buf out, err;
  double wall_s;
};

/* Run the ranks through the launcher.  0 when it ran (see *r), negative
 * when it could not be started.  Release *r in both cases. */
int launcher_run(const struct launcher_run_opts *o, struct launcher_result *r,
                 struct err *e) WARN_UNUSED;
void launcher_result_release(struct launcher_result *r);

/* The progress file PREFIX.rankRANK.progress: its first line (the rank's
 * last stage) into OUT ("" when absent); returns its second line's size
 * index ("size I", written by --plan runs) or -1. */
int launcher_read_progress(const char *prefix, int rank, char *out, size_t n);

#endif
