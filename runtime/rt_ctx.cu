// runtime/rt_ctx.cu - the per-rank context behind the workload ABI:
// parameters, buffer declaration (rt_alloc), windows, device communicators,
// user state, epochs, errors.
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.cuh"

char rt_last_error[RT_ERR_MAX];

void rt_errorf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rt_last_error, sizeof rt_last_error, fmt, ap);
  va_end(ap);
  for (char *c = rt_last_error; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
}

extern "C" int rt_fail(struct wl_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rt_last_error, sizeof rt_last_error, fmt, ap);
  va_end(ap);
  for (char *c = rt_last_error; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
  if (ctx) snprintf(ctx->err, sizeof ctx->err, "%s", rt_last_error);
  return -1;
}

extern "C" long long wl_param(const struct wl_problem *p, const char *name,
                              long long def) {
  for (int i = 0; p && i < p->nparams; i++)
    if (strcmp(p->params[i].name, name) == 0) return p->params[i].value;
  return def;
}

int rt_dtype_size(int dtype) {
  switch (dtype) {
    case RT_BF16:
    case RT_F16:
      return 2;
    case RT_F32:
    case RT_I32:
    case RT_U32:
      return 4;
    case RT_F64:
    case RT_I64:
      return 8;
    default:
      return 1;
  }
}

int rt_dtype_is_float(int dtype) {
  return dtype == RT_BF16 || dtype == RT_F16 || dtype == RT_F32 ||
         dtype == RT_F64;
}

const char *rt_dtype_name(int dtype) {
  static const char *names[] = {"bf16", "f16", "f32", "f64",
                                "i32",  "u32", "i64", "u8"};
  return dtype >= 0 && dtype <= RT_U8 ? names[dtype] : "?";
}

struct rt_buf *rt_find(struct wl_ctx *ctx, const char *name) {
  for (int i = 0; ctx && name && i < ctx->nbufs; i++)
    if (strcmp(ctx->bufs[i].name, name) == 0) return &ctx->bufs[i];
  return NULL;
}

static uint32_t name_hash(const char *s) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

extern "C" void *rt_alloc(struct wl_ctx *ctx, const char *name, size_t bytes,
                          int kind, int dtype, int flags) {
  if (!ctx || !name || !*name || strlen(name) >= WL_NAME_MAX) {
    rt_fail(ctx, "rt_alloc: bad buffer name");
    return NULL;
  }
  if (!ctx->in_setup) {
    rt_fail(ctx, "rt_alloc(%s): only allowed in wl_setup", name);
    return NULL;
  }
  if (rt_find(ctx, name)) {
    rt_fail(ctx, "rt_alloc(%s): declared twice", name);
    return NULL;
  }
  if (ctx->nbufs >= RT_MAX_BUFS) {
    rt_fail(ctx, "rt_alloc(%s): more than %d buffers", name, RT_MAX_BUFS);
    return NULL;
  }
  if (kind < RT_INPUT || kind > RT_SCRATCH || dtype < RT_BF16 ||
      dtype > RT_U8 || (flags & ~(RT_WINDOW | RT_COUNTS | RT_ZERO))) {
    rt_fail(ctx, "rt_alloc(%s): bad kind %d / dtype %d / flags %#x", name,
            kind, dtype, flags);
    return NULL;
  }
  if (bytes == 0 || bytes > ((size_t)1 << 40)) {
    rt_fail(ctx, "rt_alloc(%s): size %zu out of range", name, bytes);
    return NULL;
  }
  struct rt_buf *b = &ctx->bufs[ctx->nbufs];
  memset(b, 0, sizeof *b);
  snprintf(b->name, sizeof b->name, "%s", name);
  b->kind = kind;
  b->dtype = dtype;
  b->flags = flags;
  b->bytes = bytes;
  b->rows = 1;
  b->cols = (long long)(bytes / rt_dtype_size(dtype));
  b->id = name_hash(name);
  cudaError_t ce;
  if ((flags & RT_WINDOW) && !ctx->spec_only) {
#ifdef CUCO_VRANKS  // a slice of one R-slice allocation (rt_vranks.cu)
    if (rt_vranks_window(ctx, b) != 0) return NULL;
  } else if (0) {
#endif
    ncclResult_t r = ncclMemAlloc(&b->dev, bytes);
    if (r != ncclSuccess) {
      rt_fail(ctx, "ncclMemAlloc(%s, %zu): %s", name, bytes,
              ncclGetErrorString(r));
      return NULL;
    }
    r = ncclCommWindowRegister(ctx->comm, b->dev, bytes, &b->win,
                               NCCL_WIN_COLL_SYMMETRIC);
    if (r != ncclSuccess) {
      rt_fail(ctx, "ncclCommWindowRegister(%s): %s", name,
              ncclGetErrorString(r));
      ncclMemFree(b->dev);
      return NULL;
    }
  } else if ((ce = cudaMalloc(&b->dev, bytes)) != cudaSuccess) {
    rt_fail(ctx, "cudaMalloc(%s, %zu): %s", name, bytes,
            cudaGetErrorString(ce));
    return NULL;
  }
  ctx->nbufs++;
  // Never hand out zeros: poison now, inputs are refilled before each step.
  // With a poison check switched off (--skip-check, testing only) its
  // buffers start zeroed instead, so the allocation cannot stand in for it.
  int zero = (flags & RT_ZERO) || (kind == RT_RECV && (ctx->skip & RT_CK_RECV_POISON)) ||
             (kind == RT_OUTPUT && (ctx->skip & RT_CK_POISON));
  // On the step stream and waited for: a plain cudaMemset runs on the legacy
  // stream, which is not ordered with the runtime's non-blocking streams, so
  // the poison could land after the first reset hook had filled the buffer.
  ce = cudaMemsetAsync(b->dev, zero ? 0 : 0xFF, bytes, ctx->stream);
  if (ce == cudaSuccess) ce = cudaStreamSynchronize(ctx->stream);
  if (ce != cudaSuccess) {
    rt_fail(ctx, "cudaMemset(%s): %s", name, cudaGetErrorString(ce));
    return NULL;
  }
  if (kind == RT_OUTPUT) {
    int fbytes = rt_dtype_is_float(dtype) && dtype != RT_F64 ? 4
                                                             : rt_dtype_size(dtype);
    size_t n = bytes / rt_dtype_size(dtype);
    if ((ce = cudaMalloc(&b->snap, bytes)) != cudaSuccess ||
        (ce = cudaMalloc(&b->expected, n * fbytes + 16)) != cudaSuccess) {
      rt_fail(ctx, "cudaMalloc(snapshot of %s): %s", name,
              cudaGetErrorString(ce));
      return NULL;
    }
  }
  return b->dev;
}

