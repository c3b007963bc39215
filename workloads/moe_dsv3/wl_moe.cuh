// workloads/moe_dsv3/wl_moe.cuh - the shared, FROZEN core of moe_dsv3: the
// problem (parameters, expert ownership), the routing input (generated on
// the host by moe_routing.c from (seed, rank, epoch) in the runtime's reset
// hook, before every step, outside the timed region), the FP8 quantizer and
// dequantizer (moe_fp8.h), the dispatch record format, expand, SwiGLU,
// expert FFNs over cuBLAS, the weighted pre-reduce and the final sum.
// Baselines, the seed and candidates share it; candidates own scheduling
// and communication only.
//
// Per rank r (R ranks, El = E/R experts each, experts [r*El, (r+1)*El)):
//   X     [T][H]        bf16  INPUT (fresh every step)
//   W13   [El][H][2F]   bf16  INPUT: columns [0,F) gate (W1), [F,2F) up (W3)
//   W2    [El][F][H]    bf16  INPUT
//   WS13  [H][2F], WS2 [F][H]  bf16 INPUT: the shared expert (absent with NOSH=1)
//   Y     [T][H]        bf16  OUTPUT
//   route_idx [T][K] int32, route_w [T][K] fp32: SCRATCH, written by the
//         reset hook (the step's routing; never derive it any other way)
// Y_t = sum_k w_tk * FFN_{e_tk}(x~_t) + FFN_s(x_t),
// FFN(x) = W2^T (silu(W1^T x) * (W3^T x)), x~ = dequant(quant(x)) (FP8
// e4m3, one scale per 128 channels); the SwiGLU product is rounded to bf16,
// GEMM outputs are bf16 (fp32 accumulate).
//
// A dispatch record (one per (token, destination rank)), RB bytes:
//   [0, H)            e4m3 codes
//   [H, H + 4*H/128)  fp32 scales
//   then int32 meta:  tok, n, e_0..e_{K-1} (LOCAL experts of the
//                     destination, first n valid), w_0..w_{K-1} (fp32 bits)
//   padded to a multiple of 16 bytes.
#ifndef WL_MOE_CUH
#define WL_MOE_CUH

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.cuh"

#define MOE_ROUTING_API static __attribute__((unused))
#include "moe_fp8.h"
#include "moe_routing.h"
#include "moe_routing.c"

#define MOE_MAX_RANKS 64
#define MOE_WS_BYTES ((size_t)32 << 20)

struct moe_shape {
  long long T, H, F, E, G, TG, K, SH, RHO, ALPHA, MODE;
  int R, me;
  long long El, e0;  // experts per rank, my first expert
  long long HS;      // scales per row (H / 128)
  long long RB;      // bytes of a dispatch record
  long long META;    // byte offset of the meta ints in a record
  struct moe_route_cfg rc;
  double rho_expected;  // the calibration's expected ratio
};

