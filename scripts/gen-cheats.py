#!/usr/bin/env python3
"""Regenerate workloads/gemm_allgather/cheats/*.cu from seed.cu.

Each cheat is the seed with only its EVOLVE block's step() replaced (so the
frozen text stays byte-identical and the tool's static check passes them on
to the stage whose mechanism must catch them), plus a first line
`// CUCO-EXPECT-REJECT: <stage> <mechanism>` (the only line outside the
seed's text: a frozen-text check drops it first).  frozen_edit.cu is the one
that edits frozen text.  Run from the repository root after changing seed.cu.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WL = os.path.join(ROOT, "workloads", "gemm_allgather")
seed = open(os.path.join(WL, "seed.cu")).read()
start = seed.index("static int step(struct wl_ctx *ctx, struct sd *u) {\n  return step_on")
end = seed.index("// EVOLVE-BLOCK-END")
HEAD = """#include <cuda_bf16.h>
#include <time.h>
// Lazily planned GEMM over ROWS rows of the own block starting at row R0,
// reading A from SRC_OFF bytes into its source (cheat helpers).
__attribute__((unused)) static int own_rows_plan(struct wl_ctx *ctx, struct sd *u, struct wl_gemm *g,
                         long long r0, long long rows, unsigned long long src_off) {
  const struct wl_shape *s = &u->s;
  unsigned long long c_off =
      ((unsigned long long)rt_rank(ctx) * s->Mr + r0) * s->Nr * 2;
  return wl_gemm_plan(ctx, g, u->lt, rows, s->Nr, s->K, s->K, s->Nr, s->Nr, 1, 0,
                      0, u->ws, u->ws_bytes,
                      wl_align(src_off + (unsigned long long)r0 * s->K * 2),
                      wl_align(c_off));
}
__attribute__((unused)) static int own_rows_run(struct wl_ctx *ctx, struct sd *u, const struct wl_gemm *g,
                        const char *src, long long r0, cudaStream_t st) {
  const struct wl_shape *s = &u->s;
  return wl_gemm_run(ctx, g, u->lt, src + r0 * s->K * 2, u->B,
                     (char *)u->C + ((size_t)rt_rank(ctx) * s->Mr + r0) * s->Nr * 2,
                     st);
}

"""

CHEATS = {
    "stale_flags": ("verify recv-poison",
        "Stale flag: a 'delivered' flag set by the first step is never tied to\n"
        "// the step (no epoch), so later steps skip the gather and multiply\n"
        "// whatever the receive buffer holds (poison, or old data).", """
static struct wl_gemm g_ag;
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  const size_t block = (size_t)u->s.Mr * u->s.K * 2, off = rt_rank(ctx) * block;
  unsigned long long delivered = 0;
  if (!g_ag.ready && own_rows_plan(ctx, u, &g_ag, 0, u->s.Mr, off) != 0) return -1;
  RT_CUDA(ctx, cudaMemcpyAsync(&delivered, u->done, 8, cudaMemcpyDeviceToHost, st));
  RT_CUDA(ctx, cudaStreamSynchronize(st));
  if (!delivered) {
    RT_CUDA(ctx, cudaMemcpyAsync((char *)u->Ag + off, u->A, block,
                                 cudaMemcpyDeviceToDevice, st));
    RT_CUDA(ctx, cudaMemsetAsync(u->done, 1, 1, st));
  }
  return own_rows_run(ctx, u, &g_ag, (const char *)u->Ag + off, 0, st);
}
"""),
    "skip_rank": ("verify poison",
        "A rank that skips its work: the last rank returns at once.", """
static int step(struct wl_ctx *ctx, struct sd *u) {
  if (rt_rank(ctx) == rt_nranks(ctx) - 1) return 0;
  return step_on(ctx, u, rt_stream(ctx));
}
"""),
    "cached_output": ("verify fresh-inputs",
        "Cached output: computes once, then replays the first step's result.", """
