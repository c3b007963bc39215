// runtime/rt_internal.cuh - what the runtime's own translation units share.
// Never included by workloads or candidates.
#ifndef CUCO_RT_INTERNAL_CUH
#define CUCO_RT_INTERNAL_CUH

#include <stdio.h>

// NCCL's host API only (rt.cuh says why): the one runtime unit that needs
// the device API, rt_vranks.cu, includes cuco_nccl.cuh itself.
#ifndef RT_HOST_ONLY
#define RT_HOST_ONLY
#endif
#include "rt.cuh"

#define RT_MAX_BUFS 64
#define RT_MAX_DEVCOMMS 8
#define RT_ERR_MAX 512

// Checked calls inside the runtime: record file:line and return -1.
#define CUDA_CHECK(call)                                                    \
  do {                                                                      \
    cudaError_t ce_ = (call);                                               \
    if (ce_ != cudaSuccess) {                                               \
      rt_errorf("%s:%d: %s: %s", __FILE__, __LINE__, #call,                \
                cudaGetErrorString(ce_));                                   \
      return -1;                                                            \
    }                                                                       \
  } while (0)
#define NCCL_CHECK(call)                                                    \
  do {                                                                      \
    ncclResult_t nr_ = (call);                                              \
    if (nr_ != ncclSuccess) {                                               \
      rt_errorf("%s:%d: %s: %s", __FILE__, __LINE__, #call,                \
                ncclGetErrorString(nr_));                                   \
      return -1;                                                            \
    }                                                                       \
  } while (0)
#define RT_TRY(call)                                                        \
  do {                                                                      \
    if ((call) != 0) return -1;                                             \
  } while (0)

struct rt_buf {
  char name[WL_NAME_MAX];
  int kind, dtype, flags;
  size_t bytes;
  void *dev;
  ncclWindow_t win;
  void *snap;          // OUTPUT: snapshot taken right after the end event
  void *expected;      // OUTPUT: reference result (fp32 or own dtype)
  long long rows, cols;
  double max_abs;      // OUTPUT: bound on |got - expected| (0 = none), set by
                       // the reference through rt_output_max_abs
  long long block_rows; // OUTPUT: rows per block of the per-block check (0: none)
  uint32_t id;         // hash of the name: input seed stream
};

struct wl_ctx {
  struct wl_problem prob;
  int device;
  cudaStream_t stream, ref_stream, hog_stream, bar_stream;
  ncclComm_t comm;
  int nbufs;
  struct rt_buf bufs[RT_MAX_BUFS];
  int ndevcomms;
  struct ncclDevComm *devcomms; // RT_MAX_DEVCOMMS, from the first rt_devcomm_create
  void *user, *ref_state;
  unsigned long long epoch; // advanced before every step
  unsigned long long step;  // index of the current step
  unsigned long long input_step; // step whose inputs the INPUT buffers hold
  int skip;                 // --skip-check bits (rt_alloc's initial fill)
                            // (in_reference lives in the vault: rt_secret.cu)
  int (*reset_fn)(struct wl_ctx *);
  char err[RT_ERR_MAX];
  int in_setup;
  int spec_only;  // the judge runs the trusted baseline's wl_setup to learn
                  // the buffers: plain allocations, no communicator
};

// The runtime's last error (one line); set by rt_errorf / rt_fail.
extern char rt_last_error[RT_ERR_MAX];
void rt_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

struct rt_buf *rt_find(struct wl_ctx *ctx, const char *name);
int rt_dtype_size(int dtype);
int rt_dtype_is_float(int dtype);
const char *rt_dtype_name(int dtype);

// rt_ctx.cu: refill this rank's INPUTs for ctx->input_step (with HASH_DEV,
// input I's hash goes to HASH_DEV[2 * I] in the same pass; NULL: none);
// free all buffers.
int rt_inputs_fill(struct wl_ctx *ctx, cudaStream_t s, unsigned long long *hash_dev);
void rt_ctx_release(struct wl_ctx *ctx);
// Key of input ID (rt_buf.id) of RANK in STEP: a PRF of the secret.
uint64_t rt_input_key(const struct wl_ctx *ctx, uint32_t id, int rank, unsigned long long step);
// The worker's fill: every INPUT I of this rank from KEYS[I] (the judge's
// keys, indexed like ctx->bufs), then the reference's input hook.
int rt_inputs_fill_keys(struct wl_ctx *ctx, cudaStream_t s, const uint64_t *keys);
// "in-process" (rt_main.cu's own loop) or "separate" (rt_split.cu): what
// RESULT.json's "judge" says.
extern const char *rt_judge_process;
// rt_split.cu: the judge (a trusted binary: runtime, reference and the
// workload's baseline) that starts the candidate's binary as its worker and
// judges it from outside; and the worker's side.  Exit statuses as main's.
int rt_judge_main(struct rt_opts *o);
int rt_worker_main(int argc, char **argv);
// rt_vranks.cu: destroy and free the device communicators (rt_ctx_release).
void rt_devcomms_release(struct wl_ctx *ctx);