// Parse and check the problem; calibrate the routing skew.  QUIET = 0
// prints the calibration to stderr.  0 or rt_fail.
static inline int moe_shape_get(struct wl_ctx *ctx, const struct wl_problem *p,
                                struct moe_shape *s, int quiet) {
  memset(s, 0, sizeof *s);
  s->T = wl_param(p, "T", -1);
  s->H = wl_param(p, "H", 7168);
  s->F = wl_param(p, "F", 2048);
  s->E = wl_param(p, "E", 256);
  s->G = wl_param(p, "G", 8);
  s->TG = wl_param(p, "TG", 4);
  s->K = wl_param(p, "K", 8);
  s->SH = wl_param(p, "NOSH", 0) == 1 ? 0 : 1;  // NOSH=1: no shared expert
  if (wl_param(p, "NOSH", 0) < 0 || wl_param(p, "NOSH", 0) > 1)
    return rt_fail(ctx, "moe_dsv3 needs NOSH 0 or 1 (got %lld)", wl_param(p, "NOSH", 0));
  s->RHO = wl_param(p, "RHO", 100);
  s->ALPHA = wl_param(p, "ALPHA", 0);
  s->MODE = wl_param(p, "MODE", 0);
  s->R = p->nranks;
  s->me = p->rank;
  if (s->T < 1 || s->T > 65536 || s->H < 128 || s->H > 16384 || s->H % 128 || s->F < 8 ||
      s->F > 16384 || s->F % 8)
    return rt_fail(ctx, "moe_dsv3 needs T in 1..65536, H a multiple of 128 in 128..16384, "
                        "F a multiple of 8 in 8..16384 (got T=%lld H=%lld F=%lld)",
                   s->T, s->H, s->F);
  if (s->R < 1 || s->R > MOE_MAX_RANKS || s->E < 1 || s->E % s->R)
    return rt_fail(ctx, "moe_dsv3 needs 1..%d ranks dividing E (got R=%d E=%lld)",
                   MOE_MAX_RANKS, s->R, s->E);
  if (s->K < 1 || s->K > MOE_ROUTE_MAX_K || s->G < 1 || s->G > 64 || s->TG < 1 ||
      s->TG > 64 || s->RHO < 100 || s->RHO > 6400 || s->ALPHA < 0 || s->ALPHA > 400 ||
      s->MODE < 0 || s->MODE > 3)
    return rt_fail(ctx, "moe_dsv3 needs K in 1..16, G and TG in 1..64, RHO (x100) in "
                        "100..6400, ALPHA (x100) in 0..400, MODE in 0..3 (got K=%lld G=%lld "
                        "TG=%lld RHO=%lld ALPHA=%lld MODE=%lld)",
                   s->K, s->G, s->TG, s->RHO, s->ALPHA, s->MODE);
  s->El = s->E / s->R;
  s->e0 = (long long)s->me * s->El;
  s->HS = s->H / MOE_Q8_BLOCK;
  s->META = s->H + 4 * s->HS;
  s->RB = (s->META + 4 * (2 + 2 * s->K) + 15) / 16 * 16;
  struct moe_route_cfg *c = &s->rc;
  moe_route_defaults(c, (int)s->T, s->R);
  c->E = (int)s->E, c->G = (int)s->G, c->TG = (int)s->TG, c->K = (int)s->K;
  c->rho = (double)s->RHO / 100.0;
  c->alpha = (double)s->ALPHA / 100.0;
  c->mode = (int)s->MODE;
  char why[160];
  if (moe_route_check(c, why, sizeof why) != 0) return rt_fail(ctx, "moe_dsv3 %s", why);
  if (moe_route_calibrate(c, &s->rho_expected) != 0) return rt_fail(ctx, "out of memory");
  double rows = (double)s->R * s->T * (s->K < s->El ? s->K : s->El);
  double gb = ((double)s->El * 3 * s->H * s->F * 2 + rows * (2 * s->H + 3 * s->F) * 2 +
               (double)s->R * s->T * s->RB * 2) / 1e9;
  if (gb > 110)
    return rt_fail(ctx, "moe_dsv3: problem too large for one GPU (%.1f GB per rank)", gb);
  if (!quiet)
    fprintf(stderr,
            "moe_dsv3 rank %d: routing mode %lld, rho target %.2f expected %.3f (bias %.4g), "
            "alpha %.2f\n",
            s->me, s->MODE, c->rho, s->rho_expected, c->bias, c->alpha);
  return 0;
}

// Worst-case expanded rows and records on one rank (dropless).
static inline long long moe_rows_cap(const struct moe_shape *s) {
  return (long long)s->R * s->T * (s->K < s->El ? s->K : s->El);
}
static inline long long moe_recs_cap(const struct moe_shape *s) {
  return (long long)s->R * s->T;
}

static inline int moe_grid(long long n, int threads) {
  long long g = (n + threads - 1) / threads;
  if (g > 16384) g = 16384;
  return g < 1 ? 1 : (int)g;
}