static void *g_cache;  // a candidate's own global: the runtime cannot see it
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  size_t cb = (size_t)u->s.M * u->s.Nr * 2;
  if (!g_cache) {
    RT_CUDA(ctx, cudaMalloc(&g_cache, cb));
    if (step_on(ctx, u, st) != 0) return -1;
    RT_CUDA(ctx, cudaMemcpyAsync(g_cache, u->C, cb, cudaMemcpyDeviceToDevice, st));
    return 0;
  }
  RT_CUDA(ctx, cudaMemcpyAsync(u->C, g_cache, cb, cudaMemcpyDeviceToDevice, st));
  return 0;
}
"""),
    "partial_write": ("verify poison",
        "Partial writes: the ragged last row of the own block is never\n"
        "// computed (a tile loop that drops the remainder).", """
static struct wl_gemm g_part;
static int step(struct wl_ctx *ctx, struct sd *u) {
  if (u->s.Mr < 2) return step_on(ctx, u, rt_stream(ctx));
  if (!g_part.ready && own_rows_plan(ctx, u, &g_part, 0, u->s.Mr - 1, 0) != 0)
    return -1;
  return own_rows_run(ctx, u, &g_part, (const char *)u->A, 0, rt_stream(ctx));
}
"""),
    "row_error": ("verify local-check",
        "One wrong row: correct everywhere except the last row, scaled by 1.1;\n"
        "// the global relative L2 stays under tol, the per-row check does not.", """
__global__ void ce_scale_row(__nv_bfloat16 *row, long long n) {
  for (long long i = threadIdx.x; i < n; i += blockDim.x)
    row[i] = __float2bfloat16(__bfloat162float(row[i]) * 1.1f);
}
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  const struct wl_shape *s = &u->s;
  if (step_on(ctx, u, st) != 0) return -1;
  ce_scale_row<<<1, 256, 0, st>>>((__nv_bfloat16 *)u->C + (s->M - 1) * s->Nr, s->Nr);
  RT_LAUNCH(ctx);
  return 0;
}
"""),
    "timing_escape": ("verify snapshot host-clock",
        "Timing escape: all work runs on a private stream that the step stream\n"
        "// never waits for, so the end event claims ~0 ms.  At small shapes the\n"
        "// snapshot shows poison; with the snapshot skipped (--skip-check\n"
        "// snapshot) the host clock rejects it at big shapes (bench).", """
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  cudaEvent_t ev;  // (leaked: a cheat)
  RT_CUDA(ctx, cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventRecord(ev, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, ev, 0));
  return step_on(ctx, u, u->comm);  // never joined back
}
"""),
    "late_write": ("verify snapshot",
        "Late write: the last row is computed 100 us after the step claims to\n"
        "// be done, on a side stream nobody waits for.  Data read after a device\n"
        "// sync would be right; the snapshot at the end event is not.", """
__global__ void ce_spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
static struct wl_gemm g_head, g_tail;
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  const long long Mr = u->s.Mr;
  if (Mr < 2) return step_on(ctx, u, st);
  if (!g_head.ready && (own_rows_plan(ctx, u, &g_head, 0, Mr - 1, 0) != 0 ||
                        own_rows_plan(ctx, u, &g_tail, Mr - 1, 1, 0) != 0))
    return -1;
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
  if (own_rows_run(ctx, u, &g_head, (const char *)u->A, 0, st) != 0) return -1;
  ce_spin<<<1, 1, 0, u->comm>>>(100000ull);
  RT_LAUNCH(ctx);
  return own_rows_run(ctx, u, &g_tail, (const char *)u->A, Mr - 1, u->comm);
}
"""),
    "no_wait": ("verify perturb-delay",
        "A consumer that does not wait: the step stages A through a copy on the\n"
        "// comm stream that is never ordered after the runtime's stream, then runs\n"
        "// the honest step on the staged copy.  When the runtime's preparation is\n"
        "// late (the delay perturbation) it stages the previous step's inputs.", """