// rt_secret.cu: the per-run secret in a PROT_NONE page (docs/contracts.md 4d).
// Read the secret from FD (>= 0; closed after) or draw it (FD < 0). 0 or -1.
int rt_secret_init(int fd);
int rt_secret_drawn(void);              // drawn here, not handed in
void rt_secret_hex(char out[33]);       // for RESULT.json (the replay)
int rt_secret_parse(const char *hex, uint64_t *k0, uint64_t *k1);
uint64_t rt_siphash_words(uint64_t k0, uint64_t k1, const uint64_t *m, int n);
// PRF(secret, DOMAIN, A, B, C): SipHash-2-4 of the four words.
uint64_t rt_prf(uint64_t domain, uint64_t a, uint64_t b, uint64_t c);
// Size R of a --plan run: mixed into every later rt_prf (rt_main.cu sets it
// as each size starts; 0 otherwise).
void rt_prf_round(unsigned r);
enum { RT_PRF_INPUT = 1, RT_PRF_TIMED = 2, RT_PRF_PERTURB = 3, RT_PRF_HASH = 4 };
// The vault page is readable only between open and close (nested).
void rt_vault_open(void);
void rt_vault_close(void);
void rt_set_in_reference(int v);        // call with the vault open
int rt_in_reference(void);              // 0 while the vault is closed

// Device helpers (rt_kernels.cu); all enqueue on STREAM.
uint64_t rt_mix64(uint64_t x);
// Seeded random inputs under KEY (rt_kernels.cu: one mix per 8 bytes); with
// HASH_OUT (device u64, else NULL) also rt_hash's value of what was written.
int rt_fill_random(void *dev, size_t bytes, int dtype, uint64_t key,
                   unsigned long long *hash_out, cudaStream_t stream);
int rt_poison(void *dev, size_t bytes, int dtype, int counts,
              cudaStream_t stream);
// Order-dependent 64-bit hash of BYTES at DEV into *OUT_DEV (device u64),
// keyed by the per-run secret (RT_PRF_HASH).
int rt_hash(const void *dev, size_t bytes, unsigned long long *out_dev,
            cudaStream_t stream);
int rt_spin(double ms, cudaStream_t stream);
// Two keyed sums of BYTES at DEV into OUT_DEV[0..1] (device u64): the
// worker's commitment to an output, keys from the judge (rt_split.cu).
int rt_hash_keyed(const void *dev, size_t bytes, uint64_t hk0, uint64_t hk1,
                  unsigned long long *out_dev, cudaStream_t stream);
// rt_streams.cu: the streams the implementation created (cuco links with
// --wrap for cudaStreamCreate*, cudaStreamDestroy).  Enter/leave bracket
// every call into implementation code on this thread (RT_CAND); rt_side_delay
// enqueues a spin of MS on each of CTX's streams and on the default ones.
void rt_cand_enter(struct wl_ctx *ctx);
void rt_cand_leave(void);
#define RT_CAND(ctx, stmt)                                                  \
  do {                                                                      \
    rt_cand_enter(ctx);                                                     \
    stmt;                                                                   \
    rt_cand_leave();                                                        \
  } while (0)
int rt_side_delay(struct wl_ctx *ctx, double ms);
// The hog: every CTA bumps *RESIDENT_DEV (mapped host memory, may be NULL)
// when it starts, so the runtime can wait until the whole hog is resident.
// Returns the number of CTAs launched in *NCTA.
int rt_hog(void *scratch, size_t bytes, double ms, cudaStream_t stream,
           unsigned int *resident_dev, int *ncta);

struct rt_cmp {
  double err2, ref2;          // sums over compared elements
  unsigned long long nan, poison, compared;
  unsigned long long outside;  // written where EXPECTED is all-ones (must stay poison)
  double worst_row_rel;       // max over rows of the row's relative L2
  long long worst_row;
  double max_abs;             // largest |got - expected| over compared values
  double worst_block_rel;     // max over blocks of BLOCK_ROWS rows (0: no blocks)
  long long worst_block;
};
// Compare snapshot GOT (dtype) with EXPECTED (fp32 for float dtypes, else
// own dtype) over ROWS x COLS; SAMPLE_STRIDE > 1 compares every k-th row;
// BLOCK_ROWS > 0 also sums rows into blocks of that many rows (worst block).
// An all-ones EXPECTED element means "must still be poison": kept poison
// there is skipped, a written value counts in OUTSIDE (rt_cmp_elem.cuh).
// MODE: RT_CMP_COUNTS for RT_COUNTS buffers (no effect yet), and
// RT_CMP_UNPOISONED when the OUTPUT was never poisoned (--skip-check
// output-poison): must-stay-poison elements are then skipped whatever they
// hold (zeroed at allocation, they could only ever read as "outside").
enum { RT_CMP_COUNTS = 1, RT_CMP_UNPOISONED = 2 };
int rt_compare(const void *got, const void *expected, int dtype, int mode,
               long long rows, long long cols, long long sample_stride,
               long long block_rows, struct rt_cmp *out, cudaStream_t stream);