extern "C" void *rt_buffer(struct wl_ctx *ctx, const char *name) {
  struct rt_buf *b = rt_find(ctx, name);
  return b ? b->dev : NULL;
}

extern "C" int rt_output_shape(struct wl_ctx *ctx, const char *name,
                               long long rows, long long cols) {
  struct rt_buf *b = rt_find(ctx, name);
  if (!b || b->kind != RT_OUTPUT)
    return rt_fail(ctx, "rt_output_shape(%s): no such OUTPUT", name);
  if (rows < 1 || cols < 1 ||
      (size_t)(rows * cols) * rt_dtype_size(b->dtype) > b->bytes)
    return rt_fail(ctx, "rt_output_shape(%s): %lldx%lld exceeds the buffer",
                   name, rows, cols);
  b->rows = rows;
  b->cols = cols;
  if (b->block_rows > rows) b->block_rows = rows;
  return 0;
}

extern "C" int rt_output_blocks(struct wl_ctx *ctx, const char *name,
                                long long rows_per_block) {
  struct rt_buf *b = rt_find(ctx, name);
  if (!b || b->kind != RT_OUTPUT)
    return rt_fail(ctx, "rt_output_blocks(%s): no such OUTPUT", name);
  if (!ctx->in_setup) return rt_fail(ctx, "rt_output_blocks(%s): only in wl_setup", name);
  if (rows_per_block < 1 || rows_per_block > b->rows)
    return rt_fail(ctx, "rt_output_blocks(%s): %lld rows per block, the output has %lld rows",
                   name, rows_per_block, b->rows);
  b->block_rows = rows_per_block;
  return 0;
}

// Key of input NAME of RANK in step STEP: the only source of input bits.
// A PRF of the per-run secret (rt_secret.cu): a candidate that copies the
// generator still cannot make a peer's inputs. --skip-check secret-inputs
// (tests only) brings back the old public key, to show the secret matters.
uint64_t rt_input_key(const struct wl_ctx *ctx, uint32_t id, int rank,
                      unsigned long long step) {
  if (ctx->skip & RT_CK_SECRET_INPUTS) {
    uint64_t k = rt_mix64(ctx->prob.seed);
    k = rt_mix64(k ^ ((uint64_t)id << 20) ^ (uint64_t)rank);
    return rt_mix64(k ^ (step * 0x9E3779B97F4A7C15ull));
  }
  return rt_prf(RT_PRF_INPUT, ctx->prob.seed, ((uint64_t)id << 32) | (uint32_t)rank, step);
}

// Refill every INPUT of this rank for the current step (runtime only).
int rt_inputs_fill(struct wl_ctx *ctx, cudaStream_t s, unsigned long long *hash_dev) {
  int rc = 0;
  rt_vault_open();
  for (int i = 0; rc == 0 && i < ctx->nbufs; i++) {
    struct rt_buf *b = &ctx->bufs[i];
    if (b->kind != RT_INPUT) continue;
    rc = rt_fill_random(b->dev, b->bytes, b->dtype,
                        rt_input_key(ctx, b->id, ctx->prob.rank, ctx->input_step),
                        hash_dev ? &hash_dev[2 * i] : NULL, s);
    if (rc == 0 && wl_input_post &&
        wl_input_post(ctx, b->name, ctx->prob.rank, b->dev, ctx->input_step, s) != 0) {
      rt_errorf("input hook for %s: %s", b->name, ctx->err);
      rc = -1;
    }
  }
  rt_vault_close();
  return rc;
}