static void *g_stage[64];  // per rank (virtual ranks share the process)
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  const int me = rt_rank(ctx);
  const size_t ab = (size_t)u->s.Mr * u->s.K * 2;
  if (!g_stage[me]) RT_CUDA(ctx, cudaMallocAsync(&g_stage[me], ab, u->comm));
  RT_CUDA(ctx, cudaMemcpyAsync(g_stage[me], u->A, ab, cudaMemcpyDeviceToDevice,
                               u->comm));  // no fork from st
  RT_CUDA(ctx, cudaEventRecord(u->pushed, u->comm));
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->pushed, 0));
  void *a = u->A;
  u->A = g_stage[me];
  int rc = step_on(ctx, u, st);
  u->A = a;
  return rc;
}
"""),
    "masked_recv": ("verify recv-poison",
        "Reads a receive region it never writes (its own block of Ag) and masks\n"
        "// the value with a zero weight: finite leftovers vanish (0 * x = 0), the\n"
        "// NaN poison of the receive window does not.", """
__global__ void ce_mask_add(__nv_bfloat16 *row, long long n, const __nv_bfloat16 *unread) {
  float x = __bfloat162float(unread[0]);
  for (long long i = threadIdx.x; i < n; i += blockDim.x)
    row[i] = __float2bfloat16(__bfloat162float(row[i]) + 0.0f * x);
}
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  const struct wl_shape *s = &u->s;
  if (step_on(ctx, u, st) != 0) return -1;
  const __nv_bfloat16 *own =
      (const __nv_bfloat16 *)u->Ag + (size_t)rt_rank(ctx) * s->Mr * s->K;
  ce_mask_add<<<1, 256, 0, st>>>((__nv_bfloat16 *)u->C + (s->M - 1) * s->Nr, s->Nr, own);
  RT_LAUNCH(ctx);
  return 0;
}
"""),
    "escaped_tail": ("verify host-clock",
        "Correct output at the end event, but 2 ms of the step's work (a tail\n"
        "// that the next step needs done) runs on a private stream that the step\n"
        "// stream never waits for: the events do not see it, the host clock does.", """
__global__ void ce_tail(uint4 *buf, size_t n, unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
      buf[i].x += 1u;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  if (step_on(ctx, u, st) != 0) return -1;
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
  ce_tail<<<8, 256, 0, u->comm>>>((uint4 *)u->ws, u->ws_bytes / 16, 2000000ull);
  RT_LAUNCH(ctx);
  return 0;  // never joined back
}
"""),
    "hog_race": ("verify perturb-hog",
        "A time-bounded wait (\"it is always done by then\"): the own rows go\n"
        "// through a self-copy A -> Ag (one 512-thread CTA on the comm stream, with\n"
        "// a flag) and a 32-thread consumer that waits at most 200 us for the flag\n"
        "// before copying Ag to a stage the GEMM reads.  Beside the runtime's hog\n"
        "// the small consumer still starts, the producer does not: it copies\n"
        "// poison.  (One rank; with more ranks the step is the honest one.)", """