// ---- rt_boot.cu: command line, ranks, NCCL bootstrap, progress, JSON

enum rt_mode { RT_MODE_VERIFY = 0, RT_MODE_BENCH = 1 };
enum rt_check_bit {  // --skip-check names (testing the checks only)
  RT_CK_FRESH = 1, RT_CK_POISON = 2 /* OUTPUT poison */, RT_CK_SNAPSHOT = 4,
  RT_CK_INPUT_HASH = 8, RT_CK_HOST_CLOCK = 16, RT_CK_LOCAL = 32,
  RT_CK_TIMED_VERIFY = 64, RT_CK_RECV_POISON = 128, RT_CK_PERTURB_DELAY = 256,
  RT_CK_PERTURB_HOG = 512, RT_CK_PERTURB_ORDER = 1024,
  // issue 22: the bound, and the public (pre-secret) rules, for harden.sh
  RT_CK_SOL = 2048, RT_CK_SECRET_STEPS = 4096, RT_CK_SECRET_INPUTS = 8192
};
#define RT_CK_ALL 16383
// Perturbation kinds (verify --perturb): one step each.
enum { RT_PK_DELAY = 0, RT_PK_HOG = 1, RT_PK_ORDER = 2, RT_PK_TIMED = 3 /* not a kind */ };
extern const char *const rt_pk_name[3];  // "perturb-delay", "perturb-hog", ...
extern const int rt_pk_bit[3];           // their --skip-check bits

struct rt_opts {
  struct wl_problem prob;
  int mode, warmup, iters, perturb, vranks, skip;
  double min_time, tol, local_tol, block_tol;
  double pace_ms;  // bench: a step starts >= pace_ms after the last one started
  // bench: stop once the median's 95% interval is within +-ci_stop of it
  // (relative; 0: off), after >= RT_CI_MIN_STEPS timed steps and --iters.
  // Sub-millisecond steps otherwise run up to 2000 verified steps to reach
  // --min-time, most of the bench's wall time (issue 26).
  double ci_stop;
  const char *out, *machine, *id_file, *impl, *workload;
  int secret_fd;   // --secret-fd N (-1: draw the secret here)
  // --judge-worker FILE: this process is the judge (rt_split.cu) and FILE
  // holds the worker's command, NUL-separated; NULL: the in-process loop
  const char *judge_worker;
  char params_text[512];
  // --plan FILE: sizes run one after another in this process (cuco eval:
  // NCCL, CUDA and the libraries start once per stage, not per size).
  // Each line: NAME PARAMS TOL LOCAL_TOL BLOCK_TOL ('-': the command
  // line's); rt_plan_select makes size I current.  RESULT.json of size I
  // is OUT.I (result_out); the progress file stays OUT.rankR.progress.
  int plan_n, plan_cur;  // sizes, and the current one (progress "size I")
  struct rt_plan_size *plan;
  const char *result_out;  // NULL: out
};

#define RT_PLAN_MAX 32
struct rt_plan_size {
  char name[WL_NAME_MAX];
  char params[512];
  double tol, local_tol, block_tol;  // < 0: the command line's
};
// Make size I of the plan current: o->prob's params and size name, the
// tolerances.  0, or -1 (rt_last_error).
int rt_plan_select(struct rt_opts *o, int i);
// Reset the phase accounting for the next size of a plan (rt_phase.h).
void rt_phases_restart(void);

// Parse argv into OPTS (ranks from flags or OMPI_/PMI_/SLURM_ env).
// 0, or -2 after printing a one-line usage error.
int rt_parse_args(int argc, char **argv, struct rt_opts *opts);
// Check NCCL version and NVLS env, create the communicator on the device of
// the local rank.  0 or -1 (rt_last_error).
int rt_boot_nccl(struct rt_opts *opts, struct wl_ctx *ctx);
// Write "<out>.rank<R>.progress" atomically with STAGE, and start the
// next phase: the time since the previous call goes to that call's class
// (the stage's leading letters, runtime/rt_phase.h).  The first call also
// records "start", the time from the process's start to it.
void rt_progress(const struct rt_opts *opts, const char *stage);
// Phase accounting (issue 26: where does cuco eval's minute per candidate
// go?).  Shared here because the time of interest is split across units:
// rt_main.cu and rt_vranks.cu move the judging of outputs (the lazily
// computed reference included) out of "verify"/"perturb"/"timed" into its
// own class, and rt_judge.cu's RESULT.json carries the totals.
// Move the time since T0_MS (rt_now_ms) from the current phase to CLS.
void rt_phase_move(const char *cls, double t0_ms);
// Print ',\n "phases_ms": {...}' (this rank's classes so far, the current
// one up to now) to F; nothing before the first rt_progress.
void rt_phases_write(FILE *f);
// Print S as a JSON string literal to F.
void rt_json_str(FILE *f, const char *s);
// Copy the --machine file into F as a JSON value ("null" if unusable).
void rt_json_machine(FILE *f, const char *path);
double rt_now_ms(void);