#define MOE_BLAS(ctx, call)                                                      \
  do {                                                                           \
    cublasStatus_t moe_s_ = (call);                                              \
    if (moe_s_ != CUBLAS_STATUS_SUCCESS)                                         \
      return rt_fail((ctx), "%s:%d: %s: cublas status %d", __FILE__, __LINE__,   \
                     #call, (int)moe_s_);                                        \
  } while (0)

// The compute core.  EVERY implementation's user state starts with it
// (the reset hook finds it through rt_get_user).
struct moe_core {
  struct moe_shape s;
  void *X, *W13, *W2, *WS13, *WS2, *Y;
  int32_t *ridx;  // device [T][K]: this step's routing
  float *rw;      // device [T][K]
  int32_t *ridx_h;  // pinned staging of the hook (not for implementations)
  float *rw_h;
  cublasHandle_t blas, blas2;  // main and side stream (separate workspaces)
  cudaStream_t side;           // the side stream blas2 is bound to (setup)
  cudaStream_t blas_st, blas2_st;  // the streams they are bound to now
  void *ws, *ws2;
  // expert scratch (rows in expert-contiguous order)
  void *A, *H1, *ACT, *O;  // [rows][H], [rows][2F], [rows][F], [rows][H] bf16
  float *row_w;            // [rows] weight of each expanded row
  int *rec_rows;           // [recs][K] expanded row of each meta entry (-1: none)
  int *rec_tok;            // [recs] token index on the source (-1: invalid)
  int *cursor;             // [2][El] per-step fill counters (two range sets)
  int *eoff;               // device [4][El+1]: expert row ranges (beg/end pairs)
  int *eoff_h;             // pinned host copy [4][El+1]
  void *SH1, *SACT, *SHO;  // shared expert [T][2F], [T][F], [T][H]
};

// The frozen reset hook: this step's routing of this rank, from (seed,
// rank, epoch), into route_idx/route_w (enqueued on rt_stream, which the
// step is ordered after).  Called by the runtime between steps.
static int moe_route_hook(struct wl_ctx *ctx) {
  struct moe_core *c = (struct moe_core *)rt_get_user(ctx);
  const struct moe_shape *s = &c->s;
  const struct wl_problem *p = rt_problem(ctx);
  cudaStream_t st = rt_stream(ctx);
  // The previous step's copies finished (the runtime synchronised): the
  // pinned staging may be rewritten.
  if (moe_route_gen(&s->rc, moe_route_key(p->seed, s->me, rt_epoch(ctx)), s->me, c->ridx_h,
                    c->rw_h) != 0)
    return rt_fail(ctx, "routing: out of memory");
  RT_CUDA(ctx, cudaMemcpyAsync(c->ridx, c->ridx_h, sizeof(int32_t) * s->T * s->K,
                               cudaMemcpyHostToDevice, st));
  RT_CUDA(ctx, cudaMemcpyAsync(c->rw, c->rw_h, sizeof(float) * s->T * s->K,
                               cudaMemcpyHostToDevice, st));
  return 0;
}

// Set up the core in wl_setup (after rt_set_user(ctx, state) whose first
// member is C): inputs, output, routing, cuBLAS, expert scratch, the hook.
static inline int moe_blas_warm(struct wl_ctx *ctx, struct moe_core *c);

static inline int moe_core_init(struct wl_ctx *ctx, const struct wl_problem *p,
                                struct moe_core *c) {
  struct moe_shape *s = &c->s;
  if (moe_shape_get(ctx, p, s, 0) != 0) return -1;
  const long long T = s->T, H = s->H, F = s->F, rows = moe_rows_cap(s),
                  recs = moe_recs_cap(s);
  c->X = rt_alloc(ctx, "X", (size_t)T * H * 2, RT_INPUT, RT_BF16, 0);
  c->W13 = rt_alloc(ctx, "W13", (size_t)s->El * H * 2 * F * 2, RT_INPUT, RT_BF16, 0);
  c->W2 = rt_alloc(ctx, "W2", (size_t)s->El * F * H * 2, RT_INPUT, RT_BF16, 0);
  if (s->SH) {
    c->WS13 = rt_alloc(ctx, "WS13", (size_t)H * 2 * F * 2, RT_INPUT, RT_BF16, 0);
    c->WS2 = rt_alloc(ctx, "WS2", (size_t)F * H * 2, RT_INPUT, RT_BF16, 0);
    c->SH1 = rt_alloc(ctx, "moe_sh1", (size_t)T * 2 * F * 2, RT_SCRATCH, RT_BF16, 0);
    c->SACT = rt_alloc(ctx, "moe_sact", (size_t)T * F * 2, RT_SCRATCH, RT_BF16, 0);
    c->SHO = rt_alloc(ctx, "moe_sho", (size_t)T * H * 2, RT_SCRATCH, RT_BF16, 0);
    if (!c->WS13 || !c->WS2 || !c->SH1 || !c->SACT || !c->SHO) return -1;
  }
  c->Y = rt_alloc(ctx, "Y", (size_t)T * H * 2, RT_OUTPUT, RT_BF16, 0);
  c->ridx = (int32_t *)rt_alloc(ctx, "route_idx", sizeof(int32_t) * T * s->K, RT_SCRATCH,
                                RT_I32, 0);
  c->rw = (float *)rt_alloc(ctx, "route_w", sizeof(float) * T * s->K, RT_SCRATCH, RT_F32, 0);
  c->ws = rt_alloc(ctx, "moe_blas_ws", MOE_WS_BYTES, RT_SCRATCH, RT_U8, 0);
  c->ws2 = rt_alloc(ctx, "moe_blas_ws2", MOE_WS_BYTES, RT_SCRATCH, RT_U8, 0);
  c->A = rt_alloc(ctx, "moe_A", (size_t)rows * H * 2, RT_SCRATCH, RT_BF16, 0);
  c->H1 = rt_alloc(ctx, "moe_H1", (size_t)rows * 2 * F * 2, RT_SCRATCH, RT_BF16, 0);
  c->ACT = rt_alloc(ctx, "moe_ACT", (size_t)rows * F * 2, RT_SCRATCH, RT_BF16, 0);
  c->O = rt_alloc(ctx, "moe_O", (size_t)rows * H * 2, RT_SCRATCH, RT_BF16, 0);
  c->row_w = (float *)rt_alloc(ctx, "moe_row_w", sizeof(float) * rows, RT_SCRATCH, RT_F32, 0);
  c->rec_rows = (int *)rt_alloc(ctx, "moe_rec_rows", sizeof(int) * recs * s->K, RT_SCRATCH,
                                RT_I32, 0);
  c->rec_tok = (int *)rt_alloc(ctx, "moe_rec_tok", sizeof(int) * recs, RT_SCRATCH, RT_I32, 0);
  c->cursor = (int *)rt_alloc(ctx, "moe_cursor", sizeof(int) * 2 * s->El, RT_SCRATCH, RT_I32,
                              0);
  c->eoff = (int *)rt_alloc(ctx, "moe_eoff", sizeof(int) * 4 * (s->El + 1), RT_SCRATCH, RT_I32,
                            0);
  if (!c->X || !c->W13 || !c->W2 || !c->Y || !c->ridx || !c->rw || !c->ws || !c->ws2 ||
      !c->A || !c->H1 || !c->ACT || !c->O || !c->row_w || !c->rec_rows || !c->rec_tok ||
      !c->cursor || !c->eoff)
    return -1;
  if (rt_output_shape(ctx, "Y", T, H) != 0) return -1;
  RT_CUDA(ctx, cudaMallocHost((void **)&c->ridx_h, sizeof(int32_t) * T * s->K));
  RT_CUDA(ctx, cudaMallocHost((void **)&c->rw_h, sizeof(float) * T * s->K));
  RT_CUDA(ctx, cudaMallocHost((void **)&c->eoff_h, sizeof(int) * 4 * (s->El + 1)));
  // Both handles are bound here, once: blas to the step stream, blas2 to
  // the core's side stream (c->side, for the shared expert), so a step that
  // uses them there makes no cublasSetStream/cublasSetWorkspace call.
  RT_CUDA(ctx, cudaStreamCreateWithFlags(&c->side, cudaStreamNonBlocking));
  MOE_BLAS(ctx, cublasCreate(&c->blas));
  MOE_BLAS(ctx, cublasSetStream(c->blas, rt_stream(ctx)));
  MOE_BLAS(ctx, cublasSetWorkspace(c->blas, c->ws, MOE_WS_BYTES));
  c->blas_st = rt_stream(ctx);
  MOE_BLAS(ctx, cublasCreate(&c->blas2));
  MOE_BLAS(ctx, cublasSetStream(c->blas2, c->side));
  MOE_BLAS(ctx, cublasSetWorkspace(c->blas2, c->ws2, MOE_WS_BYTES));
  c->blas2_st = c->side;
  rt_on_reset(ctx, moe_route_hook);
  return moe_blas_warm(ctx, c);
}

static inline void moe_core_free(struct moe_core *c) {
  if (c->blas) cublasDestroy(c->blas);
  if (c->blas2) cublasDestroy(c->blas2);
  if (c->side) cudaStreamDestroy(c->side);
  c->side = NULL;
  if (c->ridx_h) cudaFreeHost(c->ridx_h);
  if (c->rw_h) cudaFreeHost(c->rw_h);
  if (c->eoff_h) cudaFreeHost(c->eoff_h);
  c->blas = c->blas2 = NULL;
  c->ridx_h = NULL, c->rw_h = NULL, c->eoff_h = NULL;
}

// ---- device helpers ------------------------------------------------------

// Bit mask of the destination ranks of token T (expert e on rank e / El).
__device__ static inline unsigned long long moe_dest_mask(const int32_t *ridx, long long t,
                                                          int K, long long El) {
  unsigned long long m = 0;
  for (int k = 0; k < K; k++) m |= 1ull << (int)(ridx[t * K + k] / El);
  return m;
}

// Quantize chunk CH (512 channels) of bf16 row X (H channels) for LANE of a
// full warp: the lane's 16 codes (channels CH*512 + LANE*16 ...), and, for
// lanes with LANE % 8 == 0, the scale of their 128-channel block.  Returns
// false when the lane's channels lie beyond H (it must still be called by
// every lane: the amax reduction shuffles across the warp).
__device__ static inline bool moe_q8_chunk(const __nv_bfloat16 *x, long long H, long long ch,
                                           int lane, uint4 *codes, float *scale) {
  const long long c0 = ch * 512 + lane * 16;
  const bool on = c0 < H;
  float v[16];
  float amax = 0.0f;
  if (on) {
    uint4 a = *(const uint4 *)(x + c0), b = *(const uint4 *)(x + c0 + 8);
    const __nv_bfloat16 *pa = (const __nv_bfloat16 *)&a, *pb = (const __nv_bfloat16 *)&b;
#pragma unroll
    for (int i = 0; i < 8; i++) {
      v[i] = __bfloat162float(pa[i]);
      v[8 + i] = __bfloat162float(pb[i]);
    }
#pragma unroll
    for (int i = 0; i < 16; i++) amax = fmaxf(amax, fabsf(v[i]));
  }
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 4));
  if (!on) return false;
  const float s = moe_q8_scale(amax);
  *scale = s;
  unsigned char q[16];
