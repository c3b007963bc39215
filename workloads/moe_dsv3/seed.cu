// workloads/moe_dsv3/seed.cu - device-initiated MoE layer (LSA dispatch and
// combine; nccl-device-api.md 5.2).
//
// Dispatch: a kernel of comm_ctas CTAs; CTA b owns tokens [b*cap, (b+1)*cap)
// and, on every destination rank d, its own receive region
// recv[me][b][0..cap) (RB-byte records: FP8 codes, scales, meta) and count
// slot counts[me][b][0..El] (tokens, then pairs per local expert of d),
// written even when zero.  A warp per token quantizes the row with the
// frozen quantizer and stores it with 16-byte stores straight into every
// destination's region through ncclGetLsaPointer.  LSA barrier b brackets
// the round (relaxed at the start, acq_rel at the end), so when the kernel
// ends every source's region b on this rank is complete.
// Then ONE device-to-host read of the counts (cuBLAS needs the sizes on the
// host), expand + dequantize (frozen), the cuBLAS expert GEMMs (frozen),
// and the combine kernel: a warp per received record pre-reduces its expert
// rows and stores the bf16 row into the source's ret[token][me] slot; LSA
// barrier b again; the final sum adds the returned rows and the shared
// expert (computed on a side stream during the dispatch).
// At R = 1 the same path runs through the rank's own window.
// Code outside the EVOLVE blocks is frozen.
#include <stdlib.h>
#include <string.h>

#include <cuda/atomic>

#include "gemm_tile_v2.cuh"  // grouped wgmma + TMA tile (sm_90a)
#include "rt.cuh"
#include "wl_moe.cuh"

struct sd {
  struct moe_core c;  // first: the routing hook finds it
  unsigned *counts;   // window RECV [R][C][1+El]
  unsigned char *recv;  // window RECV [R][C][cap][RB]
  __nv_bfloat16 *ret;   // window RECV [T][R][H]
  unsigned char *stage;  // GIN only: window [R][C][cap][RB] (records per destination)
  __nv_bfloat16 *gred;   // GIN only: window [R*T][H] pre-reduced rows
  unsigned *counts_h;    // pinned [R][C][1+El]
  int *recmap_h;         // pinned [2][R*T]: record offset, source rank
  int *recmap;           // device [2][R*T]
  long long cap;         // tokens per dispatch CTA
  int C;                 // dispatch/combine CTAs
  ncclWindow_t counts_win, recv_win, ret_win, stage_win, gred_win;
  ncclDevComm dc;
  cudaStream_t side;
  cudaEvent_t fork, join;
};