// ---- rt_judge.cu: one output of one step, judged (both modes share it)
#define RT_REASON_MAX 192
struct rt_judgement {
  double rel, row, block;     // global, worst row, worst block relative L2
  unsigned long long nan, poison, outside;
  int passed;
  char reason[RT_REASON_MAX]; // "; "-separated, each starting with its mechanism
};
// Run the reference for the current step into B->expected, compare B's
// snapshot (SAMPLE: every k-th row) and judge it with O's tolerances. Names
// the mechanism in each reason: poison still in the snapshot but not in the
// live buffer is "snapshot:" (late work); NaN while receive windows were
// poisoned is "recv-poison:"; a wrong output that equals the result for an
// earlier step's inputs is "fresh-inputs:". PREFIX (e.g. "perturb-hog", or
// NULL) goes in front of every reason. 0, or -1 with rt_last_error set.
int rt_judge_output(struct wl_ctx *ctx, struct rt_buf *b, const struct rt_opts *o,
                    long long sample, const char *prefix, struct rt_judgement *j);
// Append "[PREFIX: ]TEXT" to REASON (capacity RT_REASON_MAX).
void rt_reason_add(char *reason, const char *prefix, const char *text);

// Names RESULT.json carries when --workload/--impl were not given.
#ifndef CUCO_WORKLOAD_NAME
#define CUCO_WORKLOAD_NAME ""
#endif
#ifndef CUCO_IMPL_NAME
#define CUCO_IMPL_NAME ""
#endif
// ---- rt_judge.cu: RESULT.json (docs/contracts.md section 4), both modes
enum { RT_STEP_CHECK = 0, RT_STEP_TIMED = 1, RT_STEP_PERTURB = 2 };
extern const char *const rt_step_kind_name[3];
// One verification record; identical layout on every rank (allgathered).
struct rt_check {
  int rank, kind, passed;  // kind: RT_STEP_*
  char output[WL_NAME_MAX];
  double rel_l2, row_rel, block_rel;
  unsigned long long nan, poison, outside;
  char reason[RT_REASON_MAX];
};
// The check records of one rank (RT_MAX_CHECKS of them, rt_bench.h): the
// record of (KIND, OUTPUT) (timed steps fold into one per output, every
// other step gets its own), made in CHECKS[*N] when new; the last slot is
// reused when full.
struct rt_check *rt_check_new(struct rt_check *checks, int *n, int rank, int kind,
                              const char *output);
// Fold J into record C (worst values kept; J's reason: appended when APPEND,
// else kept only when C has none yet).
void rt_check_fold(struct rt_check *c, const struct rt_judgement *j, int append);
// A failed record C: the first one of the rank goes to FIRST ("rank R kind
// output: reason"); *FAILED set.
void rt_check_note(const struct rt_check *c, int *failed, char *first, size_t n);

// Write O->out atomically (a temp file renamed): the head (workload, impl,
// params, size, NRANKS, VRANKS, protocol_test = VRANKS > 0, STATUS, ERROR,
// replay), the N checks, then what TAIL(F, ARG) prints (",\n \"timing\": ..."
// sections; TAIL may be NULL), the writing rank's phases_ms, then the
// machine.  Errors go to stderr.
void rt_result_write(const struct rt_opts *o, int nranks, int vranks, const char *status,
                     const char *error, const struct rt_check *checks, int n,
                     void (*tail)(FILE *f, const void *arg), const void *arg);

// ---- rt_vranks.cu: the --vranks mode (binaries built with -DCUCO_VRANKS)
#ifdef CUCO_VRANKS
// Rank ctx's next WINDOW buffer B: a slice of the world's R-slice window.
int rt_vranks_window(struct wl_ctx *ctx, struct rt_buf *b);
// Rank ctx's next device communicator: the emulated one of that rank.
int rt_vranks_devcomm(struct wl_ctx *ctx, const ncclDevCommRequirements *reqs,
                      ncclDevComm *out);
// Runs the whole --vranks mode; returns the exit status.
int rt_vranks_main(struct rt_opts *opts);
#endif

#endif  // CUCO_RT_INTERNAL_CUH