#pragma unroll
  for (int i = 0; i < 16; i++) q[i] = moe_q8_encode(v[i], s);
  memcpy(codes, q, 16);
  return true;
}

// The meta of token TOK for destination D: its experts on D (local ids)
// and weights.  One thread.
__device__ static inline void moe_meta_write(int *meta, long long tok, const int32_t *ridx,
                                             const float *rw, int K, long long El, int d) {
  int n = 0;
  meta[0] = (int)tok;
  for (int k = 0; k < K; k++) {
    int e = ridx[tok * K + k];
    if (e / El == d) {
      meta[2 + n] = (int)(e - (long long)d * El);
      meta[2 + K + n] = __float_as_int(rw[tok * K + k]);
      n++;
    }
  }
  for (int j = n; j < K; j++) meta[2 + j] = -1, meta[2 + K + j] = 0;
  meta[1] = n;
}

// Expand: one warp per record i (records at RECS + (REC_OFF ? REC_OFF[i] :
// i) * RB; its id is ID0 + i).  Each valid meta entry (local expert e)
// takes the next row of expert e's range [EBEG[e], EEND[e]) (through
// CURSOR[e]; entries beyond the range are dropped, which only a wrong count
// can cause) and gets the dequantized row x~ in A; ROW_W, REC_ROWS and
// REC_TOK record the mapping.
static __global__ void __launch_bounds__(256)
moe_expand_kernel(const unsigned char *recs, const int *rec_off, long long nrec, long long id0,
                  long long RB, long long H, long long META, int K, long long El, long long T,
                  const int *ebeg, const int *eend, int *cursor, __nv_bfloat16 *A,
                  float *row_w, int *rec_rows, int *rec_tok) {
  const int lane = threadIdx.x & 31;
  const long long wid = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32,
                  nw = (long long)gridDim.x * blockDim.x / 32;
  for (long long i = wid; i < nrec; i += nw) {
    const unsigned char *rec = recs + (size_t)(rec_off ? rec_off[i] : i) * RB;
    const int *meta = (const int *)(rec + META);
    int tok = meta[0], n = meta[1];
    if (tok < 0 || tok >= T) tok = -1;
    if (n < 0 || tok < 0) n = 0;
    if (n > K) n = K;
    int myrow = -1;
    if (lane < K) {
      if (lane < n) {
        int e = meta[2 + lane];
        if (e >= 0 && e < El) {
          int r = atomicAdd(&cursor[e], 1);
          if (r < eend[e] - ebeg[e]) {
            myrow = ebeg[e] + r;
            row_w[myrow] = __int_as_float(meta[2 + K + lane]);
          }
        }
      }
      rec_rows[(id0 + i) * K + lane] = myrow;
    }
    if (lane == 0) rec_tok[id0 + i] = tok;
    for (long long ch = 0; ch * 512 < H; ch++) {
      const long long c0 = ch * 512 + lane * 16;
      uint4 o[2];
      if (c0 < H) {
        uint4 qv = *(const uint4 *)(rec + c0);
        const float sc = *(const float *)(rec + H + 4 * (c0 / MOE_Q8_BLOCK));
        const unsigned char *q = (const unsigned char *)&qv;
        __nv_bfloat16 *ob = (__nv_bfloat16 *)o;
#pragma unroll
        for (int k = 0; k < 16; k++) ob[k] = moe_q8_decode(q[k], sc);
      }
      for (int j = 0; j < K; j++) {
        int row = __shfl_sync(0xffffffffu, myrow, j);
        if (row >= 0 && c0 < H) {
          uint4 *dst = (uint4 *)(A + (size_t)row * H + c0);
          dst[0] = o[0];
          dst[1] = o[1];
        }
      }
    }
  }
}