// EVOLVE-BLOCK-START
// CUCO-DIRECTIVES backend=lsa placement=deferred sync=global issuer=warp chunk=64MiB
// CUCO-PARAM comm_ctas=16
// CUCO-PARAM disp_threads=512
// CUCO-PARAM experts=tile
// CUCO-PARAM combine=wide
// CUCO-PARAM expert_grid=tiles
// CUCO-PARAM expert_raster=2
#ifndef CUCO_PARAM_comm_ctas
#define CUCO_PARAM_comm_ctas 16
#endif
#ifndef CUCO_PARAM_disp_threads
#define CUCO_PARAM_disp_threads 512
#endif
#ifndef CUCO_PARAM_experts
#define CUCO_PARAM_experts tile
#endif
// experts=tile|cublas (a word): the routed experts as two grouped GEMMs on
// the shared tile v2, or the frozen per-expert cuBLAS loop (moe_experts).
#define SD_EXP_cublas 1
#define SD_EXP_tile 2
#define SD_EXP_auto 3
#define SD_CAT_(a, b) a##b
#define SD_CAT(a, b) SD_CAT_(a, b)
#define SD_EXP SD_CAT(SD_EXP_, CUCO_PARAM_experts)
#if SD_EXP != 1 && SD_EXP != 2 && SD_EXP != 3
#error "CUCO-PARAM experts must be tile, cublas or auto"
#endif
// experts=auto: the tile where experts get few rows, the cuBLAS loop from
// SD_AUTO_ROWS rows per expert on average.  Under ncu (one H200, kernels
// serialised, bench/seedwin2-2026-12-03-h200.json) the tile's two launches
// took 8.85 ms at prefill (about 128 rows an expert) where the loop's GEMMs
// took about 8.19; at decode (4 rows) the tile won 1.44x over the loop.
#ifndef SD_AUTO_ROWS
#define SD_AUTO_ROWS 64
#endif
#ifndef CUCO_PARAM_combine
#define CUCO_PARAM_combine wide
#endif
// combine=wide|fused (a word): the pre-reduce of every received record on
// the whole GPU (one warp per record, as the baselines' reduce), then a
// kernel of C CTAs that only runs LSA barrier b; or both in the C CTAs of
// one kernel.  At prefill the reduce reads every expert row (T*K rows of H
// bf16: 470 MB), which C CTAs cannot pull at the GPU's bandwidth.  The
// kernel boundary orders the reduce's stores (peers' ret included) before
// the barrier's release.
#define SD_COMB_fused 1
#define SD_COMB_wide 2
#define SD_COMB SD_CAT(SD_COMB_, CUCO_PARAM_combine)
#if SD_COMB != 1 && SD_COMB != 2
#error "CUCO-PARAM combine must be wide or fused"
#endif
#ifndef CUCO_PARAM_expert_grid
#define CUCO_PARAM_expert_grid persistent
#endif
// expert_grid=persistent|tiles (a word; experts=tile): the grouped GEMMs on
// one CTA an SM, each looping over tiles b, b+132, ..., or on one CTA a tile
// (the host knows the row ranges, hence the tile count).  The GEMMs are
// bound by reading the experts' weights, and an expert of more than 128
// rows has two M tiles that read the same weight columns: they are tiles w
// and w+1.  Persistent CTAs drift apart over ~31 waves, so the second
// read misses L2 (ncu, one H200, prefill: GEMM1 read 24.2 GB of DRAM for
// 15 GB of weights, at 85% of peak bandwidth).  With a CTA a tile the block
// scheduler starts tiles w and w+1 within about a tile's time / 132 of
// each other, so the second read should hit L2; each CTA pays its own
// pipeline fill and group table.
#ifndef CUCO_PARAM_expert_raster
#define CUCO_PARAM_expert_raster 8
#endif
// expert_raster=8|2|1 (experts=tile): the grouped GEMMs' tile order, panels
// of that many M tiles (GemmRasterSched).  Tiles that read the same weights
// (an expert's M tiles, same N tile) are adjacent in every panel; tiles that
// read the same rows of A (same M tile) are the panel's height apart.
#if CUCO_PARAM_expert_raster != 8 && CUCO_PARAM_expert_raster != 2 && \
    CUCO_PARAM_expert_raster != 1
#error "CUCO-PARAM expert_raster must be 8, 2 or 1"
#endif
#define SD_EG_persistent 1
#define SD_EG_tiles 2
#define SD_EG SD_CAT(SD_EG_, CUCO_PARAM_expert_grid)
#if SD_EG != 1 && SD_EG != 2
#error "CUCO-PARAM expert_grid must be persistent or tiles"
#endif
#if CUCO_PLACEMENT != CUCO_PLACEMENT_DEFERRED
#error "moe_dsv3 seed: only placement=deferred is implemented (split and per_tile: see README)"
#endif
// sync: only global (the LSA barrier per dispatch CTA) is implemented and
// in the space; per_peer / per_chunk build as global (README: next steps).
// issuer: the seed issues a token per warp whatever the value (the space
// lists only warp); a hand build gets the header's default.