__global__ void __launch_bounds__(512) ce_produce(const unsigned short *src, unsigned short *dst,
                                                  size_t n, unsigned long long *flag,
                                                  unsigned long long ep) {
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicExch(flag, ep);
  }
}
__global__ void __launch_bounds__(32) ce_consume(const unsigned short *src, unsigned short *dst,
                                                 size_t n, unsigned long long *flag,
                                                 unsigned long long ep) {
  if (threadIdx.x == 0) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (atomicAdd(flag, 0ull) < ep && t - t0 < 200000ull);
    __threadfence();
  }
  __syncthreads();
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}
static struct wl_gemm g_own;
static void *g_hstage;
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  if (rt_nranks(ctx) > 1) return step_on(ctx, u, st);
  const size_t n = (size_t)u->s.Mr * u->s.K;
  if (!g_own.ready && own_rows_plan(ctx, u, &g_own, 0, u->s.Mr, 0) != 0) return -1;
  if (!g_hstage) RT_CUDA(ctx, cudaMallocAsync(&g_hstage, n * 2, st));
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
  ce_produce<<<1, 512, 0, u->comm>>>((const unsigned short *)u->A, (unsigned short *)u->Ag, n,
                                     &u->done[0], rt_epoch(ctx));
  RT_LAUNCH(ctx);
  ce_consume<<<1, 32, 0, st>>>((const unsigned short *)u->Ag, (unsigned short *)g_hstage, n,
                               &u->done[0], rt_epoch(ctx));
  RT_LAUNCH(ctx);
  if (own_rows_run(ctx, u, &g_own, (const char *)g_hstage, 0, st) != 0) return -1;
  RT_CUDA(ctx, cudaEventRecord(u->pushed, u->comm));
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->pushed, 0));  // joined: no escape
  return 0;
}
"""),
    "order_race": ("verify perturb-order ranks>=2",
        "Relies on the launch order of the ranks (needs >= 2 ranks; one process\n"
        "// of virtual ranks): each rank waits for its peers' push through their\n"
        "// CUDA events, but only waits 500 us on the host for a peer to have\n"
        "// recorded this step's event; a peer that launches later leaves it\n"
        "// waiting on the previous step's record, and it multiplies poison.", """
static cudaEvent_t g_pev[64];
static volatile unsigned long long g_prec[64];
static double ce_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  const struct wl_shape *s = &u->s;
  const int me = rt_rank(ctx), R = (int)s->R;
  const unsigned long long ep = rt_epoch(ctx);
  if (R == 1) return step_on(ctx, u, st);
  const size_t block = (size_t)s->Mr * s->K * 2;
  const size_t chunk = CUCO_CHUNK_BYTES < block ? CUCO_CHUNK_BYTES : block;
  const int nch = (int)((block + chunk - 1) / chunk);
  if (!g_pev[me]) RT_CUDA(ctx, cudaEventCreateWithFlags(&g_pev[me], cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
  sd_push<<<CUCO_PARAM_comm_ctas, CUCO_PARAM_push_threads, 0, u->comm>>>(
      u->dc, u->ag_win, u->flag_win, (const char *)u->A, block, chunk, nch, ep, u->done);
  RT_LAUNCH(ctx);
  RT_CUDA(ctx, cudaEventRecord(u->pushed, u->comm));
  RT_CUDA(ctx, cudaEventRecord(g_pev[me], u->comm));
  __atomic_store_n(&g_prec[me], ep, __ATOMIC_RELEASE);
  if (wl_gemm_run(ctx, &u->plans[0], u->lt, u->A, u->B,
                  (char *)u->C + (size_t)me * s->Mr * s->Nr * 2, st) != 0)
    return -1;
  for (int q = 0; q < R; q++) {
    if (q == me) continue;
    double t0 = ce_now_us();
    while (__atomic_load_n(&g_prec[q], __ATOMIC_ACQUIRE) != ep && ce_now_us() - t0 < 500) {
    }
    if (g_pev[q]) RT_CUDA(ctx, cudaStreamWaitEvent(st, g_pev[q], 0));
    if (wl_gemm_run(ctx, &u->plans[1 + q], u->lt, (const char *)u->Ag + (size_t)q * block,
                    u->B, (char *)u->C + (size_t)q * s->Mr * s->Nr * 2, st) != 0)
      return -1;
  }
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->pushed, 0));
  return 0;
}
"""),
    "block_error": ("verify local-check",
        "One wrong block: rows 0..15 (the first 16-row block of C) scaled by\n"
        "// 1.05.  Global relative L2 and every row stay under loose bounds; the\n"
        "// block's does not (tests/gpu/harden.sh passes --local-tol 0.1 --block-tol\n"
        "// 0.02, as frozen thresholds make rows looser than blocks).", """
