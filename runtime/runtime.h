/* runtime/runtime.h - the workload ABI of the cuco GPU runtime (plain C).
 *
 * A workload binary = the runtime .cu files (this harness, with main) + the workload's
 * reference.cu (trusted, frozen) + ONE implementation (baseline.cu, seed.cu
 * or a candidate).  The implementation defines wl_setup/wl_step/wl_teardown;
 * the reference defines wl_reference.  Everything else (ranks, NCCL, inputs,
 * poison, timing, verification, RESULT.json) belongs to the runtime, so a
 * candidate cannot change how it is fed, timed or checked.
 *
 * Rules a workload must follow (the runtime enforces what it can):
 *  - Declare every device buffer the step touches with rt_alloc() in
 *    wl_setup: INPUT (filled by the runtime with fresh seeded random data
 *    before EVERY step, hashed before/after the step: must stay unchanged),
 *    OUTPUT (poisoned before every step, snapshotted on the stream right
 *    after the step's end event, verified), RECV (receive regions: poisoned
 *    before every step, NaN for floats, 0xFFFFFFFF for counts), SCRATCH
 *    (left alone: workspaces, flags).
 *  - wl_step only ENQUEUES work ordered after rt_stream(ctx) and makes
 *    rt_stream(ctx) wait for all of it (side streams: fork with an event
 *    recorded on rt_stream, join back with an event before returning).  The
 *    runtime records the end event on rt_stream right after wl_step returns.
 *  - Communication state (flags, counters, barrier epochs): a step may not
 *    rely on state an earlier step left.  Either compare flags against
 *    rt_epoch(ctx) (the runtime advances it before every step, warm-ups
 *    included; it never repeats within a process), or register a reset hook
 *    with rt_on_reset() (called between steps, outside the timed region,
 *    after every rank's previous step finished and before the cross-rank
 *    barrier of the next one).  NCCL LSA barrier sessions keep their own
 *    epochs and are fine as long as every rank runs the same sequence.
 *  - No globals: all per-run state lives behind rt_set_user()/rt_get_user()
 *    (several contexts may live in one process in virtual-rank mode).
 *  - Errors: return rt_fail(ctx, "...") (negative) from wl_setup/wl_step.
 */
#ifndef CUCO_RUNTIME_H
#define CUCO_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WL_MAX_PARAMS 16
#define WL_NAME_MAX 48

/* One problem parameter, e.g. M=4096. */
struct wl_param_kv {
  char name[WL_NAME_MAX];
  long long value;
};

/* The problem one rank solves (a plain record filled by the runtime). */
struct wl_problem {
  int nparams;
  struct wl_param_kv params[WL_MAX_PARAMS];
  char size_name[WL_NAME_MAX]; /* "" when --size-name was not given */
  int rank, nranks, local_rank;
  unsigned long long seed; /* inputs derive from (seed, rank, buffer, step) */
  int vranks;              /* 0 = real ranks */
};

/* Value of parameter NAME, or DEF when absent. */
long long wl_param(const struct wl_problem *p, const char *name,
                   long long def);

/* Opaque per-rank context owned by the runtime. */
struct wl_ctx;

/* ---- implemented by the workload implementation (baseline/seed/candidate) */

/* Allocate (rt_alloc), register windows, create device communicators,
 * plan.  Return 0 or rt_fail(...). */
int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p);
/* Enqueue ONE step on rt_stream(ctx) (see the rules above). 0 or error. */
int wl_step(struct wl_ctx *ctx);
/* Release what wl_setup made besides rt_alloc buffers (those the runtime
 * frees).  Called after every rank finished its last step. */
void wl_teardown(struct wl_ctx *ctx);

/* ---- implemented by the workload's trusted reference.cu (frozen) */

/* Compute the expected contents of OUTPUT buffer OUTPUT_NAME of this rank
 * for the current step into EXPECTED_DEV (device memory the runtime owns:
 * count elements as fp32 for floating dtypes, the output's own dtype for
 * integer dtypes).  Inputs of any rank come from rt_input_regen().  Runs on
 * rt_ref_stream(ctx); 0 or rt_fail(...). */
int wl_reference(struct wl_ctx *ctx, const struct wl_problem *p,
                 const char *output_name, void *expected_dev);

/* Optional: free what wl_reference cached with rt_set_ref_state (device
 * buffers, library handles).  The state is shaped by one size; a run of
 * several sizes in one process (--plan, docs/contracts.md section 4) calls
 * it after each size, then clears the state.  Without it the state is
 * dropped (leaked) between sizes. */
void wl_reference_release(struct wl_ctx *ctx);

/* The bits of an fp32 expected element (bf16/f16/f32 outputs only) that
 * mean "must be written, value not compared": a reference that computes
 * sampled rows only (flash_attn_cp) writes it everywhere else.  A still-
 * poison element there fails as poison, NaN/Inf as nan; anything else is
 * outside the L2 sums (docs/contracts.md section 4, rt_cmp_elem.cuh). */
#define RT_EXP_ANY 0xFFFFFFFEu