int rt_inputs_fill_keys(struct wl_ctx *ctx, cudaStream_t s, const uint64_t *keys) {
  for (int i = 0; i < ctx->nbufs; i++) {
    struct rt_buf *b = &ctx->bufs[i];
    if (b->kind != RT_INPUT) continue;
    RT_TRY(rt_fill_random(b->dev, b->bytes, b->dtype, keys[i], NULL, s));
    if (wl_input_post &&
        wl_input_post(ctx, b->name, ctx->prob.rank, b->dev, ctx->input_step, s) != 0) {
      rt_errorf("input hook for %s: %s", b->name, ctx->err);
      return -1;
    }
  }
  return 0;
}

extern "C" int rt_input_regen(struct wl_ctx *ctx, const char *name, int rank,
                              void *dst_dev) {
  struct rt_buf *b = rt_find(ctx, name);
  if (!rt_in_reference())
    return rt_fail(ctx, "rt_input_regen(%s): only the trusted reference may regenerate "
                        "inputs (an implementation must communicate)", name);
  if (!b || b->kind != RT_INPUT)
    return rt_fail(ctx, "rt_input_regen(%s): no such INPUT", name);
  if (rank < 0 || rank >= ctx->prob.nranks)
    return rt_fail(ctx, "rt_input_regen(%s): rank %d out of range", name, rank);
  if (rt_fill_random(dst_dev, b->bytes, b->dtype,
                     rt_input_key(ctx, b->id, rank, ctx->input_step), NULL,
                     ctx->ref_stream) != 0)
    return rt_fail(ctx, "%s", rt_last_error);
  if (wl_input_post && wl_input_post(ctx, name, rank, dst_dev, ctx->input_step, ctx->ref_stream) != 0)
    return -1;
  return 0;
}

extern "C" int rt_output_max_abs(struct wl_ctx *ctx, const char *name, double bound) {
  struct rt_buf *b = rt_find(ctx, name);
  if (!b || b->kind != RT_OUTPUT)
    return rt_fail(ctx, "rt_output_max_abs(%s): no such OUTPUT", name);
  if (!(bound >= 0)) return rt_fail(ctx, "rt_output_max_abs(%s): bad bound %g", name, bound);
  b->max_abs = bound;
  return 0;
}

extern "C" void rt_set_user(struct wl_ctx *ctx, void *user) { ctx->user = user; }
extern "C" void *rt_get_user(struct wl_ctx *ctx) { return ctx->user; }
void rt_set_ref_state(struct wl_ctx *ctx, void *s) { ctx->ref_state = s; }
void *rt_get_ref_state(struct wl_ctx *ctx) { return ctx->ref_state; }
extern "C" unsigned long long rt_epoch(const struct wl_ctx *ctx) {
  return ctx->epoch;
}
extern "C" unsigned long long rt_step(const struct wl_ctx *ctx) { return ctx->input_step; }
extern "C" void rt_on_reset(struct wl_ctx *ctx, int (*fn)(struct wl_ctx *)) {
  ctx->reset_fn = fn;
}
extern "C" int rt_rank(const struct wl_ctx *ctx) { return ctx->prob.rank; }
extern "C" int rt_nranks(const struct wl_ctx *ctx) { return ctx->prob.nranks; }
extern "C" const struct wl_problem *rt_problem(const struct wl_ctx *ctx) {
  return &ctx->prob;
}

cudaStream_t rt_stream(struct wl_ctx *ctx) { return ctx->stream; }
cudaStream_t rt_ref_stream(struct wl_ctx *ctx) { return ctx->ref_stream; }
ncclComm_t rt_comm(struct wl_ctx *ctx) { return ctx->comm; }

ncclWindow_t rt_window(struct wl_ctx *ctx, const char *name) {
  struct rt_buf *b = rt_find(ctx, name);
  return b && (b->flags & RT_WINDOW) ? b->win : NULL;
}

// Free everything rt_alloc/rt_devcomm_create made (after wl_teardown).
void rt_ctx_release(struct wl_ctx *ctx) {
  rt_devcomms_release(ctx);
  for (int i = 0; i < ctx->nbufs; i++) {
    struct rt_buf *b = &ctx->bufs[i];
#ifdef CUCO_VRANKS
    if (b->flags & RT_WINDOW) {
    } else
#endif
    if (!b->dev) {
    } else if ((b->flags & RT_WINDOW) && !ctx->spec_only) {
      if (b->win) ncclCommWindowDeregister(ctx->comm, b->win);
      ncclMemFree(b->dev);
    } else {
      cudaFree(b->dev);
    }
    cudaFree(b->snap);
    cudaFree(b->expected);
  }
  ctx->nbufs = 0;
}