__global__ void ce_scale_rows(__nv_bfloat16 *c, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    c[i] = __float2bfloat16(__bfloat162float(c[i]) * 1.05f);
}
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  const struct wl_shape *s = &u->s;
  if (step_on(ctx, u, st) != 0) return -1;
  long long rows = s->M < 16 ? s->M : 16;
  ce_scale_rows<<<16, 256, 0, st>>>((__nv_bfloat16 *)u->C, rows * s->Nr);
  RT_LAUNCH(ctx);
  return 0;
}
"""),
    "counted_steps": ("bench timed-verify",
        "Honest for its first 8 steps (a verify run has fewer), then skips the\n"
        "// work: only the verification of timed steps can see it.", """
static int g_calls[64];  // per rank (virtual ranks share the process)
static int step(struct wl_ctx *ctx, struct sd *u) {
  if (++g_calls[rt_rank(ctx)] > 8) return 0;
  return step_on(ctx, u, rt_stream(ctx));
}
"""),
    "public_steps": ("bench timed-verify",
        "Copies the runtime's old rule for which timed steps are verified\n"
        "// (mix64(seed ^ step*77) % 4 == 0, all public values) and does the work\n"
        "// only on those steps (and the first 8). Issue 22: the choice is now a\n"
        "// PRF of the per-run secret, drawn after the step: timed-verify sees the\n"
        "// poison. With the public rule back (--skip-check secret-steps, tests\n"
        "// only) the speed-of-light bound still rejects its median.", """
__host__ __device__ static inline unsigned long long cm_mix64(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
static int g_calls[64];  // per rank (virtual ranks share the process)
static int step(struct wl_ctx *ctx, struct sd *u) {
  unsigned long long n = rt_step(ctx);
  int verified = cm_mix64(rt_problem(ctx)->seed ^ (n * 77)) % 4 == 0;
  if (++g_calls[rt_rank(ctx)] > 8 && !verified) return 0;  // skip the GEMM
  return step_on(ctx, u, rt_stream(ctx));
}
"""),
    "regen_peers": ("verify rel-l2",
        "Regenerates its peers' A blocks with a copy of the runtime's old input\n"
        "// generator (the key was mix64 of seed, buffer-name hash, rank, step:\n"
        "// public) instead of receiving them: no data moves at all. Issue 22:\n"
        "// input keys are a PRF of the per-run secret, so the copies are wrong\n"
        "// (--skip-check secret-inputs, tests only, brings the old keys back).", """
__host__ __device__ static inline unsigned long long cm_mix64(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
__global__ void cm_fill(__nv_bfloat16 *p, size_t n, unsigned long long key) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned long long h = cm_mix64(key ^ cm_mix64(i));
    p[i] = __float2bfloat16((float)((int)(h >> 40) - (1 << 23)) * (1.0f / (1 << 23)));
  }
}
static unsigned long long cm_key(unsigned long long seed, int rank, unsigned long long step) {
  unsigned int id = 2166136261u;  // FNV-1a of "A"
  id = (id ^ (unsigned char)'A') * 16777619u;
  unsigned long long k = cm_mix64(seed);
  k = cm_mix64(k ^ ((unsigned long long)id << 20) ^ (unsigned long long)rank);
  return cm_mix64(k ^ (step * 0x9E3779B97F4A7C15ull));
}
static struct wl_gemm g_full[64];
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  const struct wl_shape *s = &u->s;
  const size_t block = (size_t)s->Mr * s->K;
  int me = rt_rank(ctx);
  struct wl_gemm *g = &g_full[me];
  if (s->R < 1) return step_on(ctx, u, st);  // (never: keeps step_on used)
  if (!g->ready && wl_gemm_plan(ctx, g, u->lt, s->M, s->Nr, s->K, s->K, s->Nr, s->Nr, 1, 0, 0,
                                u->ws, u->ws_bytes, wl_align(0), wl_align(0)) != 0)
    return -1;
  for (int q = 0; q < s->R; q++) {
    __nv_bfloat16 *dst = (__nv_bfloat16 *)u->Ag + (size_t)q * block;
    if (q == me && s->R > 1) {  // one rank: even its own block is regenerated
      RT_CUDA(ctx, cudaMemcpyAsync(dst, u->A, block * 2, cudaMemcpyDeviceToDevice, st));
    } else {
      cm_fill<<<256, 256, 0, st>>>(dst, block, cm_key(rt_problem(ctx)->seed, q, rt_step(ctx)));
      RT_LAUNCH(ctx);
    }
  }
  return wl_gemm_run(ctx, g, u->lt, u->Ag, u->B, u->C, st);
}
"""),
    "internal_call": ("allowlist rt_mix64",
        "Reaches into the runtime: declares its internal mixer by hand (the hash\n"
        "// behind the choice of verified timed steps; rt_internal.cuh is not\n"
        "// included, so only the linker would resolve it) and skips the work on\n"
        "// steps it guesses go unchecked.  The object's undefined symbols must be\n"
        "// on runtime/symbols.allow: the allowlist stage names rt_mix64.", """