// The weighted pre-reduce of one record: DST[H] = bf16(sum_j w_j * O[row_j])
// over its K entries in order (row -1 skipped); lanes LANE.. by NLANES take
// 8 channels at a time.
__device__ static inline void moe_reduce_rec(const __nv_bfloat16 *O, const int *rows,
                                             const float *row_w, int K, long long H,
                                             __nv_bfloat16 *dst, int lane, int nlanes) {
  for (long long v = lane; v < H / 8; v += nlanes) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int j = 0; j < K; j++) {
      int r = rows[j];
      if (r < 0) continue;
      float w = row_w[r];
      uint4 x = *(const uint4 *)(O + (size_t)r * H + v * 8);
      const __nv_bfloat16 *px = (const __nv_bfloat16 *)&x;
#pragma unroll
      for (int k = 0; k < 8; k++) acc[k] += w * __bfloat162float(px[k]);
    }
    uint4 y;
    __nv_bfloat16 *py = (__nv_bfloat16 *)&y;
#pragma unroll
    for (int k = 0; k < 8; k++) py[k] = __float2bfloat16_rn(acc[k]);
    *(uint4 *)(dst + v * 8) = y;
  }
}

// SwiGLU over ROWS rows: ACT[r][f] = bf16(silu(g) * u), g = H1[r][f],
// u = H1[r][F + f], in fp32.
static __global__ void moe_swiglu_kernel(const __nv_bfloat16 *h1, __nv_bfloat16 *act, long long rows,
                                  long long F) {
  const long long per = F / 8, n = rows * per;
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n;
       k += (long long)gridDim.x * blockDim.x) {
    long long r = k / per, v = k % per;
    uint4 g = *(const uint4 *)(h1 + (size_t)r * 2 * F + v * 8);
    uint4 u = *(const uint4 *)(h1 + (size_t)r * 2 * F + F + v * 8);
    const __nv_bfloat16 *pg = (const __nv_bfloat16 *)&g, *pu = (const __nv_bfloat16 *)&u;
    uint4 o;
    __nv_bfloat16 *po = (__nv_bfloat16 *)&o;
#pragma unroll
    for (int i = 0; i < 8; i++) {
      float a = __bfloat162float(pg[i]), b = __bfloat162float(pu[i]);
      po[i] = __float2bfloat16_rn(a / (1.0f + expf(-a)) * b);
    }
    *(uint4 *)(act + (size_t)r * F + v * 8) = o;
  }
}