// Dynamic shared memory of the dispatch kernel: per-destination token
// counters, per-expert pair counters, per-warp destination slots.
static inline size_t sd_disp_smem(int R, long long E, int threads) {
  return sizeof(unsigned) * ((size_t)R + (size_t)E + (size_t)(threads / 32) * R);
}

__global__ void __launch_bounds__(1024)
sd_dispatch(ncclDevComm dc, ncclWindow_t recv_win, ncclWindow_t counts_win,
            const __nv_bfloat16 *X, const int32_t *ridx, const float *rw, long long T,
            long long H, long long RB, long long META, int K, long long El, long long cap) {
  extern __shared__ unsigned sd_sh[];
  const int me = dc.lsaRank, R = dc.lsaSize, C = gridDim.x, b = blockIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  unsigned *tcnt = sd_sh, *ecnt = sd_sh + R, *slots = ecnt + (size_t)R * El + (size_t)warp * R;
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(), b);
  // Receivers are done with region b of the previous round.
  bar.sync(ncclCoopCta(), cuda::memory_order_relaxed);
  for (long long i = threadIdx.x; i < R + (long long)R * El; i += blockDim.x) sd_sh[i] = 0;
  __syncthreads();
  const long long t0 = (long long)b * cap, t1 = t0 + cap < T ? t0 + cap : T;
  for (long long t = t0 + warp; t < t1; t += nwarps) {
    unsigned long long m = moe_dest_mask(ridx, t, K, El);
    if (lane == 0) {
      for (int d = 0; d < R; d++)
        if (m >> d & 1) slots[d] = atomicAdd(&tcnt[d], 1u);
      for (int k = 0; k < K; k++) atomicAdd(&ecnt[ridx[t * K + k]], 1u);
    }
    __syncwarp();
    for (long long ch = 0; ch * 512 < H; ch++) {
      uint4 codes;
      float sc;
      if (!moe_q8_chunk(X + (size_t)t * H, H, ch, lane, &codes, &sc)) continue;
      const long long c0 = ch * 512 + lane * 16;
      for (int d = 0; d < R; d++) {
        if (!(m >> d & 1)) continue;
        unsigned char *rec = (unsigned char *)ncclGetLsaPointer(
            recv_win, (((size_t)me * C + b) * cap + slots[d]) * RB, d);
        *(uint4 *)(rec + c0) = codes;
        if ((lane & 7) == 0) *(float *)(rec + H + 4 * (c0 / MOE_Q8_BLOCK)) = sc;
      }
    }
    for (int d = lane; d < R; d += 32)
      if (m >> d & 1) {
        unsigned char *rec = (unsigned char *)ncclGetLsaPointer(
            recv_win, (((size_t)me * C + b) * cap + slots[d]) * RB, d);
        moe_meta_write((int *)(rec + META), t, ridx, rw, K, El, d);
      }
    __syncwarp();
  }
  __syncthreads();
  // Counts, zeros included: the receiver must see every (source, CTA).
  for (long long i = threadIdx.x; i < (long long)R * (1 + El); i += blockDim.x) {
    const int d = (int)(i / (1 + El));
    const long long j = i % (1 + El);
    unsigned *dst = (unsigned *)ncclGetLsaPointer(
        counts_win, (((size_t)me * C + b) * (1 + El) + j) * 4, d);
    *dst = j == 0 ? tcnt[d] : ecnt[(size_t)d * El + j - 1];
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// Combine: a warp per received record (ids 0..nin-1, source SRC[i]); its
// pre-reduced row goes to ret[tok][me] on the source.
__device__ static void sd_combine_rows(ncclDevComm dc, ncclWindow_t ret_win,
                                       const __nv_bfloat16 *O, const int *rec_rows,
                                       const float *row_w, const int *rec_tok, const int *src,
                                       long long nin, int K, long long H) {
  const int me = dc.lsaRank, R = dc.lsaSize, lane = threadIdx.x & 31;
  const long long wid = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32,
                  nw = (long long)gridDim.x * blockDim.x / 32;
  for (long long i = wid; i < nin; i += nw) {
    const int tok = rec_tok[i];
    if (tok < 0) continue;
    __nv_bfloat16 *dst = (__nv_bfloat16 *)ncclGetLsaPointer(
        ret_win, ((size_t)tok * R + me) * H * 2, src[i]);
    moe_reduce_rec(O, rec_rows + i * K, row_w, K, H, dst, lane, 32);
  }
}

// combine=fused: the rows on the C CTAs, then barrier b.
__global__ void __launch_bounds__(1024)
sd_combine(ncclDevComm dc, ncclWindow_t ret_win, const __nv_bfloat16 *O, const int *rec_rows,
           const float *row_w, const int *rec_tok, const int *src, long long nin, int K,
           long long H) {
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(), blockIdx.x);
  sd_combine_rows(dc, ret_win, O, rec_rows, row_w, rec_tok, src, nin, K, H);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// combine=wide: the rows on the whole GPU (no barrier: blockIdx.x is past
// the C barriers), then a kernel of C CTAs that runs LSA barrier b alone.
__global__ void __launch_bounds__(256)
sd_combine_wide(ncclDevComm dc, ncclWindow_t ret_win, const __nv_bfloat16 *O,
                const int *rec_rows, const float *row_w, const int *rec_tok, const int *src,
                long long nin, int K, long long H) {
  sd_combine_rows(dc, ret_win, O, rec_rows, row_w, rec_tok, src, nin, K, H);
}
__global__ void sd_combine_bar(ncclDevComm dc) {
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(), blockIdx.x);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

#if CUCO_BACKEND == CUCO_BACKEND_GIN
// GIN variant (multi-node; compiled, not exercised on one node).  Dispatch:
// CTA b packs its records per destination into the stage window
// [d][b][cap] (same layout as recv), puts them and its counts, then one
// SignalInc{b} per destination; receivers wait for R arrivals per step.
__global__ void sd_dispatch_gin(ncclDevComm dc, ncclWindow_t recv_win, ncclWindow_t counts_win,
                                ncclWindow_t stage_win, unsigned char *stage, int R,
                                const __nv_bfloat16 *X, const int32_t *ridx, const float *rw,
                                long long T, long long H, long long RB, long long META, int K,
                                long long El, long long cap, unsigned long long epoch) {
  if (dc.ginContextCount == 0) return;
  extern __shared__ unsigned sd_sh[];
  const int me = dc.rank, C = gridDim.x, b = blockIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  unsigned *tcnt = sd_sh, *ecnt = sd_sh + R, *slots = ecnt + (size_t)R * El + (size_t)warp * R;
  ncclGin gin(dc, 0);
  for (long long i = threadIdx.x; i < R + (long long)R * El; i += blockDim.x) sd_sh[i] = 0;
  __syncthreads();
  const long long t0 = (long long)b * cap, t1 = t0 + cap < T ? t0 + cap : T;
  for (long long t = t0 + warp; t < t1; t += nwarps) {
    unsigned long long m = moe_dest_mask(ridx, t, K, El);
    if (lane == 0) {
      for (int d = 0; d < R; d++)
        if (m >> d & 1) slots[d] = atomicAdd(&tcnt[d], 1u);
      for (int k = 0; k < K; k++) atomicAdd(&ecnt[ridx[t * K + k]], 1u);
    }
    __syncwarp();
    for (long long ch = 0; ch * 512 < H; ch++) {
      uint4 codes;
      float sc;
      if (!moe_q8_chunk(X + (size_t)t * H, H, ch, lane, &codes, &sc)) continue;
      const long long c0 = ch * 512 + lane * 16;
      for (int d = 0; d < R; d++)
        if (m >> d & 1) {
          unsigned char *rec = stage + (((size_t)d * C + b) * cap + slots[d]) * RB;
          *(uint4 *)(rec + c0) = codes;
          if ((lane & 7) == 0) *(float *)(rec + H + 4 * (c0 / MOE_Q8_BLOCK)) = sc;
        }
    }
    for (int d = lane; d < R; d += 32)
      if (m >> d & 1)
        moe_meta_write((int *)(stage + (((size_t)d * C + b) * cap + slots[d]) * RB + META), t,
                       ridx, rw, K, El, d);
    __syncwarp();
  }
  __syncthreads();
  __threadfence_system();
  for (int d = 0; d < R; d++) {
    if (tcnt[d])
      gin.put(ncclTeamWorld(dc), d, recv_win, (((size_t)me * C + b) * cap) * RB, stage_win,
              (((size_t)d * C + b) * cap) * RB, (size_t)tcnt[d] * RB, ncclGin_None{},
              ncclGin_None{}, ncclCoopCta());
    gin.putValue(ncclTeamWorld(dc), d, counts_win, (((size_t)me * C + b) * (1 + El)) * 4,
                 tcnt[d], ncclGin_SignalInc{(unsigned)b}, ncclCoopCta());
  }
  // Pair counts per expert are not sent on this path: the receiver's host
  // recomputes them from the records' meta (see README: GIN is compile-only).
  gin.waitSignal(ncclCoopCta(), (unsigned)b, epoch * R);
  gin.flush(ncclCoopCta());
}
#endif

#if SD_EXP != 1
// The routed experts as two grouped GEMMs on the tile v2 (wgmma + TMA,
// persistent): one launch each for all El experts, the groups being the
// expert row ranges already uploaded to c->eoff, and one SwiGLU between.
// An expert gets few rows (prefill about T*K/E = 128, decode 4), so the
// frozen loop's 2*El small cuBLAS GEMMs leave most SMs idle; the grouped
// launch spreads every expert's tiles over the whole GPU.
static int sd_experts_tile(struct wl_ctx *ctx, struct moe_core *c, cudaStream_t st,
                           const int *beg) {
  const struct moe_shape *s = &c->s;
  const long long H = s->H, F = s->F, El = s->El, total = beg[El] - beg[0];
  const int rows = (int)moe_rows_cap(s);
  if (total <= 0) return 0;
  // expert_grid=tiles: a CTA per M tile (per expert, ceil(rows / BM)) and N
  // tile; 0 = the library's default (a CTA an SM, persistent)
  long long mt = 0;
  for (long long e = 0; e < El; e++)
    mt += (beg[e + 1] - beg[e] + cuco_gemm::v2::BM - 1) / cuco_gemm::v2::BM;
  const long long nt1 = (2 * F + cuco_gemm::v2::BN - 1) / cuco_gemm::v2::BN,
                  nt2 = (H + cuco_gemm::v2::BN - 1) / cuco_gemm::v2::BN;
  const int grid1 = SD_EG == SD_EG_tiles ? (int)(mt * nt1) : 0,
            grid2 = SD_EG == SD_EG_tiles ? (int)(mt * nt2) : 0;
  const cuco_gemm::GemmArgs g1{(const __nv_bfloat16 *)c->A, (const __nv_bfloat16 *)c->W13, H,
                               2 * F, rows, (int)(2 * F), (int)H, c->eoff, (int)El, H * 2 * F};
  RT_CUDA(ctx, cuco_gemm::gemm_tile_v2_run_grouped(g1, cuco_gemm::GemmNoWait{},
                                           cuco_gemm::GemmStoreC{(__nv_bfloat16 *)c->H1, 2 * F},
                                           cuco_gemm::GemmRasterSched<CUCO_PARAM_expert_raster>{}, grid1, st));
  moe_swiglu_kernel<<<moe_grid(total * F / 8, 256), 256, 0, st>>>(
      (const __nv_bfloat16 *)c->H1 + (size_t)beg[0] * 2 * F,
      (__nv_bfloat16 *)c->ACT + (size_t)beg[0] * F, total, F);
  RT_LAUNCH(ctx);
  const cuco_gemm::GemmArgs g2{(const __nv_bfloat16 *)c->ACT, (const __nv_bfloat16 *)c->W2, F,
                               H, rows, (int)H, (int)F, c->eoff, (int)El, F * H};
  RT_CUDA(ctx, cuco_gemm::gemm_tile_v2_run_grouped(g2, cuco_gemm::GemmNoWait{},
                                           cuco_gemm::GemmStoreC{(__nv_bfloat16 *)c->O, H},
                                           cuco_gemm::GemmRasterSched<CUCO_PARAM_expert_raster>{}, grid2, st));
  return 0;
}
#endif

// The routed experts by the experts= word (rows [beg[0], beg[El]) in
// expert order, ranges uploaded to c->eoff).
static int sd_experts(struct wl_ctx *ctx, struct moe_core *c, cudaStream_t st, const int *beg) {
#if SD_EXP == 2
  return sd_experts_tile(ctx, c, st, beg);
#elif SD_EXP == 3
  const long long El = c->s.El, rows = beg[El] - beg[0];
  if (rows < (long long)SD_AUTO_ROWS * El) return sd_experts_tile(ctx, c, st, beg);
  return moe_experts(ctx, c, st, beg, beg + 1);
#else
  return moe_experts(ctx, c, st, beg, beg + 1);
#endif
}

static int sd_step(struct wl_ctx *ctx, struct sd *u) {
  struct moe_core *c = &u->c;
  const struct moe_shape *s = &c->s;
  const int R = s->R, C = u->C;
  const long long El = s->El, W = 1 + El;
  cudaStream_t st = rt_stream(ctx);
  // Shared expert on the side stream, overlapping the dispatch.  The
  // dispatch, on which the other ranks' dispatch CTAs wait, is launched
  // BEFORE the shared expert's cuBLAS calls: nothing that might block the
  // host (and, under virtual ranks, wait for the whole device) comes
  // between the start of the step and the launch the peers wait for.
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->side, u->fork, 0));
  const size_t smem = sd_disp_smem(R, s->E, CUCO_PARAM_disp_threads);
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  sd_dispatch_gin<<<C, CUCO_PARAM_disp_threads, smem, st>>>(
      u->dc, u->recv_win, u->counts_win, u->stage_win, u->stage, R,
      (const __nv_bfloat16 *)c->X, c->ridx, c->rw, s->T, s->H, s->RB, s->META, (int)s->K, El,
      u->cap, rt_epoch(ctx));