/* Minimal work of ONE step of ONE rank (docs/contracts.md section 4e),
 * counted honestly: each input read once, each output written once, no
 * intermediate traffic; causal attention counts its lower triangle; MoE its
 * routed tokens; bytes that must cross the link into or out of this rank
 * (the larger direction; 0 at one rank). */
struct wl_work {
  double flops;      /* floating-point operations (an FMA is 2) */
  double hbm_bytes;  /* bytes that must cross this GPU's HBM */
  double link_bytes; /* bytes that must cross the link, per direction */
  int fp8;           /* 1: the flops run at the fp8 peak, else bf16 */
};
/* Implemented by the trusted reference.cu (frozen; a candidate never
 * defines it): fill *W for problem P (its rank and rank count).  0, or
 * negative when P is not a valid problem.  Optional (the runtime refers
 * to it weakly: without it there is no speed-of-light bound); a second
 * definition in a candidate fails to link. */
int wl_work(const struct wl_problem *p, struct wl_work *w);

/* ---- provided by the runtime, callable from C and C++ */

enum rt_kind { RT_INPUT = 0, RT_OUTPUT = 1, RT_RECV = 2, RT_SCRATCH = 3 };
enum rt_dtype {
  RT_BF16 = 0,
  RT_F16 = 1,
  RT_F32 = 2,
  RT_F64 = 3,
  RT_I32 = 4,
  RT_U32 = 5,
  RT_I64 = 6,
  RT_U8 = 7
};
enum rt_flags {
  RT_WINDOW = 1,  /* ncclMemAlloc + ncclCommWindowRegister(SYMMETRIC) */
  RT_COUNTS = 2,  /* RECV of counts: poisoned 0xFFFFFFFF (never 0) */
  RT_ZERO = 4     /* SCRATCH: zeroed once at allocation */
};

/* Declare and allocate buffer NAME (unique, <= WL_NAME_MAX-1 chars) of
 * BYTES bytes in wl_setup.  Returns the device pointer (owned by the
 * runtime, freed after wl_teardown) or NULL with the error recorded (then
 * return rt_fail-style: the runtime reports it).  WINDOW buffers: every rank
 * must declare the same sizes in the same order. */
void *rt_alloc(struct wl_ctx *ctx, const char *name, size_t bytes, int kind,
               int dtype, int flags);
/* Device pointer of buffer NAME, or NULL. */
void *rt_buffer(struct wl_ctx *ctx, const char *name);
/* Declare the row shape of OUTPUT NAME (rows x cols elements, row-major)
 * for the per-row local checks; default 1 row. 0 or negative error. */
int rt_output_shape(struct wl_ctx *ctx, const char *name, long long rows,
                    long long cols);
/* Bound the largest |got - expected| of OUTPUT NAME (over the compared
 * elements; 0 = no bound).  For the trusted reference: call it from
 * wl_reference (every call; the runtime checks after it returns), so a
 * setting made anywhere else is overwritten.  A failure reads
 * "local-check: max |error| X > BOUND".  0 or negative error. */
int rt_output_max_abs(struct wl_ctx *ctx, const char *name, double bound);
/* Declare blocks of OUTPUT NAME for the per-block local check: every
 * ROWS_PER_BLOCK consecutive rows (of the rt_output_shape rows) form one
 * block (KV blocks, a rank's slice, GEMM tile rows); the worst block's
 * relative L2 must stay under the block threshold (--block-tol).  Optional:
 * without it there is no per-block check.  Call after rt_output_shape, in
 * wl_setup.  0 or negative error.  (Added by issue 10; backward compatible.) */
int rt_output_blocks(struct wl_ctx *ctx, const char *name,
                     long long rows_per_block);
/* Fill DST_DEV (device memory, as large as NAME) with the contents INPUT
 * buffer NAME has on rank RANK in the current step.  Enqueued on
 * rt_ref_stream(ctx).  Only the trusted reference may call it (inside
 * wl_reference): a candidate must get other ranks' data by communicating.
 * 0 or negative error. */
int rt_input_regen(struct wl_ctx *ctx, const char *name, int rank,
                   void *dst_dev);

/* Per-workload state; the runtime never touches it. */
void rt_set_user(struct wl_ctx *ctx, void *user);
void *rt_get_user(struct wl_ctx *ctx);

/* Current step's epoch: > 0, strictly increasing before every step. */
unsigned long long rt_epoch(const struct wl_ctx *ctx);
/* Index of the step whose inputs the INPUT buffers hold (the input stream
 * rt_input_regen and wl_input_post reproduce; stays 1 when fresh inputs are
 * switched off, and names an earlier step while the runtime checks for a
 * replayed output). */
unsigned long long rt_step(const struct wl_ctx *ctx);
/* Hook called between steps (see the rules above); may enqueue on
 * rt_stream(ctx).  Pass NULL to remove. */
void rt_on_reset(struct wl_ctx *ctx, int (*fn)(struct wl_ctx *ctx));

int rt_rank(const struct wl_ctx *ctx);
int rt_nranks(const struct wl_ctx *ctx);
const struct wl_problem *rt_problem(const struct wl_ctx *ctx);

/* Record a one-line error (printf format) and return -1. */
int rt_fail(struct wl_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif /* CUCO_RUNTIME_H */