// Final sum: Y[t] = bf16(sum over destination ranks d of token t, in rank
// order, of its returned row + the shared expert's row).  The returned row
// of (t, d) is RET[DOFF[d] + POS[t*R + d]] when POS != NULL (records in
// per-destination order), else RET[t*R + d] (the [token][src] slots).
static __global__ void moe_final_kernel(__nv_bfloat16 *Y, const __nv_bfloat16 *ret,
                                 const __nv_bfloat16 *sho, const int32_t *ridx, const int *pos,
                                 const long long *doff, long long T, int K, long long El, int R,
                                 long long H) {
  const long long per = H / 8, n = T * per;
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n;
       k += (long long)gridDim.x * blockDim.x) {
    long long t = k / per, v = k % per;
    unsigned long long m = moe_dest_mask(ridx, t, K, El);
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int d = 0; d < R; d++) {
      if (!(m >> d & 1)) continue;
      long long row = pos ? doff[d] + pos[t * R + d] : t * R + d;
      uint4 x = *(const uint4 *)(ret + (size_t)row * H + v * 8);
      const __nv_bfloat16 *px = (const __nv_bfloat16 *)&x;
#pragma unroll
      for (int i = 0; i < 8; i++) acc[i] += __bfloat162float(px[i]);
    }
    if (sho) {
      uint4 x = *(const uint4 *)(sho + (size_t)t * H + v * 8);
      const __nv_bfloat16 *px = (const __nv_bfloat16 *)&x;
#pragma unroll
      for (int i = 0; i < 8; i++) acc[i] += __bfloat162float(px[i]);
    }
    uint4 y;
    __nv_bfloat16 *py = (__nv_bfloat16 *)&y;