#else
  sd_dispatch<<<C, CUCO_PARAM_disp_threads, smem, st>>>(
      u->dc, u->recv_win, u->counts_win, (const __nv_bfloat16 *)c->X, c->ridx, c->rw, s->T,
      s->H, s->RB, s->META, (int)s->K, El, u->cap);
#endif
  RT_LAUNCH(ctx);
  if (moe_shared(ctx, c, u->side) != 0) return -1;
  RT_CUDA(ctx, cudaEventRecord(u->join, u->side));
  // The one device-to-host read: every (source, CTA) count.
  RT_CUDA(ctx, cudaMemcpyAsync(u->counts_h, u->counts, sizeof(unsigned) * R * C * W,
                               cudaMemcpyDeviceToHost, st));
  RT_CUDA(ctx, cudaStreamSynchronize(st));
  long long nin = 0;
  int *off = u->recmap_h, *src = u->recmap_h + moe_recs_cap(s);
  int *beg = c->eoff_h;
  for (long long e = 0; e <= El; e++) beg[e] = 0;
  for (int q = 0; q < R; q++)
    for (int b = 0; b < C; b++) {
      const unsigned *cn = u->counts_h + ((size_t)q * C + b) * W;
      if (cn[0] == 0xFFFFFFFFu || cn[0] > (unsigned)u->cap)
        return rt_fail(ctx, "counts of rank %d CTA %d did not arrive or are invalid (%u)", q, b,
                       cn[0]);
      if (nin + cn[0] > moe_recs_cap(s))
        return rt_fail(ctx, "more records than %d ranks x %lld tokens", R, s->T);
      for (unsigned i = 0; i < cn[0]; i++, nin++) {
        off[nin] = (int)(((long long)q * C + b) * u->cap + i);
        src[nin] = q;
      }
      for (long long e = 0; e < El; e++) {
        if (cn[1 + e] > (unsigned)u->cap)
          return rt_fail(ctx, "pair count of rank %d CTA %d expert %lld invalid", q, b, e);
        beg[e + 1] += (int)cn[1 + e];
      }
    }
  for (long long e = 0; e < El; e++) beg[e + 1] += beg[e];
  if (beg[El] > moe_rows_cap(s)) return rt_fail(ctx, "more expert rows than the worst case");
  RT_CUDA(ctx, cudaMemcpyAsync(u->recmap, u->recmap_h, sizeof(int) * 2 * moe_recs_cap(s),
                               cudaMemcpyHostToDevice, st));
  RT_CUDA(ctx, cudaMemcpyAsync(c->eoff, beg, sizeof(int) * (El + 1), cudaMemcpyHostToDevice, st));
  RT_CUDA(ctx, cudaMemsetAsync(c->cursor, 0, sizeof(int) * El, st));
  if (moe_expand(ctx, c, st, u->recv, u->recmap, nin, 0, c->eoff, c->eoff + 1, c->cursor) != 0 ||
      sd_experts(ctx, c, st, beg) != 0)
    return -1;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  return rt_fail(ctx, "backend=gin: the combine has no GIN path yet (dispatch only)");