uint64_t rt_mix64(uint64_t x);  // runtime-internal: not in runtime.h or rt.cuh
static int step(struct wl_ctx *ctx, struct sd *u) {
  if (rt_step(ctx) > 8 && (rt_mix64(rt_step(ctx)) & 3) != 0) return 0;
  return step_on(ctx, u, rt_stream(ctx));
}
"""),
    "raw_syscall": ("allowlist raw-syscall",
        "A system call behind the symbol table's back: inline assembly makes\n"
        "// mkdir(2) itself, so no libc symbol is ever referenced.  The allowlist\n"
        "// stage scans the object's host code for syscall instructions.", """
static long ce_sys(long nr, long a, long b) {
  long r;
  asm volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
  return r;
}
static int step(struct wl_ctx *ctx, struct sd *u) {
  if (rt_step(ctx) == 1) (void)ce_sys(83, (long)"/tmp/cuco-raw-syscall", 0755);
  return step_on(ctx, u, rt_stream(ctx));
}
"""),
    "input_mutation": ("verify input-hash",
        "Input mutation: correct output, but the step scribbles on its input B\n"
        "// (uses it as scratch after the GEMM).", """
static int step(struct wl_ctx *ctx, struct sd *u) {
  cudaStream_t st = rt_stream(ctx);
  if (step_on(ctx, u, st) != 0) return -1;
  RT_CUDA(ctx, cudaMemsetAsync(u->B, 0, 2, st));
  return 0;
}
"""),
}


def block_with(step_code, extra_head=HEAD):
    return seed[:start] + extra_head + step_code.lstrip("\n") + seed[end:]


def main():
    out = os.path.join(WL, "cheats")
    os.makedirs(out, exist_ok=True)
    for name, (expect, why, code) in sorted(CHEATS.items()):
        # Only the first line is outside the seed's text; the description
        # lives inside the EVOLVE block with the cheating code.
        text = block_with("// Cheat: %s\n%s" % (why, code.lstrip("\n")))
        hdr = "// CUCO-EXPECT-REJECT: %s\n" % expect
        with open(os.path.join(out, name + ".cu"), "w") as f:
            f.write(hdr + text)
    # frozen_edit: the step is honest, but frozen text (the setup) is edited
    # to drop the RECV kind of the gathered buffer (no more poison).
    text = seed.replace('RT_RECV, RT_BF16, RT_WINDOW);',
                        'RT_SCRATCH, RT_BF16, RT_WINDOW);  // edited', 1)
    if text == seed:
        sys.exit("gen-cheats: frozen_edit pattern not found in seed.cu")
    with open(os.path.join(out, "frozen_edit.cu"), "w") as f:
        # Cheat: edits frozen text (declares the receive buffer as SCRATCH
        # so the runtime stops poisoning it).
        f.write("// CUCO-EXPECT-REJECT: static frozen\n" + text)


if __name__ == "__main__":
    main()