#pragma unroll
    for (int i = 0; i < 8; i++) py[i] = __float2bfloat16_rn(acc[i]);
    *(uint4 *)(Y + (size_t)t * H + v * 8) = y;
  }
}

// ---- host helpers ----------------------------------------------------------

// Row-major OUT[n][N] (bf16) = IN[n][Kd] * W[Kd][N], fp32 accumulate, on
// BLAS's current stream.
static inline int moe_gemm(struct wl_ctx *ctx, cublasHandle_t blas, const void *in,
                           const void *w, void *out, long long n, long long Kd, long long N) {
  const float one = 1.0f, zero = 0.0f;
  // col-major OUT^T [N][n] = W^T [N][Kd] * IN^T [Kd][n]
  MOE_BLAS(ctx, cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)n, (int)Kd, &one, w,
                             CUDA_R_16BF, (int)N, in, CUDA_R_16BF, (int)Kd, &zero, out,
                             CUDA_R_16BF, (int)N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return 0;
}

// Bind BLAS to ST when it is bound elsewhere (*BOUND), with workspace WS:
// cublasSetStream resets the handle to cuBLAS's default workspace pool
// (cuBLAS docs), so the workspace is set again after it, otherwise
// moe_blas_ws is never used and the handle falls back to a library pool.
static inline int moe_blas_bind(struct wl_ctx *ctx, cublasHandle_t blas, void *ws,
                                cudaStream_t *bound, cudaStream_t st) {
  if (*bound == st) return 0;
  MOE_BLAS(ctx, cublasSetStream(blas, st));
  MOE_BLAS(ctx, cublasSetWorkspace(blas, ws, MOE_WS_BYTES));
  *bound = st;
  return 0;
}

// Virtual ranks only: call the routed experts' two GEMMs once for every
// row count a step can give an expert (1 .. R*T, the dropless worst case),
// in setup, so no step's GEMM is a kernel's first use.  cuBLASLt loads each
// kernel's library on that first use (cuLibraryLoadData, whatever
// CUDA_MODULE_LOADING says) and the load waits for the device.  Under
// virtual ranks the device is shared: the load waits for a peer's spinning
// barrier, the peer for this rank's next launch (seen on the H200 with
// cuda-gdb, tests/gpu/diag2.sh: moe_dsv3 --vranks 4 at v_t7, whose skewed
// routing gives new row counts in later steps).  The shared expert's GEMMs
// have the same (K, N) at n = T <= R*T, so they are covered.  On real ranks
// a load waits only for the rank's own GPU and merely delays a step.
static inline int moe_blas_warm(struct wl_ctx *ctx, struct moe_core *c) {
#ifdef CUCO_VRANKS
  const struct moe_shape *s = &c->s;
  long long top = (long long)s->R * s->T;
  if (top > 4096) top = 4096;  // protocol-test shapes are far below this
  for (long long n = 1; n <= top; n++)
    if (moe_gemm(ctx, c->blas, c->A, c->W13, c->H1, n, s->H, 2 * s->F) != 0 ||
        moe_gemm(ctx, c->blas, c->ACT, c->W2, c->O, n, s->F, s->H) != 0)
      return -1;
  RT_CUDA(ctx, cudaStreamSynchronize(c->blas_st));
#else
  (void)ctx, (void)c;
#endif
  return 0;
}