#else
#if SD_COMB == SD_COMB_wide
  sd_combine_wide<<<moe_grid(nin * 32, 256), 256, 0, st>>>(
      u->dc, u->ret_win, (const __nv_bfloat16 *)c->O, c->rec_rows, c->row_w, c->rec_tok,
      u->recmap + moe_recs_cap(s), nin, (int)s->K, s->H);
  RT_LAUNCH(ctx);
  sd_combine_bar<<<C, 128, 0, st>>>(u->dc);
#else
  sd_combine<<<C, CUCO_PARAM_disp_threads, 0, st>>>(
      u->dc, u->ret_win, (const __nv_bfloat16 *)c->O, c->rec_rows, c->row_w, c->rec_tok,
      u->recmap + moe_recs_cap(s), nin, (int)s->K, s->H);
#endif
  RT_LAUNCH(ctx);
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->join, 0));
  moe_final_kernel<<<moe_grid(s->T * s->H / 8, 256), 256, 0, st>>>(
      (__nv_bfloat16 *)c->Y, u->ret, s->SH ? (const __nv_bfloat16 *)c->SHO : NULL, c->ridx,
      NULL, NULL, s->T, (int)s->K, El, R, s->H);
  RT_LAUNCH(ctx);
  return 0;
#endif
}
// EVOLVE-BLOCK-END

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct sd *u = (struct sd *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  struct moe_core *c = &u->c;
  if (moe_core_init(ctx, p, c) != 0) return -1;
  const struct moe_shape *s = &c->s;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  if (!rt_gin_possible(ctx))
    return rt_fail(ctx, "backend=gin: no GIN on a single LSA domain; use backend=lsa");
#else
  if (rt_lsa_size(ctx) != s->R)
    return rt_fail(ctx, "backend=lsa needs every rank in one LSA domain (%d of %d)",
                   rt_lsa_size(ctx), s->R);
#endif
  const int R = s->R;
  const long long El = s->El;
  const size_t smem = sd_disp_smem(R, s->E, CUCO_PARAM_disp_threads);
  if (smem > 48 * 1024) return rt_fail(ctx, "dispatch shared memory %zu B > 48 KiB", smem);
  int C = CUCO_PARAM_comm_ctas;
#if CUCO_BACKEND != CUCO_BACKEND_GIN
  // The spinning kernels must all be resident: C is clamped to what
  // rt_check_coresident accepts (rt_coresident_max; fewer CTAs where the
  // GPU is shared, --vranks), each then owning more tokens.
  {
    const int c1 = rt_coresident_max(ctx, (const void *)sd_dispatch, CUCO_PARAM_disp_threads, smem);
    const int c2 = rt_coresident_max(ctx, (const void *)sd_combine, CUCO_PARAM_disp_threads, 0);
    if (c1 < 0 || c2 < 0) return -1;
    if (C > c1 || C > c2) {
      C = c1 < c2 ? c1 : c2;
      if (rt_rank(ctx) == 0)
        fprintf(stderr, "moe_dsv3 seed: comm_ctas %d -> %d (co-residency, %d rank(s) on this GPU)\n",
                CUCO_PARAM_comm_ctas, C, rt_problem(ctx)->vranks > 0 ? R : 1);
    }
  }
#endif
  u->C = C;
  u->cap = (s->T + C - 1) / C;
  u->counts = (unsigned *)rt_alloc(ctx, "counts", sizeof(unsigned) * R * C * (1 + El), RT_RECV,
                                   RT_U32, RT_WINDOW | RT_COUNTS);
  u->recv = (unsigned char *)rt_alloc(ctx, "recv", (size_t)R * C * u->cap * s->RB, RT_RECV,
                                      RT_U8, RT_WINDOW);
  u->ret = (__nv_bfloat16 *)rt_alloc(ctx, "ret", (size_t)s->T * R * s->H * 2, RT_RECV, RT_BF16,
                                     RT_WINDOW);
  u->recmap = (int *)rt_alloc(ctx, "sd_recmap", sizeof(int) * 2 * moe_recs_cap(s), RT_SCRATCH,
                              RT_I32, 0);
  if (!u->counts || !u->recv || !u->ret || !u->recmap) return -1;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  u->stage = (unsigned char *)rt_alloc(ctx, "stage", (size_t)R * C * u->cap * s->RB, RT_SCRATCH,
                                       RT_U8, RT_WINDOW);
  if (!u->stage) return -1;
  u->stage_win = rt_window(ctx, "stage");
#endif
  u->counts_win = rt_window(ctx, "counts");
  u->recv_win = rt_window(ctx, "recv");
  u->ret_win = rt_window(ctx, "ret");
  RT_CUDA(ctx, cudaMallocHost((void **)&u->counts_h, sizeof(unsigned) * R * C * (1 + El)));
  RT_CUDA(ctx, cudaMallocHost((void **)&u->recmap_h, sizeof(int) * 2 * moe_recs_cap(s)));
  ncclDevCommRequirements reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.lsaBarrierCount = C;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  reqs.ginSignalCount = C;
#endif
  if (rt_devcomm_create(ctx, &reqs, &u->dc) != 0) return -1;
  u->side = u->c.side;  // the core's side stream, which blas2 is bound to (wl_moe.cuh)
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->fork, cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->join, cudaEventDisableTiming));
  return 0;
}

extern "C" int wl_step(struct wl_ctx *ctx) { return sd_step(ctx, (struct sd *)rt_get_user(ctx)); }

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  struct sd *u = (struct sd *)rt_get_user(ctx);
  if (!u) return;
  if (u->counts_h) cudaFreeHost(u->counts_h);
  if (u->recmap_h) cudaFreeHost(u->recmap_h);
  if (u->fork) cudaEventDestroy(u->fork);
  if (u->join) cudaEventDestroy(u->join);
  moe_core_free(&u->c);  // and the side stream with it
  free(u);
  rt_set_user(ctx, NULL);
}