// The routed experts on STREAM over expanded rows: expert e's rows are
// [BEG_H[e], END_H[e]) (host arrays).  A -> H1 (GEMM1 per expert) -> ACT
// (SwiGLU: one launch when the ranges tile one contiguous span, else one
// per expert) -> O (GEMM2 per expert).  Empty experts are skipped.
static inline int moe_experts(struct wl_ctx *ctx, struct moe_core *c, cudaStream_t st,
                              const int *beg_h, const int *end_h) {
  const struct moe_shape *s = &c->s;
  const long long H = s->H, F = s->F;
  int contiguous = 1;
  for (long long e = 0; e + 1 < s->El; e++) contiguous &= end_h[e] == beg_h[e + 1];
  if (moe_blas_bind(ctx, c->blas, c->ws, &c->blas_st, st) != 0) return -1;
  for (long long e = 0; e < s->El; e++) {
    long long n = end_h[e] - beg_h[e];
    if (n <= 0) continue;
    if (moe_gemm(ctx, c->blas, (const char *)c->A + (size_t)beg_h[e] * H * 2,
                 (const char *)c->W13 + (size_t)e * H * 2 * F * 2,
                 (char *)c->H1 + (size_t)beg_h[e] * 2 * F * 2, n, H, 2 * F) != 0)
      return -1;
    if (!contiguous) {
      moe_swiglu_kernel<<<moe_grid(n * F / 8, 256), 256, 0, st>>>(
          (const __nv_bfloat16 *)c->H1 + (size_t)beg_h[e] * 2 * F,
          (__nv_bfloat16 *)c->ACT + (size_t)beg_h[e] * F, n, F);
      RT_LAUNCH(ctx);
    }
  }
  const long long total = end_h[s->El - 1] - beg_h[0];
  if (contiguous && total > 0) {
    moe_swiglu_kernel<<<moe_grid(total * F / 8, 256), 256, 0, st>>>(
        (const __nv_bfloat16 *)c->H1 + (size_t)beg_h[0] * 2 * F,
        (__nv_bfloat16 *)c->ACT + (size_t)beg_h[0] * F, total, F);
    RT_LAUNCH(ctx);
  }
  for (long long e = 0; e < s->El; e++) {
    long long n = end_h[e] - beg_h[e];
    if (n <= 0) continue;
    if (moe_gemm(ctx, c->blas, (const char *)c->ACT + (size_t)beg_h[e] * F * 2,
                 (const char *)c->W2 + (size_t)e * F * H * 2,
                 (char *)c->O + (size_t)beg_h[e] * H * 2, n, F, H) != 0)
      return -1;
  }
  return 0;
}

// The shared expert on STREAM with the second handle: SHO = FFN_s(X).
static inline int moe_shared(struct wl_ctx *ctx, struct moe_core *c, cudaStream_t st) {
  const struct moe_shape *s = &c->s;
  if (!s->SH) return 0;
  if (moe_blas_bind(ctx, c->blas2, c->ws2, &c->blas2_st, st) != 0) return -1;
  if (moe_gemm(ctx, c->blas2, c->X, c->WS13, c->SH1, s->T, s->H, 2 * s->F) != 0) return -1;
  moe_swiglu_kernel<<<moe_grid(s->T * s->F / 8, 256), 256, 0, st>>>(
      (const __nv_bfloat16 *)c->SH1, (__nv_bfloat16 *)c->SACT, s->T, s->F);
  RT_LAUNCH(ctx);
  return moe_gemm(ctx, c->blas2, c->SACT, c->WS2, c->SHO, s->T, s->F, s->H);
}

// Enqueue on STREAM the expand of NREC records (ids ID0..) into the expert
// ranges [EBEG[e], EEND[e]) (device arrays the caller uploaded) with the
// El counters CURSOR (zeroed by the caller once per range set).
static inline int moe_expand(struct wl_ctx *ctx, struct moe_core *c, cudaStream_t st,
                             const unsigned char *recs, const int *rec_off, long long nrec,
                             long long id0, const int *ebeg, const int *eend, int *cursor) {
  const struct moe_shape *s = &c->s;
  if (nrec <= 0) return 0;
  moe_expand_kernel<<<moe_grid(nrec * 32, 256), 256, 0, st>>>(
      recs, rec_off, nrec, id0, s->RB, s->H, s->META, (int)s->K, s->El, s->T, ebeg, eend,
      cursor, (__nv_bfloat16 *)c->A, c->row_w, c->rec_rows, c->rec_tok);
  RT_LAUNCH(ctx);
  return 0;
}

// Pre-reduce, locally: OUT[id] = the weighted sum of record ID's expert
// rows, for ids [ID0, ID0 + N) (one warp per record).
static __global__ void __launch_bounds__(256)
moe_reduce_kernel(const __nv_bfloat16 *O, const int *rec_rows, const float *row_w, int K,
                  long long H, long long id0, long long n, __nv_bfloat16 *out) {
  const int lane = threadIdx.x & 31;
  const long long wid = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32,
                  nw = (long long)gridDim.x * blockDim.x / 32;
  for (long long i = id0 + wid; i < id0 + n; i += nw)
    moe_reduce_rec(O, rec_rows + i * K, row_w, K, H, out + (size_t)i * H, lane, 32);
}

#endif  // WL_MOE_CUH
